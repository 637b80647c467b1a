"""`codeoid forget` reaching the vector index: the forgotten episodes' chunks deleted from Chroma at once, and what
could not be purged said.

`codeoid.store.retention.forget` queues the vectors of forgotten episodes (`vector_removals`), which an indexer
removes in its next step; a `forget` should not wait for one to run. So the CLI removes them here, now, and:
on the local server, which keeps no chunk text (`codeoid.memory.vector_index`), it has Chroma's SQLite file
vacuumed so not even the deleted rows' metadata stay in its pages; on a team's server the delete reaches it, but
that server's own files (its log, its full-text index) are its operator's to purge, and the answer says so. When
Chroma cannot be reached the removals stay queued for the indexer, and the answer says that too.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from codeoid.memory import chroma_server
from codeoid.memory.ranking import vector_enabled
from codeoid.store import identity, vector_progress


@dataclass
class Purged:
    removed: int = 0  # episodes whose chunks were deleted from Chroma now
    vacuumed: bool = False
    notes: list[str] = field(default_factory=list)  # what could not be purged, for the user
    said: list[str] = field(default_factory=list)  # what was done


def remove_vectors_now(db: sqlite3.Connection, episode_ids: list[int]) -> Purged:
    """Delete the chunks of `episode_ids` (forgotten, so queued for removal) from Chroma now."""
    done = Purged()
    if not episode_ids:
        return done
    marks = ", ".join("?" for _ in episode_ids)
    queued = db.execute(
        f"""SELECT r.episode_id, w.portable_id, w.key FROM vector_removals r
            JOIN episodes e ON e.id = r.episode_id JOIN workspaces w ON w.id = e.workspace_id
            WHERE r.episode_id IN ({marks}) ORDER BY r.episode_id""", episode_ids).fetchall()
    if not queued:
        return done
    if not vector_enabled():
        done.notes.append("semantic memory is off (CODEOID_VECTOR=off): their vectors stay queued and leave the "
                          "vector index when it is next on")
        return done
    from codeoid.memory.vector_index import VectorIndex, VectorIndexUnavailable, workspace_index_id

    index = VectorIndex(store=identity.store_id(db))
    try:
        for episode_id, portable_id, key in queued:
            index.delete_episode(workspace_index_id(portable_id, key), int(episode_id))
            vector_progress.removals_done(db, [int(episode_id)])
            done.removed += 1
        vacuumed = index.vacuum()
    except VectorIndexUnavailable as error:
        done.notes.append(f"{error}: the vectors of {len(queued) - done.removed} episode(s) stay queued and the "
                          "indexer removes them when it next reaches the vector index")
        return done
    remote = chroma_server.remote_url()
    if vacuumed is not None:
        done.vacuumed = True
        done.said.append(f"removed the vectors of {done.removed} episode(s) from the local Chroma server (which "
                         "keeps no chunk text) and vacuumed its database")
    elif remote is not None:
        done.said.append(f"removed the chunks of {done.removed} episode(s) from the team Chroma server at {remote}")
        done.notes.append(f"codeoid cannot purge the team server's own files: until {remote} compacts its log and "
                          "full-text index (or its operator vacuums it), their pages may still hold the forgotten "
                          "chunks' text")
    return done
