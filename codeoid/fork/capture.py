"""Storing what a Codex or Gemini fork did, read back from the CLI's own session record after it ran.

When the CLI runs without codeoid's hooks (`codeoid install --agent` not done), nothing is stored while such a
fork runs: this read-back is the fallback (a run whose hooks reported into the fork's session is skipped here).
`create_fork` registers
the fork's run as a backing session of the fork's codeoid session, its `source` naming the backend and its
`transcript_path` the file codeoid wrote for it (`record_launch`); once the CLI has exited, `capture_fork` reads
that backend's record (`codeoid.capture.codex_record`, `codeoid.fork.gemini_record`) and stores what the backend
added after codeoid's history as episodes of the fork: prompts opening turns that continue the fork's count,
the model's text, tool calls with their whole results. Every step has a key that is the same on every read, so
capturing again (`codeoid fork-capture`) stores only what is new.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from codeoid.capture import codex_record
from codeoid.capture.record import Answer, Prompt, Step
from codeoid.fork import gemini_record
from codeoid.fork.launch import Launch
from codeoid.store import capture
from codeoid.store.db import write_transaction
from codeoid.workspace import identify

#: Backing-session sources of forks whose turns are read back from the backend's record.
SOURCES = ("codex", "gemini")


class NotCapturable(LookupError):
    """The session has no Codex or Gemini run to read back; the message says so."""


def record_launch(db: sqlite3.Connection, launch: Launch, *, backend: str, session_id: str, now: float) -> None:
    """Register the fork's run: what `capture_fork` needs to find the backend's record later, even from another
    process. Codex names its session by the id codeoid chose; Gemini mints its own at start, so its run is
    registered under the id of the folder codeoid wrote its conversation file in."""
    (written,) = launch.files
    backing_id = launch.session_id or written.parent.name
    db.execute(
        "INSERT INTO backing_sessions (id, session_id, source, transcript_path, transcript_offset, started_at, agent)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (backing_id, session_id, backend, str(written), written.stat().st_size, now, backend),
    )


def capture_fork(db: sqlite3.Connection, session_id: str, *, now: float) -> int:
    """Store what the fork's Codex or Gemini runs added to their records; the number of episodes stored.

    Raises NotCapturable for a session that is no such fork, OSError when a record cannot be read, and the
    store's StoreUnavailable when it is busy; nothing is half-stored for a run (one transaction each)."""
    rows = db.execute(
        "SELECT b.id, b.source, b.transcript_path, b.transcript_offset, w.root FROM backing_sessions b"
        " JOIN sessions s ON s.id = b.session_id JOIN workspaces w ON w.id = s.workspace_id"
        f" WHERE b.session_id = ? AND b.source IN ({', '.join('?' for _ in SOURCES)}) ORDER BY b.started_at",
        (session_id, *SOURCES),
    ).fetchall()
    if not rows:
        raise NotCapturable(f"Session {session_id} was not forked onto Codex or Gemini: there is nothing to read "
                            "back (a Claude Code fork is stored by codeoid's hooks as it runs).")
    stored = 0
    for backing_id, source, path, offset, root in rows:
        if _captured_live(db, session_id, source):
            continue  # the CLI ran codeoid's hooks: its turns are stored already, under the CLI's own keys
        steps = read_steps(source, Path(path), backing_id=backing_id, offset=offset)
        with write_transaction(db):
            owner = capture.ensure_backing_session(db, backing_session_id=backing_id, workspace=identify(root),
                                                   now=now, codeoid_session_id=session_id, source=source,
                                                   agent=source)
            stored += store_steps(db, owner, steps, now=now)
            capture.end_backing_session(db, backing_id, reason="exited", now=now)
    return stored


def _captured_live(db: sqlite3.Connection, session_id: str, agent: str) -> bool:
    """Whether that CLI's own hooks reported into this session: then the read-back, the fallback for a CLI started
    without codeoid's hooks, would only store the same turns again under other keys."""
    return db.execute(
        "SELECT 1 FROM backing_sessions WHERE session_id = ? AND agent = ? AND hooked_at IS NOT NULL LIMIT 1",
        (session_id, agent),
    ).fetchone() is not None


def read_steps(source: str, path: Path, *, backing_id: str, offset: int) -> list[Step]:
    """What the backend recorded after codeoid's history: the rollout's new lines, or Gemini's chats."""
    if source == "codex":
        return codex_record.read(path, session_id=backing_id, offset=offset)
    return gemini_record.read(path)


def store_steps(db: sqlite3.Connection, owner: capture.Owner, steps: Sequence[Step], *, now: float) -> int:
    """Store the steps in order (each prompt ends the turn before it); the number of new episodes."""
    stored = 0
    for step in steps:
        at = step.at or now  # the CLI's own time for it, so the timeline and recency see when it happened
        if isinstance(step, Prompt):
            capture.end_turn(db, owner, reason="stop", now=at)
            made = capture.add_user_turn(db, owner, prompt=step.text, prompt_id=step.key, origin="user", now=at)
        elif isinstance(step, Answer):
            made = capture.add_assistant_message(db, owner, message_id=step.key, text=step.text, now=at)
        else:
            made = capture.add_tool_call(db, owner, tool_name=step.name, tool_use_id=step.call_id,
                                         tool_input=step.input, response=step.response, error=step.error,
                                         agent_id=None, now=at)
        stored += made is not None
    capture.end_turn(db, owner, reason="stop", now=now)
    return stored
