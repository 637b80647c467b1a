"""Keeping the workspace index current, in the background of the long-lived MCP server.

A rebuild is due when memory changed enough to matter: `REBUILD_EPISODES` new episodes, or any new episode
once `REBUILD_SECONDS` have passed, and never sooner than `DEBOUNCE_SECONDS` after the last build (a burst of
tool calls costs one rebuild, not twenty). A rebuild whose text is unchanged leaves the stored version alone,
so windows get no delta. The first check after start-up always builds: a new window's MCP server refreshes
the index the next window's SessionStart will read.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass

from codeoid.log import log
from codeoid.memory import workspace_index
from codeoid.memory.ranking import vector_enabled
from codeoid.store import db as store_db
from codeoid.store import identity, queries
from codeoid.store import workspace_index as stored_index

TYPE_CHECKING = False
if TYPE_CHECKING:
    from codeoid.memory.vector_index import VectorIndex

REBUILD_EPISODES = 5
REBUILD_SECONDS = 60.0
DEBOUNCE_SECONDS = 15.0
POLL_SECONDS = 2.0


@dataclass
class Schedule:
    """When the next rebuild is due (`now` is passed in so the rule can be checked without waiting)."""

    last_build: float | None = None
    built_upto: int = 0  # the newest episode the last build saw

    def due(self, now: float, new_episodes: int) -> bool:
        if self.last_build is None:
            return True
        if new_episodes == 0 or now - self.last_build < DEBOUNCE_SECONDS:
            return False
        return new_episodes >= REBUILD_EPISODES or now - self.last_build >= REBUILD_SECONDS


class IndexBuilder:
    """Rebuilds one workspace's index when due; create it on the thread that runs it."""

    def __init__(self, db: sqlite3.Connection, project_dir: str, *, vectors: VectorIndex | None = None) -> None:
        self.db = db
        self.project_dir = project_dir
        self.vectors = vectors
        self.schedule = Schedule()
        self.workspace_id: int | None = None  # found once: a workspace's row never changes

    def check(self, now: float | None = None) -> int | None:
        """Rebuild if due; the version built, else None."""
        now = time.time() if now is None else now
        if self.workspace_id is None:
            # Identifying the workspace walks the directory tree and reads git's config: once, not every poll.
            self.workspace_id = queries.workspace_id_for(self.db, self.project_dir)
            if self.workspace_id is None:
                return None  # nothing stored for this workspace yet
        workspace_id = self.workspace_id
        new, newest = stored_index.activity_since(self.db, workspace_id, self.schedule.built_upto)
        if not self.schedule.due(now, new):
            return None
        version = workspace_index.build(self.db, workspace_id, vectors=self.vectors, now=now, keep_topics=True)
        self.schedule = Schedule(last_build=now, built_upto=newest)
        return version

    def run(self, stop: threading.Event) -> None:
        """Check every `POLL_SECONDS` until `stop` is set (a check costs one indexed count)."""
        while not stop.is_set():
            wait = POLL_SECONDS
            try:
                self.check()
            except (store_db.StoreUnavailable, sqlite3.OperationalError) as error:
                log("workspace-index", f"store busy, retrying: {error}")
            except Exception as error:  # noqa: BLE001 - keep serving the last index; try again later
                log("workspace-index", f"build failed: {error!r}")
                wait = REBUILD_SECONDS
            stop.wait(wait)


def run_forever(stop: threading.Event, project_dir: str, *, delay: float = 2.0) -> None:
    """Keep the index current until `stop` is set; failures are logged, never raised (a background thread)."""
    if stop.wait(delay):
        return
    try:
        db = store_db.connect()
    except store_db.StoreUnavailable as error:
        log("workspace-index", f"not started: {error}")
        return
    try:
        vectors = None
        if vector_enabled():
            from codeoid.memory.vector_index import VectorIndex

            vectors = VectorIndex(store=identity.store_id(db))
        IndexBuilder(db, project_dir, vectors=vectors).run(stop)
    except Exception as error:  # noqa: BLE001 - a background thread must leave a trace, never a traceback on stdio
        log("workspace-index", f"stopped: {error!r}")
    finally:
        db.close()
