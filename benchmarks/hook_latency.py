"""Wall time of each hook as Claude Code runs it: a fresh process, one JSON object on stdin.

Every run gets a fresh `tool_use_id` / `prompt_id`, so each one really writes (a repeated key would be the
cheap duplicate path). `python -c pass` with the same interpreter runs in the same loop as the floor.

A Bash output Claude Code saved to a file (`persistedOutputPath`) is read back whole by the hook and stored twice
(the episode's text, and verbatim as its raw output): those cases run `--persisted-runs` times (each run stores the
whole file again), with a 1 MB and a 30 MB file in the session's `tool-results/` folder.

    .venv/bin/python benchmarks/hook_latency.py [--runs 200] [--persisted-runs 5] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
# `ls -l` of 300 files (about 15 KB): the built-in ls rule compresses it after the fact when the rewrite did not.
LISTING = "total 1200\n" + "".join(f"-rw-r--r-- 1 dev dev {i % 97 + 8} Dec  1 14:53 mod_{i:03d}.py\n"
                                     for i in range(300)).rstrip("\n")
ONE_MB_RESULT = "".join(f"line {i:06d} of a large tool result, all of it kept verbatim\n" for i in range(17_500))


def payloads(project: str, transcript: str) -> dict[str, Callable[[int], dict[str, Any]]]:
    base = {"session_id": "bench-session", "transcript_path": transcript, "cwd": project}
    return {
        "SessionStart": lambda i: {**base, "session_id": f"bench-{i}", "hook_event_name": "SessionStart",
                                   "source": "startup"},
        "UserPromptSubmit": lambda i: {**base, "hook_event_name": "UserPromptSubmit", "prompt_id": f"p{i}",
                                       "prompt": "fix the failing parser test please"},
        "PostToolUse (small)": lambda i: {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                                          "tool_use_id": f"small{i}", "tool_input": {"command": "git status"},
                                          "tool_response": {"stdout": "On branch main\nnothing to commit\n",
                                                            "stderr": "", "interrupted": False}},
        "PostToolUse (Bash, compressed after the fact)": lambda i: {
            **base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"listing{i}",
            "tool_input": {"command": "cd src && ls -l"},
            "tool_response": {"stdout": LISTING, "stderr": "", "interrupted": False}},
        "PostToolUse (1 MB result)": lambda i: {**base, "hook_event_name": "PostToolUse", "tool_name": "Read",
                                                "tool_use_id": f"big{i}", "tool_input": {"file_path": "/p/big.log"},
                                                "tool_response": {"type": "text", "file": {
                                                    "filePath": "/p/big.log", "content": ONE_MB_RESULT}}},
        "Stop": lambda i: {**base, "hook_event_name": "Stop", "last_assistant_message": f"Done {i}.",
                           "stop_hook_active": False},
    }


def persisted_payloads(project: str, transcript: str) -> dict[str, Callable[[int], dict[str, Any]]]:
    """`cat` of a log no rule compresses, 1 MB and 30 MB, as Claude Code 2.1.332 hands it over: the first 30,000
    characters and the file it saved the whole output to."""
    folder = Path(transcript).with_suffix("") / "tool-results"
    folder.mkdir(parents=True, exist_ok=True)
    cases: dict[str, Callable[[int], dict[str, Any]]] = {}
    for label, size in (("1 MB", 1 << 20), ("30 MB", 30 << 20)):
        path = folder / f"persisted-{label.replace(' ', '')}.txt"
        line = "2026-12-02T10:00 worker heartbeat ok, nothing to report; all of it kept verbatim\n"
        path.write_text(line * (size // len(line)))
        head = path.read_text()[:30_000].rstrip("\n")

        def make(i: int, path: Path = path, head: str = head) -> dict[str, Any]:
            return {"session_id": "bench-session", "transcript_path": transcript, "cwd": project,
                    "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"persisted{i}-{path.stem}",
                    "tool_input": {"command": "cat service.log"},
                    "tool_response": {"stdout": head, "stderr": "", "interrupted": False,
                                      "persistedOutputPath": str(path), "persistedOutputSize": path.stat().st_size}}
        cases[f"PostToolUse (Bash, {label} persisted file read back)"] = make
    return cases


def agent_payloads(project: str) -> dict[str, tuple[list[str], Callable[[int], dict[str, Any]]]]:
    """Codex's and Gemini's events as their CLIs send them (docs/agent-protocols.md), through `--agent=`."""
    codex = {"session_id": "bench-codex", "cwd": project, "transcript_path": None, "model": "gpt-5-codex",
             "permission_mode": "default"}
    gemini = {"session_id": "bench-gemini", "cwd": project, "transcript_path": ""}
    return {
        "codex PostToolUse (small)": (["--agent=codex", "PostToolUse"], lambda i: {
            **codex, "turn_id": f"t{i}", "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_use_id": f"call{i}", "tool_input": {"command": "git status"},
            "tool_response": "On branch main\nnothing to commit\n"}),
        "codex Stop": (["--agent=codex", "Stop"], lambda i: {
            **codex, "turn_id": f"t{i}", "hook_event_name": "Stop", "last_assistant_message": f"Done {i}."}),
        "gemini AfterTool (small)": (["--agent=gemini", "AfterTool"], lambda i: {
            **gemini, "timestamp": f"2026-12-01T00:00:{i:06d}Z", "hook_event_name": "AfterTool",
            "tool_name": "run_shell_command", "tool_input": {"command": "git status"},
            "tool_response": {"llmContent": "Output: On branch main", "returnDisplay": "On branch main"}}),
    }


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--persisted-runs", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "CODEOID_HOME": os.path.join(scratch, "home"), "CLAUDE_PID": "1"}
        project = os.path.join(scratch, "project")
        os.makedirs(os.path.join(project, ".git"))
        transcript = os.path.join(scratch, "transcript.jsonl")
        Path(transcript).touch()
        hook = str(BIN / "codeoid-hook")
        results: dict[str, list[float]] = {"python -c pass": []}
        cases = payloads(project, transcript)
        agent_cases = agent_payloads(project)
        for name in [*cases, *agent_cases]:
            results[name] = []
        for i in range(args.runs):
            results["python -c pass"].append(timed([sys.executable, "-c", "pass"], b"", env))
            for name, make in cases.items():
                event = name.split(" ")[0]
                results[name].append(timed([hook, event], json.dumps(make(i)).encode(), env))
            for name, (arguments, make) in agent_cases.items():
                results[name].append(timed([hook, *arguments], json.dumps(make(i)).encode(), env))
        for name, make in persisted_payloads(project, transcript).items():
            results[name] = [timed([hook, "PostToolUse"], json.dumps(make(i)).encode(), env)
                             for i in range(args.persisted_runs)]
        rows = [(name, statistics.median(times), sorted(times)[max(int(len(times) * 0.95) - 1, 0)])
                for name, times in results.items()]
    if args.markdown:
        print(f"| hook (fresh process, {args.runs} runs) | median ms | p95 ms |")
        print("| --- | ---: | ---: |")
        for name, median, p95 in rows:
            print(f"| {name} | {median:.1f} | {p95:.1f} |")
    else:
        for name, median, p95 in rows:
            print(f"{name:<28} median {median:6.1f} ms   p95 {p95:6.1f} ms")


if __name__ == "__main__":
    main()
