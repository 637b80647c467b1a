"""The vector indexer's bookkeeping in the store: the watermark, the claim on the batch in flight, removals.

Episodes enter the vector index in id order. An indexer claims the next batch in a write transaction (so two
indexers never embed the same episodes), embeds and upserts it, and only then moves the watermark. A kill -9
in between leaves the claim behind; once its lease runs out the next indexer redoes the batch, and since
chunk ids are `<store>:<episode>:<n>` the redo replaces what was written instead of duplicating it.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from codeoid.store.db import write_transaction
from codeoid.store.queries import Row, _rows


@dataclass(frozen=True)
class Progress:
    indexed_upto: int
    claimed_upto: int
    claimed_by: str | None
    claimed_at: float | None
    latest: int  # the newest episode id in the store


def progress(db: sqlite3.Connection) -> Progress:
    row = db.execute("SELECT indexed_upto, claimed_upto, claimed_by, claimed_at FROM vector_progress").fetchone()
    latest = db.execute("SELECT coalesce(max(id), 0) FROM episodes").fetchone()[0]
    return Progress(int(row[0]), int(row[1]), row[2], row[3], int(latest))


EPISODE_COLUMNS = """e.id, e.workspace_id, e.session_id, e.backing_session_id, e.kind, e.state, e.tool_name,
                      e.input, e.command, e.original_command, e.text, e.paths, e.origin, e.summary, e.created_at,
                      e.raw_output_id, w.portable_id, w.key"""


def claim_batch(db: sqlite3.Connection, owner: str, *, limit: int, lease_seconds: float) -> list[Row] | None:
    """Claim the next `limit` episodes after the watermark for `owner` and return them (with their workspace's
    `portable_id` and `key`); [] when there is nothing new, None when another live indexer holds a claim."""
    with write_transaction(db):
        state = progress(db)
        now = time.time()
        held = state.claimed_upto > state.indexed_upto and state.claimed_by not in (None, owner)
        if held and state.claimed_at is not None and now - state.claimed_at < lease_seconds:
            return None
        rows = _rows(db.execute(
            f"""SELECT {EPISODE_COLUMNS}
               FROM episodes e JOIN workspaces w ON w.id = e.workspace_id
               WHERE e.id > ? ORDER BY e.id LIMIT ?""",
            (state.indexed_upto, limit),
        ))
        if not rows:
            db.execute("UPDATE vector_progress SET claimed_upto = indexed_upto, claimed_by = NULL, claimed_at = NULL")
            return []
        db.execute("UPDATE vector_progress SET claimed_upto = ?, claimed_by = ?, claimed_at = ?",
                   (rows[-1]["id"], owner, now))
        return rows


def finish_batch(db: sqlite3.Connection, owner: str, upto: int) -> bool:
    """Move the watermark to `upto` if `owner` still holds the claim (False: it was taken over, and the new
    holder redoes the batch, harmlessly)."""
    with write_transaction(db):
        cursor = db.execute(
            "UPDATE vector_progress SET indexed_upto = ?, claimed_by = NULL, claimed_at = NULL"
            " WHERE claimed_by = ? AND claimed_upto = ?",
            (upto, owner, upto),
        )
        return cursor.rowcount == 1


def renew_claim(db: sqlite3.Connection, owner: str) -> bool:
    """Refresh `owner`'s claim (between episodes of a long batch), so a slow batch is not taken for a dead one."""
    with write_transaction(db):
        return db.execute("UPDATE vector_progress SET claimed_at = ? WHERE claimed_by = ?",
                          (time.time(), owner)).rowcount == 1


def release_claim(db: sqlite3.Connection, owner: str) -> None:
    """Give up `owner`'s claim without indexing (Chroma went away), so any indexer may take the batch at once."""
    with write_transaction(db):
        db.execute("UPDATE vector_progress SET claimed_upto = indexed_upto, claimed_by = NULL, claimed_at = NULL"
                   " WHERE claimed_by = ?", (owner,))


def reset(db: sqlite3.Connection) -> None:
    """Start the index over from the first episode (`codeoid reindex`), and its corpus statistics with it."""
    with write_transaction(db):
        db.execute("UPDATE vector_progress SET indexed_upto = 0, claimed_upto = 0, claimed_by = NULL,"
                   " claimed_at = NULL")
        db.execute("DELETE FROM vector_removals")
        db.execute("DELETE FROM dense_stats")


def pending_removals(db: sqlite3.Connection, *, limit: int = 200) -> list[Row]:
    """Retracted episodes still to be removed from the index, with their workspace's ids."""
    return _rows(db.execute(
        """SELECT r.episode_id, w.portable_id, w.key FROM vector_removals r
           JOIN episodes e ON e.id = r.episode_id JOIN workspaces w ON w.id = e.workspace_id
           ORDER BY r.episode_id LIMIT ?""",
        (limit,),
    ))


def removals_done(db: sqlite3.Connection, episode_ids: list[int]) -> None:
    with write_transaction(db):
        db.executemany("DELETE FROM vector_removals WHERE episode_id = ?", [(i,) for i in episode_ids])


def pending_restores(db: sqlite3.Connection, *, limit: int = 50) -> list[Row]:
    """Episodes restored after the index passed them, to embed again, with what `claim_batch` gives."""
    return _rows(db.execute(
        f"""SELECT {EPISODE_COLUMNS} FROM vector_restores r
            JOIN episodes e ON e.id = r.episode_id JOIN workspaces w ON w.id = e.workspace_id
            ORDER BY r.episode_id LIMIT ?""",
        (limit,),
    ))


def restores_done(db: sqlite3.Connection, episode_ids: list[int]) -> None:
    with write_transaction(db):
        db.executemany("DELETE FROM vector_restores WHERE episode_id = ?", [(i,) for i in episode_ids])
