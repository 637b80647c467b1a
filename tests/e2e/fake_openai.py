"""A scripted fake of the OpenAI Responses API, good enough for the real `codex` CLI (0.171.0).

Codex is pointed here through a `model_providers` entry in its `config.toml` (`base_url` ending in `/v1`,
`wire_api = "responses"`). Every request is recorded; each `POST /v1/responses` gets the next scripted text as one
assistant message, streamed as the three SSE events Codex needs (`response.created`,
`response.output_item.done`, `response.completed`). Anything else gets a 404, which Codex tolerates.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXHAUSTED_TEXT = "(script exhausted)"


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as received, in arrival order."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def input_items(self) -> list[dict[str, Any]]:
        """The Responses API `input` list: the whole conversation Codex sent."""
        return list(self.body.get("input", [])) if isinstance(self.body, dict) else []


class FakeOpenAI:
    """Start it, give `base_url` to Codex, read `requests` back."""

    def __init__(self, script: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._script: deque[str] = deque(script)
        self._log: list[RecordedRequest] = []
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> FakeOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running; call start()")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/responses"]

    def _take(self, request: RecordedRequest) -> str | None:
        with self._lock:
            self._log.append(request)
            if request.method != "POST" or request.path != "/v1/responses":
                return None
            return self._script.popleft() if self._script else EXHAUSTED_TEXT


def _events(text: str) -> list[dict[str, Any]]:
    content = [{"type": "output_text", "text": text}]
    message = {"type": "message", "role": "assistant", "id": "msg_fake", "content": content}
    usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
    return [
        {"type": "response.created", "response": {"id": "resp_fake"}},
        {"type": "response.output_item.done", "item": message},
        {"type": "response.completed", "response": {"id": "resp_fake", "usage": usage}},
    ]


class _Handler(BaseHTTPRequestHandler):
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
        path = self.path.partition("?")[0]
        request = RecordedRequest(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body)
        text = self.server.fake._take(request)  # type: ignore[attr-defined]
        if text is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in _events(text)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
