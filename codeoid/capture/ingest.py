"""Applying hook events to the store, with every fallback that keeps an event from being lost.

An event is written in one transaction. If the store cannot take it now (locked past the busy timeout,
disk full) it goes to the spool; a corrupt database is moved to the quarantine and a fresh one started.

Events land in the order they happened, and a hook's own event is safe before it replays anyone else's: with
a backlog waiting, the hook first spools its own event behind it, then replays the backlog for at most
`REPLAY_SECONDS` (each entry for at most `ENTRY_SECONDS`, enforced by a timer in the hook's main thread), and
applies its own entry last if no one else has. Whatever is left stays spooled for the next writer.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Callable

from codeoid import paths
from codeoid.capture import loss_ring
from codeoid.capture.agent_events import HANDLERS
from codeoid.capture.spool import (
    ReplayTimeout,
    SpooledEvent,
    claim_entry,
    ensure_reserve,
    has_backlog,
    replay,
    spool_event,
)
from codeoid.log import log
from codeoid.store import db as store_db

REPLAY_PER_WRITE = 200
# A hook has 10 s (SessionEnd 5 s) before Claude Code kills it: replay gets a slice of that, never all of it.
# Worst case: the busy timeout to open (1.5 s), the budget, one entry running to its limit, the busy timeout
# again for the hook's own event: about 6 s, under Claude Code's limit even on a loaded machine.
REPLAY_SECONDS = 1.0
ENTRY_SECONDS = 2.0


def write(spooled: SpooledEvent) -> str | None:
    """Apply the event to the store; spool it if the store cannot take it now."""
    own: list[str] = []  # where the event waits in the spool once it has been put behind a backlog
    if not ensure_reserve():
        # The disk is full and the reserve went to the spool: the store must not grow into that room.
        _spool(spooled, "disk full: the store waits until the spool reserve can be set aside again", own)
        return None
    for attempt in (1, 2):
        try:
            db = store_db.connect()
        except store_db.StoreUnavailable as error:
            _spool(spooled, f"store unavailable: {error}", own)
            return None
        try:
            output = _write_in_turn(db, spooled, own) if own or has_backlog() else apply(db, spooled)
            loss_ring.ensure_ring()
            db.close()
            return output
        except store_db.StoreCorrupt as error:
            db.close()
            if attempt == 2:
                _spool(spooled, f"fresh store corrupt too: {error}", own)
                return None
            moved = store_db.quarantine(paths.database_path(), reason=str(error))
            log("ingest", f"database corrupt ({error}); moved to {moved}, started a fresh store")
        except BaseException as error:
            db.close()
            if isinstance(error, store_db.StoreUnavailable):
                _spool(spooled, f"store unavailable: {error}", own)
                return None
            if isinstance(error, Exception):  # a handler failure must not lose the event
                _keep_failed(spooled, error)
                return None
            raise
    return None


def _write_in_turn(db: sqlite3.Connection, spooled: SpooledEvent, own: list[str]) -> str | None:
    """Spool the event behind the backlog, replay within the time budget, then apply the event itself.

    Its output (SessionStart's index, a prompt's delta) is returned only when this process applied it; when
    the budget ran out or another writer took it, it is stored all the same, just without an answer now.
    """
    if not own:
        try:
            own.append(spool_event(spooled))
        except OSError as error:  # not even the spool can take it: apply it now, out of turn, not lose it
            log("ingest", f"{spooled.event}: could not spool behind the backlog ({error}); applied out of turn")
            return apply(db, spooled)
    own_name = os.path.basename(own[0])
    outputs: dict[str, str | None] = {}
    replay_backlog(db, deadline=time.monotonic() + REPLAY_SECONDS, own=(own_name, spooled, outputs))
    if own_name in outputs:
        return outputs[own_name]
    claimed = claim_entry(own[0])
    if claimed is None:
        return None  # replay stopped before it, or another writer is applying it: it waits, safe, in the spool
    try:
        output = apply(db, spooled)
    except (store_db.StoreUnavailable, store_db.StoreCorrupt):
        os.replace(claimed, own[0])
        raise
    except Exception as error:  # noqa: BLE001 - it would fail the same way on every replay
        kept = os.path.join(paths.quarantine_dir(), own_name + ".failed")
        os.replace(claimed, kept)
        log("ingest", f"{spooled.event}: failed ({error!r}); kept as quarantine/{os.path.basename(kept)}")
        return None
    except BaseException:
        os.replace(claimed, own[0])
        raise
    os.unlink(claimed)
    return output


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


def replay_backlog(db: sqlite3.Connection, limit: int = REPLAY_PER_WRITE, deadline: float | None = None,
                   own: tuple[str, SpooledEvent, dict[str, str | None]] | None = None) -> int:
    """Apply spooled events (oldest first); stops quietly at the first one the store still cannot take.

    With a `deadline` (a hook's replay) no entry is started after it, and each runs under a timer; `own` names
    the caller's own entry, whose output is recorded instead of dropped.
    """
    if not ensure_reserve():
        return 0  # a full disk: the room the reserve gave back is the spool's, not the store's
    def apply_spooled(spooled: SpooledEvent, name: str) -> None:
        if own is not None and name == own[0]:
            own[2][name] = _timed(lambda: apply(db, own[1]), deadline)
        else:
            _timed(lambda: apply(db, spooled), deadline)

    try:
        count = replay(apply_spooled, limit=limit, retryable=(store_db.StoreUnavailable, store_db.StoreCorrupt),
                       deadline=deadline)
    except ReplayTimeout:
        log("ingest", "replay stopped: an entry ran past its time limit")
        return 0
    if count:
        log("ingest", f"replayed {count} spooled events")
    return count


def _timed(call: Callable[[], str | None], deadline: float | None) -> str | None:
    """Run `call` under a SIGALRM timer of `ENTRY_SECONDS` (hook replays only: a deadline, the main thread)."""
    if deadline is None:
        return call()

    def expire(signum: int, frame: object) -> None:
        raise ReplayTimeout()

    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except ValueError:  # not the main thread: no timer there
        return call()
    signal.setitimer(signal.ITIMER_REAL, ENTRY_SECONDS)
    try:
        return call()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _keep_failed(spooled: SpooledEvent, error: Exception) -> None:
    """The store works but this event cannot be applied (it would fail the same way on replay): keep it in
    the quarantine, in the spool's format, so it is not lost and can be replayed once the cause is fixed."""
    import traceback

    trace = traceback.format_exc()
    try:
        path = spool_event(spooled, paths.quarantine_dir())
    except OSError as keep_error:
        log("ingest", f"{spooled.event}: failed ({error!r}); could not keep it ({keep_error}); event lost\n{trace}")
        loss_ring.record_loss(spooled.event, _key(spooled), f"failed and could not be kept: {keep_error}")
        return
    log("ingest", f"{spooled.event}: failed ({error!r}); kept as quarantine/{os.path.basename(path)}\n{trace}")


def _spool(spooled: SpooledEvent, reason: str, own: list[str]) -> None:
    if own:
        log("ingest", f"{spooled.event}: {reason}; left in the spool as {os.path.basename(own[0])}")
        return
    try:
        path = spool_event(spooled)
    except OSError as error:
        log("ingest", f"{spooled.event}: {reason}; spooling failed too ({error}); event lost")
        loss_ring.record_loss(spooled.event, _key(spooled), f"{reason}; spooling failed too ({error})")
        return
    log("ingest", f"{spooled.event}: {reason}; spooled to {os.path.basename(path)}")


def _key(spooled: SpooledEvent) -> str | None:
    """The event's idempotency key, for the loss ring's line."""
    for name in ("tool_use_id", "prompt_id", "session_id"):
        value = spooled.payload.get(name)
        if isinstance(value, str):
            return value
    return None
