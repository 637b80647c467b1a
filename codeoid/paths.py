"""Where codeoid keeps its files, the same answer in every process.

Hooks, the CLI, the MCP server, the supervisor and the compressor all call `data_dir()`; `CODEOID_HOME`
overrides the XDG location so a test or a second installation stays isolated. Everything created here is
private: directories 0700, files 0600, whatever the caller's umask.

Paths are plain strings built with `os.path`: this module is on every hook's start-up path, and `pathlib`
alone (with the `urllib` and `ipaddress` it pulls in) would cost a hook several milliseconds.
"""

from __future__ import annotations

import os
import time

DIR_MODE = 0o700
FILE_MODE = 0o600


def data_dir() -> str:
    """The data directory, created private on first use."""
    return ensure_private_dir(data_dir_location())


def data_dir_location() -> str:
    """Where the data directory is, without creating it or fixing its mode (what `codeoid doctor` inspects)."""
    override = os.environ.get("CODEOID_HOME")
    if override:
        return os.path.abspath(os.path.expanduser(override))
    xdg = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(xdg, "codeoid")


def config_file() -> str:
    """The user's TOML config: beside the data when `CODEOID_HOME` is set, else under XDG config."""
    override = os.environ.get("CODEOID_HOME")
    if override:
        return os.path.join(os.path.abspath(os.path.expanduser(override)), "config.toml")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(xdg, "codeoid", "config.toml")


def ensure_private_dir(path: str) -> str:
    """Create `path` (and parents) if needed and make the leaf 0700."""
    os.makedirs(path, mode=DIR_MODE, exist_ok=True)
    if os.stat(path).st_mode & 0o777 != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


def subdir(name: str) -> str:
    return ensure_private_dir(os.path.join(data_dir(), name))


def database_path() -> str:
    return os.path.join(data_dir(), "store.db")


def log_path() -> str:
    return os.path.join(subdir("logs"), "codeoid.log")


def spool_dir() -> str:
    return subdir("spool")


def cache_dir() -> str:
    """Derived files rebuilt on demand (compiled rule sets, the bash version check): safe to delete."""
    return subdir("cache")


def quarantine_dir() -> str:
    """Where corrupt databases and unreadable hook inputs are moved: kept, never deleted."""
    return subdir("quarantine")


def open_private(path: str, flags: int) -> int:
    """`os.open` that creates files 0600 regardless of umask: the one way codeoid creates a file."""
    fd = os.open(path, flags, FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o777 != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def acquire_lock(path: str) -> int:
    """An exclusive flock on `path` (created 0600), as an open descriptor: closing it, or exiting, releases it."""
    import fcntl  # only where a lock is taken: hooks import this module on their hot path

    fd = open_private(path, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Locked:
    """`acquire_lock` held for a `with` block (a class, not `contextlib.contextmanager`: hooks import this module,
    and contextlib is not theirs to load)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._fd = -1

    def __enter__(self) -> None:
        self._fd = acquire_lock(self._path)

    def __exit__(self, *raised: object) -> None:
        os.close(self._fd)


def write_private(path: str, data: bytes) -> None:
    """Replace `path` with `data` atomically (a private temporary file renamed over it), created 0600.

    For small files rebuilt on demand (caches, markers) that several processes may write at once: a reader sees
    the old bytes or the new ones, never half of them, and never a file wider than 0600.
    """
    ensure_private_dir(os.path.dirname(path) or ".")
    # Unique per write, not only per process: two threads of one process may replace the same file at once.
    temporary = f"{path}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    fd = open_private(temporary, os.O_CREAT | os.O_WRONLY | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
