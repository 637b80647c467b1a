"""A spooled event can never hang a hook: its own event is safe first, transcripts are read without blocking,
replay has a time budget, and an entry that times out twice goes to the quarantine with a log line.

Real `codeoid-hook` processes against a real store, a real FIFO as the hostile transcript path, and a real
process holding the store's write lock while events are spooled.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_hook_faults import (
    REGISTERED_TIMEOUT_SECONDS,
    StoreLock,
    assert_nothing_swallowed,
    fire,
    lock_store,
    log_text,
    prompt,
    quarantined,
    query,
    spool_entries,
)


@pytest.fixture
def locks() -> Iterator[list[StoreLock]]:
    """Locks taken by a test are always let go, even when the test fails half-way."""
    taken: list[StoreLock] = []
    yield taken
    for lock in taken:
        lock.kill()


def stop_event(transcript: Path, text: str) -> dict[str, Any]:
    return {"session_id": "cc-1", "hook_event_name": "Stop", "transcript_path": str(transcript),
            "last_assistant_message": text, "stop_hook_active": False}


def fire_in_time(event: str, payload: dict[str, Any], project: Path) -> None:
    """A hook that takes longer than Claude Code's registered timeout is killed, and with it its event."""
    fire(event, payload, cwd=project, timeout=REGISTERED_TIMEOUT_SECONDS)


def test_a_fifo_transcript_spooled_while_locked_hangs_no_later_hook(codeoid_home: Path, project: Path,
                                                                   locks: list[StoreLock]) -> None:
    fifo = project.parent / "transcript.fifo"
    os.mkfifo(fifo)  # nobody ever writes it: a blocking open() waits forever
    fire_in_time("UserPromptSubmit", prompt("p-0"), project)
    lock = lock_store(locks, codeoid_home, seconds=30)
    fire("Stop", stop_event(fifo, "the answer, spooled"), cwd=project, env={"CODEOID_BUSY_TIMEOUT_MS": "100"})
    lock.release()
    assert len(spool_entries(codeoid_home)) == 1

    fire_in_time("UserPromptSubmit", prompt("p-1"), project)
    fire_in_time("UserPromptSubmit", prompt("p-2"), project)

    assert spool_entries(codeoid_home) == []
    rows = query(codeoid_home, "SELECT kind, coalesce(prompt_id, text) FROM episodes ORDER BY id")
    assert [key for _, key in rows] == ["p-0", "the answer, spooled", "p-1", "p-2"]
    assert_nothing_swallowed(codeoid_home)


def test_a_fifo_or_device_transcript_is_skipped_not_waited_on(codeoid_home: Path, project: Path) -> None:
    fifo = project.parent / "live.fifo"
    os.mkfifo(fifo)
    fire_in_time("UserPromptSubmit", prompt("p-0"), project)
    fire_in_time("Stop", stop_event(fifo, "answer one"), project)
    fire_in_time("UserPromptSubmit", prompt("p-1"), project)
    fire_in_time("Stop", stop_event(Path("/dev/zero"), "answer two"), project)

    texts = [row[0] for row in query(codeoid_home, "SELECT text FROM episodes WHERE kind = 'assistant' ORDER BY id")]
    assert texts == ["answer one", "answer two"]


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def stale_claim(entry: Path, name: str) -> Path:
    """`entry` as a replayer killed mid-apply leaves it: claimed by a dead pid, a while ago."""
    claimed = entry.with_name(f"{name}.{dead_pid()}.claimed")
    entry.rename(claimed)
    old = time.time() - 120
    os.utime(claimed, (old, old))
    return claimed


def test_an_entry_whose_replay_dies_twice_goes_to_the_quarantine(codeoid_home: Path, project: Path,
                                                                 locks: list[StoreLock]) -> None:
    fire("UserPromptSubmit", prompt("p-0"), cwd=project)
    lock = lock_store(locks, codeoid_home, seconds=30)
    for key in ("p-1", "p-2"):
        fire("UserPromptSubmit", prompt(key), cwd=project, env={"CODEOID_BUSY_TIMEOUT_MS": "100"})
    lock.release()
    first, second = spool_entries(codeoid_home)
    # p-1's replayer died once already (its entry came back marked), and its second replayer died too.
    marked = first.name.replace(".event.json", ".t1.event.json")
    body = first.read_bytes()
    stale_claim(first, marked)
    # p-2's replayer died once: it gets one more try.
    stale_claim(second, second.name)

    fire_in_time("UserPromptSubmit", prompt("p-3"), project)

    assert spool_entries(codeoid_home) == []
    assert query(codeoid_home, "SELECT prompt_id FROM episodes ORDER BY id") == [("p-0",), ("p-2",), ("p-3",)]
    (kept,) = quarantined(codeoid_home, ".timedout")
    assert kept.read_bytes() == body
    text = log_text(codeoid_home)
    assert f"{marked}: its replayer died before finishing it, a second time; moved to the quarantine" in text
    assert f"{second.name}: its replayer died before finishing it; back in the spool" in text
