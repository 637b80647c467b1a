"""A process shared by every codeoid process of a data dir, detached from whoever started it: what the local
Chroma server (`codeoid.memory.chroma_server`) and the memory service (`codeoid.service.lifecycle`) have in common.

Under `<data dir>/<name>/`: `lock`, an flock held by whoever decides to start or stop the process (so simultaneous
starters get one), a JSON state file naming it (pid and start time, against pid reuse) and its log. A starter
launches `python -m <module> ...` in a new session with a pipe to report on; that launcher forks once and exits
(`become_detached`), so the process is nobody's child and ending a `claude` process tree never reaches it, and its
environment carries `SPARE_ENV`, which a rotation's sweep (`codeoid.rotation.process_tree`) spares as well. The
process reports `pid N`, then `ready` or `failed <why>`, and closes the pipe.

Only the standard library, psutil and `codeoid.paths`: both users stay light (the Chroma watchdog lives as long as
its server).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict
from typing import Generic, TypeVar

import psutil

from codeoid import paths

# Every process of one backing window carries this, with the window's own value (`codeoid.rotation.supervisor`).
WINDOW_MARKER_ENV = "CODEOID_WINDOW_MARKER"
SPARE_ENV = "CODEOID_DETACHED_SERVICE"  # as codeoid.rotation.process_tree.SPARE_ENV
MAX_LOG_BYTES = 5 * 1024 * 1024

State = TypeVar("State")


class Detached(Generic[State]):
    """The files of one kind of detached process: `<data dir>/<name>/{lock, <state_file>, <log_file>}`."""

    def __init__(self, name: str, state_file: str, log_file: str, state_type: type[State]) -> None:
        self.name = name
        self.state_file = state_file
        self.log_file = log_file
        self.state_type = state_type

    def state_dir(self) -> str:
        return paths.subdir(self.name)

    def state_path(self) -> str:
        return os.path.join(self.state_dir(), self.state_file)

    def log_path(self) -> str:
        return os.path.join(self.state_dir(), self.log_file)

    def lock(self) -> paths.Locked:
        """The start/stop lock, held while a starter decides and starts."""
        return paths.Locked(self._lock_path())

    def acquire_lock(self) -> int:
        """The start/stop lock as an open descriptor; closing it (or exiting) releases it."""
        return paths.acquire_lock(self._lock_path())

    def _lock_path(self) -> str:
        return os.path.join(self.state_dir(), "lock")

    def read_state(self) -> State | None:
        try:
            with open(self.state_path()) as file:
                return self.state_type(**json.load(file))
        except (OSError, ValueError, TypeError):
            return None

    def write_state(self, state: State) -> None:
        """Replace the state file whole (a reader never sees half of it), 0600."""
        temporary = self.state_path() + f".{os.getpid()}"
        with os.fdopen(paths.open_private(temporary, os.O_CREAT | os.O_WRONLY | os.O_TRUNC), "w") as file:
            json.dump(asdict(state), file)  # type: ignore[call-overload]
        os.replace(temporary, self.state_path())

    def forget_state(self) -> None:
        try:
            os.unlink(self.state_path())
        except FileNotFoundError:
            pass

    def launch(self, module: str, arguments: list[str], timeout: float, *, env: Mapping[str, str] | None = None
               ) -> list[str]:
        """Run `python -m module ARGUMENTS --ready-fd N` detached (see the module docstring), with `env` added to
        this process's environment, and return the lines it reported within `timeout`: `pid N`, then `ready` or
        `failed <why>` (fewer if it never got there)."""
        log = self.log_path()
        if os.path.exists(log) and os.stat(log).st_size > MAX_LOG_BYTES:
            os.replace(log, log + ".1")
        environment = {**os.environ, **(env or {}), SPARE_ENV: "1"}
        # Shared by every window, it is none of them: it must not carry the marker of the window that started it.
        environment.pop(WINDOW_MARKER_ENV, None)
        if "CODEOID_HOME" in environment:  # a relative one would mean something else from the process's working dir
            environment["CODEOID_HOME"] = paths.data_dir()
        read_fd, write_fd = os.pipe()
        try:
            with os.fdopen(paths.open_private(log, os.O_CREAT | os.O_WRONLY | os.O_APPEND), "ab") as output:
                launcher = subprocess.Popen(
                    [sys.executable, "-m", module, *arguments, "--ready-fd", str(write_fd)],
                    stdin=subprocess.DEVNULL, stdout=output, stderr=output, pass_fds=(write_fd,),
                    start_new_session=True, cwd=paths.data_dir(), env=environment,
                )
        finally:
            os.close(write_fd)
        try:
            launcher.wait(timeout=timeout)
            return read_report(read_fd, time.monotonic() + timeout).splitlines()
        except subprocess.TimeoutExpired:
            launcher.kill()
            return []
        finally:
            os.close(read_fd)


def become_detached() -> None:
    """In the launched process: fork once and let the launcher return at once, so this process is an orphan in its
    own session; files it creates are private."""
    if os.fork() > 0:
        os._exit(0)
    os.umask(0o077)


def reported_pid(lines: list[str]) -> int | None:
    return next((int(line.split()[1]) for line in lines if line.startswith("pid ")), None)


def reported_failure(lines: list[str]) -> str | None:
    return next((line[len("failed "):] for line in lines if line.startswith("failed ")), None)


def process_of(pid: int, started: float) -> psutil.Process | None:
    """The process `pid` if it still runs and is the one that started at `started`, not a later one given the
    same pid (a zombie, killed but not yet reaped, counts as gone)."""
    try:
        process = psutil.Process(pid)
        if abs(process.create_time() - started) >= 0.01 or process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def end(processes: list[psutil.Process], timeout: float) -> None:
    """SIGTERM, then SIGKILL for whatever still runs after `timeout`."""
    for process in processes:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    alive = wait_gone(processes, timeout)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    wait_gone(alive, 5.0)


def wait_gone(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of `processes` still running after `timeout`. A process that exited counts as gone even before
    init reaps it (psutil's own wait would also wait for the reaping, which can take seconds)."""
    deadline = time.monotonic() + timeout
    alive = processes
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [process for process in alive if running(process)]
    return alive


def running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def read_report(fd: int, deadline: float) -> str:
    """What the process wrote to the pipe until it closed it or the deadline passed."""
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
