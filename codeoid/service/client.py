"""Calls to the memory service, over its unix socket with the standard library's HTTP client; each call starts the
service if it is not running.

Not httpx: it costs every thin `codeoid-mcp` ~3 MB and every `codeoid search` its import time, for one local
request at a time; a connection per call costs a unix-socket connect (microseconds) and is never shared by two
threads (a thin server answers tool calls on several). Nothing goes through a proxy named in the environment.

A call that finds the service gone (killed, or stopped for idleness between the check and the call) starts a
fresh one and tries once more. When the service cannot be started, `ServiceUnavailable` says why and the caller
answers without it: recall falls back to BM25 in its own process and says so.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sqlite3
from typing import Any

from codeoid.memory import ranking, retrieval
from codeoid.service import lifecycle

REQUEST_TIMEOUT_SECONDS = 120.0  # a first recall may wait for the model and the Chroma server to load
HOST = "codeoid-service"  # the Host header only: the connection goes to the socket
# Settings the tools read per call from the caller's environment (one service answers sessions started with
# different ones): the output limit Claude Code gives its servers, excluded projects, recall's weights.
FORWARDED_ENV = ("MAX_MCP_OUTPUT_TOKENS", "CODEOID_EXCLUDE_PROJECTS", "CODEOID_RECALL_", "CODEOID_BUSY_TIMEOUT_MS",
                 "CODEOID_VECTOR")


class ServiceUnavailable(RuntimeError):
    """The service could not be started or did not answer; the message says why."""


class ToolFailed(RuntimeError):
    """The tool refused the call with a sentence for the model (a `ToolError` in the service)."""


class VectorsUnreachable(RuntimeError):
    """The service runs but cannot reach the vector index (Chroma); the message says why."""


def forwarded(name: str) -> bool:
    return any(name == prefix or (prefix.endswith("_") and name.startswith(prefix)) for prefix in FORWARDED_ENV)


def caller_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if forwarded(name)}


def call_tool(name: str, arguments: dict[str, Any], caller: dict[str, Any]) -> str:
    """The text of memory tool `name` called with `arguments` for `caller` (project dir, parent pid, session)."""
    answer = _post(f"/tool/{name}", {"caller": {**caller, "env": caller_env()}, "arguments": arguments})
    return str(answer["text"])


def build_index(project_dir: str) -> int | None:
    """Have the service build `project_dir`'s workspace index now; its workspace id, None when nothing is stored
    for it."""
    found = _post("/index", {"project_dir": project_dir, "env": caller_env()})["workspace_id"]
    return None if found is None else int(found)


def reindex() -> int:
    """Have the service forget this store's vectors and embed the store anew with its indexer; the newest
    episode id, which the watermark (`vector_progress`) reaches when it is done."""
    return int(_post("/reindex", {})["latest"])


def ensure_running() -> lifecycle.ServiceInfo:
    """The running service, started if need be (so its indexer works on whatever is queued)."""
    try:
        return lifecycle.ensure_service()
    except lifecycle.ServiceError as error:
        raise ServiceUnavailable(str(error)) from error


def health(info: lifecycle.ServiceInfo) -> dict[str, Any]:
    """What a running service says about itself; never starts one, and is not activity for its idle stop."""
    connection = _UnixConnection(info.socket, 5.0)
    try:
        connection.request("GET", "/health")
        response = connection.getresponse()
        status, body = response.status, response.read()
    except (OSError, http.client.HTTPException) as error:
        raise ServiceUnavailable(f"the memory service did not answer ({error!r})") from error
    finally:
        connection.close()
    if status != 200:
        raise ServiceUnavailable(f"the memory service answered HTTP {status}")
    answer: dict[str, Any] = json.loads(body)
    return answer


def attach(project_dir: str) -> None:
    """Say a session of `project_dir` is open: keeps the service up and its workspace index being built."""
    _post("/attach", {"project_dir": project_dir}, timeout=30.0)


def recall_ranked(db: sqlite3.Connection, query: str, *, workspace_id: int | None, limit: int) -> retrieval.Recalled:
    """`retrieval.recall_ranked`, ranked by the service when vectors take part (its model is warm), else here;
    BM25 here, saying why, when the service cannot be started."""
    if workspace_id is None or not ranking.vector_enabled():
        return retrieval.recall_ranked(db, query, workspace_id=workspace_id, limit=limit)
    try:
        answer = _post("/search", {"query": query, "workspace_id": workspace_id, "limit": limit,
                                   "env": caller_env()})
    except ServiceUnavailable as error:
        with retrieval.without_vectors(f"the memory service is unavailable ({error})"):
            return retrieval.recall_ranked(db, query, workspace_id=workspace_id, limit=limit)
    return retrieval.Recalled(rows=answer["rows"], signals=answer["signals"], fallback=answer["fallback"])


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 to the service's unix socket."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__(HOST, timeout=timeout)
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


def _post(path: str, payload: dict[str, Any], *, timeout: float = REQUEST_TIMEOUT_SECONDS) -> dict[str, Any]:
    failure: Exception | None = None
    for _ in range(2):
        try:
            info = lifecycle.ensure_service()
        except lifecycle.ServiceError as error:
            raise ServiceUnavailable(str(error)) from error
        connection = _UnixConnection(info.socket, timeout)
        try:
            connection.request("POST", path, body=json.dumps(payload).encode(),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            status, body = response.status, response.read()
        except (OSError, http.client.HTTPException) as error:  # gone between the check and the call, or killed
            failure = error
            continue
        finally:
            connection.close()
        if status == 422:
            raise ToolFailed(json.loads(body)["error"])
        if status == 503:
            raise VectorsUnreachable(json.loads(body)["error"])
        if status != 200:
            raise RuntimeError(f"the memory service failed on {path}: {body[:2000].decode('utf-8', 'replace')}")
        answer: dict[str, Any] = json.loads(body)
        return answer
    raise ServiceUnavailable(f"the memory service did not answer ({failure!r})")
