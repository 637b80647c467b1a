"""Taking episodes back (`codeoid retract`) and giving them back (`codeoid restore`).

A retracted episode is hidden from everything the model reaches (recall, timeline, get_episode, the workspace
index) and leaves the vector index, but stays in the store: the user can still read it (`codeoid show`) and
restore it. Nothing here deletes a row.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from codeoid.store import session_titles
from codeoid.store.db import write_transaction


@dataclass(frozen=True)
class Changed:
    episode_id: int
    before: str
    after: str


def retract(db: sqlite3.Connection, episode_ids: list[int]) -> list[Changed]:
    """Retract each episode not retracted already, remembering its state; the changes made, in id order."""
    with write_transaction(db):
        rows = _states(db, episode_ids)
        changed = [Changed(episode_id, state, "retracted") for episode_id, state in rows if state != "retracted"]
        db.executemany("UPDATE episodes SET retracted_from = state, state = 'retracted' WHERE id = ?",
                       [(change.episode_id,) for change in changed])
        session_titles.refresh_titles(db, session_titles.sessions_of(db, [change.episode_id for change in changed]))
    return changed


def restore(db: sqlite3.Connection, episode_ids: list[int]) -> list[Changed]:
    """Put each retracted episode back: `live` if it was live and its window is still open, else `archived`
    (its window rotated or closed while it was retracted, so the model no longer holds it)."""
    with write_transaction(db):
        rows = db.execute(
            f"""SELECT e.id, CASE WHEN e.retracted_from = 'live' AND EXISTS (
                    SELECT 1 FROM backing_sessions b WHERE b.id = e.backing_session_id AND b.ended_at IS NULL)
                THEN 'live' ELSE 'archived' END
                FROM episodes e WHERE e.state = 'retracted' AND e.id IN ({', '.join('?' for _ in episode_ids)})
                ORDER BY e.id""",
            episode_ids,
        ).fetchall()
        changed = [Changed(int(episode_id), "retracted", str(state)) for episode_id, state in rows]
        db.executemany("UPDATE episodes SET state = ?, retracted_from = NULL WHERE id = ?",
                       [(change.after, change.episode_id) for change in changed])
        session_titles.refresh_titles(db, session_titles.sessions_of(db, [change.episode_id for change in changed]))
    return changed


def _states(db: sqlite3.Connection, episode_ids: list[int]) -> list[tuple[int, str]]:
    return [(int(row[0]), str(row[1])) for row in db.execute(
        f"SELECT id, state FROM episodes WHERE id IN ({', '.join('?' for _ in episode_ids)}) ORDER BY id",
        episode_ids,
    )]
