"""The ASGI app: the pages under a per-run secret path, each request reading the store on its own connection.

The token is the first path segment (`/<token>/search?q=...`), so every link a page prints carries it and a
bookmark works for the run; any other path is a plain 404 that says nothing about what is there. Every request must
name the viewer itself as its Host (127.0.0.1 or localhost with its port): a page of another site whose name was
made to resolve to 127.0.0.1 (DNS rebinding) sends its own name and is refused before any page is read. A POST must
also carry an Origin that is the viewer's own (browsers send one with every form POST); one without is refused.
The pages carry no script at all, and the Content-Security-Policy says so: a stored episode that holds HTML can
never run in the viewer (everything is escaped too). Every handler is synchronous: Starlette runs it in a worker thread.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from codeoid.store import db as store_db
from codeoid.viewer import pages
from codeoid.viewer.html import Links, esc, page

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    # same-origin, not no-referrer: with no-referrer a browser posts `Origin: null`, and retract checks Origin.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def own_hosts(port: int) -> frozenset[str]:
    """The Host values a request to the viewer on `port` may carry: its loopback address or localhost."""
    return frozenset(f"{name}:{port}" for name in ("127.0.0.1", "localhost"))


def create_app(token: str, *, port: int, data_dir: Path, project_dir: Path, allow_retract: bool = False
               ) -> ASGIApp:
    """The viewer for the store in `data_dir`, served on 127.0.0.1:`port` under `/<token>/`; with `allow_retract`,
    episode pages can retract their episode (a POST from the viewer's own pages only)."""
    links = Links(token)
    hosts = own_hosts(port)
    origins = frozenset(f"http://{host}" for host in hosts)
    store_path = data_dir / "store.db"

    @contextmanager
    def store() -> Iterator[sqlite3.Connection]:
        db = store_db.connect(str(store_path))
        try:
            yield db
        finally:
            db.close()

    def html(render: Callable[[sqlite3.Connection, Request], str]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                with store() as db:
                    body = render(db, request)
            except pages.NotFound as missing:
                return HTMLResponse(page(links, "", "Not found", f"<h1>Not found</h1><p>{esc(missing)}</p>"),
                                    status_code=404, headers=SECURITY_HEADERS)
            except store_db.StoreUnavailable as error:
                return HTMLResponse(page(links, "", "Busy", f"<h1>The store is busy</h1><p>{esc(error)}; reload in "
                                                            "a moment.</p>"), status_code=503, headers=SECURITY_HEADERS)
            return HTMLResponse(body, headers=SECURITY_HEADERS)
        return endpoint

    def number(request: Request, name: str, default: int) -> int:
        value = request.query_params.get(name, "")
        return int(value) if value.isdigit() else default

    def since(request: Request) -> float | None:
        days = number(request, "days", 0)
        return None if not days else time.time() - days * 86400

    routes = [
        Route("/", lambda request: RedirectResponse(links("sessions"), status_code=307)),
        Route("/sessions", html(lambda db, request: pages.sessions_page(db, links))),
        Route("/session/{ref}", html(lambda db, request: pages.timeline_page(
            db, links, request.path_params["ref"], number(request, "offset", 0)))),
        Route("/episode/{episode_id:int}", html(lambda db, request: pages.episode_page(
            db, links, request.path_params["episode_id"], may_retract=allow_retract))),
        Route("/raw/{raw_id}", html(lambda db, request: pages.raw_page(
            db, links, request.path_params["raw_id"], number(request, "page", 1)))),
        Route("/search", html(lambda db, request: pages.search_page(
            db, links, request.query_params.get("q", ""), request.query_params.get("workspace"), project_dir))),
        Route("/savings", html(lambda db, request: pages.savings_page(
            db, links, "week" if request.query_params.get("period") == "week" else "day", since(request)))),
        Route("/status", html(lambda db, request: pages.status_page(db, links, data_dir, project_dir))),
    ]

    if allow_retract:
        retract = html(lambda db, request: pages.retract_episode(db, links, request.path_params["episode_id"]))

        def same_origin_retract(request: Request) -> Response:
            # The token keeps other sites from knowing the URL; the Origin check refuses a form posted from one
            # that learned it anyway. It is compared with the viewer's own address, never with the request's Host,
            # which a rebinding page sets to its own name along with a matching Origin.
            if request.headers.get("origin") not in origins:
                return PlainTextResponse("Refused: the request did not come from this viewer.", status_code=403)
            return retract(request)

        routes.append(Route("/episode/{episode_id:int}/retract", same_origin_retract, methods=["POST"]))

    def not_found(request: Request, exc: Exception) -> Response:
        return PlainTextResponse("Not found.", status_code=404)

    app = Starlette(routes=[Mount(f"/{token}", routes=routes)], exception_handlers={404: not_found})
    return _OwnHostOnly(app, hosts)


class _OwnHostOnly:
    """ASGI middleware: a request whose Host is not the viewer's own gets a bare 421 and reaches no page."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = next((value.decode("latin-1") for name, value in scope["headers"] if name == b"host"), None)
            if host not in self.hosts:
                await PlainTextResponse("Refused: this viewer answers only to its own address.",
                                        status_code=421)(scope, receive, send)
                return
        await self.app(scope, receive, send)
