"""One local Chroma server per data dir, shared by every codeoid process, started on demand, stopped when idle.

Embedded Chroma (`PersistentClient`) is safe for one process only: measured with chromadb 1.5.9, two processes
writing one directory silently lose vectors, and a long-lived reader misses other processes' writes. Several
Claude Code sessions mean several codeoid processes, so they all talk HTTP to one `chroma run` on 127.0.0.1,
the same client path a team uses when `CODEOID_CHROMA_URL` names a shared server (then nothing starts here).

Files, under `<data dir>/chroma-server/`:
  lock         an flock held by whoever decides to start or stop the server, so simultaneous starters get one
  server.json  url, port, and the pids (with start times, against pid reuse) of the watchdog and `chroma run`
  lease        its mtime is the last time a client used the server; clients refresh it as they work
  server.log   the output of the watchdog and of `chroma run`
The collections themselves live in `<data dir>/chroma/`.

Lifecycle. `ensure_server()` runs `python -m codeoid.memory.chroma_server watch` detached (`codeoid.detached`, shared
with the memory service: the lock, the state file, the launch): the watchdog is nobody's child, so ending a `claude`
process tree (psutil's recursive children) never reaches it. The watchdog starts `chroma run --host 127.0.0.1
--port <free port> --path <data dir>/chroma` as its own child (on Linux that child gets SIGTERM if the watchdog
dies, even by kill -9), reports ready through a pipe once the heartbeat answers, and then checks the lease. After
`CODEOID_CHROMA_IDLE_SECONDS` (default 600) without a client it takes the lock, stops chroma, removes
server.json and exits; the next client starts a fresh server within a few seconds. A separate watchdog, rather
than a thread in some client, is what lets the server outlive every client session and still stop by itself.
"""

from __future__ import annotations

import argparse
import http.client
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

import psutil

from codeoid import detached, paths

HOST = "127.0.0.1"
IDLE_SECONDS_DEFAULT = 600.0
START_TIMEOUT_SECONDS = 30.0
START_ATTEMPTS = 3  # a free port can be taken by someone else between choosing it and chroma binding it

# Loopback traffic must never go through a proxy named in the environment.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ChromaServerError(RuntimeError):
    """The local Chroma server could not be started; the message says why and where the log is."""


@dataclass(frozen=True)
class ServerInfo:
    url: str
    port: int
    watchdog_pid: int
    watchdog_started: float
    chroma_pid: int
    chroma_started: float
    data_path: str


_files = detached.Detached("chroma-server", "server.json", "server.log", ServerInfo)


def remote_url() -> str | None:
    """The team server `CODEOID_CHROMA_URL` names, if any: then no local server is ever started."""
    url = os.environ.get("CODEOID_CHROMA_URL", "").strip()
    return url.rstrip("/") or None


def server_url() -> str:
    """The Chroma every client of this process should use: the remote one, else the local one, started if needed."""
    return remote_url() or ensure_server().url


def idle_seconds() -> float:
    try:
        return max(0.5, float(os.environ.get("CODEOID_CHROMA_IDLE_SECONDS", IDLE_SECONDS_DEFAULT)))
    except ValueError:
        return IDLE_SECONDS_DEFAULT


def heartbeat(url: str, timeout: float = 2.0) -> bool:
    """Whether a Chroma server answers at `url` (its v2 heartbeat), without importing chromadb."""
    try:
        with _direct.open(url + "/api/v2/heartbeat", timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, ValueError, http.client.HTTPException):
        return False


def ensure_server(timeout: float = START_TIMEOUT_SECONDS) -> ServerInfo:
    """The running local server, started first if there is none; raises `ChromaServerError` if it cannot start.

    The lease is refreshed before the server is checked, so a watchdog deciding at this moment to stop sees
    the new client (it re-reads the lease under the lock).
    """
    touch_lease(force=True)
    info = _read_state()
    if info is not None and _serving(info):
        return info
    with _files.lock():
        info = _read_state()
        if info is not None and _serving(info):
            return info
        if info is not None:
            _end_server_processes(info)
        failures = []
        for _ in range(START_ATTEMPTS):
            try:
                return _start(timeout)
            except ChromaServerError as error:
                failures.append(str(error))
        raise ChromaServerError(f"the local Chroma server did not start: {failures[-1]} (log: {_files.log_path()})")


def running_server() -> ServerInfo | None:
    """The local server if one is up and answering, without starting one."""
    info = _read_state()
    return info if info is not None and _serving(info) else None


def stop_server(timeout: float = 15.0) -> bool:
    """Stop the local server now (uninstall, tests); False when none was running."""
    with _files.lock():
        info = _read_state()
        if info is None:
            return False
        _end_server_processes(info, timeout=timeout)
        return True


_last_touch = 0.0


def touch_lease(*, force: bool = False) -> None:
    """Tell the watchdog a client is still here; cheap enough for every call, and throttled to stay so."""
    global _last_touch
    now = time.monotonic()
    if not force and now - _last_touch < min(30.0, idle_seconds() / 4):
        return
    path = _lease_path()
    try:
        os.utime(path)
    except FileNotFoundError:
        os.close(paths.open_private(path, os.O_CREAT | os.O_WRONLY))
    _last_touch = now


def data_path() -> str:
    return paths.subdir("chroma")


def _lease_path() -> str:
    return os.path.join(_files.state_dir(), "lease")


def _read_state() -> ServerInfo | None:
    return _files.read_state()


def _remove_state_of(watchdog_pid: int) -> None:
    info = _read_state()
    if info is not None and info.watchdog_pid == watchdog_pid:
        _files.forget_state()


def _lease_age() -> float:
    try:
        return time.time() - os.stat(_lease_path()).st_mtime
    except FileNotFoundError:
        return float("inf")


def _serving(info: ServerInfo) -> bool:
    return detached.process_of(info.watchdog_pid, info.watchdog_started) is not None and heartbeat(info.url)


def _end_server_processes(info: ServerInfo, timeout: float = 15.0) -> None:
    """Stop a recorded server, alive, hung or half dead, before another may open the same data dir."""
    processes = [p for p in (detached.process_of(info.watchdog_pid, info.watchdog_started),
                             detached.process_of(info.chroma_pid, info.chroma_started)) if p is not None]
    detached.end(processes, timeout)
    _remove_state_of(info.watchdog_pid)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _start(timeout: float) -> ServerInfo:
    """Launch a watchdog and wait for its report: `pid N`, then `ready` or `failed <why>`."""
    port = _free_port()
    lines = _files.launch("codeoid.memory.chroma_server", ["watch", "--port", str(port), "--idle-seconds",
                                                          str(idle_seconds())], timeout)
    if "ready" in lines:
        info = _read_state()
        if info is not None and info.port == port:
            return info
    watchdog_pid = detached.reported_pid(lines)
    if watchdog_pid is not None and "ready" not in lines:
        _stop_pid(watchdog_pid)
    failure = detached.reported_failure(lines)
    raise ChromaServerError(failure or f"no answer within {timeout:.0f} s on port {port}")


def _stop_pid(pid: int) -> None:
    """End a watchdog that never reported ready; its own cleanup ends its chroma."""
    try:
        process = psutil.Process(pid)
        process.terminate()
        if detached.wait_gone([process], 15.0):
            process.kill()
    except psutil.NoSuchProcess:
        pass


# ---- the watchdog process -------------------------------------------------------------------------------------

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _StopSignals:
    """SIGTERM, SIGINT and SIGHUP, received as data where the watchdog waits, never as an exception raised in
    the middle of its cleanup (which must always end chroma and remove server.json)."""

    def __init__(self) -> None:
        self._read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        signal.set_wakeup_fd(write_fd)
        for signum in _STOP_SIGNALS:
            signal.signal(signum, lambda _signum, _frame: None)

    def wait(self, timeout: float) -> str | None:
        """Sleep up to `timeout` seconds; the name of the stop signal that ended the sleep, if one did."""
        readable, _, _ = select.select([self._read_fd], [], [], timeout)
        if not readable:
            return None
        return signal.Signals(os.read(self._read_fd, 1)[0]).name


def _chroma_executable() -> str | None:
    beside = os.path.join(os.path.dirname(sys.executable), "chroma")
    return beside if os.access(beside, os.X_OK) else shutil.which("chroma")


def _die_with_parent() -> None:
    """Linux: chroma gets SIGTERM when the watchdog dies, even by kill -9, so it never outlives the idle check."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _watch(port: int, idle: float, ready_fd: int) -> int:
    detached.become_detached()
    stop = _StopSignals()
    chroma: subprocess.Popen[bytes] | None = None
    try:
        with os.fdopen(ready_fd, "w") as report:  # closed on every way out, so the starter never waits in vain
            report.write(f"pid {os.getpid()}\n")
            report.flush()
            try:
                chroma = _start_chroma(port, stop)
            except _NotStarted as failure:
                report.write(f"failed {failure}\n")
                return 1
            _files.write_state(ServerInfo(url=_url(port), port=port, watchdog_pid=os.getpid(),
                                    watchdog_started=psutil.Process().create_time(), chroma_pid=chroma.pid,
                                    chroma_started=psutil.Process(chroma.pid).create_time(), data_path=data_path()))
            touch_lease(force=True)
            report.write("ready\n")
        _log(f"serving {_url(port)} (chroma pid {chroma.pid}), idle stop after {idle:g} s")
        return _watch_lease(chroma, idle, stop)
    finally:
        if chroma is not None:
            _end_child(chroma)
        _remove_state_of(os.getpid())


def _url(port: int) -> str:
    return f"http://{HOST}:{port}"


class _NotStarted(Exception):
    """Why `chroma run` is not serving (it has been ended already)."""


def _start_chroma(port: int, stop: _StopSignals) -> subprocess.Popen[bytes]:
    """`chroma run` on the port, once its heartbeat answers."""
    executable = _chroma_executable()
    if executable is None:
        raise _NotStarted("the `chroma` executable of chromadb is not installed")
    # At its default level chroma logs about 1.5 KB per request; warnings and errors are what the log is for.
    chroma = subprocess.Popen([executable, "run", "--host", HOST, "--port", str(port), "--path", data_path()],
                              stdin=subprocess.DEVNULL, env={**os.environ, "RUST_LOG": "warn"},
                              preexec_fn=_die_with_parent)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    failure = None
    while failure is None and not heartbeat(_url(port), timeout=1.0):
        received = stop.wait(0.05)
        if chroma.poll() is not None:
            failure = f"`chroma run` on port {port} exited with status {chroma.returncode}"
        elif time.monotonic() > deadline:
            failure = f"`chroma run` on port {port} never answered"
        elif received:
            failure = f"stopped by {received} while starting"
    if failure is not None:
        _end_child(chroma)
        raise _NotStarted(failure)
    return chroma


def _watch_lease(chroma: subprocess.Popen[bytes], idle: float, stop: _StopSignals) -> int:
    """Until a stop signal, chroma's death, or a lease older than `idle` (re-checked under the lock)."""
    interval = min(30.0, max(0.2, idle / 4))
    while True:
        received = stop.wait(interval)
        if received:
            _log(f"stopping on {received}")
            return 0
        if chroma.poll() is not None:
            _log(f"chroma exited with status {chroma.returncode}")
            return 1
        if _lease_age() > idle:
            with _files.lock():
                if _lease_age() > idle:
                    _log(f"no client for {idle:g} s: stopping")
                    _end_child(chroma)
                    _remove_state_of(os.getpid())
                    return 0


def _end_child(chroma: subprocess.Popen[bytes]) -> None:
    if chroma.poll() is None:
        chroma.terminate()
        try:
            chroma.wait(timeout=10)
        except subprocess.TimeoutExpired:
            chroma.kill()
            chroma.wait()


def _log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"{stamp} codeoid-chroma-watchdog[{os.getpid()}] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codeoid.memory.chroma_server", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    watch = commands.add_parser("watch", help="run chroma and stop it when idle (started by ensure_server)")
    watch.add_argument("--port", type=int, required=True)
    watch.add_argument("--idle-seconds", type=float, required=True)
    watch.add_argument("--ready-fd", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        return _watch(args.port, args.idle_seconds, args.ready_fd)
    except BrokenPipeError:  # the starter stopped waiting for the report; cleanup has already run
        return 1


if __name__ == "__main__":
    sys.exit(main())
