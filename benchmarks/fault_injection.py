"""Fault injection: does codeoid keep every event it is sent, whatever goes wrong? One command, one table.

    .venv/bin/python benchmarks/fault_injection.py [--writers 8 --events 250] [--markdown]

Each scenario runs the real `codeoid-hook` executable in fresh processes against a fresh data dir, then accounts
for every event it sent, by its id (tool_use_id, prompt_id, or the assistant text): in the store, waiting in the
spool (an entry file, never an unfinished `.tmp`), moved to the quarantine (kept, not applied), lost and named in
the loss ring, or sent to a hook the scenario killed that never landed it (as Claude Code's timeout would); an
event in none of these is unaccounted, which must be 0. Every hook that was not killed must exit 0 with stdout
empty or one JSON object (what Claude Code parses); any other is counted. Scenarios:

- concurrency: W writers x N events at once, every key sent twice (duplicates must not become episodes);
- hostile input: malformed JSON, wrong types, lone surrogates, 10 MB fields, FIFO and device transcripts;
- kill -9: hooks killed at random moments mid-write (a killed hook's own event may be gone, as it would be for
  Claude Code; what matters is that the store stays intact and nothing else is lost);
- poisoned spool: Stop events with a FIFO transcript spooled while the store is locked, then normal traffic;
- full disk: the data dir on a 16 MB tmpfs, filled, then more events than the spool reserve holds (needs root
  to mount; reported as skipped otherwise); then the disk freed and traffic resumed: the spooled events must be
  replayed into the store.
A last check acts as a second local user (uid 65534 through setpriv, as root): it must not read or write any file
of the data dir, nor reach the local Chroma server or the memory service.
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
    killed_not_landed: int = 0  # sent to a hook the scenario killed, and in none of the places above
    killed: int = 0  # hooks killed (their events may have landed all the same)
    unaccounted: list[str] = field(default_factory=list)
    bad_exits: int = 0  # a hook that was not killed and exited non-zero
    bad_stdout: int = 0  # a hook whose stdout was neither empty nor one JSON object
    hooks: int = 0
    slowest_hook_s: float = 0.0
    notes: list[str] = field(default_factory=list)


_outcomes: list[tuple[int, bytes]] = []  # (exit status, stdout) of every hook run to its end


def fire(home: Path, event: str, payload: dict[str, Any] | bytes, cwd: Path, **env: str) -> float:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    started = time.monotonic()
    done = subprocess.run([HOOK, event], input=data, capture_output=True, cwd=cwd, timeout=HOOK_TIMEOUT * 3,
                          env={**os.environ, "CODEOID_HOME": str(home), **env})
    _outcomes.append((done.returncode, done.stdout))
    return time.monotonic() - started


def judge_hooks(tally: Tally) -> None:
    """Exit status 0 and stdout empty or one JSON object, for every hook run to its end since the last call."""
    for status, stdout in _outcomes:
        tally.hooks += 1
        tally.bad_exits += status != 0
        if stdout.strip():
            try:
                tally.bad_stdout += not isinstance(json.loads(stdout), dict)
            except ValueError:
                tally.bad_stdout += 1
    _outcomes.clear()


def tool_call(key: str, output: str) -> dict[str, Any]:
    return {"session_id": "cc-1", "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": key,
            "tool_input": {"command": f"echo {key}"},
            "tool_response": {"stdout": output, "stderr": "", "interrupted": False}}


def prompt(key: str, **extra: Any) -> dict[str, Any]:
    return {"session_id": "cc-1", "hook_event_name": "UserPromptSubmit", "prompt": f"prompt {key}",
            "prompt_id": key, **extra}


def count(home: Path, tally: Tally, keys: set[str], killed: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """Account for each sent key, by id, in the first place that holds it; `killed` are the keys sent to hooks the
    scenario killed. Also judges the hooks run since the last count."""
    with closing(sqlite3.connect(home / "store.db")) as db:
        stored = {row[0] for row in db.execute("SELECT coalesce(tool_use_id, prompt_id, message_id) FROM episodes")}
        stored |= {row[0] for row in db.execute("SELECT text FROM episodes WHERE kind = 'assistant'")}
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        duplicates = db.execute("SELECT count(*) - count(DISTINCT coalesce(tool_use_id, prompt_id, message_id))"
                                " FROM episodes").fetchone()[0]
    if duplicates:
        tally.notes.append(f"{duplicates} duplicate episodes")

    def mentions(directory: Path, suffixes: tuple[str, ...] | None, among: set[str]) -> set[str]:
        found: set[str] = set()
        for path in sorted(directory.glob("*")) if directory.is_dir() else []:
            if suffixes is not None and not path.name.endswith(suffixes):
                continue
            body = path.read_bytes()
            found |= {key for key in among if key.encode() in body}
        return found

    left = keys - stored
    spooled = mentions(home / "spool", (".event.json", ".claimed"), left)  # an unfinished .tmp holds no event
    quarantined = mentions(home / "quarantine", None, left - spooled)
    ring = home / "logs" / "lost.ring"
    named = set()
    if ring.exists():
        from codeoid.capture import loss_ring

        _, lines = loss_ring.losses(str(ring))
        named = {key for key in left - spooled - quarantined for line in lines if f" {key} " in f" {line} "}
    rest = left - spooled - quarantined - named
    tally.stored, tally.spooled, tally.quarantined = len(keys & stored), len(spooled), len(quarantined)
    tally.counted_lost, tally.killed_not_landed = len(named), len(rest & killed)
    tally.unaccounted = sorted(rest - killed)
    judge_hooks(tally)


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
    killed: set[str] = set()
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
            killed.add(key)
        process.wait()
        if key not in killed:
            _outcomes.append((process.returncode, b""))
    fire(home, "UserPromptSubmit", prompt("k-last"), project)
    keys.add("k-last")
    # Later (past the grace of an unfinished spool write): gc sweeps what killed writers left, counting each.
    for path in (home / "spool").glob("*.tmp"):
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    swept = subprocess.run([str(Path(HOOK).with_name("codeoid")), "gc", "--apply"], capture_output=True, text=True,
                           cwd=project, env={**os.environ, "CODEOID_HOME": str(home), "CODEOID_VECTOR": "off"})
    if swept.returncode != 0:
        tally.notes.append(f"gc failed: {swept.stderr.strip()}")
    tally.sent = len(keys)
    count(home, tally, keys, killed)
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
    count(home, tally, keys)
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
        freed = Tally("full disk, then freed")
        (mountpoint / "filler").unlink()
        for index in range(5):
            key = f"d-after-{index}"
            keys.add(key)
            freed.slowest_hook_s = max(freed.slowest_hook_s, fire(home, "UserPromptSubmit", prompt(key), project))
        freed.sent = len(keys)
        count(home, freed, keys)
        if freed.spooled:
            freed.notes.append(f"{freed.spooled} still spooled after the disk was freed")
        tally.notes.append(f"then freed: {freed.stored} stored, {freed.spooled} spooled")
        _extra.append(freed)
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False)
    return tally


_extra: list[Tally] = []  # rows a scenario adds after its own (the full disk, freed)


def second_user(root: Path) -> list[tuple[str, str]]:
    """As uid 65534, try every way into a data dir with a running local Chroma server and memory service."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return [("second local user", "skipped: needs root and setpriv")]
    home, project = root / "home", project_dir(root)
    fire(home, "UserPromptSubmit", prompt("u-0"), project)
    env = {**os.environ, "CODEOID_HOME": str(home)}
    started = subprocess.run([sys.executable, "-c", "from codeoid.memory import chroma_server; "
                              "from codeoid.service import lifecycle; "
                              "print(chroma_server.ensure_server().socket); print(lifecycle.ensure_service().socket)"],
                             capture_output=True, text=True, env=env, timeout=300)
    if started.returncode != 0:
        return [("second local user", f"skipped: the servers did not start ({started.stderr.strip()[-200:]})")]
    chroma_socket, service_socket = started.stdout.split()
    try:
        for directory in [home, *[path for path in home.rglob("*") if path.is_dir()]]:
            directory.chmod(0o755)  # even with every directory opened up, each file and socket must hold
        files = [str(path) for path in sorted(home.rglob("*")) if path.is_file()]
        probe = (
            "import json, socket\n"
            "tried = []\n"
            f"for path in {files!r}:\n"
            "    for mode in ('rb', 'ab'):\n"
            "        try:\n"
            "            open(path, mode).close(); tried.append([f'{mode} ' + path, 'OPENED'])\n"
            "        except OSError as error:\n"
            "            tried.append([f'{mode} ' + path, type(error).__name__])\n"
            f"for path in {[chroma_socket, service_socket]!r}:\n"
            "    try:\n"
            "        with socket.socket(socket.AF_UNIX) as client: client.connect(path)\n"
            "        tried.append(['connect ' + path, 'CONNECTED'])\n"
            "    except OSError as error:\n"
            "        tried.append(['connect ' + path, type(error).__name__])\n"
            "print(json.dumps(tried))\n")
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                               "-c", probe], capture_output=True, text=True, timeout=120, cwd="/")
        tried = json.loads(done.stdout) if done.returncode == 0 else [["probe", done.stderr.strip()[-200:]]]
        import psutil

        ports = [connection.laddr.port for process in psutil.process_iter(["cmdline"])
                 if any(str(home) in part for part in (process.info["cmdline"] or []))
                 for connection in process.net_connections("inet")]
        tried.append(["TCP ports of the data dir's processes", f"{len(ports)} open"])
        return [(what, result) for what, result in tried]
    finally:
        subprocess.run([sys.executable, "-c", "from codeoid.memory import chroma_server; "
                        "from codeoid.service import lifecycle; chroma_server.stop_server(); lifecycle.stop_service()"],
                       env=env, timeout=120, capture_output=True)


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
            tallies += _extra
            _extra.clear()
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(tallies[-1], file=sys.stderr)
    root = Path(tempfile.mkdtemp(prefix="codeoid-faults-"))
    try:
        access = second_user(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    header = ["scenario", "sent", "stored", "spooled", "quarantined", "lost, counted by id",
              "killed hook, not landed", "unaccounted", "hooks killed", "bad exit / stdout", "slowest hook s"]
    rows = [[t.scenario, t.sent, t.stored, t.spooled, t.quarantined, t.counted_lost, t.killed_not_landed,
             len(t.unaccounted), t.killed, f"{t.bad_exits} / {t.bad_stdout} of {t.hooks}", f"{t.slowest_hook_s:.2f}"]
            for t in tallies]
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
        if tally.unaccounted:
            print(f"{tally.scenario}: UNACCOUNTED {tally.unaccounted[:20]}")
    reached = [(what, result) for what, result in access if result in ("OPENED", "CONNECTED")
               or (what.startswith("TCP") and not result.startswith("0 "))]
    print(f"\nsecond local user (uid 65534): {len(access)} attempts (every file of the data dir opened for reading "
          f"and for writing, both sockets, the TCP ports), {len(reached)} got through" + (
              f": {reached}" if reached else "") + (f"; {access[0][1]}" if access and access[0][1].startswith("skip")
                                                    else ""))
    if any(t.unaccounted or t.bad_exits or t.bad_stdout for t in tallies) or reached:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
