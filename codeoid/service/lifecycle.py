"""Starting the memory service on demand, once per data dir, and finding, restarting or stopping it.

Shared the way `codeoid.memory.chroma_server` shares `chroma run`. Files, under `<data dir>/service/`:
  lock          an flock held by whoever starts or stops the service, so simultaneous starters get one service
  service.json  the service's pid, its start time (against pid reuse) and its socket
  sock          the unix socket it serves on (0600, in a 0700 directory)
  service.log   what the service process writes

`ensure_service()` runs `python -m codeoid.service.daemon` in a new session; that process forks once more and
exits, so the service is nobody's child: ending a `claude` process tree never reaches it, and its environment
carries `CODEOID_DETACHED_SERVICE`, which a rotation's sweep (`codeoid.rotation.process_tree`) spares. The
starter waits, under the lock, for the service to report that its socket listens. The service stops itself
after `CODEOID_SERVICE_IDLE_SECONDS` (default 600) without a request; a service that died (kill -9) leaves its
state behind, which the next starter finds dead and replaces.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import psutil

from codeoid import paths

IDLE_SECONDS_DEFAULT = 600.0
START_TIMEOUT_SECONDS = 30.0
MAX_LOG_BYTES = 5 * 1024 * 1024
# sun_path holds 108 bytes on Linux (104 on macOS), the terminating NUL included.
MAX_SOCKET_PATH_BYTES = 103
SPARE_ENV = "CODEOID_DETACHED_SERVICE"  # as codeoid.rotation.process_tree.SPARE_ENV, which this package must not import
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
    return paths.subdir("service")


def log_path() -> str:
    return os.path.join(state_dir(), "service.log")


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
    fd = acquire_lock()
    try:
        yield
    finally:
        os.close(fd)


def acquire_lock() -> int:
    """The start/stop lock as an open descriptor; closing it (or exiting) releases it. The idle service holds it
    from its decision to stop until it has exited, so no one starts a second service on the same store meanwhile."""
    fd = paths.open_private(os.path.join(state_dir(), "lock"), os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_state() -> ServiceInfo | None:
    try:
        with open(os.path.join(state_dir(), "service.json")) as file:
            return ServiceInfo(**json.load(file))
    except (OSError, ValueError, TypeError):
        return None


def write_state(info: ServiceInfo) -> None:
    final = os.path.join(state_dir(), "service.json")
    temporary = final + f".{os.getpid()}"
    with os.fdopen(paths.open_private(temporary, os.O_CREAT | os.O_WRONLY | os.O_TRUNC), "w") as file:
        json.dump(asdict(info), file)
    os.replace(temporary, final)


def remove_state_of(pid: int) -> None:
    """Forget the service `pid` (its state and socket), if it is still the recorded one."""
    info = read_state()
    if info is None or info.pid != pid:
        return
    for path in (os.path.join(state_dir(), "service.json"), info.socket):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def process_of(info: ServiceInfo) -> psutil.Process | None:
    """The recorded service process if it still runs (not a later process given the same pid, not a zombie)."""
    try:
        process = psutil.Process(info.pid)
        if abs(process.create_time() - info.started) >= 0.01 or process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


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
        try:
            process.terminate()
            process.wait(timeout)
        except psutil.TimeoutExpired:
            process.kill()
            _wait_gone(process, 5.0)
        except psutil.NoSuchProcess:
            pass
    remove_state_of(info.pid)


def _wait_gone(process: psutil.Process, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.05)


def _start(timeout: float) -> ServiceInfo:
    """Launch the service and wait for its report: `pid N`, then `ready` or `failed <why>`."""
    sock = socket_path()
    log = log_path()
    if os.path.exists(log) and os.stat(log).st_size > MAX_LOG_BYTES:
        os.replace(log, log + ".1")
    env = {**os.environ, **ALLOCATOR_ENV, SPARE_ENV: "1"}
    if "CODEOID_HOME" in env:  # a relative one would mean something else from the service's working dir
        env["CODEOID_HOME"] = paths.data_dir()
    read_fd, write_fd = os.pipe()
    try:
        with os.fdopen(paths.open_private(log, os.O_CREAT | os.O_WRONLY | os.O_APPEND), "ab") as output:
            launcher = subprocess.Popen(
                [sys.executable, "-m", "codeoid.service.daemon", "--socket", sock, "--ready-fd", str(write_fd),
                 "--idle-seconds", str(idle_seconds())],
                stdin=subprocess.DEVNULL, stdout=output, stderr=output, pass_fds=(write_fd,),
                start_new_session=True, cwd=paths.data_dir(), env=env,
            )
    finally:
        os.close(write_fd)
    try:
        launcher.wait(timeout=timeout)
        report = _read_report(read_fd, time.monotonic() + timeout)
    except subprocess.TimeoutExpired:
        launcher.kill()
        report = ""
    finally:
        os.close(read_fd)
    lines = report.splitlines()
    info = read_state()
    if "ready" in lines and info is not None and info.socket == sock:
        return info
    pid = next((int(line.split()[1]) for line in lines if line.startswith("pid ")), None)
    if pid is not None:
        try:
            psutil.Process(pid).kill()
        except psutil.NoSuchProcess:
            pass
    failure = next((line[len("failed "):] for line in lines if line.startswith("failed ")), None)
    raise ServiceError(f"the memory service did not start: {failure or f'no answer within {timeout:.0f} s'} "
                       f"(log: {log})")


def _read_report(fd: int, deadline: float) -> str:
    chunks = []
    while (remaining := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([fd], [], [], remaining)
        if not readable:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")
