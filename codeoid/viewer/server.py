"""Serving the viewer: a socket bound on the loopback (a free port unless one is asked for) and uvicorn on it.

The socket is bound before uvicorn starts, so the URL printed is the one being served, with no race for the port.
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn

from codeoid.viewer.app import create_app

HOST = "127.0.0.1"


def new_token() -> str:
    """The per-run secret in every URL: 128 bits, URL-safe."""
    return secrets.token_urlsafe(16)


def bind(port: int = 0) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0: any free one)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((HOST, port))
    except OSError:
        listener.close()
        raise
    listener.listen(64)
    return listener


def serve(listener: socket.socket, token: str, *, data_dir: Path, project_dir: Path,
          on_ready: Callable[[str], None], allow_retract: bool = False) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM); `on_ready` gets the URL once the server accepts requests."""

    port = listener.getsockname()[1]
    url = f"http://{HOST}:{port}/{token}/"
    app = create_app(token, port=port, data_dir=data_dir, project_dir=project_dir, allow_retract=allow_retract)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = _AnnouncingServer(config, lambda: on_ready(url))
    server.run(sockets=[listener])


class _AnnouncingServer(uvicorn.Server):
    """uvicorn's server, calling `ready` once it accepts requests (uvicorn sets `started` at the end of startup)."""

    def __init__(self, config: uvicorn.Config, ready: Callable[[], None]) -> None:
        super().__init__(config)
        self.ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.ready()
