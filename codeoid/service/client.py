"""Calls to the memory service, over its unix socket with httpx; each call starts the service if it is not running.

A call that finds the service gone (killed, or stopped for idleness between the check and the call) starts a
fresh one and tries once more. When the service cannot be started, `ServiceUnavailable` says why and the caller
answers without it: recall falls back to BM25 in its own process and says so.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import TYPE_CHECKING, Any

from codeoid.memory import ranking, retrieval
from codeoid.service import lifecycle

if TYPE_CHECKING:  # httpx loads with the first call, so a thin server answers `tools/list` without it
    import httpx

REQUEST_TIMEOUT_SECONDS = 120.0  # a first recall may wait for the model and the Chroma server to load
BASE_URL = "http://codeoid-service"  # the host is never resolved: the transport connects to the socket
# Settings the tools read per call from the caller's environment (one service answers sessions started with
# different ones): the output limit Claude Code gives its servers, excluded projects, recall's weights.
FORWARDED_ENV = ("MAX_MCP_OUTPUT_TOKENS", "CODEOID_EXCLUDE_PROJECTS", "CODEOID_RECALL_", "CODEOID_BUSY_TIMEOUT_MS",
                 "CODEOID_VECTOR")


class ServiceUnavailable(RuntimeError):
    """The service could not be started or did not answer; the message says why."""


class ToolFailed(RuntimeError):
    """The tool refused the call with a sentence for the model (a `ToolError` in the service)."""


def forwarded(name: str) -> bool:
    return any(name == prefix or (prefix.endswith("_") and name.startswith(prefix)) for prefix in FORWARDED_ENV)


def caller_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if forwarded(name)}


def call_tool(name: str, arguments: dict[str, Any], caller: dict[str, Any]) -> str:
    """The text of memory tool `name` called with `arguments` for `caller` (project dir, parent pid, session)."""
    answer = _post(f"/tool/{name}", {"caller": {**caller, "env": caller_env()}, "arguments": arguments})
    return str(answer["text"])


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


_clients: dict[str, httpx.Client] = {}
_clients_lock = threading.Lock()


def _client(socket_path: str) -> httpx.Client:
    """One pooled client per socket for the life of the process (a new one per call would cost a TLS context
    and a connection each time). No TLS and no proxy: the socket is local, and a proxy named in the environment
    must never see a call meant for it."""
    import httpx

    with _clients_lock:
        found = _clients.get(socket_path)
        if found is None:
            transport = httpx.HTTPTransport(uds=socket_path, verify=False)
            found = _clients[socket_path] = httpx.Client(transport=transport, trust_env=False)
        return found


def _post(path: str, payload: dict[str, Any], *, timeout: float = REQUEST_TIMEOUT_SECONDS) -> dict[str, Any]:
    import httpx

    failure: Exception | None = None
    for _ in range(2):
        try:
            info = lifecycle.ensure_service()
        except lifecycle.ServiceError as error:
            raise ServiceUnavailable(str(error)) from error
        try:
            response = _client(info.socket).post(BASE_URL + path, json=payload, timeout=timeout)
        except httpx.TransportError as error:  # gone between the check and the call, or killed mid-call
            failure = error
            continue
        if response.status_code == 422:
            raise ToolFailed(response.json()["error"])
        if response.status_code != 200:
            raise RuntimeError(f"the memory service failed on {path}: {response.text[:2000]}")
        answer: dict[str, Any] = response.json()
        return answer
    raise ServiceUnavailable(f"the memory service did not answer ({failure!r})")
