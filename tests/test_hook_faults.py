"""The hooks never break the user's session and never lose an event, whatever goes wrong.

Everything here runs the real `codeoid-hook` executable in fresh processes against a real SQLite store: malformed
input for every event, many hooks at once, a store locked past the busy timeout, a corrupt database, a full disk,
a damaged spool, and a hostile umask. After each fault the store is checked with SQL.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import HookResult, executable, fill_disk, run_hook

EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "StopFailure",
          "SubagentStop", "PreCompact", "SessionEnd"]
REGISTERED_TIMEOUT_SECONDS = 10  # what hooks/hooks.json and the settings route register for these events
TEN_MB = 10 * 1024 * 1024
# A failure a hook swallowed instead of storing, spooling or quarantining the event.
FAILURE_MARKS = ("unexpected failure", "event lost", "Traceback")


# ---------------------------------------------------------------- helpers


def fire(event: str, payload: dict[str, Any] | bytes | str, **kwargs: Any) -> HookResult:
    """Run one hook and check the contract with the session: exit 0, nothing on stdout, nothing on stderr."""
    result = run_hook(event, payload, **kwargs)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), (event, result.stderr[-2000:])
    return result


def timed_fire(event: str, payload: dict[str, Any], **kwargs: Any) -> tuple[float, float]:
    """Fire a hook; return when it started and how long it took (wall clock)."""
    started = time.time()
    clock = time.monotonic()
    fire(event, payload, **kwargs)
    return started, time.monotonic() - clock


def query(home: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the store with plain sqlite3 (no migrations, no replay, no quarantine: only what is committed)."""
    with closing(sqlite3.connect(home / "store.db")) as db:
        return db.execute(sql, params).fetchall()


def log_text(home: Path) -> str:
    path = home / "logs" / "codeoid.log"
    return path.read_text(errors="replace") if path.exists() else ""


def assert_nothing_swallowed(home: Path) -> None:
    text = log_text(home)
    for mark in FAILURE_MARKS:
        assert mark not in text, text[-3000:]


def spool_entries(home: Path) -> list[Path]:
    spool = home / "spool"
    if not spool.exists():
        return []
    return sorted(path for path in spool.iterdir() if path.name.endswith((".event.json", ".claimed")))


def quarantined(home: Path, suffix: str = "") -> list[Path]:
    directory = home / "quarantine"
    if not directory.exists():
        return []
    return sorted(path for path in directory.iterdir() if path.name.endswith(suffix))


def prompt(prompt_id: str, text: str | None = None, session: str = "cc-1", **extra: Any) -> dict[str, Any]:
    return {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text or f"prompt {prompt_id}",
            "prompt_id": prompt_id, **extra}


def tool_call(tool_use_id: str, output: str | None = None, session: str = "cc-1", **extra: Any) -> dict[str, Any]:
    return {"session_id": session, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": tool_use_id,
            "tool_input": {"command": f"echo {tool_use_id}"},
            "tool_response": {"stdout": output if output is not None else f"out {tool_use_id}", "stderr": "",
                              "interrupted": False}, **extra}


class StoreLock:
    """Another process holding `BEGIN EXCLUSIVE` on the store until told to let go (or `seconds` pass)."""

    SCRIPT = (
        "import select, sqlite3, sys, time\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN EXCLUSIVE')\n"
        "print('locked', flush=True)\n"
        "deadline = time.monotonic() + float(sys.argv[2])\n"
        "while time.monotonic() < deadline and not select.select([sys.stdin], [], [], 0.05)[0]:\n"
        "    pass\n"
        "db.execute('COMMIT')\n"
        "db.close()\n"
        "print('released', flush=True)\n"
    )

    def __init__(self, database: Path, seconds: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", self.SCRIPT, str(database), str(seconds)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "locked"
        self.until = time.monotonic() + seconds - 0.2  # the holder starts its clock about now
        self.released_at: float | None = None

    def holding(self) -> bool:
        """Still held now (neither told to let go nor past its time)."""
        return self.process.poll() is None and time.monotonic() < self.until

    def wait_released(self) -> float:
        """Wait for the holder to commit and exit; return the wall-clock time it let go."""
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "released"
        self.released_at = time.time()
        assert self.process.wait(timeout=30) == 0
        return self.released_at

    def release(self) -> float:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        return self.wait_released()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def store_lock() -> Iterator[list[StoreLock]]:
    """Locks taken by a test are always let go, even when the test fails half-way."""
    locks: list[StoreLock] = []
    yield locks
    for lock in locks:
        lock.kill()


def lock_store(locks: list[StoreLock], home: Path, seconds: float) -> StoreLock:
    lock = StoreLock(home / "store.db", seconds)
    locks.append(lock)
    return lock


# ---------------------------------------------------------------- 1. malformed input, every event


UNREADABLE_INPUTS = {
    "invalid-json": b'{"session_id": "cc-1", "prompt": "unterminated',
    "json-array": b'[{"session_id": "cc-1"}, 2, 3]',
    "json-string": b'"just a string"',
    "json-null": b"null",
    "nested-too-deep": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("event", EVENTS)
def test_unreadable_input_is_quarantined_and_logged_for_every_event(codeoid_home: Path, event: str) -> None:
    for name, raw in UNREADABLE_INPUTS.items():
        before = set(quarantined(codeoid_home))
        fire(event, raw)
        new = set(quarantined(codeoid_home)) - before
        assert len(new) == 1, name
        kept = new.pop()
        assert kept.read_bytes() == raw, name
        assert f"{event}: " in log_text(codeoid_home) and f"input kept as quarantine/{kept.name}" in log_text(
            codeoid_home), name
    for raw in (b"", b"  \n\t "):
        fire(event, raw)
    assert "empty stdin; nothing stored" in log_text(codeoid_home)
    assert len(quarantined(codeoid_home)) == len(UNREADABLE_INPUTS)  # empty input is not worth keeping
    assert not (codeoid_home / "store.db").exists() or query(codeoid_home, "SELECT count(*) FROM episodes") == [(0,)]
    assert_nothing_swallowed(codeoid_home)


WRONG_TYPES: dict[str, dict[str, Any]] = {
    "SessionStart": {"session_id": "cc-types", "source": ["startup"], "model": 5, "transcript_path": {"x": 1},
                     "cwd": 7},
    "UserPromptSubmit": {"session_id": "cc-types", "prompt": ["not", "a", "string"], "prompt_id": "p-types",
                         "source": 3},
    "PostToolUse": {"session_id": "cc-types", "tool_name": "Bash", "tool_use_id": "t-types", "tool_input": "ls -la",
                    "tool_response": {"stdout": "a.txt\nb.txt", "stderr": ""}, "agent_id": ["x"]},
    "PostToolUseFailure": {"session_id": "cc-types", "tool_name": "Bash", "tool_use_id": "t-types-fail",
                           "tool_input": ["cat", "missing"], "error": {"code": 1, "message": "no such file"}},
    "Stop": {"session_id": "cc-types", "last_assistant_message": "the answer", "stop_hook_active": "yes",
             "transcript_path": 12},
    "StopFailure": {"session_id": "cc-types", "last_assistant_message": "partial answer",
                    "error": ["rate", "limit"], "transcript_path": ["x"]},
    "SubagentStop": {"session_id": "cc-types", "agent_id": 9, "agent_transcript_path": ["x"],
                     "last_assistant_message": "subagent done"},
    "PreCompact": {"session_id": "cc-types", "trigger": 1, "custom_instructions": {"keep": "everything"}},
    "SessionEnd": {"session_id": "cc-types", "reason": 3},
}


def check_wrong_types_kept(home: Path, event: str) -> None:
    """What must survive of WRONG_TYPES[event]: everything whose type was right."""
    if event == "SessionStart":
        assert query(home, "SELECT source, model FROM backing_sessions WHERE id = 'cc-types'") == [(None, None)]
    elif event == "UserPromptSubmit":
        assert query(home, "SELECT text, origin FROM episodes WHERE prompt_id = 'p-types'") == [("", "user")]
    elif event == "PostToolUse":
        rows = query(home, "SELECT text, input, is_error, agent_id FROM episodes WHERE tool_use_id = 't-types'")
        assert len(rows) == 1
        text, tool_input, is_error, agent_id = rows[0]
        assert (text, is_error, agent_id) == ("a.txt\nb.txt", 0, None)
        assert json.loads(tool_input) == {"value": "ls -la"}
    elif event == "PostToolUseFailure":
        rows = query(home, "SELECT text, input, is_error FROM episodes WHERE tool_use_id = 't-types-fail'")
        assert len(rows) == 1 and rows[0][2] == 1
        assert json.loads(rows[0][0]) == {"code": 1, "message": "no such file"}
        assert json.loads(rows[0][1]) == {"value": ["cat", "missing"]}
    elif event in ("Stop", "StopFailure", "SubagentStop"):
        text = WRONG_TYPES[event]["last_assistant_message"]
        assert query(home, "SELECT count(*) FROM episodes WHERE kind = 'assistant' AND text = ?", (text,)) == [(1,)]
    elif event == "PreCompact":
        assert query(home, "SELECT trigger, custom_instructions FROM compactions WHERE backing_session_id = ?",
                     ("cc-types",)) == [(None, None)]
    elif event == "SessionEnd":
        rows = query(home, "SELECT ended_at IS NOT NULL, end_reason FROM backing_sessions WHERE id = 'cc-types'")
        assert rows == [(1, "other")]


@pytest.mark.parametrize("event", EVENTS)
def test_wrong_types_and_missing_keys_keep_the_valid_parts(codeoid_home: Path, project: Path, event: str) -> None:
    fire("UserPromptSubmit", prompt("p-open", session="cc-types"), cwd=project)  # a turn for Stop to end
    fire(event, {**WRONG_TYPES[event], "hook_event_name": event}, cwd=project)
    check_wrong_types_kept(codeoid_home, event)

    fire(event, {}, cwd=project)  # every key missing: still registered, under a stand-in session id
    assert query(codeoid_home, "SELECT count(*) FROM backing_sessions WHERE id = 'unknown-session'") == [(1,)]
    fire(event, {"session_id": 12345, "hook_event_name": event, "cwd": ["no"]}, cwd=project)
    assert query(codeoid_home, "SELECT count(*) FROM backing_sessions") == [(2,)]
    assert quarantined(codeoid_home) == []
    assert_nothing_swallowed(codeoid_home)


LONE = "\ud800"
LOW = "\udc00"


def surrogate_payload(event: str) -> dict[str, Any]:
    """Every string field the event carries, each with a lone surrogate in the middle."""
    fields: dict[str, Any] = {
        "session_id": f"cc{LONE}1", "cwd": f"/nowhere/{LOW}", "transcript_path": f"/nowhere/t{LONE}.jsonl",
        "hook_event_name": event,
    }
    per_event: dict[str, dict[str, Any]] = {
        "SessionStart": {"source": f"startup{LONE}", "model": f"claude{LOW}"},
        "UserPromptSubmit": {"prompt": f"before{LONE}after \U0001f600 end", "prompt_id": f"p{LOW}1"},
        "PostToolUse": {"tool_name": "Bash", "tool_use_id": f"t{LONE}1", "tool_input": {"command": f"echo {LONE}x"},
                        "tool_response": {"stdout": f"out{LOW}put", "stderr": f"e{LONE}"}},
        "PostToolUseFailure": {"tool_name": f"Bash{LONE}", "tool_use_id": f"t{LONE}2",
                               "tool_input": {f"k{LONE}": [f"v{LOW}"]}, "error": f"Exit code 1\nno{LONE}pe"},
        "Stop": {"last_assistant_message": f"answer{LONE}here"},
        "StopFailure": {"last_assistant_message": f"partial{LOW}", "error": f"rate{LONE}limit"},
        "SubagentStop": {"agent_id": f"a{LONE}", "agent_transcript_path": f"/nowhere/{LONE}",
                         "last_assistant_message": f"sub{LOW}agent"},
        "PreCompact": {"trigger": f"auto{LONE}", "custom_instructions": f"keep{LOW}this"},
        "SessionEnd": {"reason": f"logout{LONE}"},
    }
    fields.update(per_event[event])
    return fields


SURROGATE_STORED: dict[str, tuple[str, str]] = {
    # event: (SQL for the stored value, what it must be)
    "SessionStart": ("SELECT source || '|' || model FROM backing_sessions", "startup\ufffd|claude\ufffd"),
    "UserPromptSubmit": ("SELECT prompt_id || '|' || text FROM episodes WHERE kind = 'user'",
                         "p\ufffd1|before\ufffdafter \U0001f600 end"),
    "PostToolUse": ("SELECT tool_use_id || '|' || text || '|' || command FROM episodes WHERE kind = 'tool'",
                    "t\ufffd1|out\ufffdput\ne\ufffd|echo \ufffdx"),
    "PostToolUseFailure": ("SELECT tool_name || '|' || text FROM episodes WHERE kind = 'tool'",
                           "Bash\ufffd|Exit code 1\nno\ufffdpe"),
    "Stop": ("SELECT text FROM episodes WHERE kind = 'assistant'", "answer\ufffdhere"),
    "StopFailure": ("SELECT text FROM episodes WHERE kind = 'assistant'", "partial\ufffd"),
    "SubagentStop": ("SELECT agent_id || '|' || text FROM episodes WHERE kind = 'assistant'", "a\ufffd|sub\ufffdagent"),
    "PreCompact": ("SELECT trigger || '|' || custom_instructions FROM compactions", "auto\ufffd|keep\ufffdthis"),
    "SessionEnd": ("SELECT end_reason FROM backing_sessions", "logout\ufffd"),
}


@pytest.mark.parametrize("event", EVENTS)
def test_lone_surrogates_are_stored_as_replacement_characters(codeoid_home: Path, event: str) -> None:
    raw = json.dumps(surrogate_payload(event))  # ASCII JSON with "\ud800"-style escapes, as Claude Code sends
    assert "\\ud800" in raw
    fire(event, raw)
    sql, expected = SURROGATE_STORED[event]
    assert query(codeoid_home, sql) == [(expected,)]
    assert query(codeoid_home, "SELECT id FROM backing_sessions") == [("cc\ufffd1",)]
    assert "lone UTF-16 surrogates" in log_text(codeoid_home)
    assert quarantined(codeoid_home) == []
    assert_nothing_swallowed(codeoid_home)


def test_invalid_utf8_keeps_the_rest_of_the_prompt(codeoid_home: Path) -> None:
    raw = b'{"session_id": "cc-1", "prompt": "caf\xe9 and \xff\xfe then the rest", "prompt_id": "p-bytes"}'
    fire("UserPromptSubmit", raw)
    assert query(codeoid_home, "SELECT text FROM episodes WHERE prompt_id = 'p-bytes'") == [
        ("caf\ufffd and \ufffd\ufffd then the rest",)
    ]
    assert "not valid UTF-8" in log_text(codeoid_home)


TEN_MB_FIELDS: dict[str, tuple[dict[str, Any], str]] = {
    # event: (payload with a 10 MB string in the place it is stored, SQL reading that place back)
    "SessionStart": ({"model": "M"}, "SELECT model FROM backing_sessions"),
    "UserPromptSubmit": ({"prompt": "M", "prompt_id": "p-big"}, "SELECT text FROM episodes"),
    "PostToolUse": ({"tool_name": "Bash", "tool_use_id": "t-big", "tool_input": {"command": "cat big"},
                     "tool_response": {"stdout": "M", "stderr": ""}}, "SELECT text FROM episodes"),
    "PostToolUseFailure": ({"tool_name": "Bash", "tool_use_id": "t-big", "tool_input": {"command": "cat big"},
                            "error": "M"}, "SELECT text FROM episodes"),
    "Stop": ({"last_assistant_message": "M"}, "SELECT text FROM episodes"),
    "StopFailure": ({"last_assistant_message": "M"}, "SELECT text FROM episodes"),
    "SubagentStop": ({"agent_id": "a1", "last_assistant_message": "M"}, "SELECT text FROM episodes"),
    "PreCompact": ({"trigger": "manual", "custom_instructions": "M"}, "SELECT custom_instructions FROM compactions"),
    "SessionEnd": ({"reason": "M"}, "SELECT end_reason FROM backing_sessions"),
}


@pytest.mark.parametrize("event", EVENTS)
def test_a_10_mb_field_is_stored_whole(codeoid_home: Path, event: str) -> None:
    line = "".join(f"{n:07d} the quick brown fox é ✓\n" for n in range(10))
    big = (line * (TEN_MB // len(line.encode()) + 1))[: TEN_MB]
    fields, sql = TEN_MB_FIELDS[event]
    payload = {"session_id": "cc-big", "hook_event_name": event,
               **{key: big if value == "M" else value for key, value in fields.items()}}
    if event == "PostToolUse":
        payload["tool_response"] = {"stdout": big, "stderr": ""}
    fire(event, payload)
    rows = query(codeoid_home, sql)
    assert len(rows) == 1 and len(rows[0][0]) == len(big) and rows[0][0] == big
    assert_nothing_swallowed(codeoid_home)


@pytest.mark.parametrize("event", EVENTS)
def test_a_mismatched_hook_event_name_is_handled_as_the_argv_event(codeoid_home: Path, event: str) -> None:
    other = "Stop" if event != "Stop" else "PostToolUse"
    payload = {**WRONG_TYPES[event], "hook_event_name": other}
    fire("UserPromptSubmit", prompt("p-open", session="cc-types"))
    fire(event, payload)
    check_wrong_types_kept(codeoid_home, event)
    assert f"{event}: payload says hook_event_name={other!r}; handled as {event}" in log_text(codeoid_home)


def test_an_unknown_event_is_passed_through_and_logged(codeoid_home: Path) -> None:
    fire("UserPromptSubmit", prompt("p-1"))
    fire("NoSuchEvent", prompt("p-unknown"))
    fire("", {"session_id": "cc-1", "prompt": "no event anywhere", "prompt_id": "p-nowhere"})
    fire("userpromptsubmit", prompt("p-case"))
    assert query(codeoid_home, "SELECT prompt_id FROM episodes") == [("p-1",)]
    text = log_text(codeoid_home)
    assert "unknown event 'NoSuchEvent'; nothing stored" in text
    assert "unknown event ''; nothing stored" in text
    assert "unknown event 'userpromptsubmit'; nothing stored" in text
    assert_nothing_swallowed(codeoid_home)


def test_no_argv_event_falls_back_to_the_payload_event_name(codeoid_home: Path) -> None:
    result = subprocess.run([executable("codeoid-hook")], input=json.dumps(prompt("p-named")).encode(),
                            capture_output=True, timeout=30)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert query(codeoid_home, "SELECT prompt_id FROM episodes") == [("p-named",)]


def test_a_bad_transcript_line_does_not_stop_capture(codeoid_home: Path, project: Path) -> None:
    """A line the handlers cannot store as is would fail every later hook of the session (the transcript is re-read
    from the same watermark); it must be stored as well as it can be, and capture go on."""
    transcript = project / "t.jsonl"
    lines = [
        {"type": "assistant", "uuid": ["not", "a", "string"], "timestamp": "2026-01-01T00:00:00Z",
         "message": {"id": "msg_1", "model": "m", "content": [{"type": "text", "text": f"one{LONE}two"}]}},
        {"type": "assistant", "uuid": "u2", "message": {"id": f"msg{LOW}2", "model": "m",
                                                         "content": [{"type": "text", "text": "three"}]}},
    ]
    transcript.touch()
    base = {"session_id": "cc-1", "transcript_path": str(transcript), "cwd": str(project)}
    fire("UserPromptSubmit", {**base, "prompt": "go", "prompt_id": "p1"})
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fire("Stop", {**base, "last_assistant_message": "three"})
    fire("UserPromptSubmit", {**base, "prompt": "again", "prompt_id": "p2"})
    rows = query(codeoid_home, "SELECT kind, text, transcript_uuid FROM episodes ORDER BY id")
    assert [row[0] for row in rows] == ["user", "assistant", "assistant", "user"]
    first = rows[1][1]
    assert "\ufffd" in first and first.replace("\ufffd", "") == "onetwo" and rows[1][2] is None
    assert rows[2][1:] == ("three", "u2") and rows[3][1] == "again"
    assert_nothing_swallowed(codeoid_home)


def test_an_event_no_handler_can_apply_is_kept_not_lost(codeoid_home: Path) -> None:
    """Whatever a handler trips over (here a tool response nested deeper than Python recurses, with a text large
    enough to be deduplicated), the event is stored or kept whole in the quarantine: never dropped."""
    depth = 700
    nested: Any = []
    for _ in range(depth):
        nested = [nested]
    payload = tool_call("t-deep", output="x" * 10_000)
    payload["tool_response"]["nested"] = nested
    fire("PostToolUse", payload)
    fire("UserPromptSubmit", prompt("p-after"))
    stored = query(codeoid_home, "SELECT text FROM episodes WHERE tool_use_id = 't-deep'")
    if stored:
        assert stored == [("x" * 10_000,)]
    else:
        kept = quarantined(codeoid_home, ".event.json")
        assert len(kept) == 1
        entry = json.loads(kept[0].read_bytes())
        assert entry["event"] == "PostToolUse" and entry["payload"] == payload
        assert f"kept as quarantine/{kept[0].name}" in log_text(codeoid_home)
    assert query(codeoid_home, "SELECT count(*) FROM episodes WHERE prompt_id = 'p-after'") == [(1,)]


# ---------------------------------------------------------------- 2. many hooks at once


WORKERS = 8
EVENTS_PER_WORKER = int(os.environ.get("CODEOID_FAULT_EVENTS_PER_WORKER", "1000"))


def concurrent_event(worker: int, index: int) -> tuple[str, dict[str, Any], tuple[str, str], str]:
    """Event `index` of `worker`: (event, payload, (kind, key), stored text). Even indexes use keys every worker
    sends too, so each of those reaches the store eight times, from eight processes, often at the same moment."""
    shared = index % 2 == 0
    key = f"k{index}" if shared else f"w{worker}-k{index}"
    kind = (index // 2) % 4
    session = f"cc-{index % 3}"
    if kind == 0:
        return ("UserPromptSubmit", prompt(f"p-{key}", f"prompt {key}", session=session), ("user", f"p-{key}"),
                f"prompt {key}")
    if kind == 1:
        return ("PostToolUse", tool_call(f"tu-{key}", f"result {key}", session=session), ("tool", f"tu-{key}"),
                f"result {key}")
    payload: dict[str, Any]
    if kind == 2:
        payload = {"session_id": session, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                   "tool_use_id": f"tf-{key}", "tool_input": {"command": f"false {key}"},
                   "error": f"Exit code 1\nfailed {key}"}
        return "PostToolUseFailure", payload, ("tool", f"tf-{key}"), f"Exit code 1\nfailed {key}"
    # Each Stop key has its own backing session: one last message per turn, as Claude Code sends it.
    payload = {"session_id": f"stop-{key}", "hook_event_name": "Stop", "last_assistant_message": f"answer {key}",
               "stop_hook_active": False}
    return "Stop", payload, ("assistant", f"stop-{key}"), f"answer {key}"


@pytest.mark.slow
def test_concurrent_hooks_store_exactly_one_episode_per_key(codeoid_home: Path, project: Path) -> None:
    hook = executable("codeoid-hook")
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    expected: dict[tuple[str, str], str] = {}
    failures: list[str] = []
    durations: list[float] = []

    for worker in range(WORKERS):
        for index in range(EVENTS_PER_WORKER):
            _, _, key, text = concurrent_event(worker, index)
            expected[key] = text

    def work(worker: int) -> None:
        for index in range(EVENTS_PER_WORKER):
            event, payload, _, _ = concurrent_event(worker, index)
            clock = time.monotonic()
            result = subprocess.run([hook, event], input=json.dumps(payload).encode(), capture_output=True, env=env,
                                    timeout=60)
            durations.append(time.monotonic() - clock)
            if (result.returncode, result.stdout, result.stderr) != (0, b"", b""):
                failures.append(f"{worker}/{index} {event}: {result.returncode} {result.stdout!r} {result.stderr!r}")

    fire("SessionStart", {"session_id": "cc-0", "source": "startup"})  # the store exists before the rush
    started = time.monotonic()
    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    assert failures == []
    spooled_during_rush = log_text(codeoid_home).count("spooled to")

    fire("UserPromptSubmit", prompt("p-final"))  # replays whatever the rush left in the spool
    assert spool_entries(codeoid_home) == []

    rows = query(
        codeoid_home,
        "SELECT kind, CASE kind WHEN 'user' THEN prompt_id WHEN 'tool' THEN tool_use_id ELSE backing_session_id END,"
        " text FROM episodes WHERE coalesce(prompt_id, '') != 'p-final'",
    )
    stored: dict[tuple[str, str], list[str]] = {}
    for kind, key, text in rows:
        stored.setdefault((kind, key), []).append(text)
    duplicates = {key: texts for key, texts in stored.items() if len(texts) > 1}
    assert duplicates == {}
    assert set(stored) == set(expected), (len(set(expected) - set(stored)), len(set(stored) - set(expected)))
    assert {key: texts[0] for key, texts in stored.items()} == expected
    # The same counts straight from SQL: one episode per distinct key, none missing.
    for kind, column in (("user", "prompt_id"), ("tool", "tool_use_id")):
        assert query(codeoid_home, f"SELECT count(*), count(DISTINCT {column}) FROM episodes WHERE kind = ?"
                     " AND coalesce(prompt_id, '') != 'p-final'", (kind,))[0] == (
            sum(1 for k in expected if k[0] == kind),) * 2
    assert_nothing_swallowed(codeoid_home)
    durations.sort()
    print(f"\n{WORKERS} workers x {EVENTS_PER_WORKER} hooks: {elapsed:.1f} s, {len(expected)} distinct keys,"
          f" {spooled_during_rush} spooled during the rush, hook p50 {durations[len(durations) // 2] * 1000:.0f} ms,"
          f" p99 {durations[int(len(durations) * 0.99)] * 1000:.0f} ms, max {durations[-1] * 1000:.0f} ms")


# ---------------------------------------------------------------- 3. a store locked past the busy timeout


def test_locked_store_spools_and_replays_every_event_in_order(codeoid_home: Path, project: Path,
                                                              store_lock: list[StoreLock]) -> None:
    fire("UserPromptSubmit", prompt("p-0"), cwd=project)
    # Held until released below, not for 10 s: six hooks each waiting out the busy timeout could outlast that
    # on a loaded machine, and the test would then prove nothing.
    lock = lock_store(store_lock, codeoid_home, seconds=600)
    sent: list[tuple[str, dict[str, Any], str]] = [
        ("UserPromptSubmit", prompt("p-1"), "p-1"),
        ("PostToolUse", tool_call("t-1"), "t-1"),
        ("PostToolUseFailure", {"session_id": "cc-1", "tool_name": "Bash", "tool_use_id": "t-2",
                                "tool_input": {"command": "false"}, "error": "Exit code 1"}, "t-2"),
        ("Stop", {"session_id": "cc-1", "last_assistant_message": "done with p-1"}, "done with p-1"),
    ]
    timings: list[tuple[float, float]] = []
    for event, payload, _ in sent:
        timings.append(timed_fire(event, payload, cwd=project))
    ended = timed_fire("SessionEnd", {"session_id": "cc-1", "reason": "logout"}, cwd=project)  # registered: 5 s
    assert lock.holding(), "the lock was let go before every hook had run; the test proves nothing"
    assert len(spool_entries(codeoid_home)) == len(sent) + 1
    # The first event is spooled; each later one, finding that backlog, spools itself behind it before trying
    # to replay, and is logged as left there.
    logged = log_text(codeoid_home)
    assert logged.count("database is locked; spooled to") == 1
    assert logged.count("database is locked; left in the spool as") == len(sent)
    assert query(codeoid_home, "SELECT count(*) FROM episodes") == [(1,)]
    released = lock.release()

    fire("UserPromptSubmit", prompt("p-3"), cwd=project)
    rows = query(codeoid_home, "SELECT coalesce(prompt_id, tool_use_id, text), created_at FROM episodes ORDER BY id")
    assert [row[0] for row in rows] == ["p-0", *(key for _, _, key in sent), "p-3"]
    created = [row[1] for row in rows]
    assert created == sorted(created)  # the timeline (ordered by created_at) shows them as they happened
    for (fired_at, duration), stamp in zip(timings, created[1:-1], strict=True):
        assert fired_at <= stamp <= fired_at + duration  # when the hook ran, not when it was replayed
        assert stamp < released
    (ended_at, reason), = query(codeoid_home, "SELECT ended_at, end_reason FROM backing_sessions WHERE id = 'cc-1'")
    assert reason == "logout" and ended[0] <= ended_at <= ended[0] + ended[1]
    assert spool_entries(codeoid_home) == []
    assert_nothing_swallowed(codeoid_home)
    durations = [duration for _, duration in [*timings, ended]]
    assert max(durations) < REGISTERED_TIMEOUT_SECONDS / 2, durations
    print(f"\nhook times while locked: {', '.join(f'{d:.2f}' for d in durations)} s")


def test_a_reader_replays_what_a_locked_store_left_in_the_spool(codeoid_home: Path, project: Path,
                                                                store_lock: list[StoreLock]) -> None:
    fire("UserPromptSubmit", prompt("p-0"), cwd=project)
    lock = lock_store(store_lock, codeoid_home, seconds=10)
    env = {"CODEOID_BUSY_TIMEOUT_MS": "100"}
    for key in ("p-1", "p-2"):
        fire("UserPromptSubmit", prompt(key), cwd=project, env=env)
    assert len(spool_entries(codeoid_home)) == 2
    lock.release()
    result = subprocess.run([executable("codeoid"), "timeline", "--all-workspaces"], capture_output=True,
                            timeout=60, cwd=project)
    assert result.returncode == 0, result.stderr
    assert spool_entries(codeoid_home) == []
    assert query(codeoid_home, "SELECT prompt_id FROM episodes ORDER BY id") == [("p-0",), ("p-1",), ("p-2",)]


# ---------------------------------------------------------------- 4. a corrupt database


def fill_store(home: Path, count: int = 12) -> None:
    for index in range(count):
        fire("PostToolUse", tool_call(f"t-{index}", f"word{index} " * 300))
    with closing(sqlite3.connect(home / "store.db")) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def assert_moved_aside_and_fresh(home: Path, damaged: bytes, key: str) -> None:
    kept = quarantined(home, ".db")
    assert len(kept) == 1
    assert kept[0].read_bytes() == damaged  # never deleted, never touched
    assert (kept[0].parent / (kept[0].name + ".reason")).exists()
    assert query(home, "SELECT coalesce(tool_use_id, prompt_id) FROM episodes") == [(key,)]
    assert f"moved to {kept[0]}" in log_text(home)
    assert_nothing_swallowed(home)


def test_a_garbage_database_is_quarantined_and_a_fresh_store_takes_the_event(codeoid_home: Path) -> None:
    fill_store(codeoid_home, count=3)
    garbage = os.urandom(64 * 1024)
    (codeoid_home / "store.db").write_bytes(garbage)
    fire("UserPromptSubmit", prompt("p-after"))
    assert_moved_aside_and_fresh(codeoid_home, garbage, "p-after")


def test_damage_found_on_write_quarantines_the_store(codeoid_home: Path) -> None:
    """Pages damaged mid-file: the database opens and migrates fine, the write then finds the damage."""
    fill_store(codeoid_home)
    path = codeoid_home / "store.db"
    with closing(sqlite3.connect(path)) as db:
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'episodes'").fetchone()[0]
        page_size, pages = db.execute("PRAGMA page_size").fetchone()[0], db.execute("PRAGMA page_count").fetchone()[0]
    assert 1 < root < pages
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(os.urandom(page_size))
    damaged = path.read_bytes()
    with closing(sqlite3.connect(path)) as db:  # opening and reading the schema still work
        assert db.execute("PRAGMA user_version").fetchone()[0] > 0
        assert db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    fire("PostToolUse", tool_call("t-new"))
    assert_moved_aside_and_fresh(codeoid_home, damaged, "t-new")


def test_index_corruption_found_on_write_quarantines_the_store(codeoid_home: Path) -> None:
    """SQLite names index damage with an extended code (SQLITE_CORRUPT_INDEX); it is corruption all the same."""
    fill_store(codeoid_home, count=5)
    path = codeoid_home / "store.db"
    with closing(sqlite3.connect(path)) as db:  # the index's entries no longer match what it claims to index
        db.execute("PRAGMA writable_schema = ON")
        db.execute("UPDATE sqlite_master SET sql = 'CREATE INDEX episodes_backing_state ON episodes(kind, state)'"
                   " WHERE name = 'episodes_backing_state'")
        db.commit()
    damaged = path.read_bytes()
    fire("SessionEnd", {"session_id": "cc-1", "reason": "clear"})  # archives the window: rewrites that index
    kept = quarantined(codeoid_home, ".db")
    assert len(kept) == 1 and kept[0].read_bytes() == damaged
    assert "malformed" in (kept[0].parent / (kept[0].name + ".reason")).read_text()
    assert query(codeoid_home, "SELECT id, end_reason FROM backing_sessions") == [("cc-1", "clear")]
    assert_nothing_swallowed(codeoid_home)


# ---------------------------------------------------------------- 5. a full disk


def test_full_disk_spools_on_the_reserve_and_loses_nothing(small_disk: Path, project: Path) -> None:
    home = small_disk
    for index in range(3):
        fire("UserPromptSubmit", prompt(f"p-{index}"), cwd=project)
    reserve = home / "spool" / ".reserve"
    assert reserve.stat().st_size > 0

    filler = home.parent / "filler"
    fill_disk(filler)
    sent = [f"t-full-{index}" for index in range(5)]
    outputs = {key: (f"{key} " + "0123456789abcdef" * 12_000) for key in sent}  # ~190 KB each
    for key in sent:
        fire("PostToolUse", tool_call(key, outputs[key]), cwd=project)
    assert not reserve.exists()  # given up so the events had somewhere to go
    text = log_text(home)
    assert "disk full: released the spool reserve to keep this event" in text
    assert "PostToolUse: store unavailable" in text and "spooled to" in text
    assert_nothing_swallowed(home)

    filler.unlink()
    fire("UserPromptSubmit", prompt("p-after"), cwd=project)
    assert spool_entries(home) == []
    rows = dict(query(home, "SELECT coalesce(tool_use_id, prompt_id), text FROM episodes"))
    assert set(rows) == {"p-0", "p-1", "p-2", *sent, "p-after"}
    assert all(rows[key] == outputs[key] for key in sent)
    order = [row[0] for row in query(home, "SELECT coalesce(tool_use_id, prompt_id) FROM episodes ORDER BY created_at")]
    assert order == ["p-0", "p-1", "p-2", *sent, "p-after"]
    assert reserve.exists()  # set aside again by the first writer that succeeded
    assert_nothing_swallowed(home)


# ---------------------------------------------------------------- 6. the spool itself


def spool_while_locked(home: Path, locks: list[StoreLock], keys: list[str], project: Path) -> list[Path]:
    """Real spool entries: hooks fired while another process holds the store."""
    fire("UserPromptSubmit", prompt("p-0"), cwd=project)
    lock = lock_store(locks, home, seconds=30)
    for key in keys:
        fire("UserPromptSubmit", prompt(key), cwd=project, env={"CODEOID_BUSY_TIMEOUT_MS": "100"})
    lock.release()
    entries = spool_entries(home)
    assert len(entries) == len(keys)
    return entries


def test_a_poison_spool_entry_is_quarantined_and_does_not_block_the_rest(codeoid_home: Path, project: Path,
                                                                         store_lock: list[StoreLock]) -> None:
    entries = spool_while_locked(codeoid_home, store_lock, ["p-1", "p-2", "p-3"], project)
    # Sorts between the first and second real entries, so replay meets it half-way.
    stamp = f"{int(entries[0].name.split('-')[0]) + 1:020d}"
    unreadable = entries[0].parent / f"{stamp}-1-poison0.event.json"
    unreadable_body = b'{"event": "UserPromptSubmit", "payload": {"prompt": "cut off'
    unreadable.write_bytes(unreadable_body)
    unknown = entries[0].parent / f"{stamp}-2-poison1.event.json"
    unknown_body = json.dumps({"event": "NoSuchEvent", "payload": {}, "env": {}, "received_at": 1.0}).encode()
    unknown.write_bytes(unknown_body)
    assert spool_entries(codeoid_home)[:3] == [entries[0], unreadable, unknown]

    fire("UserPromptSubmit", prompt("p-4"), cwd=project)
    assert spool_entries(codeoid_home) == []
    assert query(codeoid_home, "SELECT prompt_id FROM episodes ORDER BY id") == [
        ("p-0",), ("p-1",), ("p-2",), ("p-3",), ("p-4",)]
    kept = {path.name: path.read_bytes() for path in quarantined(codeoid_home)}
    assert len(kept) == 2
    (unreadable_kept,) = (name for name in kept if name.startswith(unreadable.name) and name.endswith(".unreadable"))
    assert kept[unreadable_kept] == unreadable_body
    (unknown_kept,) = (name for name in kept if name.startswith(unknown.name) and name.endswith(".failed"))
    assert kept[unknown_kept] == unknown_body
    text = log_text(codeoid_home)
    assert "poison0" in text and "unreadable" in text and "poison1" in text and "replay failed" in text


def test_a_stale_claim_from_a_killed_process_is_taken_over(codeoid_home: Path, project: Path,
                                                           store_lock: list[StoreLock]) -> None:
    entries = spool_while_locked(codeoid_home, store_lock, ["p-1", "p-2"], project)
    # A replayer killed after claiming p-1 (its pid is gone), and one still at work on p-2 right now.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = entries[0].with_name(f"{entries[0].name}.{dead.pid}.claimed")
    entries[0].rename(stale)
    old = time.time() - 120
    os.utime(stale, (old, old))
    busy = entries[1].with_name(f"{entries[1].name}.{os.getpid()}.claimed")
    entries[1].rename(busy)

    fire("UserPromptSubmit", prompt("p-3"), cwd=project)
    assert not stale.exists()
    assert busy.exists()  # a fresh claim belongs to a live replayer: left alone
    assert query(codeoid_home, "SELECT prompt_id FROM episodes ORDER BY id") == [("p-0",), ("p-1",), ("p-3",)]

    os.utime(busy, (old, old))  # that replayer died too
    fire("UserPromptSubmit", prompt("p-4"), cwd=project)
    assert spool_entries(codeoid_home) == []
    assert query(codeoid_home, "SELECT prompt_id FROM episodes ORDER BY created_at") == [
        ("p-0",), ("p-1",), ("p-2",), ("p-3",), ("p-4",)]


def test_a_claim_of_a_replayer_killed_mid_replay_is_taken_over_at_once(codeoid_home: Path, project: Path,
                                                                        store_lock: list[StoreLock]) -> None:
    entries = spool_while_locked(codeoid_home, store_lock, ["p-1", "p-2"], project)
    # A real replayer claims p-1 the way replay does and is killed (a hook past Claude Code's timeout) before it
    # commits: its claim is seconds old, not the 60 s after which a claim was presumed dead.
    replayer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from codeoid.capture import spool
        claimed = next(spool._claim({str(codeoid_home / "spool")!r}, 1))
        print(claimed, flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True, env={**os.environ, "CODEOID_HOME": str(codeoid_home)})
    assert replayer.stdout is not None
    claimed = Path(replayer.stdout.readline().strip())
    replayer.kill()
    replayer.wait()
    assert claimed.exists() and claimed.name.startswith(entries[0].name)

    fire("UserPromptSubmit", prompt("p-3"), cwd=project)

    assert spool_entries(codeoid_home) == []
    assert query(codeoid_home, "SELECT prompt_id FROM episodes ORDER BY id") == [
        ("p-0",), ("p-1",), ("p-2",), ("p-3",)]


# ---------------------------------------------------------------- 7. private files


def test_every_file_is_private_even_with_umask_000(codeoid_home: Path, project: Path,
                                                   store_lock: list[StoreLock]) -> None:
    hook = executable("codeoid-hook")

    def fire_open(event: str, payload: dict[str, Any] | bytes, **env: str) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        result = subprocess.run(["sh", "-c", f'umask 000; exec "{hook}" "$0"', event], input=data,
                                capture_output=True, timeout=60, env={**os.environ, **env}, cwd=project)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")

    fire_open("SessionStart", {"session_id": "cc-1", "source": "startup"})  # creates the home and the store
    fire_open("UserPromptSubmit", b"{not json")  # quarantined input, log
    (codeoid_home / "store.db").write_bytes(b"garbage " * 1000)
    fire_open("UserPromptSubmit", prompt("p-1"))  # quarantined database and its reason, a fresh store
    umask = os.umask(0)  # whichever process creates SQLite's WAL and shared memory, it has umask 000 too
    try:
        reader = sqlite3.connect(codeoid_home / "store.db")
        reader.execute("SELECT count(*) FROM episodes").fetchone()  # keeps the WAL and shared memory open
    finally:
        os.umask(umask)
    with closing(reader):
        lock = lock_store(store_lock, codeoid_home, seconds=30)
        fire_open("PostToolUse", tool_call("t-1"), CODEOID_BUSY_TIMEOUT_MS="100")  # spool entry
        found = {path.relative_to(codeoid_home).as_posix() for path in codeoid_home.rglob("*")}
        problems = []
        for path in [codeoid_home, *codeoid_home.rglob("*")]:
            mode = stat.S_IMODE(path.lstat().st_mode)
            wanted = 0o700 if path.is_dir() else 0o600
            if mode != wanted:
                problems.append(f"{path.relative_to(codeoid_home)}: {oct(mode)}")
        lock.release()
    assert problems == []
    for expected in ("store.db", "store.db-wal", "store.db-shm", "logs/codeoid.log", "spool/.reserve"):
        assert expected in found
    assert any(name.startswith("quarantine/hook-input-") for name in found)
    assert any(name.startswith("quarantine/store-") and name.endswith(".db.reason") for name in found)
    assert any(name.startswith("spool/") and name.endswith(".event.json") for name in found)
