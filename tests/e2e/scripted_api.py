"""The part every scripted fake model API shares: a thread server on 127.0.0.1 that records each request and
answers model requests with the next scripted reply (text or one tool call), in the wire format a subclass
supplies.

`fake_anthropic.py` predates this and does much more (tool calls, usage, request kinds); the fakes for the
Codex and Gemini CLIs only need to hear a request and answer it with text or a call of codeoid's MCP tools.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

EXHAUSTED_TEXT = "(script exhausted)"


@dataclass(frozen=True)
class CallTool:
    """A scripted reply that asks the CLI to call one tool, by the name the CLI declared it under."""

    name: str
    arguments: dict[str, Any]
    call_id: str = "call_scripted_1"


#: One scripted reply: assistant text, or a tool call.
ScriptItem = str | CallTool


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as received, in arrival order (`path` without its query)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


class ScriptedAPI:
    """Start it, give `base_url` to the CLI, read `requests` back. Subclasses say which requests are model calls
    and how a text answer is encoded."""

    def __init__(self, script: Iterable[ScriptItem] = ()) -> None:
        self._lock = threading.Lock()
        self._script: deque[ScriptItem] = deque(script)
        self._log: list[RecordedRequest] = []
        self._server: _Server | None = None

    def add(self, *items: ScriptItem) -> None:
        """Append replies to the script, consumed one per model request."""
        with self._lock:
            self._script.extend(items)

    def is_model_request(self, request: RecordedRequest) -> bool:
        raise NotImplementedError

    def answer(self, item: ScriptItem) -> tuple[int, str, bytes]:
        """Status, content type and body of the reply to a model request."""
        raise NotImplementedError

    def other_answer(self, request: RecordedRequest) -> tuple[int, str, bytes]:
        """The reply to anything that is not a model request."""
        return 404, "application/json", b"{}"

    def start(self) -> Self:
        self._server = _Server(("127.0.0.1", 0), _Handler, self)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def origin(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running; call start()")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if self.is_model_request(r)]

    def _reply(self, request: RecordedRequest) -> tuple[int, str, bytes]:
        with self._lock:
            self._log.append(request)
            if not self.is_model_request(request):
                return self.other_answer(request)
            item = self._script.popleft() if self._script else EXHAUSTED_TEXT
        return self.answer(item)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], api: ScriptedAPI):
        super().__init__(address, handler)
        self.api = api


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Keep pytest output clean; the request log is the record."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path, _, query = self.path.partition("?")
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, content_type, data = self.server.api._reply(RecordedRequest(self.command, path, query, headers, body))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
