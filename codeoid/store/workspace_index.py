"""The prebuilt workspace index in the store: saved by the long-lived builder, read by hooks.

Saving the same text again changes nothing (not even `version`), so "has memory changed since this window
last looked" is a comparison of two integers. Each window's view keeps the facts it was shown, which is what
its next delta is measured against.
"""

from __future__ import annotations

import sqlite3

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Stored:
    """One workspace's index as last built (plain class: hooks import this module)."""

    __slots__ = ("version", "body", "facts", "built_at")

    def __init__(self, version: int, body: str, facts: str, built_at: float) -> None:
        self.version = version
        self.body = body
        self.facts = facts
        self.built_at = built_at


def latest(db: sqlite3.Connection, workspace_id: int) -> Stored | None:
    row = db.execute("SELECT version, body, facts, built_at FROM workspace_index WHERE workspace_id = ?",
                     (workspace_id,)).fetchone()
    return Stored(*row) if row else None


def save(db: sqlite3.Connection, workspace_id: int, *, body: str, facts: str, now: float) -> int:
    """Store a freshly built index; returns its version, unchanged when the text is the same as before. Inside
    the caller's transaction when there is one (a hook's), else in one of its own."""
    if db.in_transaction:
        return _save(db, workspace_id, body=body, facts=facts, now=now)
    with db:
        return _save(db, workspace_id, body=body, facts=facts, now=now)


def _save(db: sqlite3.Connection, workspace_id: int, *, body: str, facts: str, now: float) -> int:
    current = latest(db, workspace_id)
    if current is not None and current.body == body and current.facts == facts:
        return current.version
    version = current.version + 1 if current else 1
    db.execute(
        """INSERT INTO workspace_index (workspace_id, version, body, facts, built_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (workspace_id) DO UPDATE SET
               version = excluded.version, body = excluded.body, facts = excluded.facts,
               built_at = excluded.built_at""",
        (workspace_id, version, body, facts, now),
    )
    return version


def built_at(db: sqlite3.Connection, workspace_id: int) -> float | None:
    row = db.execute("SELECT built_at FROM workspace_index WHERE workspace_id = ?", (workspace_id,)).fetchone()
    return float(row[0]) if row else None


def view(db: sqlite3.Connection, backing_session_id: str) -> tuple[int, str] | None:
    """(version, facts) this window was last shown, if any."""
    row = db.execute("SELECT version, facts FROM workspace_index_views WHERE backing_session_id = ?",
                     (backing_session_id,)).fetchone()
    return (int(row[0]), str(row[1])) if row else None


def mark_shown(db: sqlite3.Connection, backing_session_id: str, workspace_id: int, stored: Stored,
               now: float) -> None:
    """Remember what this window now knows (the caller's transaction commits it)."""
    db.execute(
        """INSERT INTO workspace_index_views (backing_session_id, workspace_id, version, facts, shown_at)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (backing_session_id) DO UPDATE SET
               workspace_id = excluded.workspace_id, version = excluded.version, facts = excluded.facts,
               shown_at = excluded.shown_at""",
        (backing_session_id, workspace_id, stored.version, stored.facts, now),
    )


def activity_since(db: sqlite3.Connection, workspace_id: int, after_episode_id: int) -> tuple[int, int]:
    """(episodes stored after `after_episode_id`, their highest id): what the builder's trigger counts."""
    row: Any = db.execute(
        "SELECT count(*), coalesce(max(id), ?) FROM episodes WHERE workspace_id = ? AND id > ?",
        (after_episode_id, workspace_id, after_episode_id),
    ).fetchone()
    return int(row[0]), int(row[1])
