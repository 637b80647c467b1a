"""The memory service's ASGI app and the workers it owns: one indexer for the store, one workspace index builder
per workspace a session is open in, and the memory tools answered for whichever session asks.

Requests: `POST /tool/<name>` (a memory tool, for the caller named in the body), `POST /search` (`codeoid
search`'s ranking), `POST /index` (`codeoid index`: build a workspace's index now), `POST /reindex` (`codeoid
reindex`: forget this store's vectors, which the service's one indexer then embeds anew), `POST /attach` (a
session is open in a project), `GET /health`. A tool's own refusal comes back as 422 with its sentence, an
unreachable vector index as 503 with its reason. Every request but `/health` counts as activity for the idle stop,
so `codeoid doctor` can look without keeping the service up.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from codeoid.log import log
from codeoid.mcp_server.tools import Caller, MemoryTools, ToolError
from codeoid.memory import index_builder, indexer, retrieval, workspace_index
from codeoid.memory.ranking import vector_enabled
from codeoid.memory.vector_index import VectorIndex, VectorIndexUnavailable, workspace_index_id
from codeoid.memory_tools import TOOLS
from codeoid.service import lifecycle
from codeoid.service.client import forwarded
from codeoid.store import db as store_db
from codeoid.store import identity, queries, vector_progress
from codeoid.workspace import identify

TOOL_NAMES = frozenset(name for name, *_ in TOOLS)
STOP_JOIN_SECONDS = 60.0  # an indexer finishing its batch on the way out


class Service:
    """The state of one service process; the workers start with the app and stop with it."""

    def __init__(self, idle_seconds: float) -> None:
        self.idle_seconds = idle_seconds
        self.last_request = time.monotonic()
        self.stop = threading.Event()
        self.on_idle: Callable[[], None] = lambda: None
        self._threads: list[threading.Thread] = []
        self._workspaces: set[str] = set()
        self._guard = threading.Lock()
        self._env_lock = threading.Lock()

    def start(self) -> None:
        if vector_enabled():
            self._thread("codeoid-indexer", indexer.run_forever, self.stop, delay=0)
        self._thread("codeoid-idle-stop", self._watch_idle)

    def shutdown(self) -> None:
        """Stop the workers (the indexer finishes its batch rather than leave a claim to expire) and go."""
        self.stop.set()
        deadline = time.monotonic() + STOP_JOIN_SECONDS
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        lifecycle.remove_state_of(os.getpid())

    def attach(self, project_dir: str) -> None:
        """Keep `project_dir`'s workspace index built (one builder per workspace, however many sessions)."""
        root = os.path.realpath(identify(project_dir).root)
        with self._guard:
            if root in self._workspaces:
                return
            self._workspaces.add(root)
        self._thread(f"codeoid-workspace-index-{len(self._workspaces)}", index_builder.run_forever, self.stop,
                     project_dir, delay=0)

    def call_tool(self, name: str, caller: dict[str, Any], arguments: dict[str, Any]) -> str:
        tools = MemoryTools(str(caller["project_dir"]), Caller(parent_pid=caller.get("parent_pid"),
                                                               session_env=caller.get("session_env")))
        with self._caller_env(caller.get("env") or {}):
            text: str = getattr(tools, name)(**arguments)
        return text

    def search(self, query: str, workspace_id: int, limit: int, env: dict[str, str]) -> dict[str, Any]:
        with self._caller_env(env):
            db = store_db.connect()
            try:
                found = retrieval.recall_ranked(db, query, workspace_id=workspace_id, limit=limit)
            finally:
                db.close()
        return {"rows": found.rows, "signals": found.signals, "fallback": found.fallback}

    def build_index(self, project_dir: str, env: dict[str, str]) -> dict[str, Any]:
        """Build `project_dir`'s workspace index now (topics from the stored vectors); its workspace id, None when
        nothing is stored for it."""
        with self._caller_env(env):
            db = store_db.connect()
            try:
                workspace_id = queries.workspace_id_for(db, project_dir)
                if workspace_id is not None:
                    vectors = VectorIndex(store=identity.store_id(db)) if vector_enabled() else None
                    workspace_index.build(db, workspace_id, vectors=vectors)
            finally:
                db.close()
        return {"workspace_id": workspace_id}

    def reindex(self) -> dict[str, Any]:
        """Forget this store's chunks of every workspace and start the index over; this service's indexer then
        embeds the store anew (a batch it holds now is not counted: `finish_batch` sees the claim is gone).
        Returns the newest episode id, which the caller waits for the watermark to reach."""
        db = store_db.connect()
        try:
            index = VectorIndex(store=identity.store_id(db))
            for portable_id, key in db.execute("SELECT portable_id, key FROM workspaces").fetchall():
                index.forget_store(workspace_index_id(portable_id, key))
            vector_progress.reset(db)
            return {"latest": vector_progress.progress(db).latest}
        finally:
            db.close()

    def health(self) -> dict[str, Any]:
        names = [thread.name for thread in self._threads if thread.is_alive()]
        return {"pid": os.getpid(), "indexers": sum(name == "codeoid-indexer" for name in names),
                "workspaces": sorted(self._workspaces), "idle_seconds": self.idle_seconds,
                "idle_for": time.monotonic() - self.last_request}

    @contextmanager
    def _caller_env(self, env: dict[str, str]) -> Iterator[None]:
        """The caller's settings in place for one call. The tools read them from the environment, which is the
        process's, so calls take turns (each is milliseconds; the model's wait is the embedding, done warm)."""
        with self._env_lock:
            saved = {name: value for name, value in os.environ.items() if forwarded(name)}
            for name in saved:
                del os.environ[name]
            os.environ.update({name: value for name, value in env.items() if forwarded(name)})
            try:
                yield
            finally:
                for name in [name for name in os.environ if forwarded(name)]:
                    del os.environ[name]
                os.environ.update(saved)

    def _thread(self, name: str, target: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        thread = threading.Thread(target=target, args=args, kwargs=kwargs, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _watch_idle(self) -> None:
        """After `idle_seconds` without a request: take the start lock (held until this process exits, so no one
        starts a second service meanwhile), forget the socket so new clients start afresh, and stop serving."""
        interval = min(30.0, max(0.2, self.idle_seconds / 4))
        watermark = None
        while not self.stop.wait(interval):
            # The indexer moving the watermark counts as activity: `codeoid reindex` waits on it without asking.
            moved, watermark = self._watermark_moved(watermark)
            if moved:
                self.last_request = time.monotonic()
            if time.monotonic() - self.last_request <= self.idle_seconds:
                continue
            held = lifecycle.acquire_lock()
            if time.monotonic() - self.last_request <= self.idle_seconds:
                os.close(held)
                continue
            log("service", f"no request for {self.idle_seconds:g} s: stopping")
            lifecycle.remove_state_of(os.getpid())
            self.on_idle()
            return  # the lock is released when the process exits


    @staticmethod
    def _watermark_moved(before: int | None) -> tuple[bool, int | None]:
        try:
            db = store_db.connect()
            try:
                now = vector_progress.progress(db).indexed_upto
            finally:
                db.close()
        except (store_db.StoreUnavailable, store_db.StoreCorrupt, sqlite3.Error):
            return False, before
        return before is not None and now != before, now


def build_app(service: Service) -> Starlette:
    async def tool(request: Request) -> Response:
        service.last_request = time.monotonic()
        name = request.path_params["name"]
        if name not in TOOL_NAMES:
            return _json({"error": f"no tool {name!r}"}, 404)
        body = await request.json()
        try:
            text = await run_in_threadpool(service.call_tool, name, body["caller"], body["arguments"])
        except ToolError as error:
            return _json({"error": str(error)}, 422)
        return _json({"text": text})

    async def search(request: Request) -> Response:
        service.last_request = time.monotonic()
        body = await request.json()
        return _json(await run_in_threadpool(service.search, str(body["query"]), int(body["workspace_id"]),
                                             int(body["limit"]), body.get("env") or {}))

    async def attach(request: Request) -> Response:
        service.last_request = time.monotonic()
        body = await request.json()
        await run_in_threadpool(service.attach, str(body["project_dir"]))
        return _json({"ok": True})

    async def index(request: Request) -> Response:
        service.last_request = time.monotonic()
        body = await request.json()
        try:
            return _json(await run_in_threadpool(service.build_index, str(body["project_dir"]),
                                                 body.get("env") or {}))
        except VectorIndexUnavailable as error:
            return _json({"error": str(error)}, 503)

    async def reindex(request: Request) -> Response:
        service.last_request = time.monotonic()
        try:
            return _json(await run_in_threadpool(service.reindex))
        except VectorIndexUnavailable as error:
            return _json({"error": str(error)}, 503)

    async def health(request: Request) -> Response:
        return _json(service.health())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        service.start()
        try:
            yield
        finally:
            await run_in_threadpool(service.shutdown)

    return Starlette(routes=[Route("/tool/{name}", tool, methods=["POST"]), Route("/search", search, methods=["POST"]),
                             Route("/index", index, methods=["POST"]), Route("/reindex", reindex, methods=["POST"]),
                             Route("/attach", attach, methods=["POST"]), Route("/health", health, methods=["GET"])],
                     lifespan=lifespan)


def _json(value: Any, status: int = 200) -> Response:
    # default=str: store rows are JSON apart from the odd bytes value, which prints as the CLI's --json prints it
    return Response(json.dumps(value, ensure_ascii=False, default=str), status_code=status,
                    media_type="application/json")
