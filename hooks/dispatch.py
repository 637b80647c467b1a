"""From hook stdin to the store: parse tolerantly, apply in one transaction, spool what cannot be written.

Input that cannot be read is quarantined, events that cannot be written now (locked or full store) go to
the spool, a corrupt database is moved aside, and every reason is logged under the data dir.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

from codeoid.hooks.handlers import ENV_KEYS, HANDLERS

from codeoid import paths
from codeoid.log import log
from codeoid.spool import SpooledEvent, replay, spool_event
from codeoid.store import db as store_db

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REPLAY_PER_HOOK = 200


def run(event: str, raw: bytes) -> str | None:
    payload = parse_payload(event, raw)
    if payload is None:
        return None
    named = payload.get("hook_event_name")
    if not event:
        event = named if isinstance(named, str) else ""
    elif named != event:
        log("hook", f"{event}: payload says hook_event_name={named!r}; handled as {event}")
    if event not in HANDLERS:
        log("hook", f"unknown event {event!r}; nothing stored")
        return None
    spooled = SpooledEvent(event, payload, {k: os.environ[k] for k in ENV_KEYS if k in os.environ}, time.time())
    return write(spooled)


def parse_payload(event: str, raw: bytes) -> dict[str, Any] | None:
    """The hook's JSON object, or None (with the bytes quarantined) when there is nothing usable."""
    if not raw.strip():
        log("hook", f"{event}: empty stdin; nothing stored")
        return None
    try:
        payload = json.loads(raw)
    except ValueError as error:
        _quarantine_input(event, raw, f"invalid JSON: {error}")
        return None
    if not isinstance(payload, dict):
        _quarantine_input(event, raw, f"expected a JSON object, got {type(payload).__name__}")
        return None
    return payload


def write(spooled: SpooledEvent) -> str | None:
    """Apply the event to the store; spool it if the store cannot take it now."""
    try:
        db = store_db.connect()
    except store_db.StoreUnavailable as error:
        _spool(spooled, f"store unavailable: {error}")
        return None
    try:
        _replay_backlog(db)
        return _apply_with_recovery(db, spooled)
    except store_db.StoreUnavailable as error:
        _spool(spooled, f"store unavailable: {error}")
        return None
    finally:
        db.close()


def _apply_with_recovery(db: sqlite3.Connection, spooled: SpooledEvent) -> str | None:
    try:
        return apply(db, spooled)
    except sqlite3.DatabaseError as error:
        if not store_db.is_corruption(error):
            if store_db.is_unavailable(error):
                raise store_db.StoreUnavailable(str(error)) from error
            raise
        db.close()
        moved = store_db.quarantine(paths.database_path(), reason=str(error))
        log("hook", f"database corrupt ({error}); moved to {moved}, started a fresh store")
        fresh = store_db.connect()
        try:
            return apply(fresh, spooled)
        finally:
            fresh.close()


def apply(db: sqlite3.Connection, spooled: SpooledEvent) -> str | None:
    with store_db.write_transaction(db):
        return HANDLERS[spooled.event](db, spooled)


def _replay_backlog(db: sqlite3.Connection) -> None:
    def apply_spooled(spooled: SpooledEvent) -> None:
        apply(db, spooled)

    count = replay(apply_spooled, limit=REPLAY_PER_HOOK, retryable=(store_db.StoreUnavailable,))
    if count:
        log("hook", f"replayed {count} spooled events")


def _spool(spooled: SpooledEvent, reason: str) -> None:
    try:
        path = spool_event(spooled)
    except OSError as error:
        log("hook", f"{spooled.event}: {reason}; spooling failed too ({error}); event lost")
        return
    log("hook", f"{spooled.event}: {reason}; spooled to {os.path.basename(path)}")


def _quarantine_input(event: str, raw: bytes, reason: str) -> None:
    try:
        name = f"hook-input-{time.time_ns()}-{os.getpid()}.bin"
        fd = paths.open_private(os.path.join(paths.quarantine_dir(), name), os.O_CREAT | os.O_WRONLY | os.O_EXCL)
        with os.fdopen(fd, "wb") as file:
            file.write(raw)
        log("hook", f"{event}: {reason}; input kept as quarantine/{name}")
    except OSError as error:
        log("hook", f"{event}: {reason}; could not keep the input ({error})")

