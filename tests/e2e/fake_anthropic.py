"""A scripted fake of the Anthropic Messages API, good enough for the real `claude` CLI.

End-to-end tests point Claude Code at this server (`ANTHROPIC_BASE_URL`) so a whole session runs offline and
deterministically: each main-conversation request consumes the next scripted `Reply` (subagents have a queue of
their own), compaction and helper requests get fixed answers without touching the script, and every request is
logged so a test can check what the model would have seen (tool results, injected context, usage).

Only the stdlib is used, so the rig works in any environment that can run the tests.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

#: Text that opens Claude Code's compaction prompt (full, partial and "recent portion" variants, 2.1.332).
COMPACTION_MARKER = "Your task is to create a detailed summary of"
#: Beta flag sent only by the agent loop; helper calls (prompt hooks, titles) lack it.
AGENT_LOOP_BETA = "claude-code-20250219"
#: Part of the billing line that opens a subagent's system prompt.
SUBAGENT_MARKER = "cc_is_subagent=true"
EXHAUSTED_TEXT = "(script exhausted)"
DEFAULT_SUMMARY = "<summary>The scripted conversation so far (summary written by the fake API).</summary>"

RequestKind = Literal["main", "subagent", "compaction", "side", "count_tokens", "other"]


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class Text:
    """A text block of a scripted reply."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A tool call of a scripted reply; the id is fixed at construction so a test can look up its result."""

    name: str
    input: dict[str, Any]
    id: str = field(default_factory=lambda: _new_id("toolu"))


def bash(command: str, description: str = "scripted command") -> ToolUse:
    """A Bash tool call, the one most scenarios need."""
    return ToolUse("Bash", {"command": command, "description": description})


Block = Text | ToolUse


@dataclass(frozen=True)
class Usage:
    """Token counts reported for a reply; Claude Code copies them into the transcript and `result`."""

    input_tokens: int = 100
    cache_creation: int = 0
    cache_read: int = 0
    output: int = 20

    def as_api(self, output_tokens: int) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation,
            "cache_read_input_tokens": self.cache_read,
            "output_tokens": output_tokens,
        }


@dataclass(frozen=True)
class Reply:
    """One assistant message. `stop_reason` defaults to what the blocks imply."""

    blocks: list[Block]
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


#: A script step: a fixed reply, plain text as shorthand, or a function of the request body.
ScriptItem = Reply | str | Callable[[dict[str, Any]], Reply | str]


@dataclass(frozen=True)
class ToolResult:
    """A `tool_result` block as the model received it, with its content flattened to text.

    Claude Code may append a `<system-reminder>` to the text of the last result in a request, so match output
    with `in` or `startswith`, not `==`.
    """

    tool_use_id: str
    text: str
    is_error: bool
    block: dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as received, in arrival order."""

    index: int
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    kind: RequestKind
    received_at: float = field(default_factory=time.time)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def tool_results(self) -> list[ToolResult]:
        return tool_results_in(self.body if isinstance(self.body, dict) else {})


def block_text(content: Any) -> str:
    """Flatten message or tool_result content (a string or a list of blocks) to its text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def tool_results_in(body: dict[str, Any]) -> list[ToolResult]:
    """Every tool_result block in a request body, oldest first; callable replies use this to react."""
    found = []
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(
                    ToolResult(
                        tool_use_id=block.get("tool_use_id", ""),
                        text=block_text(block.get("content")),
                        is_error=bool(block.get("is_error", False)),
                        block=block,
                    )
                )
    return found


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message (not of tool results), where compaction puts its instruction."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return block_text(users[-1].get("content")) if users else ""


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    return system if isinstance(system, str) else block_text(system)


def classify(method: str, path: str, headers: dict[str, str], body: Any) -> RequestKind:
    """Decide which script, if any, a request consumes.

    Observed on 2.1.332: the agent loop (main thread, subagents, compaction) sends the `claude-code-20250219`
    beta and helper calls (prompt hooks, titles) do not; subagents mark their billing header with
    `cc_is_subagent=true`; compaction is recognised by its instruction, as it reuses the main thread's shape.
    """
    if path.endswith("/count_tokens"):
        return "count_tokens"
    if method != "POST" or path != "/v1/messages" or not isinstance(body, dict):
        return "other"
    if COMPACTION_MARKER in last_user_text(body):
        return "compaction"
    if AGENT_LOOP_BETA not in headers.get("anthropic-beta", ""):
        return "side"
    if SUBAGENT_MARKER in _system_text(body):
        return "subagent"
    return "main"


class FakeAnthropic:
    """The fake server: start it, hand `base_url` to Claude Code, script replies, read the log back."""

    def __init__(self, script: Iterable[ScriptItem] = (), subagent_script: Iterable[ScriptItem] = ()) -> None:
        self._lock = threading.Lock()
        # Subagents get their own queue: background agents (the 2.1.332 default) race the main thread.
        self._scripts: dict[RequestKind, deque[ScriptItem]] = {
            "main": deque(script),
            "subagent": deque(subagent_script),
        }
        self._log: list[RecordedRequest] = []
        #: Answers to requests that consume no script; tests may replace them (e.g. JSON for a prompt hook).
        self.compaction_reply: ScriptItem = DEFAULT_SUMMARY
        self.side_reply: ScriptItem = "ok"
        self.exhausted: list[RecordedRequest] = []  # requests that found their script empty
        self.errors: list[str] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> FakeAnthropic:
        self._server = _Server(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeAnthropic is not running; call start()")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- scripting -------------------------------------------------------------------------------------

    def add(self, *items: ScriptItem) -> None:
        """Append replies to the script, consumed one per main-conversation request."""
        with self._lock:
            self._scripts["main"].extend(items)

    def add_subagent(self, *items: ScriptItem) -> None:
        """Append replies for subagent requests (all subagents share this queue, in arrival order)."""
        with self._lock:
            self._scripts["subagent"].extend(items)

    @property
    def remaining(self) -> int:
        """Scripted replies (main and subagent) not yet requested."""
        with self._lock:
            return sum(len(queue) for queue in self._scripts.values())

    def assert_script_consumed(self) -> None:
        """Fail unless every scripted reply was used, none was missing, and no callable raised."""
        problems = list(self.errors)
        if self.exhausted:
            found = "; ".join(f"#{r.index} {r.kind} after {last_user_text(r.body)[-120:]!r}" for r in self.exhausted)
            problems.append(f"script exhausted: {len(self.exhausted)} request(s) got no scripted reply ({found})")
        if self.remaining:
            problems.append(f"{self.remaining} scripted reply(ies) never requested")
        assert not problems, "; ".join(problems)

    # -- reading back ----------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    @property
    def main_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == "main"]

    @property
    def subagent_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == "subagent"]

    def messages(self, n: int) -> list[dict[str, Any]]:
        """The `messages` of main-conversation request `n` (0-based; negative counts from the end)."""
        return self.main_requests[n].messages

    def tool_results(self) -> dict[str, ToolResult]:
        """Every tool result the model (main thread or subagent) received, by tool_use_id."""
        return {t.tool_use_id: t for r in self.requests if r.kind in ("main", "subagent") for t in r.tool_results}

    # -- serving (called from handler threads) ---------------------------------------------------------

    def _record(
        self, method: str, path: str, query: str, headers: dict[str, str], body: Any
    ) -> tuple[RecordedRequest, ScriptItem | None]:
        kind = classify(method, path, headers, body)
        with self._lock:
            request = RecordedRequest(len(self._log), method, path, query, headers, body, kind)
            self._log.append(request)
            item: ScriptItem | None = None
            if kind in self._scripts:
                queue = self._scripts[kind]
                if queue:
                    item = queue.popleft()
                else:
                    self.exhausted.append(request)
                    item = EXHAUSTED_TEXT
            elif kind == "compaction":
                item = self.compaction_reply
            elif kind == "side":
                item = self.side_reply
        return request, item

    def _resolve(self, item: ScriptItem, body: dict[str, Any]) -> Reply:
        """Turn a script step into a Reply. A broken step is recorded and answered with text, because a
        dropped connection would make Claude Code retry with backoff and the test would look hung."""
        try:
            result = item(body) if callable(item) else item
        except Exception as exc:
            return self._script_error(f"scripted callable raised {exc!r}")
        if isinstance(result, str):
            return Reply([Text(result)])
        if isinstance(result, Reply):
            return result
        return self._script_error(f"script step gave {result!r}, not a Reply or str")

    def _script_error(self, problem: str) -> Reply:
        with self._lock:
            self.errors.append(problem)
        return Reply([Text(f"(script error: {problem})")])


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], fake: FakeAnthropic):
        super().__init__(address, handler)
        self.fake = fake


def _sse_events(reply: Reply, model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The event sequence the real API streams for one message."""
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": _new_id("msg"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": reply.usage.as_api(output_tokens=1),
            },
        },
    )
    for index, block in enumerate(reply.blocks):
        if isinstance(block, Text):
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block.text}]
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            raw = json.dumps(block.input)
            # Split the JSON like the real API does, so Claude Code's partial-JSON assembly is exercised.
            half = len(raw) // 2
            deltas = [{"type": "input_json_delta", "partial_json": part} for part in (raw[:half], raw[half:])]
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.effective_stop_reason, "stop_sequence": None},
            "usage": reply.usage.as_api(output_tokens=reply.usage.output),
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _json_message(reply: Reply, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [
        {"type": "text", "text": b.text}
        if isinstance(b, Text)
        else {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
        for b in reply.blocks
    ]
    return {
        "id": _new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.effective_stop_reason,
        "stop_sequence": None,
        "usage": reply.usage.as_api(output_tokens=reply.usage.output),
    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Keep pytest output clean; the request log is the record."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def _handle(self) -> None:
        path, _, query = self.path.partition("?")
        body = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake = self.server.fake
        request, item = fake._record(self.command, path, query, headers, body)
        if request.kind == "count_tokens":
            self._send_json({"input_tokens": 100})
        elif item is None:
            self._send_json({})
        else:
            reply = fake._resolve(item, body)
            model = str(body.get("model", "claude-sonnet-4-5"))
            if body.get("stream"):
                self._send_sse(reply, model)
            else:
                self._send_json(_json_message(reply, model))

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _send_json(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send_sse(self, reply: Reply, model: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event, data in _sse_events(reply, model):
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
