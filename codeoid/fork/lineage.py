"""What a fork's recall says about hits from its ancestors: inherited history, or the parent's later turns.

Recall searches the whole workspace, so a fork finds its parent's episodes: those up to the fork point are its
own history (the conversation it was started from), those after it happened in the parent only. The note keeps
the second kind from reading as something this session did.
"""

from __future__ import annotations

import sqlite3

from codeoid.store import queries, rotations
from codeoid.store.queries import Row


def lineage_notes(db: sqlite3.Connection, backing_session_id: str | None, rows: list[Row]) -> dict[int, str]:
    """A note for each hit (by episode id) that belongs to an ancestor of the caller's session."""
    own = rotations.session_of_backing(db, backing_session_id) if backing_session_id is not None else None
    if own is None:
        return {}
    ancestors = dict(queries.session_lineage(db, own)[1:])
    notes = {}
    for row in rows:
        upto = ancestors.get(row["session_id"])
        if upto is None:
            continue
        if row["turn"] is not None and row["turn"] <= upto:
            notes[row["id"]] = (f"inherited: turn {row['turn']} of session {row['session_id']}, from before this "
                                "session was forked from it")
        else:
            notes[row["id"]] = (f"session {row['session_id']} after the fork point: not part of this session's "
                                "history")
    return notes
