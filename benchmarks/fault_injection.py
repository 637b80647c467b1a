"""Fault injection: does codeoid keep every event it is sent, whatever goes wrong? One command, one table.

    .venv/bin/python benchmarks/fault_injection.py [--writers 8 --events 250] [--markdown]

Each scenario runs the real `codeoid-hook` executable in fresh processes against a fresh data dir, then counts,
for the events it sent: how many are in the store, how many wait in the spool (kept, to be replayed), how many
were moved to the quarantine (kept, not applied), and how many are lost, split into those the loss ring counted
and those nobody counted (which must be 0). Scenarios:

- concurrency: W writers x N events at once, every key sent twice (duplicates must not become episodes);
- hostile input: malformed JSON, wrong types, lone surrogates, 10 MB fields, FIFO and device transcripts;
- kill -9: hooks killed at random moments mid-write (a killed hook's own event may be gone, as it would be for
  Claude Code; what matters is that the store stays intact and nothing else is lost);
- poisoned spool: Stop events with a FIFO transcript spooled while the store is locked, then normal traffic;
- full disk: the data dir on a 16 MB tmpfs, filled, then more events than the spool reserve holds (needs root
  to mount; reported as skipped otherwise).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOOK = str(Path(sys.executable).with_name("codeoid-hook"))
HOOK_TIMEOUT = 10  # what Claude Code gives a hook


@dataclass
class Tally:
    scenario: str
    sent: int = 0
    stored: int = 0
    spooled: int = 0
    quarantined: int = 0
    counted_lost: int = 0
    killed: int = 0
    slowest_hook_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def uncounted_lost(self) -> int:
        return max(0, self.sent - self.killed - self.stored - self.spooled - self.quarantined - self.counted_lost)


def fire(home: Path, event: str, payload: dict[str, Any] | bytes, cwd: Path, **env: str) -> float:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    started = time.monotonic()
    subprocess.run([HOOK, event], input=data, capture_output=True, cwd=cwd, timeout=HOOK_TIMEOUT * 3,
                   env={**os.environ, "CODEOID_HOME": str(home), **env})
    return time.monotonic() - started


def tool_call(key: str, output: str) -> dict[str, Any]:
    return {"session_id": "cc-1", "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": key,
            "tool_input": {"command": f"echo {key}"},
            "tool_response": {"stdout": output, "stderr": "", "interrupted": False}}


def prompt(key: str, **extra: Any) -> dict[str, Any]:
    return {"session_id": "cc-1", "hook_event_name": "UserPromptSubmit", "prompt": f"prompt {key}",
            "prompt_id": key, **extra}


def count(home: Path, tally: Tally, keys: set[str]) -> None:
    """Fill in where each sent key ended up."""
    with closing(sqlite3.connect(home / "store.db")) as db:
        stored = {row[0] for row in db.execute("SELECT coalesce(tool_use_id, prompt_id, message_id) FROM episodes")}
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        duplicates = db.execute("SELECT count(*) - count(DISTINCT coalesce(tool_use_id, prompt_id, message_id))"
                                " FROM episodes").fetchone()[0]
    if duplicates:
        tally.notes.append(f"{duplicates} duplicate episodes")
    tally.stored = len(keys & stored)

    def mentions(directory: Path) -> set[str]:
        found = set()
        for path in directory.glob("*") if directory.is_dir() else []:
            body = path.read_bytes()
            found |= {key for key in keys - stored if key.encode() in body}
        return found

    spooled = mentions(home / "spool")
    tally.spooled = len(spooled)
    tally.quarantined = len(mentions(home / "quarantine") - spooled)
    ring = home / "logs" / "lost.ring"
    if ring.exists():
        header = ring.read_bytes()[:64]
        tally.counted_lost = int(header.split()[1]) if header.startswith(b"codeoid-lost ") else 0


def project_dir(root: Path) -> Path:
    project = root / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def concurrency(root: Path, writers: int, events: int) -> Tally:
    home, project, tally = root / "home", project_dir(root), Tally("concurrency")
    keys = [f"c-{writer}-{index}" for writer in range(writers) for index in range(events)]

    def work(writer: int) -> float:
        mine = [key for key in keys if key.startswith(f"c-{writer}-")]
        order = mine + random.sample(mine, len(mine) // 4)  # a quarter sent twice, later
        return max(fire(home, "PostToolUse", tool_call(key, f"out {key}"), project) for key in order)

    with ThreadPoolExecutor(writers) as pool:
        tally.slowest_hook_s = max(pool.map(work, range(writers)))
    fire(home, "UserPromptSubmit", prompt("c-flush"), project)  # the next writer replays whatever was spooled
    tally.sent = len(keys)
    count(home, tally, set(keys))
    return tally


def hostile(root: Path) -> Tally:
    home, project, tally = root / "home", project_dir(root), Tally("hostile input")
    fifo = root / "transcript.fifo"
    os.mkfifo(fifo)
    valid: list[tuple[str, dict[str, Any] | bytes, str]] = [
        ("UserPromptSubmit", prompt("h-surrogate", prompt="half \ud800 a pair"), "h-surrogate"),
        ("UserPromptSubmit", {**prompt("h-types"), "prompt": ["not", "a", "string"]}, "h-types"),
        ("PostToolUse", tool_call("h-10mb", "x" * 10_000_000), "h-10mb"),
        ("PostToolUse", {**tool_call("h-binary", ""), "tool_response": {"stdout": "\x00\x01\xff" * 1000}}, "h-binary"),
        ("UserPromptSubmit", prompt("h-fifo", transcript_path=str(fifo)), "h-fifo"),
        ("UserPromptSubmit", prompt("h-dev", transcript_path="/dev/zero"), "h-dev"),
    ]
    garbage = [b"{not json", b"[1, 2, 3]", b"null", b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe\x00garbage"]
    slowest = 0.0
    for event, payload, _ in valid:
        data = json.dumps(payload, ensure_ascii=True).encode() if isinstance(payload, dict) else payload
        slowest = max(slowest, fire(home, event, data, project))
    for index, body in enumerate(garbage):
        slowest = max(slowest, fire(home, "UserPromptSubmit", body + f" h-garbage-{index}".encode(), project))
    tally.slowest_hook_s = slowest
    keys = {key for _, _, key in valid} | {f"h-garbage-{index}" for index in range(len(garbage))}
    tally.sent = len(keys)
    count(home, tally, keys)
    return tally


def kill_nine(root: Path, rounds: int) -> Tally:
    home, project, tally = root / "home", project_dir(root), Tally("kill -9 mid-write")
    fire(home, "UserPromptSubmit", prompt("k-0"), project)
    keys = {"k-0"}
    for index in range(rounds):
        key = f"k-{index + 1}"
        keys.add(key)
        process = subprocess.Popen([HOOK, "PostToolUse"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, cwd=project,
                                   env={**os.environ, "CODEOID_HOME": str(home)})
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(tool_call(key, "y" * 2_000_000)).encode())
            process.stdin.close()
        except BrokenPipeError:
            pass
        time.sleep(random.uniform(0.0, 0.5))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            tally.killed += 1
        process.wait()
    fire(home, "UserPromptSubmit", prompt("k-last"), project)
    keys.add("k-last")
    tally.sent = len(keys)
    count(home, tally, keys)
    # A killed hook's own event may be gone (or may have landed): count only what was not killed as lost.
    tally.killed = max(0, min(tally.killed, tally.sent - tally.stored - tally.spooled - tally.quarantined))
    return tally


def poisoned_spool(root: Path, entries: int, after: int) -> Tally:
    home, project, tally = root / "home", project_dir(root), Tally("poisoned spool")
    fifo = root / "transcript.fifo"
    os.mkfifo(fifo)
    fire(home, "UserPromptSubmit", prompt("s-0"), project)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "db.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.read(); db.execute('COMMIT')",
         str(home / "store.db")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    keys = {"s-0"}
    for index in range(entries):
        key = f"s-stop-{index}"
        keys |= {key, f"s-turn-{index}"}
        fire(home, "UserPromptSubmit", prompt(f"s-turn-{index}"), project, CODEOID_BUSY_TIMEOUT_MS="50")
        fire(home, "Stop", {"session_id": "cc-1", "hook_event_name": "Stop", "transcript_path": str(fifo),
                            "last_assistant_message": key}, project, CODEOID_BUSY_TIMEOUT_MS="50")
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait()
    slowest = 0.0
    for index in range(after):
        key = f"s-after-{index}"
        keys.add(key)
        slowest = max(slowest, fire(home, "UserPromptSubmit", prompt(key), project))
    tally.slowest_hook_s = slowest
    tally.sent = len(keys)
    with closing(sqlite3.connect(home / "store.db")) as db:
        texts = {row[0] for row in db.execute("SELECT text FROM episodes WHERE kind = 'assistant'")}
    count(home, tally, keys)
    tally.stored += len({key for key in keys if key.startswith("s-stop-")} & texts)
    return tally


def full_disk(root: Path, events: int) -> Tally:
    tally = Tally("full disk (16 MB tmpfs)")
    mountpoint = root / "disk"
    mountpoint.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mountpoint)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        tally.notes.append(f"skipped: cannot mount a tmpfs ({mounted.stderr.strip()})")
        return tally
    try:
        home, project = mountpoint / "home", project_dir(root)
        for index in range(3):
            fire(home, "UserPromptSubmit", prompt(f"d-{index}"), project)
        with open(mountpoint / "filler", "wb", buffering=0) as filler:
            while True:
                try:
                    filler.write(b"\0" * 65536)
                except OSError as error:
                    assert error.errno == errno.ENOSPC
                    break
        keys = {f"d-{index}" for index in range(3)}
        slowest = 0.0
        for index in range(events):
            key = f"d-full-{index}"
            keys.add(key)
            slowest = max(slowest, fire(home, "PostToolUse", tool_call(key, key + " " + "z" * 190_000), project))
        tally.slowest_hook_s = slowest
        tally.sent = len(keys)
        count(home, tally, keys)
        tally.notes.append("lost only with no room even for the spool, and every one counted in the loss ring")
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--events", type=int, default=250, help="events per writer in the concurrency scenario")
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    random.seed(14)
    scenarios = [
        lambda root: concurrency(root, args.writers, args.events),
        hostile,
        lambda root: kill_nine(root, args.kills),
        lambda root: poisoned_spool(root, entries=5, after=20),
        lambda root: full_disk(root, events=60),
    ]
    tallies = []
    for scenario in scenarios:
        root = Path(tempfile.mkdtemp(prefix="codeoid-faults-"))
        try:
            tallies.append(scenario(root))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(tallies[-1], file=sys.stderr)
    header = ["scenario", "sent", "stored", "spooled", "quarantined", "lost (counted)", "lost (uncounted)",
              "killed mid-write", "slowest hook s"]
    rows = [[t.scenario, t.sent, t.stored, t.spooled, t.quarantined, t.counted_lost, t.uncounted_lost, t.killed,
             f"{t.slowest_hook_s:.2f}"] for t in tallies]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("| --- |" + " ---: |" * (len(header) - 1))
        for row in rows:
            print("| " + " | ".join(str(cell) for cell in row) + " |")
    else:
        for row in [header, *rows]:
            print("  ".join(f"{cell!s:>16}" for cell in row))
    for tally in tallies:
        for note in tally.notes:
            print(f"{tally.scenario}: {note}")


if __name__ == "__main__":
    main()
