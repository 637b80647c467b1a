"""Chroma's engine behind a token, on a unix socket only its owner can open (or a TCP port, for a team).

`chroma run` (chromadb 1.5's Rust server) listens on TCP with no authentication, and 127.0.0.1 is open to every
local user: measured, another uid listed the collections, read every chunk verbatim and added one under a made-up
store id that recall then showed the model. Its Rust server has no authentication to turn on (Chroma's own docs
put a proxy in front of it), and a loopback port cannot be closed to other users. So codeoid serves the same
engine itself: chromadb's Rust bindings (what `chromadb.PersistentClient` runs, one process, which is what makes
it safe) behind the subset of Chroma's v2 REST API that `codeoid.memory.chroma_rest` speaks, so the one client
talks to this server and to a team's real Chroma alike.

Two locks. The local server (`codeoid.memory.chroma_server` starts it) listens on `<data dir>/chroma-server/sock`,
0600 in a 0700 directory: no other user can even connect. And every request must carry the token from
`--token-file` (`Authorization: Bearer <token>` or `X-Chroma-Token`), compared in constant time: 401 otherwise,
for the heartbeat too. `--host/--port` serve the same over TCP for a team; put TLS in front of it off the
loopback.

`POST /codeoid/v1/vacuum` rewrites Chroma's SQLite file once no request is running: SQLite leaves a deleted row's
bytes in its page, so after a delete (a `codeoid forget`, a collection dropped) only a vacuum makes them gone.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

API = "/api/v2/tenants/{tenant}/databases/{database}"
MAX_BODY_BYTES = 256 * 1024 * 1024


class _Gate:
    """Many requests at once, or one vacuum alone."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._running = 0
        self._vacuuming = False

    @contextmanager
    def request(self) -> Iterator[None]:
        with self._condition:
            while self._vacuuming:
                self._condition.wait()
            self._running += 1
        try:
            yield
        finally:
            with self._condition:
                self._running -= 1
                self._condition.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        with self._condition:
            while self._vacuuming:
                self._condition.wait()
            self._vacuuming = True
            while self._running:
                self._condition.wait()
        try:
            yield
        finally:
            with self._condition:
                self._vacuuming = False
                self._condition.notify_all()


def read_token(path: str) -> str:
    with open(path, encoding="ascii") as file:
        token = file.read().strip()
    if len(token) < 16:
        raise ValueError(f"the token in {path} is too short (at least 16 characters)")
    return token


def build_app(path: str, token: str) -> Any:
    """The ASGI app over the Chroma data in `path`, answering only requests that carry `token`."""
    from chromadb.api import ServerAPI
    from chromadb.config import Settings, System
    from chromadb.errors import ChromaError, NotFoundError
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    system = System(Settings(is_persistent=True, persist_directory=path, anonymized_telemetry=False,
                             allow_reset=False))
    api: Any = system.instance(ServerAPI)  # type: ignore[type-abstract]  # chroma_api_impl names the concrete one
    system.start()
    gate = _Gate()
    expected = token.encode()

    def allowed(request: Request) -> bool:
        offered = request.headers.get("x-chroma-token") or ""
        scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
        if scheme.lower() == "bearer":
            offered = offered or value.strip()
        return hmac.compare_digest(offered.encode(), expected)

    def endpoint(work: Callable[[Request, dict[str, Any]], Any], *, exclusive: bool = False
                 ) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            if not allowed(request):
                return JSONResponse({"error": "AuthError", "message": "missing or wrong token"}, status_code=401)
            body: dict[str, Any] = {}
            if request.method in ("POST", "PUT"):
                raw = await request.body()
                if len(raw) > MAX_BODY_BYTES:
                    return JSONResponse({"error": "InvalidArgumentError", "message": "request too large"},
                                        status_code=413)
                try:
                    parsed = json.loads(raw) if raw else {}
                except ValueError:
                    return JSONResponse({"error": "InvalidArgumentError", "message": "the body is not JSON"},
                                        status_code=400)
                if not isinstance(parsed, dict):
                    return JSONResponse({"error": "InvalidArgumentError", "message": "the body is not an object"},
                                        status_code=400)
                body = parsed

            def run() -> Any:
                with gate.alone() if exclusive else gate.request():
                    return work(request, body)

            try:
                answer = await run_in_threadpool(run)
            except NotFoundError as error:
                return JSONResponse({"error": "NotFoundError", "message": str(error)}, status_code=404)
            except ChromaError as error:
                return JSONResponse({"error": error.name(), "message": str(error)}, status_code=error.code())
            except (KeyError, TypeError, ValueError) as error:
                return JSONResponse({"error": "InvalidArgumentError", "message": repr(error)}, status_code=400)
            return JSONResponse(answer)

        return handle

    def place(request: Request) -> tuple[str, str]:
        return request.path_params["tenant"], request.path_params["database"]

    def collection_json(found: Any) -> dict[str, Any]:
        return {"id": str(found.id), "name": found.name, "configuration_json": found.configuration,
                "metadata": found.metadata, "dimension": found.dimension, "tenant": found.tenant,
                "database": found.database}

    def collection_id(request: Request) -> UUID:
        try:
            return UUID(request.path_params["collection"])
        except ValueError as error:
            raise NotFoundError(f"no collection {request.path_params['collection']!r}") from error

    def heartbeat(request: Request, body: dict[str, Any]) -> Any:
        return {"nanosecond heartbeat": api.heartbeat()}

    def list_collections(request: Request, body: dict[str, Any]) -> Any:
        limit = request.query_params.get("limit")
        offset = request.query_params.get("offset")
        return [collection_json(found) for found in api.bindings.list_collections(
            int(limit) if limit else None, int(offset) if offset else None, *place(request))]

    def get_collection(request: Request, body: dict[str, Any]) -> Any:
        return collection_json(api.bindings.get_collection(request.path_params["name"], *place(request)))

    def create_collection(request: Request, body: dict[str, Any]) -> Any:
        configuration = body.get("configuration")
        return collection_json(api.bindings.create_collection(
            str(body["name"]), json.dumps(configuration) if configuration else None, None,
            body.get("metadata") or None, bool(body.get("get_or_create")), *place(request)))

    def delete_collection(request: Request, body: dict[str, Any]) -> Any:
        api.bindings.delete_collection(request.path_params["name"], *place(request))
        return {}

    def upsert(request: Request, body: dict[str, Any]) -> Any:
        tenant, database = place(request)
        api._upsert(collection_id(request), ids=list(body["ids"]), embeddings=body["embeddings"],
                    metadatas=body.get("metadatas"), documents=body.get("documents"), tenant=tenant,
                    database=database)
        return {}

    def get(request: Request, body: dict[str, Any]) -> Any:
        tenant, database = place(request)
        include = list(body.get("include") or ["metadatas", "documents"])
        found = api._get(collection_id(request), ids=body.get("ids"), where=body.get("where"),
                         limit=body.get("limit"), offset=body.get("offset"), include=include, tenant=tenant,
                         database=database)
        return {"ids": found["ids"], "include": include,
                **{key: _plain(found.get(key)) for key in ("embeddings", "documents", "metadatas")}}

    def delete(request: Request, body: dict[str, Any]) -> Any:
        tenant, database = place(request)
        api._delete(collection_id(request), ids=body.get("ids"), where=body.get("where"), tenant=tenant,
                    database=database)
        return {}

    def count(request: Request, body: dict[str, Any]) -> Any:
        tenant, database = place(request)
        return api._count(collection_id(request), tenant=tenant, database=database)

    def query(request: Request, body: dict[str, Any]) -> Any:
        tenant, database = place(request)
        include = list(body.get("include") or ["metadatas", "documents", "distances"])
        found = api._query(collection_id(request), query_embeddings=body["query_embeddings"],
                           n_results=int(body.get("n_results") or 10), where=body.get("where"), include=include,
                           tenant=tenant, database=database)
        return {"ids": found["ids"], "include": include,
                **{key: _plain(found.get(key)) for key in ("embeddings", "documents", "metadatas", "distances")}}

    def vacuum(request: Request, body: dict[str, Any]) -> Any:
        database = os.path.join(path, "chroma.sqlite3")
        before = os.path.getsize(database)
        with sqlite3.connect(database, timeout=30, isolation_level=None) as connection:
            connection.execute("VACUUM")
        return {"bytes_before": before, "bytes_after": os.path.getsize(database)}

    collections = API + "/collections"
    routes = [
        Route("/api/v2/heartbeat", endpoint(heartbeat), methods=["GET"]),
        Route(collections, endpoint(create_collection), methods=["POST"]),
        Route(collections, endpoint(list_collections), methods=["GET"]),
        Route(collections + "/{name}", endpoint(get_collection), methods=["GET"]),
        Route(collections + "/{name}", endpoint(delete_collection), methods=["DELETE"]),
        Route(collections + "/{collection}/upsert", endpoint(upsert), methods=["POST"]),
        Route(collections + "/{collection}/get", endpoint(get), methods=["POST"]),
        Route(collections + "/{collection}/delete", endpoint(delete), methods=["POST"]),
        Route(collections + "/{collection}/count", endpoint(count), methods=["GET"]),
        Route(collections + "/{collection}/query", endpoint(query), methods=["POST"]),
        Route("/codeoid/v1/vacuum", endpoint(vacuum, exclusive=True), methods=["POST"]),
    ]

    async def refused(request: Request, exc: Exception) -> Response:
        if not allowed(request):
            return JSONResponse({"error": "AuthError", "message": "missing or wrong token"}, status_code=401)
        return JSONResponse({"error": "NotFoundError", "message": "no such endpoint"}, status_code=404)

    return Starlette(routes=routes, exception_handlers={404: refused, 405: refused})


def _plain(value: Any) -> Any:
    """numpy arrays (embeddings) as lists, for JSON."""
    if value is None:
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def bind_unix(path: str) -> socket.socket:
    """A listening unix socket at `path`, 0600 (a stale one a killed server left is replaced: the starter holds
    the start lock)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    previous = os.umask(0o177)  # never a moment when the socket is open to others
    try:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    listener.listen(128)
    return listener


def bind_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    return listener


def serve(listener: socket.socket, path: str, token: str) -> None:
    import uvicorn

    app = build_app(path, token)
    # The plain asyncio loop and h11, as the memory service: a few local requests a second need no more.
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, loop="asyncio", http="h11",
                                           ws="none", lifespan="off", timeout_keep_alive=30))
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} codeoid-chroma[{os.getpid()}] serving {path}",
          file=sys.stderr, flush=True)
    server.run(sockets=[listener])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codeoid.memory.chroma_serve", description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True, help="the Chroma data directory")
    parser.add_argument("--token-file", required=True, help="a file holding the token every client must send")
    place = parser.add_mutually_exclusive_group(required=True)
    place.add_argument("--socket", help="serve on this unix socket (0600)")
    place.add_argument("--port", type=int, help="serve on this TCP port (with --host, default 127.0.0.1)")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    try:
        token = read_token(args.token_file)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    os.makedirs(args.path, mode=0o700, exist_ok=True)
    listener = bind_unix(args.socket) if args.socket else bind_tcp(args.host, args.port)
    serve(listener, args.path, token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
