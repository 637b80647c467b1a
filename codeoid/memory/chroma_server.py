"""One local Chroma server per data dir, owner-only, shared by every codeoid process, started on demand, stopped
when idle.

Embedded Chroma (`PersistentClient`) is safe for one process only: measured with chromadb 1.5.9, two processes
writing one directory silently lose vectors, and a long-lived reader misses other processes' writes. Several
Claude Code sessions mean several codeoid processes, so they all talk HTTP to one server, the same client path a
team uses when `CODEOID_CHROMA_URL` names a shared server (then nothing starts here). The server is codeoid's own
(`codeoid.memory.chroma_serve`, Chroma's engine behind a token on a unix socket), not `chroma run`, whose TCP port
on 127.0.0.1 every local user could open with no authentication.

Files, under `<data dir>/chroma-server/` (0700):
  lock         an flock held by whoever decides to start or stop the server, so simultaneous starters get one
  server.json  its socket, and the pids (with start times, against pid reuse) of the watchdog and the server
  sock         the unix socket it serves on, 0600
  token        the secret every request must carry, 0600, made on the first start and kept
  lease        its mtime is the last time a client used the server; clients refresh it as they work
  server.log   the output of the watchdog and of the server
The collections themselves live in `<data dir>/chroma/`.

Lifecycle. `ensure_server()` runs `python -m codeoid.memory.chroma_server watch` detached (`codeoid.detached`, shared
with the memory service: the lock, the state file, the launch): the watchdog is nobody's child, so ending a `claude`
process tree (psutil's recursive children) never reaches it. The watchdog starts `python -m
codeoid.memory.chroma_serve --socket <sock> --path <data dir>/chroma --token-file <token>` as its own child (on
Linux that child gets SIGTERM if the watchdog dies, even by kill -9), reports ready through a pipe once the
heartbeat answers, and then checks the lease. After `CODEOID_CHROMA_IDLE_SECONDS` (default 600) without a client it
takes the lock, stops the server, removes server.json and exits; the next client starts a fresh server within a
few seconds. A separate watchdog, rather than a thread in some client, is what lets the server outlive every
client session and still stop by itself.

A team's server takes a token too: `CODEOID_CHROMA_TOKEN`, or the first line of the file `CODEOID_CHROMA_TOKEN_FILE`
names, is sent with every request to `CODEOID_CHROMA_URL`.
"""

from __future__ import annotations

import argparse
import os
import secrets
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import psutil

from codeoid import detached, paths
from codeoid.memory.chroma_http import Endpoint
from codeoid.memory.chroma_http import heartbeat as endpoint_heartbeat

IDLE_SECONDS_DEFAULT = 600.0
START_TIMEOUT_SECONDS = 60.0  # the server imports chromadb (1-3 s) and opens its collections before it answers
START_ATTEMPTS = 2
# sun_path holds 108 bytes on Linux (104 on macOS), the terminating NUL included.
MAX_SOCKET_PATH_BYTES = 103
TOKEN_ENV = "CODEOID_CHROMA_TOKEN"
TOKEN_FILE_ENV = "CODEOID_CHROMA_TOKEN_FILE"


class ChromaServerError(RuntimeError):
    """The local Chroma server could not be started; the message says why and where the log is."""


@dataclass(frozen=True)
class ServerInfo:
    url: str  # unix:<socket>
    port: int  # 0: a unix socket (the field stays so a server.json of `chroma run` days still reads, and is ended)
    watchdog_pid: int
    watchdog_started: float
    chroma_pid: int
    chroma_started: float
    data_path: str
    socket: str = ""


_files = detached.Detached("chroma-server", "server.json", "server.log", ServerInfo)


def remote_url() -> str | None:
    """The team server `CODEOID_CHROMA_URL` names, if any: then no local server is ever started."""
    url = os.environ.get("CODEOID_CHROMA_URL", "").strip()
    return url.rstrip("/") or None


SHARED_HITS_ENV = "CODEOID_SHARED_HITS"


def shared_hits_wanted() -> bool:
    """`CODEOID_SHARED_HITS`: on unless set to off."""
    return os.environ.get(SHARED_HITS_ENV, "on").strip().lower() not in ("off", "0", "false", "no")


def shared_hits_enabled() -> bool:
    """Whether recall shows chunks other stores put on the team server (labelled as theirs): only on the team
    route, and `CODEOID_SHARED_HITS=off` turns them off. The local server is this store's alone."""
    return remote_url() is not None and shared_hits_wanted()


def remote_token() -> str | None:
    """The token for the team server: `CODEOID_CHROMA_TOKEN`, else the first line of `CODEOID_CHROMA_TOKEN_FILE`."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        return token
    path = os.environ.get(TOKEN_FILE_ENV, "").strip()
    if not path:
        return None
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as file:
            return file.readline().strip() or None
    except OSError as error:
        raise ChromaServerError(f"the token file {path} ({TOKEN_FILE_ENV}) cannot be read: {error}") from error


def endpoint() -> Endpoint:
    """The Chroma every client of this process should use, with its token: the team's one, else the local one,
    started if needed."""
    remote = remote_url()
    if remote is not None:
        return Endpoint(remote, remote_token())
    info = ensure_server()
    return Endpoint(info.url, local_token())


def local_endpoint(info: ServerInfo) -> Endpoint:
    return Endpoint(info.url, local_token())


def state_dir() -> str:
    """The local server's private folder: its state, log, token and socket."""
    return _files.state_dir()


def token_path() -> str:
    return os.path.join(_files.state_dir(), "token")


def local_token() -> str:
    """The local server's token (made by the first `ensure_server`)."""
    try:
        with open(token_path(), encoding="ascii") as file:
            return file.read().strip()
    except FileNotFoundError:
        return ""


def socket_path() -> str:
    path = os.path.join(_files.state_dir(), "sock")
    if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
        raise ChromaServerError(f"the data dir's path is too long for a unix socket ({path})")
    return path


def _ensure_token() -> None:
    """Make the token once, 0600 (under the start lock)."""
    if not local_token():
        paths.write_private(token_path(), secrets.token_urlsafe(32).encode("ascii"))


def idle_seconds() -> float:
    try:
        return max(0.5, float(os.environ.get("CODEOID_CHROMA_IDLE_SECONDS", IDLE_SECONDS_DEFAULT)))
    except ValueError:
        return IDLE_SECONDS_DEFAULT


def heartbeat(target: Endpoint, timeout: float = 2.0) -> bool:
    """Whether a Chroma server answers at `target` and takes its token (its v2 heartbeat), without chromadb."""
    return endpoint_heartbeat(target, timeout)


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
        _ensure_token()
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
    """Up, answering, and codeoid's own owner-only server (a `chroma run` an older codeoid started on a TCP port is
    ended and replaced)."""
    return (info.url.startswith("unix:") and detached.process_of(info.watchdog_pid, info.watchdog_started) is not None
            and heartbeat(local_endpoint(info)))


def _end_server_processes(info: ServerInfo, timeout: float = 15.0) -> None:
    """Stop a recorded server, alive, hung or half dead, before another may open the same data dir."""
    processes = [p for p in (detached.process_of(info.watchdog_pid, info.watchdog_started),
                             detached.process_of(info.chroma_pid, info.chroma_started)) if p is not None]
    detached.end(processes, timeout)
    _remove_state_of(info.watchdog_pid)


def _start(timeout: float) -> ServerInfo:
    """Launch a watchdog and wait for its report: `pid N`, then `ready` or `failed <why>`."""
    sock = socket_path()
    lines = _files.launch("codeoid.memory.chroma_server", ["watch", "--socket", sock, "--idle-seconds",
                                                          str(idle_seconds())], timeout)
    watchdog_pid = detached.reported_pid(lines)
    if "ready" in lines:
        info = _read_state()
        if info is not None and info.watchdog_pid == watchdog_pid:
            return info
    if watchdog_pid is not None and "ready" not in lines:
        _stop_pid(watchdog_pid)
    failure = detached.reported_failure(lines)
    raise ChromaServerError(failure or f"no answer within {timeout:.0f} s on {sock}")


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


def engine_installed() -> bool:
    """Whether chromadb's engine (its Rust bindings) is importable here, without importing it."""
    import importlib.util

    return importlib.util.find_spec("chromadb_rust_bindings") is not None


def _die_with_parent() -> None:
    """Linux: chroma gets SIGTERM when the watchdog dies, even by kill -9, so it never outlives the idle check."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _watch(sock: str, idle: float, ready_fd: int) -> int:
    detached.become_detached()
    stop = _StopSignals()
    chroma: subprocess.Popen[bytes] | None = None
    try:
        with os.fdopen(ready_fd, "w") as report:  # closed on every way out, so the starter never waits in vain
            report.write(f"pid {os.getpid()}\n")
            report.flush()
            try:
                chroma = _start_chroma(sock, stop)
            except _NotStarted as failure:
                report.write(f"failed {failure}\n")
                return 1
            _files.write_state(ServerInfo(url=_url(sock), port=0, watchdog_pid=os.getpid(),
                                    watchdog_started=psutil.Process().create_time(), chroma_pid=chroma.pid,
                                    chroma_started=psutil.Process(chroma.pid).create_time(), data_path=data_path(),
                                    socket=sock))
            touch_lease(force=True)
            report.write("ready\n")
        _log(f"serving {_url(sock)} (server pid {chroma.pid}), idle stop after {idle:g} s")
        return _watch_lease(chroma, idle, stop)
    finally:
        if chroma is not None:
            _end_child(chroma)
        _remove_state_of(os.getpid())


def _url(sock: str) -> str:
    return f"unix:{sock}"


class _NotStarted(Exception):
    """Why the Chroma server is not serving (it has been ended already)."""


def _start_chroma(sock: str, stop: _StopSignals) -> subprocess.Popen[bytes]:
    """codeoid's Chroma server on the socket, once its heartbeat answers."""
    if not engine_installed():
        raise _NotStarted("chromadb (its Rust engine) is not installed")
    # At its default level Chroma's engine logs about 1.5 KB per request; warnings and errors are what the log is
    # for.
    chroma = subprocess.Popen([sys.executable, "-m", "codeoid.memory.chroma_serve", "--socket", sock,
                               "--path", data_path(), "--token-file", token_path()],
                              stdin=subprocess.DEVNULL, env={**os.environ, "RUST_LOG": "warn"},
                              preexec_fn=_die_with_parent)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    failure = None
    target = Endpoint(_url(sock), local_token())
    while failure is None and not heartbeat(target, timeout=1.0):
        received = stop.wait(0.05)
        if chroma.poll() is not None:
            failure = f"the Chroma server on {sock} exited with status {chroma.returncode}"
        elif time.monotonic() > deadline:
            failure = f"the Chroma server on {sock} never answered"
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
    watch = commands.add_parser("watch", help="run the server and stop it when idle (started by ensure_server)")
    watch.add_argument("--socket", required=True)
    watch.add_argument("--idle-seconds", type=float, required=True)
    watch.add_argument("--ready-fd", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        return _watch(args.socket, args.idle_seconds, args.ready_fd)
    except BrokenPipeError:  # the starter stopped waiting for the report; cleanup has already run
        return 1


if __name__ == "__main__":
    sys.exit(main())
