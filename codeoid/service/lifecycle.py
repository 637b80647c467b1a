"""Starting the memory service on demand, once per data dir, and finding, restarting or stopping it.

Shared the way `codeoid.memory.chroma_server` shares the local Chroma server, through `codeoid.detached` (lock,
state file, launch, detaching). Files, under `<data dir>/service/`:
  lock          an flock held by whoever starts or stops the service, so simultaneous starters get one service
  service.json  the service's pid, its start time (against pid reuse) and its socket
  sock          the unix socket it serves on (0600, in a 0700 directory)
  service.log   what the service process writes

`ensure_service()` runs `python -m codeoid.service.daemon` detached: nobody's child, so ending a `claude` process
tree never reaches it, and spared by a rotation's sweep. The starter waits, under the lock, for the service to
report that its socket listens. The service stops itself after `CODEOID_SERVICE_IDLE_SECONDS` (default 600)
without a request; a service that died (kill -9) leaves its state behind, which the next starter finds dead and
replaces.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil

from codeoid import detached

IDLE_SECONDS_DEFAULT = 600.0
START_TIMEOUT_SECONDS = 30.0
# sun_path holds 108 bytes on Linux (104 on macOS), the terminating NUL included.
MAX_SOCKET_PATH_BYTES = 103
# glibc's allocator, set for the service before its first allocation (it reads them at start-up; other C libraries
# ignore them). By default each thread that allocates gets an arena of its own, and a freed block above the
# dynamic mmap threshold stays in its arena: the service's request threads and onnxruntime's activations (a few
# MB per batch) left it holding ~310 MB after a batch of 64 texts, against ~160 MB with these (measured,
# benchmarks/memory_service.py); inference time is within noise. A fixed trim threshold also fixes the mmap one.
ALLOCATOR_ENV = {"MALLOC_ARENA_MAX": "2", "MALLOC_TRIM_THRESHOLD_": str(1024 * 1024)}


class ServiceError(RuntimeError):
    """The memory service could not be started or reached; the message says why (and where the log is)."""


@dataclass(frozen=True)
class ServiceInfo:
    pid: int
    started: float
    socket: str


_files = detached.Detached("service", "service.json", "service.log", ServiceInfo)


def idle_seconds() -> float:
    try:
        return max(0.5, float(os.environ.get("CODEOID_SERVICE_IDLE_SECONDS", IDLE_SECONDS_DEFAULT)))
    except ValueError:
        return IDLE_SECONDS_DEFAULT


def socket_path() -> str:
    path = os.path.join(state_dir(), "sock")
    if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
        raise ServiceError(f"the data dir's path is too long for a unix socket ({path})")
    return path


def state_dir() -> str:
    return _files.state_dir()


def log_path() -> str:
    return _files.log_path()


def ensure_service(timeout: float = START_TIMEOUT_SECONDS) -> ServiceInfo:
    """The running service, started first if there is none; raises `ServiceError` if it cannot start."""
    info = read_state()
    if info is not None and _serving(info):
        return info
    with lock():
        info = read_state()
        if info is not None and _serving(info):
            return info
        if info is not None:
            _end(info)
        return _start(timeout)


def running_service() -> ServiceInfo | None:
    """The service if one is up and listening, without starting one."""
    info = read_state()
    return info if info is not None and _serving(info) else None


def stop_service(timeout: float = 15.0) -> bool:
    """Stop the service now (tests, uninstall); False when none was recorded."""
    with lock():
        info = read_state()
        if info is None:
            return False
        _end(info, timeout=timeout)
        return True


@contextmanager
def lock() -> Iterator[None]:
    """The start/stop lock, held while a starter decides and starts."""
    with _files.lock():
        yield


def acquire_lock() -> int:
    """The start/stop lock as an open descriptor; closing it (or exiting) releases it. The idle service holds it
    from its decision to stop until it has exited, so no one starts a second service on the same store meanwhile."""
    return _files.acquire_lock()


def read_state() -> ServiceInfo | None:
    return _files.read_state()


def write_state(info: ServiceInfo) -> None:
    _files.write_state(info)


def remove_state_of(pid: int) -> None:
    """Forget the service `pid` (its state and socket), if it is still the recorded one."""
    info = read_state()
    if info is None or info.pid != pid:
        return
    _files.forget_state()
    try:
        os.unlink(info.socket)
    except FileNotFoundError:
        pass


def process_of(info: ServiceInfo) -> psutil.Process | None:
    """The recorded service process if it still runs (not a later process given the same pid, not a zombie)."""
    return detached.process_of(info.pid, info.started)


def _serving(info: ServiceInfo) -> bool:
    if process_of(info) is None:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2.0)
        try:
            probe.connect(info.socket)
        except OSError:
            return False
    return True


def _end(info: ServiceInfo, timeout: float = 15.0) -> None:
    """Stop a recorded service, alive, hung or dead, and forget it."""
    process = process_of(info)
    if process is not None:
        detached.end([process], timeout)
    remove_state_of(info.pid)


def _start(timeout: float) -> ServiceInfo:
    """Launch the service and wait for its report: `pid N`, then `ready` or `failed <why>`."""
    sock = socket_path()
    lines = _files.launch("codeoid.service.daemon", ["--socket", sock, "--idle-seconds", str(idle_seconds())],
                          timeout, env=ALLOCATOR_ENV)
    info = read_state()
    if "ready" in lines and info is not None and info.socket == sock:
        return info
    pid = detached.reported_pid(lines)
    if pid is not None:
        try:
            psutil.Process(pid).kill()
        except psutil.NoSuchProcess:
            pass
    failure = detached.reported_failure(lines)
    raise ServiceError(f"the memory service did not start: {failure or f'no answer within {timeout:.0f} s'} "
                       f"(log: {log_path()})")
