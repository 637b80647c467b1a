"""A scripted fake of the OpenAI Responses API, good enough for the real `codex` CLI (0.171.0).

Codex is pointed here through a `model_providers` entry in its `config.toml` (`base_url` = `FakeOpenAI.base_url`,
`wire_api = "responses"`). Each `POST /v1/responses` gets the next scripted reply as one output item (an assistant
message, or a call of a tool in an MCP server's namespace such as `mcp__codeoid__recall`), streamed as the three
SSE events Codex needs: `response.created`, `response.output_item.done` and `response.completed`. Anything else
gets a 404, which Codex tolerates.
"""

from __future__ import annotations

import json
from typing import Any

from .scripted_api import CallTool, RecordedRequest, ScriptedAPI, ScriptItem


def input_items(request: RecordedRequest) -> list[dict[str, Any]]:
    """The Responses API `input` list of a request: the whole conversation Codex sent."""
    return list(request.body.get("input", [])) if isinstance(request.body, dict) else []


class FakeOpenAI(ScriptedAPI):
    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def is_model_request(self, request: RecordedRequest) -> bool:
        return request.method == "POST" and request.path == "/v1/responses"

    def answer(self, item: ScriptItem) -> tuple[int, str, bytes]:
        if isinstance(item, CallTool):
            namespace, _, name = item.name.rpartition("__")
            # Codex declares an MCP server's tools inside one namespace tool, and is called back the same way; its
            # own tools (`exec_command`) have no namespace.
            output: dict[str, Any] = {"type": "function_call", "name": name, "arguments": json.dumps(item.arguments),
                                      "call_id": item.call_id}
            if namespace:
                output["namespace"] = namespace
        else:
            output = {"type": "message", "role": "assistant", "id": "msg_fake",
                      "content": [{"type": "output_text", "text": item}]}
        usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
        events = [
            {"type": "response.created", "response": {"id": "resp_fake"}},
            {"type": "response.output_item.done", "item": output},
            {"type": "response.completed", "response": {"id": "resp_fake", "usage": usage}},
        ]
        stream = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return 200, "text/event-stream", stream.encode()
