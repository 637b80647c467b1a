"""The store's side of a rotation: what the seed quotes, and the record a rotation leaves.

A rotation archives the old window (its episodes stay searchable and are returned by recall; only the window
changed), ends the old backing session, counts the rotation on the codeoid session and records it with the
occupancy that caused it. Nothing is deleted.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from codeoid.store import capture
from codeoid.workspace import WorkspaceId


@dataclass(frozen=True)
class UserTurn:
    episode_id: int
    text: str


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    name: str | None
    rotation_count: int


def session_of_backing(db: sqlite3.Connection, backing_session_id: str) -> str | None:
    """The codeoid session a backing session belongs to, as the hooks registered it."""
    row = db.execute("SELECT session_id FROM backing_sessions WHERE id = ?", (backing_session_id,)).fetchone()
    return str(row[0]) if row else None


def session_info(db: sqlite3.Connection, session_id: str) -> SessionInfo | None:
    row = db.execute("SELECT name, rotation_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return SessionInfo(session_id, row[0], int(row[1])) if row else None


def last_user_turn(db: sqlite3.Connection, session_id: str) -> UserTurn | None:
    """The user's last prompt in the session, over all its windows (a rotation right after another one still
    finds it); seeds and prompts that were not the user's are skipped."""
    row = db.execute(
        "SELECT id, text FROM episodes WHERE session_id = ? AND kind = 'user' AND origin = 'user'"
        " AND state != 'retracted' ORDER BY id DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return UserTurn(int(row[0]), str(row[1])) if row else None


def record_rotation(
    db: sqlite3.Connection,
    *,
    session_id: str,
    workspace: WorkspaceId,
    from_backing_session_id: str | None,
    to_backing_session_id: str,
    reason: str,
    occupancy_tokens: int | None,
    window_tokens: int | None,
    now: float,
) -> int:
    """Archive the old window and record the rotation; returns its number (1 for the session's first)."""
    workspace_id = capture.ensure_workspace(db, workspace, now)
    db.execute("INSERT INTO sessions (id, workspace_id, created_at) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING",
               (session_id, workspace_id, now))
    number = int(db.execute("SELECT rotation_count FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]) + 1
    db.execute("UPDATE sessions SET rotation_count = ? WHERE id = ?", (number, session_id))
    db.execute(
        "INSERT INTO rotations (session_id, number, from_backing_session_id, to_backing_session_id, reason,"
        " occupancy_tokens, window_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (session_id, number, from_backing_session_id, to_backing_session_id, reason, occupancy_tokens,
         window_tokens, now),
    )
    if from_backing_session_id is not None:
        capture.archive_live(db, from_backing_session_id)
        # SessionEnd may have closed it first (as `other`): the reason it really ended is the rotation.
        db.execute(
            "UPDATE backing_sessions SET ended_at = coalesce(ended_at, ?), end_reason = 'rotation' WHERE id = ?",
            (now, from_backing_session_id),
        )
    return number
