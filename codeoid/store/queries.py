"""Reading the store: episodes by id, the timeline, sessions, and BM25 search.

Readers get plain dicts with every column, so the CLI's `--json` and the MCP server print whole rows
without a second schema to keep in step.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from codeoid.workspace import identify

Row = dict[str, Any]
_WORD = re.compile(r"\w+", re.UNICODE)
SEARCHABLE_STATES = ("live", "archived")


def _rows(cursor: sqlite3.Cursor) -> list[Row]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def workspace_id_for(db: sqlite3.Connection, directory: str) -> int | None:
    """The stored workspace a directory belongs to (worktrees of one repository share one)."""
    row = db.execute("SELECT id FROM workspaces WHERE key = ?", (identify(directory).key,)).fetchone()
    return int(row[0]) if row else None


def get_episode(db: sqlite3.Connection, episode_id: int) -> Row | None:
    rows = _rows(db.execute("SELECT * FROM episodes WHERE id = ?", (episode_id,)))
    return rows[0] if rows else None


def timeline(db: sqlite3.Connection, *, workspace_id: int | None = None, session_id: str | None = None,
             offset: int = 0, limit: int = 50, include_retracted: bool = False) -> list[Row]:
    """One page of history in chronological order; offset 0 is the newest page."""
    where, params = _scope(workspace_id, session_id, include_retracted)
    rows = _rows(db.execute(
        f"SELECT * FROM episodes {where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?", (*params, limit, offset)
    ))
    return rows[::-1]


def count_episodes(db: sqlite3.Connection, *, workspace_id: int | None = None, session_id: str | None = None,
                   include_retracted: bool = False) -> int:
    where, params = _scope(workspace_id, session_id, include_retracted)
    return int(db.execute(f"SELECT count(*) FROM episodes {where}", params).fetchone()[0])


def sessions(db: sqlite3.Connection, *, workspace_id: int | None = None) -> list[Row]:
    """Sessions with their workspace, episode count, backing sessions and last activity, newest first."""
    where = "WHERE s.workspace_id = ?" if workspace_id is not None else ""
    params: tuple[Any, ...] = (workspace_id,) if workspace_id is not None else ()
    return _rows(db.execute(
        f"""SELECT s.id, s.name, w.root AS workspace, s.forked_from, s.at_turn, s.rotation_count, s.turn_count,
                   s.created_at,
                   (SELECT count(*) FROM episodes e WHERE e.session_id = s.id) AS episodes,
                   (SELECT count(*) FROM backing_sessions b WHERE b.session_id = s.id) AS backing_sessions,
                   coalesce((SELECT max(created_at) FROM episodes e WHERE e.session_id = s.id), s.created_at)
                       AS last_activity
            FROM sessions s JOIN workspaces w ON w.id = s.workspace_id {where}
            ORDER BY last_activity DESC""",
        params,
    ))


def backing_sessions(db: sqlite3.Connection, session_id: str) -> list[Row]:
    return _rows(db.execute(
        "SELECT * FROM backing_sessions WHERE session_id = ? ORDER BY started_at", (session_id,)
    ))


def any_term_query(text: str) -> str | None:
    """An FTS5 query matching any of the words (BM25 ranks documents with more and rarer words higher).

    FTS5's default is all-terms, which turns a natural question into zero hits; each word is quoted so
    operators and punctuation in the user's text are never parsed as query syntax.
    """
    words = dict.fromkeys(word.lower() for word in _WORD.findall(text))
    return " OR ".join(f'"{word}"' for word in words) or None


def search_bm25(db: sqlite3.Connection, query: str, *, workspace_id: int | None = None, limit: int = 10,
                include_retracted: bool = False) -> list[Row]:
    """Episodes ranked by BM25 over their input and text; each row carries its `score` (higher is better)."""
    match = any_term_query(query)
    if match is None:
        return []
    states = ("live", "archived", "retracted") if include_retracted else SEARCHABLE_STATES
    marks = ", ".join("?" for _ in states)
    filters, params = [f"e.state IN ({marks})"], [*states]
    if workspace_id is not None:
        filters.append("e.workspace_id = ?")
        params.append(workspace_id)
    return _rows(db.execute(
        f"""SELECT e.*, -bm25(episodes_fts) AS score FROM episodes_fts
            JOIN episodes e ON e.id = episodes_fts.rowid
            WHERE episodes_fts MATCH ? AND {' AND '.join(filters)}
            ORDER BY bm25(episodes_fts) LIMIT ?""",
        (match, *params, limit),
    ))


def _scope(workspace_id: int | None, session_id: str | None, include_retracted: bool) -> tuple[str, tuple[Any, ...]]:
    filters: list[str] = []
    params: list[Any] = []
    if workspace_id is not None:
        filters.append("workspace_id = ?")
        params.append(workspace_id)
    if session_id is not None:
        filters.append("session_id = ?")
        params.append(session_id)
    if not include_retracted:
        filters.append("state != 'retracted'")
    return ("WHERE " + " AND ".join(filters)) if filters else "", tuple(params)
