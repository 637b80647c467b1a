"""Build the `lines` set's history: three sessions of real work on a Flask checkout (`steps.py`), for tuning which
lines a recall hit shows.

Every tool output is real: the script clones Flask from the local mirror into a scratch directory, plants a
teammate's commits, and runs each step there (`pytest`, `git log`, `grep`, `cat`, a load check through Flask's test
client) with the Python of `--python` (a venv with Flask installed editable from the checkout, and pytest < 8,
which Flask's own test suite needs). A Bash output is stored as it was printed; `through_mcp.py prepare --set
lines` passes each successful one through the installed `codeoid-compress`, as the Bash rewrite would, so the
compressed view and its raw output are whatever today's rules make of it.

    python benchmarks/retrieval/lines/make_corpus.py --mirror /work/.mirror/pallets+flask/repo \\
        --python /tmp/fvenv/bin/python
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from steps import SESSIONS

HERE = Path(__file__).resolve().parent
WORK = Path("/tmp/codeoid-lines-set/flask")
BASE = "2ac89889f4cc330eabd50f295dcef02828522c69"
ENV = {**os.environ, "GIT_AUTHOR_NAME": "Dana Lee", "GIT_AUTHOR_EMAIL": "dana@example.org",
       "GIT_COMMITTER_NAME": "Dana Lee", "GIT_COMMITTER_EMAIL": "dana@example.org", "PYTHONDONTWRITEBYTECODE": "1",
       "NO_COLOR": "1", "COLUMNS": "120", "GIT_PAGER": "cat"}
TEAMMATE = {"GIT_AUTHOR_NAME": "Sam Ortiz", "GIT_AUTHOR_EMAIL": "sam@example.org",
            "GIT_COMMITTER_NAME": "Sam Ortiz", "GIT_COMMITTER_EMAIL": "sam@example.org"}


def sh(command: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(command, shell=True, cwd=WORK, capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=600)
    return done.returncode, done.stdout + (done.stderr if done.stderr else "")


def structured_patch(old: str, new: str) -> list[dict[str, Any]]:
    hunks = []
    lines_old, lines_new = old.split("\n"), new.split("\n")
    for group in difflib.SequenceMatcher(a=lines_old, b=lines_new).get_grouped_opcodes(3):
        first, last = group[0], group[-1]
        lines = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in lines_old[i1:i2]]
            if tag in ("replace", "delete"):
                lines += ["-" + line for line in lines_old[i1:i2]]
            if tag in ("replace", "insert"):
                lines += ["+" + line for line in lines_new[j1:j2]]
        hunks.append({"oldStart": first[1] + 1, "oldLines": last[2] - first[1], "newStart": first[3] + 1,
                      "newLines": last[4] - first[3], "lines": lines})
    return hunks


def run_step(step: dict[str, Any]) -> dict[str, Any] | None:
    """One scripted step, done for real; the episode it leaves (None for set-up no session sees)."""
    kind = step["do"]
    if kind == "plant":
        path = WORK / step["path"]
        text = path.read_text()
        assert step["old"] in text, step
        path.write_text(text.replace(step["old"], step["new"], 1))
        subprocess.run(["git", "commit", "-qam", step["message"]], cwd=WORK, env={**ENV, **TEAMMATE}, check=True)
        return None
    if kind == "shell":
        code, out = sh(step["command"].format(here=HERE))
        assert code == 0, out
        return None
    if kind in ("user", "assistant"):
        return {"kind": kind, "text": step["text"]}
    if kind == "bash":
        code, out = sh(step["command"])
        if step.get("expect") is not None:
            assert code == step["expect"], (step["command"], code, out[-2000:])
        episode: dict[str, Any] = {"kind": "tool", "tool": "Bash", "input": {"command": step["command"]}}
        if code:
            episode["error"] = f"Exit code {code}\n{out.rstrip()}"
        else:
            episode["response"] = {"stdout": out.rstrip("\n"), "stderr": "", "interrupted": False}
        return episode
    if kind == "read":
        path = WORK / step["path"]
        lines = path.read_text().split("\n")
        start, limit = step.get("offset"), step.get("limit")
        chosen = lines[(start or 1) - 1:(start or 1) - 1 + limit] if limit else lines[(start or 1) - 1:]
        tool_input: dict[str, Any] = {"file_path": str(path)}
        if start:
            tool_input["offset"] = start
        if limit:
            tool_input["limit"] = limit
        return {"kind": "tool", "tool": "Read", "input": tool_input,
                "response": {"type": "text", "file": {"filePath": str(path), "content": "\n".join(chosen),
                                                      "numLines": len(chosen), "startLine": start or 1,
                                                      "totalLines": len(lines)}}}
    if kind == "edit":
        path = WORK / step["path"]
        text = path.read_text()
        assert step["old"] in text, step
        new = text.replace(step["old"], step["new"], 1)
        path.write_text(new)
        return {"kind": "tool", "tool": "Edit",
                "input": {"file_path": str(path), "old_string": step["old"], "new_string": step["new"]},
                "response": {"filePath": str(path), "oldString": step["old"], "newString": step["new"],
                             "structuredPatch": structured_patch(text, new), "userModified": False}}
    raise ValueError(kind)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror/pallets+flask/repo"))
    parser.add_argument("--python", type=Path, required=True, help="a venv's python with Flask and pytest < 8")
    args = parser.parse_args()
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(args.mirror), str(WORK)], check=True)
    subprocess.run(["git", "checkout", "-q", "-B", "main", BASE], cwd=WORK, check=True)
    subprocess.run([str(args.python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(WORK)], check=True)
    ENV["PATH"] = f"{args.python.parent}{os.pathsep}{ENV['PATH']}"
    episodes = []
    for number, session in enumerate(SESSIONS, 1):
        at = 0.0
        for step in session["steps"]:
            episode = run_step(step)
            if episode is None:
                continue
            at += 40 if episode["kind"] == "tool" else 25
            key = f"s{number:02d}.{step['key']}" if step.get("key") else f"s{number:02d}.{len(episodes):03d}"
            episodes.append({"key": key, "session": f"s{number:02d}", "days_ago": session["days_ago"],
                             "hour": session["hour"], "seconds": at, **episode})
        print(f"session {number}: {sum(e['session'] == f's{number:02d}' for e in episodes)} episodes", flush=True)
    keys = [e["key"] for e in episodes]
    assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]
    with gzip.open(HERE / "corpus.jsonl.gz", "wt") as out:
        for episode in episodes:
            out.write(json.dumps(episode, sort_keys=True) + "\n")
    print(f"{len(episodes)} episodes in {len(SESSIONS)} sessions", file=sys.stderr)


if __name__ == "__main__":
    main()
