"""The memory service process: `python -m codeoid.service.daemon`, started by `lifecycle.ensure_service`.

It forks once and the launcher exits, so the service is an orphan in its own session (no `claude` tree holds it).
It binds its unix socket itself, 0600 (uvicorn would make it 0666), reports `ready` through the pipe the starter
waits on, and serves until it has been idle for `--idle-seconds`, or until SIGTERM; either way its workers stop
and its state and socket are removed on the way out.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import psutil

from codeoid import detached
from codeoid.service import lifecycle

GIL_SWITCH_SECONDS = 0.001


def _bind(path: str) -> socket.socket:
    """A listening unix socket at `path`, 0600; a stale one a killed service left is replaced (the starter
    holds the start lock, so no live service owns it)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(128)
    return listener


def _log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"{stamp} codeoid-service[{os.getpid()}] {message}", file=sys.stderr, flush=True)


def serve(socket_path: str, idle_seconds: float, ready_fd: int) -> int:
    detached.become_detached()
    try:
        with os.fdopen(ready_fd, "w") as report:  # closed on every way out, so the starter never waits in vain
            report.write(f"pid {os.getpid()}\n")
            report.flush()
            try:
                import uvicorn

                from codeoid.service.app import Service, build_app

                listener = _bind(socket_path)
            except Exception as error:  # noqa: BLE001 - reported to the starter, who says it to its caller
                report.write(f"failed {error!r}\n")
                return 1
            lifecycle.write_state(lifecycle.ServiceInfo(pid=os.getpid(), started=psutil.Process().create_time(),
                                                        socket=socket_path))
            report.write("ready\n")
        service = Service(idle_seconds)
        # A recall gives up the GIL at each of its SQLite steps and then waits for it back while the indexer or a
        # workspace index build runs Python; at the default 5 ms a turn, a 25 ms recall took 54 ms (p50) and
        # 361 ms (p95) beside back-to-back index builds at 100k episodes, at 1 ms 39 / 72 ms.
        sys.setswitchinterval(GIL_SWITCH_SECONDS)
        # The plain asyncio loop and h11, no websockets: "auto" would load uvloop, httptools and websockets
        # (~3 MB held for the life of the service) for a few local requests a minute.
        server = uvicorn.Server(uvicorn.Config(build_app(service), lifespan="on", log_level="warning",
                                               access_log=False, loop="asyncio", http="h11", ws="none"))

        def stop_serving() -> None:
            server.should_exit = True

        service.on_idle = stop_serving
        _log(f"serving {socket_path}, idle stop after {idle_seconds:g} s")
        server.run(sockets=[listener])
        _log("stopped")
        return 0
    finally:
        lifecycle.remove_state_of(os.getpid())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codeoid.service.daemon", description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True)
    parser.add_argument("--idle-seconds", type=float, required=True)
    parser.add_argument("--ready-fd", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        return serve(args.socket, args.idle_seconds, args.ready_fd)
    except BrokenPipeError:  # the starter stopped waiting for the report
        return 1


if __name__ == "__main__":
    sys.exit(main())
