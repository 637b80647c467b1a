"""One HTTP request to a Chroma server, over TCP or a unix socket, with its token: standard library only.

Split from `codeoid.memory.chroma_rest` so the Chroma watchdog (`codeoid.memory.chroma_server`), which lives as long
as its server, can check a heartbeat without loading numpy through the embedder.

Every request goes to an `Endpoint`: a URL (`http(s)://host:port`, a team's server, or `unix:/path`, the local
server's socket, `codeoid.memory.chroma_serve`) and the token it wants, sent as `Authorization: Bearer` and
`X-Chroma-Token` (the two headers Chroma's own token authentication and the usual proxies in front of `chroma run`
read). A refusal (401, 403) is `ChromaRefused`.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from dataclasses import dataclass

TIMEOUT_SECONDS = 10.0


class ChromaUnreachable(OSError):
    """No answer from the server, or one that is not Chroma's: the caller may restart it and retry."""


class ChromaRefused(ChromaUnreachable):
    """The server refused the token (or its absence): the caller may read the token again and retry once."""


@dataclass(frozen=True)
class Endpoint:
    """Where a Chroma server answers and what it wants to see: `url` is `http(s)://host[:port][/prefix]` or
    `unix:/absolute/path/of/its/socket`."""

    url: str
    token: str | None = None

    def __str__(self) -> str:
        return self.url


def heartbeat(endpoint: Endpoint, timeout: float = 2.0) -> bool:
    """Whether a Chroma server answers at `endpoint` and takes its token (its v2 heartbeat)."""
    try:
        status, _ = request(endpoint, "GET", "/api/v2/heartbeat", timeout=timeout)
    except ChromaUnreachable:
        return False
    return status == 200


def request(endpoint: Endpoint, method: str, path: str, payload: object = None, *,
             timeout: float = TIMEOUT_SECONDS) -> tuple[int, object]:
    """One request to the server at `endpoint`, straight to it (never through a proxy named in the environment)."""
    parts = urllib.parse.urlsplit(endpoint.url)
    connection: http.client.HTTPConnection
    prefix = ""
    if parts.scheme == "unix":
        connection = _UnixConnection(parts.path, timeout)
    else:
        secure = parts.scheme == "https"
        connection_type = http.client.HTTPSConnection if secure else http.client.HTTPConnection
        connection = connection_type(parts.hostname or "127.0.0.1", parts.port or (443 if secure else 80),
                                     timeout=timeout)
        prefix = parts.path.rstrip("/")
    body = json.dumps(payload).encode() if payload is not None else None
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if endpoint.token:
        headers["Authorization"] = f"Bearer {endpoint.token}"
        headers["X-Chroma-Token"] = endpoint.token
    try:
        connection.request(method, prefix + path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
    except (OSError, http.client.HTTPException) as error:
        raise ChromaUnreachable(str(error) or type(error).__name__) from error
    finally:
        connection.close()
    if response.status in (401, 403):
        given = "its token" if endpoint.token else "no token"
        raise ChromaRefused(f"the Chroma server at {endpoint.url} refused the request (HTTP {response.status}; "
                            f"codeoid sent {given})")
    try:
        return response.status, json.loads(data) if data else None
    except ValueError as error:
        raise ChromaUnreachable(f"Chroma's answer is not JSON (HTTP {response.status})") from error


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 to a server's unix socket (the Host header only names it)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("codeoid-chroma", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.settimeout(self.timeout)
            connection.connect(self._path)
        except BaseException:
            connection.close()
            raise
        self.sock = connection


