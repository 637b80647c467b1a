"""A scripted fake of the Gemini API, good enough for the real `gemini` CLI (0.61.0).

Gemini CLI is pointed here with `GOOGLE_GEMINI_BASE_URL` and API-key auth. Every request is recorded; each
`POST /v1beta/models/<model>:streamGenerateContent?alt=sse` gets the next scripted text as one candidate in one
SSE `data:` event. Non-streaming `generateContent` calls are Gemini's helpers (the model router, when no model is
given; titles) and get an empty JSON answer without consuming the script.
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
STREAM_METHOD = ":streamGenerateContent"


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as received, in arrival order."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any

    @property
    def contents(self) -> list[dict[str, Any]]:
        """The `contents` list: the whole conversation Gemini sent."""
        return list(self.body.get("contents", [])) if isinstance(self.body, dict) else []


class FakeGemini:
    """Start it, give `base_url` to Gemini CLI, read `requests` back."""

    def __init__(self, script: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._script: deque[str] = deque(script)
        self._log: list[RecordedRequest] = []
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> FakeGemini:
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

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeGemini is not running; call start()")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith(STREAM_METHOD)]

    def _take(self, request: RecordedRequest) -> str | None:
        with self._lock:
            self._log.append(request)
            if not request.path.endswith(STREAM_METHOD):
                return None
            return self._script.popleft() if self._script else EXHAUSTED_TEXT


def _chunk(text: str) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
    }


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
        path, _, query = self.path.partition("?")
        request = RecordedRequest(self.command, path, query, {k.lower(): v for k, v in self.headers.items()}, body)
        text = self.server.fake._take(request)  # type: ignore[attr-defined]
        if text is None:
            self._send(200, "application/json", b"{}")
        else:
            self._send(200, "text/event-stream", f"data: {json.dumps(_chunk(text))}\r\n\r\n".encode())

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
