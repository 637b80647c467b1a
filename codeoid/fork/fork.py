"""`codeoid fork`: a new, independent codeoid session seeded with another's conversation up to a turn.

Everything is checked before anything is written (the session and turn exist, the backend's CLI is installed
and wired, the history's newest turn fits the target's window); then the translator writes what its backend
starts from and the new session is recorded with its lineage (`forked_from`, `at_turn`) in one transaction.
The parent is only read. The fork's turn numbers continue the parent's (its first own prompt is turn
`at_turn + 1`), so a fork of a fork names turns the way its conversation counts them.

Every backend goes through the same checks and the same contract (`codeoid.fork.translators.Translator`): the
translator is given the kept turns (oldest first) and the fork notice, naming the memory tools the way that
backend names them, and writes what its backend starts from; it runs inside the transaction that records the
fork, and what it wrote is removed again if the session cannot be recorded.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from codeoid.fork import claude
from codeoid.fork.backends import BACKENDS, BackendMissing, find_binary
from codeoid.fork.canonical import session_turns
from codeoid.fork.capture import record_launch
from codeoid.fork.seed import Lineage, WindowTooSmall, newest_that_fit, notice
from codeoid.fork.translators import TRANSLATORS, Start, Target, written_files
from codeoid.setup.json_config import InstallError
from codeoid.store.db import write_transaction
from codeoid.store.session_ref import UnknownSession, resolve_session
from codeoid.workspace import identify


class ForkError(ValueError):
    """The fork cannot be made; the message says why in words a user can act on. Nothing was written."""


@dataclass(frozen=True)
class ForkRequest:
    session: str  # the parent: a codeoid session id, a unique prefix of one, its name, or a backing Claude Code id
    at_turn: int | None = None  # default: the parent's last turn
    backend: str = "claude"
    name: str | None = None
    project_dir: str = "."  # where the fork runs, if it is in the parent's workspace
    model: str | None = None  # the model the fork will run (sizes the window when `window_tokens` is not given)
    window_tokens: int | None = None
    tool_prefix: str = "mcp__codeoid__"  # how Claude Code is wired to name the memory tools
    prompt: str | None = None  # --print: Codex and Gemini take it at once, in the command that starts them


@dataclass(frozen=True)
class Fork:
    session_id: str
    parent_id: str
    at_turn: int
    name: str | None
    backend: str
    backend_binary: str
    project_dir: str
    kept_turns: int
    total_turns: int
    start: Start


def create_fork(db: sqlite3.Connection, request: ForkRequest, *, now: float, home: Path | None = None) -> Fork:
    """Check the request, write the fork's starting history and record the new session; see the module doc."""
    parent = find_session(db, request.session)
    parent_id, turn_count = parent.session_id, parent.turn_count
    at_turn = turn_count if request.at_turn is None else request.at_turn
    if turn_count < 1:
        raise ForkError(f"Session {parent_id} has no turns yet: there is nothing to fork.")
    if not 1 <= at_turn <= turn_count:
        raise ForkError(f"Session {parent_id} has turns 1-{turn_count}; there is no turn {at_turn}.")
    if request.backend not in BACKENDS:
        raise ForkError(f"Unknown backend {request.backend!r}; choose one of {', '.join(BACKENDS)}.")
    try:
        binary = find_binary(request.backend)
    except BackendMissing as error:
        raise ForkError(str(error)) from error
    translator = TRANSLATORS[request.backend]
    turns = session_turns(db, parent_id, at_turn)
    if not turns:
        raise ForkError(f"Session {parent_id} has no stored turns up to turn {at_turn} (retracted or never "
                        "captured): there is nothing to fork.")
    window = request.window_tokens or translator.default_window(request.model)
    try:
        kept = newest_that_fit(turns, window)
    except WindowTooSmall as error:
        raise ForkError(f"The fork's history does not fit: {error}.") from error
    project_dir = _project_dir(request.project_dir, parent)
    lineage = Lineage(parent_id, parent.name, at_turn, parent.workspace_root)
    fork_notice = notice(lineage, kept, len(turns), translator.tool_prefix(request.tool_prefix))
    session_id = os.urandom(16).hex()
    target = Target(project_dir=project_dir, binary=binary, parent_model=_parent_model(db, parent_id),
                    prompt=request.prompt, home=home)
    start: Start | None = None
    try:
        with write_transaction(db):
            try:
                start = translator.prepare(kept, fork_notice, target)
            except InstallError as error:  # Gemini's settings cannot take codeoid's MCP server
                raise ForkError(str(error)) from error
            _record(db, start, session_id=session_id, workspace_id=parent.workspace_id, request=request,
                    parent_id=parent_id, at_turn=at_turn, now=now)
    except BaseException:
        if start is not None:  # the session was not recorded: no orphan
            _remove(written_files(start))
        raise
    return Fork(session_id, parent_id, at_turn, request.name, request.backend, binary, project_dir, len(kept),
                len(turns), start)


class Parent(NamedTuple):
    session_id: str
    name: str | None
    turn_count: int
    workspace_id: int
    workspace_key: str
    workspace_root: str


def find_session(db: sqlite3.Connection, ref: str) -> Parent:
    """The session `ref` names: its id, a unique prefix of the id, its name, or one of its backing session ids."""
    try:
        session_id = resolve_session(db, ref)
    except UnknownSession as error:
        raise ForkError(str(error)) from error
    row = db.execute("SELECT s.id, s.name, s.turn_count, s.workspace_id, w.key, w.root FROM sessions s"
                     " JOIN workspaces w ON w.id = s.workspace_id WHERE s.id = ?", (session_id,)).fetchone()
    return Parent(*row)


def _project_dir(requested: str, parent: Parent) -> str:
    """The fork runs where it was asked to when that is in the parent's workspace (its memory is there), else
    in the directory the parent's workspace was first seen from."""
    here = os.path.realpath(requested)
    if identify(here).key == parent.workspace_key:
        return here
    if not os.path.isdir(parent.workspace_root):
        raise ForkError(f"The parent session's workspace {parent.workspace_root} no longer exists; run the fork "
                        "from a checkout of that repository.")
    return parent.workspace_root


def _parent_model(db: sqlite3.Connection, parent_id: str) -> str | None:
    row = db.execute("SELECT model FROM backing_sessions WHERE session_id = ? AND model IS NOT NULL"
                     " ORDER BY started_at DESC LIMIT 1", (parent_id,)).fetchone()
    return str(row[0]) if row else None


def _remove(paths: tuple[Path, ...]) -> None:
    """Remove written files, and their folder when that leaves it empty (a Gemini fork's own, say)."""
    for path in paths:
        path.unlink(missing_ok=True)
        with suppress(OSError):
            path.parent.rmdir()


def _record(db: sqlite3.Connection, start: Start, *, session_id: str, workspace_id: int,
            request: ForkRequest, parent_id: str, at_turn: int, now: float) -> None:
    """The fork's session row with its lineage. On Claude Code, also its first backing session, registered up
    front with the transcript's length as its read watermark: the hooks then store only what the fork itself
    adds. On Codex and Gemini (no codeoid hooks), the run whose record `capture_fork` reads back afterwards."""
    db.execute(
        "INSERT INTO sessions (id, workspace_id, name, forked_from, at_turn, turn_count, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (session_id, workspace_id, request.name, parent_id, at_turn, at_turn, now),
    )
    if not isinstance(start, claude.ClaudeStart):
        record_launch(db, start, backend=request.backend, session_id=session_id, now=now)
        return
    db.execute(
        "INSERT INTO backing_sessions (id, session_id, source, transcript_path, transcript_offset, started_at)"
        " VALUES (?, ?, 'fork', ?, ?, ?)",
        (start.claude_session_id, session_id, str(start.transcript_path) if start.transcript_path else None,
         start.transcript_bytes, now),
    )
