"""A session's title: the start of its first prompt, so sessions can be told apart in `codeoid sessions` and the
viewer without reading hex ids.

Stored on the session (`sessions.title`) when its first prompt the user typed is stored; seeds, task
notifications and other prompts codeoid or Claude Code wrote do not count. A title never shows text the model can
no longer reach: retracting or forgetting that prompt gives the session the title of the next one (or none).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from codeoid.text import one_line

TITLE_WIDTH = 60


def title_of(prompt: str) -> str | None:
    """The title a prompt gives its session: its first characters on one line, or None for a blank prompt."""
    return one_line(prompt, TITLE_WIDTH) or None


def set_first_title(db: sqlite3.Connection, session_id: str, prompt: str) -> None:
    """Title the session after `prompt` unless it has a title already (called as a user's prompt is stored)."""
    db.execute("UPDATE sessions SET title = ? WHERE id = ? AND title IS NULL", (title_of(prompt), session_id))


def refresh_titles(db: sqlite3.Connection, session_ids: Iterable[str] | None = None) -> None:
    """Recompute the titles of `session_ids` (every session when None) from their first reachable user prompt."""
    wanted = None if session_ids is None else sorted(set(session_ids))
    if wanted == []:
        return
    where = "" if wanted is None else f"WHERE s.id IN ({', '.join('?' for _ in wanted)})"
    rows = db.execute(
        f"""SELECT s.id, (SELECT e.text FROM episodes e
                          WHERE e.session_id = s.id AND e.kind = 'user' AND e.origin = 'user'
                            AND e.state != 'retracted' AND e.forgotten_at IS NULL AND e.text != ''
                          ORDER BY e.id LIMIT 1)
            FROM sessions s {where}""",
        wanted or (),
    ).fetchall()
    db.executemany("UPDATE sessions SET title = ? WHERE id = ?",
                   [(title_of(text) if text else None, session_id) for session_id, text in rows])


def sessions_of(db: sqlite3.Connection, episode_ids: list[int]) -> list[str]:
    """The sessions the episodes belong to."""
    if not episode_ids:
        return []
    marks = ", ".join("?" for _ in episode_ids)
    return [str(row[0]) for row in db.execute(
        f"SELECT DISTINCT session_id FROM episodes WHERE id IN ({marks})", episode_ids)]
