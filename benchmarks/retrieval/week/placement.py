"""Placing the built store of the `week` set in time and in a project: what `through_mcp.py prepare --set week` does
to a copy of `store.db.gz` before indexing it.

The build ran every session within minutes of each other, at whatever time it ran. Each session has a simulated
day and hour (`sessions.json`: `days_ago` before the day of preparing, `hour` after that day's UTC midnight) and
each of its turns a start in minutes after the session's; every time column of every table is moved by the shift
of the turn it belongs to, so the gaps inside a turn stay as the real CLI left them. Nothing else of an episode
changes: its text, input, response and raw output are what the hooks stored. The derived indexes (FTS, the
neighbour index with its dates, vector progress, dense statistics, the workspace index) are emptied so that they
are rebuilt from the placed rows.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

DAY = 86400.0
#: Every time column the store has, by table; a column this module does not know stops `place` (a newer migration
#: added one: say here how it moves).
TIME_COLUMNS: dict[str, tuple[str, ...]] = {
    "workspaces": ("created_at",),
    "sessions": ("created_at",),
    "backing_sessions": ("started_at", "ended_at", "hooked_at"),
    "episodes": ("created_at", "vectors_expired_at", "forgotten_at"),
    "turns": ("started_at", "ended_at"),
    "raw_outputs": ("created_at", "expired_at"),
    "rotations": ("created_at",),
    "compactions": ("noted_at", "applied_at"),
    "raw_output_reads": ("created_at",),
}
#: Time columns of derived or bookkeeping rows: emptied by `clear_derived`, or (migrations) not about the history.
NOT_MOVED = {("workspace_index", "built_at"), ("workspace_index_views", "shown_at"),
             ("vector_progress", "claimed_at"), ("_migrations", "applied_at")}


def clear_derived(db: sqlite3.Connection) -> None:
    """Empty every index derived from the episodes, so the next catch-up rebuilds it from what the store holds."""
    db.execute("INSERT INTO episodes_fts(episodes_fts) VALUES ('delete-all')")
    db.execute("UPDATE fts_progress SET indexed_upto = 0")
    db.execute("DELETE FROM episodes_context")
    db.execute("UPDATE context_progress SET indexed_upto = 0")
    db.execute("DELETE FROM context_dirty")
    db.execute("UPDATE vector_progress SET indexed_upto = 0, claimed_upto = 0, claimed_by = NULL, claimed_at = NULL")
    db.execute("DELETE FROM vector_removals")
    db.execute("DELETE FROM vector_restores")
    db.execute("DELETE FROM dense_stats")
    db.execute("DELETE FROM workspace_index")
    db.execute("DELETE FROM workspace_index_views")


def time_columns(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """Every (table, column) whose name says it holds a time."""
    found = []
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE '%VIRTUAL%'"):
        for row in db.execute(f"PRAGMA table_info({table})"):
            if row[1].endswith("_at"):
                found.append((table, row[1]))
    return found


class Shifts:
    """The shift of every moment of the build, by backing session: that of the turn it falls in."""

    def __init__(self, db: sqlite3.Connection, sessions: Sequence[Mapping[str, Any]], midnight: float) -> None:
        self.by_backing: dict[str, tuple[list[float], list[float]]] = {}
        for session in sessions:
            backing = session["backing_session_id"]
            started = dict(db.execute("SELECT number, started_at FROM turns WHERE backing_session_id = ?",
                                      (backing,)).fetchall())
            assert sorted(started) == [t["number"] for t in session["turns"]], (session["key"], started)
            base = midnight - session["days_ago"] * DAY + session["hour"] * 3600
            starts, shifts = [], []
            for planned in session["turns"]:
                starts.append(started[planned["number"]])
                shifts.append(base + planned["at"] * 60 - started[planned["number"]])
            self.by_backing[backing] = (starts, shifts)
        self.backing_of_session = dict(db.execute("SELECT session_id, min(id) FROM backing_sessions GROUP BY 1"))

    def shift(self, backing: str | None, at: float) -> float:
        if backing not in self.by_backing:
            raise ValueError(f"a row of backing session {backing!r}, which sessions.json does not place")
        starts, shifts = self.by_backing[backing]
        return shifts[max(0, bisect.bisect_right(starts, at + 1e-6) - 1)]


def _owner_queries() -> dict[str, str]:
    """For each table with moved times: its rows' key and the backing session each row belongs to."""
    return {
        "backing_sessions": "SELECT rowid, id FROM backing_sessions",
        "sessions": "SELECT rowid, NULL, id FROM sessions",
        "episodes": "SELECT rowid, backing_session_id FROM episodes",
        "turns": "SELECT rowid, backing_session_id FROM turns",
        "raw_outputs": "SELECT r.rowid, e.backing_session_id, r.session_id FROM raw_outputs r "
                       "LEFT JOIN episodes e ON e.tool_use_id = r.tool_use_id AND e.kind = 'tool'",
        "rotations": "SELECT rowid, from_backing_session_id, session_id FROM rotations",
        "compactions": "SELECT rowid, backing_session_id FROM compactions",
        "raw_output_reads": "SELECT rowid, backing_session_id FROM raw_output_reads",
    }


def place(db: sqlite3.Connection, sessions: Sequence[Mapping[str, Any]], *, midnight: float,
          workspace: tuple[str, str, str | None]) -> float:
    """Move every time in the store to its session's simulated day (days before `midnight`, a UTC midnight), point
    the one workspace at `workspace` (key, root, portable id) and empty the derived indexes. Returns the latest time
    placed. Runs in one transaction."""
    unknown = [column for column in time_columns(db)
               if column not in NOT_MOVED and column[1] not in TIME_COLUMNS.get(column[0], ())]
    if unknown:
        raise SystemExit(f"time columns placement.py does not know how to move: {unknown}")
    shifts = Shifts(db, sessions, midnight)
    latest = 0.0
    db.execute("BEGIN IMMEDIATE")
    try:
        for table, query in _owner_queries().items():
            columns = TIME_COLUMNS[table]
            for row in db.execute(query).fetchall():
                rowid, backing = row[0], row[1]
                if backing is None and len(row) > 2:
                    backing = shifts.backing_of_session.get(row[2])
                values = db.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
                moved = [None if value is None else value + shifts.shift(backing, value) for value in values]
                latest = max([latest, *(value for value in moved if value is not None)])
                db.execute(f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in columns)} WHERE rowid = ?",
                           (*moved, rowid))
        workspaces = db.execute("SELECT id FROM workspaces").fetchall()
        assert len(workspaces) == 1, workspaces
        first = db.execute("SELECT min(started_at) FROM backing_sessions").fetchone()[0]
        key, root, portable_id = workspace
        db.execute("UPDATE workspaces SET key = ?, root = ?, portable_id = ?, created_at = ?",
                   (key, root, portable_id, first))
        clear_derived(db)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return latest
