"""Opening the store: pragmas, migrations, private file modes, and what to do when SQLite says no.

Every process opens the database through `connect`. Two failures are expected and handled here:
- the database is locked past the busy timeout or the disk is full: `StoreUnavailable`, which callers turn
  into a spool entry (nothing is lost, nothing blocks the user's session);
- the file is corrupt: it is moved into the quarantine directory (never deleted) and a fresh store is
  started, so capture keeps working; `codeoid doctor` reports the quarantined file.
"""

from __future__ import annotations

import os
import sqlite3
import time

from codeoid import paths
from codeoid.log import log
from codeoid.store.migrations import migrate

DEFAULT_BUSY_TIMEOUT_MS = 1500
_CORRUPTION_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_UNAVAILABLE_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR,
                      sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY}


class StoreUnavailable(Exception):
    """The store cannot take a write right now (locked, disk full, unreadable); spool and move on."""


class StoreCorrupt(Exception):
    """SQLite found the database file damaged mid-way; the caller quarantines it and starts afresh."""


def busy_timeout_ms() -> int:
    try:
        return int(os.environ.get("CODEOID_BUSY_TIMEOUT_MS", DEFAULT_BUSY_TIMEOUT_MS))
    except ValueError:
        return DEFAULT_BUSY_TIMEOUT_MS


def connect(path: str | None = None, *, busy_ms: int | None = None) -> sqlite3.Connection:
    """Open (creating and migrating if needed) the store; quarantine it first if it is corrupt."""
    path = path or paths.database_path()
    try:
        return _open(path, busy_ms)
    except sqlite3.DatabaseError as error:
        if not is_corruption(error):
            raise StoreUnavailable(f"{path}: {error}") from error
        moved = quarantine(path, reason=str(error))
        log("store", f"database corrupt on open ({error}); moved to {moved}, started a fresh store")
        try:
            return _open(path, busy_ms)
        except sqlite3.DatabaseError as retry_error:
            raise StoreUnavailable(f"{path}: {retry_error}") from retry_error


def store_path(db: sqlite3.Connection) -> str:
    """The file behind a connection, for keying what a process caches per store: two stores in one process never
    share a cached copy."""
    return str(db.execute("PRAGMA database_list").fetchone()[2])


def _open(path: str, busy_ms: int | None) -> sqlite3.Connection:
    _create_private(path)
    timeout = (busy_ms if busy_ms is not None else busy_timeout_ms()) / 1000
    db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        migrate(db)
        for sidecar in (path + "-wal", path + "-shm"):
            if os.path.exists(sidecar) and os.stat(sidecar).st_mode & 0o777 != paths.FILE_MODE:
                os.chmod(sidecar, paths.FILE_MODE)
    except BaseException:
        db.close()
        raise
    return db


def _create_private(path: str) -> None:
    """SQLite creates files with the process umask; create the database 0600 ourselves first."""
    paths.ensure_private_dir(os.path.dirname(path))
    if not os.path.exists(path):
        os.close(paths.open_private(path, os.O_CREAT | os.O_WRONLY))


def is_corruption(error: sqlite3.DatabaseError) -> bool:
    """SQLITE_CORRUPT or SQLITE_NOTADB, extended codes included (SQLITE_CORRUPT_INDEX, _VTAB, ...)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _CORRUPTION_CODES


def is_unavailable(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _UNAVAILABLE_CODES


def quarantine(path: str, *, reason: str) -> str:
    """Move a corrupt database (and its WAL and shared-memory files) aside, never deleting it."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getpid()}"
    stem = os.path.splitext(os.path.basename(path))[0]
    target = os.path.join(paths.quarantine_dir(), f"{stem}-{stamp}.db")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(path + suffix, target + suffix)
        except FileNotFoundError:
            continue
    note = target + ".reason"
    fd = paths.open_private(note, os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w") as file:
        file.write(reason + "\n")
    return target


class write_transaction:  # noqa: N801 - used as a context manager, named like one
    """`BEGIN IMMEDIATE` takes the write lock up front, so a busy store fails fast instead of mid-way.

    A class rather than `contextlib.contextmanager`: that import costs every hook start-up time.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise StoreUnavailable(str(error)) from error
        return self.db

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is not None:
            self.db.execute("ROLLBACK")
            return
        try:
            self.db.execute("COMMIT")
        except sqlite3.OperationalError as commit_error:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise StoreUnavailable(str(commit_error)) from commit_error
