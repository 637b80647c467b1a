"""Applying hook events to the store, with every fallback that keeps an event from being lost.

An event is written in one transaction. If the store cannot take it now (locked past the busy timeout,
disk full) it goes to the spool; a corrupt database is moved to the quarantine and a fresh one started.
Every writer replays the spool's backlog first, so events land in the order they happened.
"""

from __future__ import annotations

import os
import sqlite3

from codeoid import paths
from codeoid.capture.events import HANDLERS
from codeoid.capture.spool import SpooledEvent, ensure_reserve, replay, spool_event
from codeoid.log import log
from codeoid.store import db as store_db

REPLAY_PER_WRITE = 200


def write(spooled: SpooledEvent) -> str | None:
    """Apply the event to the store; spool it if the store cannot take it now."""
    for attempt in (1, 2):
        try:
            db = store_db.connect()
        except store_db.StoreUnavailable as error:
            _spool(spooled, f"store unavailable: {error}")
            return None
        try:
            replay_backlog(db)
            output = apply(db, spooled)
            ensure_reserve()
            db.close()
            return output
        except store_db.StoreCorrupt as error:
            db.close()
            if attempt == 2:
                _spool(spooled, f"fresh store corrupt too: {error}")
                return None
            moved = store_db.quarantine(paths.database_path(), reason=str(error))
            log("ingest", f"database corrupt ({error}); moved to {moved}, started a fresh store")
        except BaseException as error:
            db.close()
            if isinstance(error, store_db.StoreUnavailable):
                _spool(spooled, f"store unavailable: {error}")
                return None
            if isinstance(error, Exception):  # a handler failure must not lose the event
                _keep_failed(spooled, error)
                return None
            raise
    return None


def apply(db: sqlite3.Connection, spooled: SpooledEvent) -> str | None:
    """Run the event's handler in one write transaction, naming SQLite's failures by what callers do next."""
    try:
        with store_db.write_transaction(db):
            return HANDLERS[spooled.event](db, spooled)
    except sqlite3.DatabaseError as error:
        if store_db.is_corruption(error):
            raise store_db.StoreCorrupt(str(error)) from error
        if store_db.is_unavailable(error):
            raise store_db.StoreUnavailable(str(error)) from error
        raise


def replay_backlog(db: sqlite3.Connection, limit: int = REPLAY_PER_WRITE) -> int:
    """Apply spooled events (oldest first); stops quietly at the first one the store still cannot take."""
    def apply_spooled(spooled: SpooledEvent) -> None:
        apply(db, spooled)

    count = replay(apply_spooled, limit=limit, retryable=(store_db.StoreUnavailable, store_db.StoreCorrupt))
    if count:
        log("ingest", f"replayed {count} spooled events")
    return count


def _keep_failed(spooled: SpooledEvent, error: Exception) -> None:
    """The store works but this event cannot be applied (it would fail the same way on replay): keep it in
    the quarantine, in the spool's format, so it is not lost and can be replayed once the cause is fixed."""
    import traceback

    trace = traceback.format_exc()
    try:
        path = spool_event(spooled, paths.quarantine_dir())
    except OSError as keep_error:
        log("ingest", f"{spooled.event}: failed ({error!r}); could not keep it ({keep_error}); event lost\n{trace}")
        return
    log("ingest", f"{spooled.event}: failed ({error!r}); kept as quarantine/{os.path.basename(path)}\n{trace}")


def _spool(spooled: SpooledEvent, reason: str) -> None:
    try:
        path = spool_event(spooled)
    except OSError as error:
        log("ingest", f"{spooled.event}: {reason}; spooling failed too ({error}); event lost")
        return
    log("ingest", f"{spooled.event}: {reason}; spooled to {os.path.basename(path)}")
