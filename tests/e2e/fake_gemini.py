"""A scripted fake of the Gemini API, good enough for the real `gemini` CLI (0.61.0).

Gemini CLI is pointed here with `GOOGLE_GEMINI_BASE_URL` and API-key auth. Each
`POST /v1beta/models/<model>:streamGenerateContent?alt=sse` gets the next scripted reply as one candidate in one
SSE `data:` event: a text part, or a `functionCall` part. Other calls are Gemini's helpers (the model router's
non-streaming `generateContent` when no model is given, for one) and get `{}` without consuming the script.
"""

from __future__ import annotations

import json
from typing import Any

from .scripted_api import CallTool, RecordedRequest, ScriptedAPI, ScriptItem

STREAM_METHOD = ":streamGenerateContent"


def contents(request: RecordedRequest) -> list[dict[str, Any]]:
    """The `contents` list of a request: the whole conversation Gemini sent."""
    return list(request.body.get("contents", [])) if isinstance(request.body, dict) else []


class FakeGemini(ScriptedAPI):
    @property
    def base_url(self) -> str:
        return self.origin

    def is_model_request(self, request: RecordedRequest) -> bool:
        return request.method == "POST" and request.path.endswith(STREAM_METHOD)

    def answer(self, item: ScriptItem) -> tuple[int, str, bytes]:
        if isinstance(item, CallTool):
            part: dict[str, Any] = {"functionCall": {"name": item.name, "args": item.arguments, "id": item.call_id}}
        else:
            part = {"text": item}
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
        }
        return 200, "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode()

    def other_answer(self, request: RecordedRequest) -> tuple[int, str, bytes]:
        return 200, "application/json", b"{}"
