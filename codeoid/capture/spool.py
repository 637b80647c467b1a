"""The spool: hook events that could not be written when they happened, replayed by the next writer.

One file per event, written to a temporary name and renamed into place, so concurrent hooks never
interleave and a reader never sees half an entry. A replaying process claims a file by renaming it
(atomic: exactly one claimant wins) and removes it only after its contents are committed to the store;
a claim left behind by a killed process is taken over at once when its claimant (the pid in its name) is gone,
and after `STALE_CLAIM_SECONDS` when that pid is alive (reused by another process, or a claimant still at work).

A writer killed before its rename (a hook past Claude Code's timeout while spooling a 5 MB result) leaves
`<stamp>.tmp`: never an entry, since the rename is the commit. `sweep_orphans` (run by `codeoid gc` and the MCP
server's background gc) rescues one that was written whole, and removes the others after `ORPHAN_GRACE_SECONDS`,
counting each as a lost event in the loss ring, so nothing vanishes uncounted.

An entry whose replay never finishes (its claimant was killed, or it ran past the replayer's time limit) is
marked `.t1` in its name when it goes back; one that times out again is moved to the quarantine with a log
line, so no single entry can stall every later writer forever.
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Callable, Iterator

from codeoid import paths
from codeoid.log import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STALE_CLAIM_SECONDS = 60
# A spool write takes milliseconds and a hook is killed within seconds: a `.tmp` this old has no writer left.
ORPHAN_GRACE_SECONDS = 600
# Space set aside on the spool's disk: when the disk fills up, giving it back makes room for the events
# that could not reach the store. It is given to the spool only: while it cannot be set aside again, writers
# leave the store alone and spool (`codeoid.capture.ingest`), so the store never grows into the freed room.
RESERVE_BYTES = 4 * 1024 * 1024
_RESERVE = ".reserve"
_SUFFIX = ".event.json"
_CLAIMED = ".claimed"
_TIMED_OUT_ONCE = ".t1"


class ReplayTimeout(BaseException):
    """Raised into a replayed entry's apply when it runs past its time limit (a BaseException so that no
    handler's `except Exception` can swallow it)."""


class Replacement:
    """What the model reads instead of a Bash call's output (`codeoid.hooks.post_tool_use`): `shown`, made by
    `rule` from `raw`, the exact text Claude Code handed the hook, which is stored as the call's raw output."""

    __slots__ = ("raw", "rule", "shown")

    def __init__(self, *, rule: str, raw: bytes, shown: str) -> None:
        self.rule = rule
        self.raw = raw
        self.shown = shown


class SpooledEvent:
    """One hook event as received: what the handlers apply, now or when replayed from the spool.

    `replacement` lives only in the hook that received the event, never in the spool: an event applied later
    (replayed) has no one to answer, so it stores the output as Claude Code reported it and replaces nothing.
    """

    __slots__ = ("event", "payload", "env", "received_at", "replacement")

    def __init__(self, event: str, payload: dict[str, Any], env: dict[str, str], received_at: float,
                 replacement: Replacement | None = None) -> None:
        self.event = event
        self.payload = payload
        self.env = env
        self.received_at = received_at
        self.replacement = replacement


def spool_event(event: SpooledEvent, directory: str | None = None) -> str:
    """Write one event to the spool; on a full disk, release the reserve and try once more."""
    directory = directory or paths.spool_dir()
    try:
        return _write_entry(event, directory)
    except OSError as error:
        if error.errno != errno.ENOSPC or not _release_reserve(directory):
            raise
        log("spool", "disk full: released the spool reserve to keep this event")
        return _write_entry(event, directory)


def ensure_reserve(directory: str | None = None) -> bool:
    """Set the reserve aside if it is missing (one `stat` when it is there; never raises); whether it is."""
    path = os.path.join(directory or paths.spool_dir(), _RESERVE)
    if os.path.exists(path):
        return True
    try:
        fd = paths.open_private(path + ".tmp", os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        finally:
            os.close(fd)
        os.replace(path + ".tmp", path)
    except OSError:
        _remove(path + ".tmp")
        return False
    return True


def _release_reserve(directory: str) -> bool:
    try:
        os.unlink(os.path.join(directory, _RESERVE))
    except FileNotFoundError:
        return False
    return True


def _write_entry(event: SpooledEvent, directory: str) -> str:
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}"
    body = json.dumps(
        {"event": event.event, "payload": event.payload, "env": event.env, "received_at": event.received_at}
    ).encode()
    temporary = os.path.join(directory, name + ".tmp")
    fd = paths.open_private(temporary, os.O_CREAT | os.O_WRONLY | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(body)
            file.flush()
            os.fsync(file.fileno())
    except BaseException:
        _remove(temporary)
        raise
    final = os.path.join(directory, name + _SUFFIX)
    os.replace(temporary, final)
    return final


class SweptOrphans:
    """What `sweep_orphans` did with unfinished spool writes."""

    __slots__ = ("rescued", "removed", "freed_bytes")

    def __init__(self, rescued: int = 0, removed: int = 0, freed_bytes: int = 0) -> None:
        self.rescued = rescued  # written whole before the writer died: now an entry the next writer replays
        self.removed = removed  # cut short: removed, and counted in the loss ring
        self.freed_bytes = freed_bytes


def orphans(directory: str | None = None, now: float | None = None) -> list[tuple[str, int]]:
    """Unfinished spool writes past their grace: (path, bytes), oldest first."""
    directory = directory or paths.spool_dir()
    now = time.time() if now is None else now
    found = []
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except FileNotFoundError:
        return []
    for entry in entries:
        if not entry.name.endswith(".tmp") or not entry.is_file(follow_symlinks=False):
            continue
        try:
            status = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if now - status.st_mtime > ORPHAN_GRACE_SECONDS:
            found.append((entry.path, status.st_size))
    return found


def sweep_orphans(directory: str | None = None, now: float | None = None) -> SweptOrphans:
    """Rescue or remove the unfinished spool writes past their grace (see the module docstring)."""
    from codeoid.capture import loss_ring

    directory = directory or paths.spool_dir()
    swept = SweptOrphans()
    for path, size in orphans(directory, now):
        name = os.path.basename(path)
        if name == _RESERVE + ".tmp":  # the reserve being set aside: not an event
            _remove(path)
            continue
        try:
            _read(path)
        except (OSError, ValueError, KeyError, TypeError):
            event, key = _head_of(path)
            _remove(path)
            loss_ring.ensure_ring()
            loss_ring.record_loss(event, key, f"its hook was killed while spooling it ({size:,} bytes of {name} "
                                              "written); swept by gc")
            log("spool", f"{name}: an unfinished spool write ({size:,} bytes, {event}) removed and counted lost")
            swept.removed += 1
            swept.freed_bytes += size
            continue
        try:
            os.replace(path, path[: -len(".tmp")] + _SUFFIX)
        except FileNotFoundError:
            continue
        log("spool", f"{name}: written whole before its writer died; back in the spool for replay")
        swept.rescued += 1
    return swept


def _head_of(path: str) -> tuple[str, str | None]:
    """The event name and idempotency key at the start of a cut-short entry, where they are readable."""
    import re

    try:
        with open(path, "rb") as file:
            head = file.read(4096).decode("utf-8", "replace")
    except OSError:
        return "unknown", None
    event = re.search(r'"event": "([A-Za-z]+)"', head)
    key = re.search(r'"(?:tool_use_id|prompt_id)": "([^"]{1,80})"', head)
    return (event.group(1) if event else "unknown"), (key.group(1) if key else None)


def backlog(directory: str | None = None) -> int:
    """How many events wait in the spool (what `codeoid doctor` reports)."""
    directory = directory or paths.spool_dir()
    return sum(1 for name in os.listdir(directory) if name.endswith((_SUFFIX, _CLAIMED)))


def has_backlog(directory: str | None = None) -> bool:
    """Whether any event waits in the spool (one `listdir`)."""
    try:
        return any(name.endswith((_SUFFIX, _CLAIMED)) for name in os.listdir(directory or paths.spool_dir()))
    except FileNotFoundError:
        return False


def replay(apply: Callable[[SpooledEvent, str], None], directory: str | None = None, limit: int = 500,
           retryable: tuple[type[BaseException], ...] = (), deadline: float | None = None) -> int:
    """Apply up to `limit` spooled events in arrival order; return how many were applied.

    `apply` gets the event and its entry's name (`<stamp>.event.json`) and must commit before it returns.
    When it raises one of `retryable` (the store is busy again) the event goes back to the spool and replay
    stops; `ReplayTimeout` sends it back marked (or, the second time, to the quarantine) and stops too; any
    other failure would recur on every replay, so that event is moved to the quarantine and replay goes on.
    No entry is claimed after `deadline` (a `time.monotonic()` value).
    """
    directory = directory or paths.spool_dir()
    applied = 0
    for claimed in _claim(directory, limit, deadline):
        name = os.path.basename(claimed)
        try:
            event = _read(claimed)
        except (OSError, ValueError, KeyError, TypeError) as error:
            os.replace(claimed, os.path.join(paths.quarantine_dir(), name.replace(_CLAIMED, ".unreadable")))
            log("spool", f"{name}: unreadable ({error!r}); moved to the quarantine")
            continue
        try:
            apply(event, _original_name(name))
        except retryable:
            os.replace(claimed, os.path.join(directory, _original_name(name)))
            raise
        except ReplayTimeout:
            _timed_out(claimed, directory, "ran past the replay time limit")
            raise
        except Exception as error:  # noqa: BLE001 - one bad event must not block the ones behind it
            os.replace(claimed, os.path.join(paths.quarantine_dir(), name.replace(_CLAIMED, ".failed")))
            log("spool", f"{name}: replay failed ({error!r}); moved to the quarantine")
            continue
        _remove(claimed)
        applied += 1
    return applied


def claim_entry(path: str) -> str | None:
    """Claim one known entry (a writer's own spooled event); None when another process has it already."""
    target = f"{path}.{os.getpid()}{_CLAIMED}"
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return None
    return target


def _timed_out(claimed: str, directory: str, why: str) -> str | None:
    """Send a claim whose replay never finished back marked, or to the quarantine if it was marked already.
    Returns the new claim's path when the caller may try it once more (`_claim` taking over a stale claim)."""
    name = os.path.basename(claimed)
    original = _original_name(name)
    if original.endswith(_TIMED_OUT_ONCE + _SUFFIX):
        target = os.path.join(paths.quarantine_dir(), original + ".timedout")
        os.replace(claimed, target)
        log("spool", f"{original}: {why}, a second time; moved to the quarantine as {os.path.basename(target)}")
        return None
    marked = original[: -len(_SUFFIX)] + _TIMED_OUT_ONCE + _SUFFIX
    os.replace(claimed, os.path.join(directory, marked))
    log("spool", f"{original}: {why}; back in the spool as {marked} for one more try")
    return os.path.join(directory, marked)


def _claim(directory: str, limit: int, deadline: float | None = None) -> Iterator[str]:
    now = time.time()
    taken = 0
    for name in sorted(os.listdir(directory)):
        if taken >= limit or (deadline is not None and time.monotonic() > deadline):
            return
        source = os.path.join(directory, name)
        if name.endswith(_CLAIMED):
            try:
                if not _claimant_gone(name) and now - os.stat(source).st_mtime < STALE_CLAIM_SECONDS:
                    continue
            except FileNotFoundError:
                continue
            # Its claimant died before committing it (killed by a hook timeout, most likely): a timeout.
            try:
                retried = _timed_out(source, directory, "its replayer died before finishing it")
            except FileNotFoundError:
                continue  # another process took it over first
            if retried is None:
                continue
            source = retried
            name = os.path.basename(retried)
        elif not name.endswith(_SUFFIX):
            continue
        target = os.path.join(directory, f"{_original_name(name)}.{os.getpid()}{_CLAIMED}")
        try:
            os.replace(source, target)
        except FileNotFoundError:
            continue  # another process claimed it first
        os.utime(target)
        taken += 1
        yield target


def _claimant_gone(name: str) -> bool:
    """Whether the process named in a claim `<entry>.<pid>.claimed` no longer exists (killed mid-replay): its
    claim need not wait out `STALE_CLAIM_SECONDS` before the entry is replayed."""
    pid_text = name[: -len(_CLAIMED)].rpartition(".")[2]
    if not pid_text.isascii() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, ValueError):
        return False
    return False


def _original_name(name: str) -> str:
    """`<stamp>.event.json.<pid>.claimed` -> `<stamp>.event.json`."""
    return name[: name.index(_SUFFIX) + len(_SUFFIX)]


def _read(path: str) -> SpooledEvent:
    with open(path, "rb") as file:
        data = json.loads(file.read())
    return SpooledEvent(
        event=str(data["event"]), payload=dict(data["payload"]), env=dict(data["env"]),
        received_at=float(data["received_at"]),
    )


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
