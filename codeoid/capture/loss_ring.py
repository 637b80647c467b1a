"""The loss ring: where an event that could not be kept anywhere is at least counted.

When the disk is so full that neither the store nor the spool (with its reserve given back) can take an
event, the log cannot take a line either. So a small file of fixed size is set aside beforehand, on the first
write and at install, and a loss is recorded by overwriting bytes inside it (`pwrite` needs no new blocks):
a header with the running count, then `SLOTS` fixed-width lines used round-robin. `codeoid doctor` reads it.
"""

from __future__ import annotations

import os
import time

from codeoid import paths

SLOTS = 256
SLOT_BYTES = 256
HEADER_BYTES = 64
RING_BYTES = HEADER_BYTES + SLOTS * SLOT_BYTES
_MAGIC = b"codeoid-lost "


def ring_path() -> str:
    return os.path.join(paths.subdir("logs"), "lost.ring")


def ensure_ring(path: str | None = None) -> bool:
    """Create the ring at its full size if it is missing (one `stat` when it is there); never raises."""
    path = path or ring_path()
    if os.path.exists(path):
        return True
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        fd = paths.open_private(temporary, os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
        try:
            os.posix_fallocate(fd, 0, RING_BYTES)
            os.pwrite(fd, _header(0), 0)
        finally:
            os.close(fd)
        os.link(temporary, path)  # never replaces a ring another process made meanwhile
    except OSError:
        pass
    try:
        os.unlink(temporary)
    except OSError:
        pass
    return os.path.exists(path)


def record_loss(event: str, key: str | None, reason: str, path: str | None = None) -> bool:
    """Count one lost event and keep a line about it; False when not even the ring could be written."""
    path = path or ring_path()
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        import fcntl  # only on the way to losing an event

        fcntl.flock(fd, fcntl.LOCK_EX)
        count = _count(os.pread(fd, HEADER_BYTES, 0))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        line = f"{stamp} {event} {key or '-'} {reason}".replace("\n", " ").encode("utf-8", "replace")
        os.pwrite(fd, line[: SLOT_BYTES - 1].ljust(SLOT_BYTES - 1) + b"\n", HEADER_BYTES + (count % SLOTS) * SLOT_BYTES)
        os.pwrite(fd, _header(count + 1), 0)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def losses(path: str | None = None) -> tuple[int, list[str]]:
    """How many events were lost, and the newest lines kept about them (oldest first)."""
    path = path or ring_path()
    try:
        with open(path, "rb") as file:
            data = file.read(RING_BYTES)
    except OSError:
        return 0, []
    count = _count(data[:HEADER_BYTES])
    kept = min(count, SLOTS)
    order = [(count - kept + index) % SLOTS for index in range(kept)]
    lines = [data[HEADER_BYTES + slot * SLOT_BYTES: HEADER_BYTES + (slot + 1) * SLOT_BYTES] for slot in order]
    return count, [line.decode("utf-8", "replace").strip() for line in lines]


def _header(count: int) -> bytes:
    return (_MAGIC + str(count).encode()).ljust(HEADER_BYTES - 1) + b"\n"


def _count(header: bytes) -> int:
    if not header.startswith(_MAGIC):
        return 0
    try:
        return int(header[len(_MAGIC):].strip() or 0)
    except ValueError:
        return 0
