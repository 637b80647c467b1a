"""Regenerate the heavy corpus: the big outputs of one real repository mid-task, where Claude Code's own cuts bite.

rich (Textualize/rich) cloned from a local mirror at v14.3.3, four bugs planted (padding, markup escaping, file
sizes, colour blending: 57 failing tests with the environment's own 7), an untracked notes folder; then a
failing suite run four ways, a 1.2 MB diff between tags and its stat, long logs, big greps, listings and a
`cat`. Each command runs under bash in the checkout, stdout captured as the Bash tool would run it. Writes
tests/fixtures/compress_heavy/*.out and manifest.json; `savings.py --heavy` reads them.

    .venv/bin/python benchmarks/compression/heavy_corpus.py [--mirror GIT_DIR] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "compress_heavy"
PYTHON = sys.executable
TAG = "v14.3.3"
# (file, text, replacement): each breaks a family of tests its own way.
BUGS = [
    ("rich/padding.py", "            return (pad_top, pad_right, pad_top, pad_right)",
     "            return (pad_top, pad_right, pad_right, pad_top)"),
    ("rich/markup.py", '        return f"{backslashes}{backslashes}\\\\{text}"',
     '        return f"{backslashes}\\\\{text}"'),
    ("rich/filesize.py", '        ("kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"),\n        1000,',
     '        ("kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"),\n        1024,'),
    ("rich/color.py", "        int(g1 + (g2 - g1) * cross_fade),", "        int(g1 + (g2 - g1) * cross_fade + 1),"),
]
# (name, command, kind): the kinds savings.py counts critical items for.
COMMANDS = [
    ("pytest", f"{PYTHON} -m pytest -p no:cacheprovider tests", "tests"),
    ("pytest_verbose", f"{PYTHON} -m pytest -v -p no:cacheprovider tests", "tests"),
    ("pytest_quiet", f"{PYTHON} -m pytest -q -p no:cacheprovider tests", "tests"),
    ("pytest_short", f"{PYTHON} -m pytest --tb=short -p no:cacheprovider tests", "tests"),
    ("git_status", "git status", "git-status"),
    ("git_diff_tags", "git diff v13.0.0 v14.3.3", "git-diff"),
    ("git_diff_stat_tags", "git diff --stat v13.0.0 v14.3.3", "git-diff"),
    ("git_diff_worktree", "git diff", "git-diff"),
    ("git_log", "git log -n 1500", "git-log"),
    ("git_log_stat", "git log --stat -n 300", "git-log"),
    ("grep_calls", "grep -rn '(' rich tests", "search"),
    ("grep_def", "grep -rn 'def ' rich", "search"),
    ("grep_import", "grep -rn import .", "search"),
    ("find_files", "find . -type f -not -path './.git/*'", "listing"),
    ("ls_recursive", "ls -R", "listing"),
    ("ls_long", "ls -la rich", "listing"),
    ("cat_console", "cat rich/console.py", "none"),
]


def run(command: str, cwd: Path, *, check: bool = False) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["/bin/bash", "-c", command], cwd=cwd, capture_output=True, check=check,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "LANG": "C.UTF-8", "COLUMNS": "120",
                               "PYTHONDONTWRITEBYTECODE": "1",
                               "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "TERM": "dumb"})


def build(mirror: Path, work: Path) -> Path:
    checkout = work / "rich"
    shutil.rmtree(checkout, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(mirror), str(checkout)], check=True)
    subprocess.run(["git", "-C", str(checkout), "checkout", "-q", TAG], check=True)
    for path, old, new in BUGS:
        file = checkout / path
        text = file.read_text()
        if old not in text:
            raise SystemExit(f"{path}: the line to break is not there at {TAG}")
        file.write_text(text.replace(old, new, 1))
    notes = checkout / "notes"
    notes.mkdir()
    for index in range(12):
        (notes / f"finding_{index:02d}.md").write_text(f"finding {index}\n")
    return checkout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror/Textualize+rich/repo"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/codeoid-heavy-corpus"))
    args = parser.parse_args()
    checkout = build(args.mirror, args.work.resolve())
    FIXTURES.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, command, kind in COMMANDS:
        print(f"capturing {name}: {command}", file=sys.stderr)
        done = run(command, checkout)
        (FIXTURES / f"{name}.out").write_bytes(done.stdout)
        entries.append({"name": name, "command": command.replace(PYTHON, "python"), "kind": kind,
                        "exit_status": done.returncode, "stdout_bytes": len(done.stdout)})
    (FIXTURES / "manifest.json").write_text(json.dumps({
        "generated_by": "benchmarks/compression/heavy_corpus.py", "project": f"Textualize/rich {TAG}, bugs planted",
        "rtk": None, "fixtures": entries}, indent=2) + "\n")


if __name__ == "__main__":
    main()
