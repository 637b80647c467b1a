"""Reading back what a Gemini fork did: the chat Gemini made when it imported codeoid's conversation file.

`gemini --session-file FILE` leaves FILE alone: it writes a copy under `<home>/.gemini/tmp/<project>/chats/`
(`session-<epoch ms>-<short id>.jsonl`, a session id of its own) whose first message is the `info` record
"Imported session from FILE", then appends the run's records to that copy (docs/backends/gemini.md, section 4).
Each start of the same FILE (a `--no-start` fork started twice) makes another copy; all are read, oldest first.

In a copy, a record with an `id` is a message; a message is written again whenever it changes (a `gemini` record
first without, then with its `toolCalls`), so its last version counts, at the place it first appeared.
`{"$set": {"messages": [...]}}` rewrites the list (Gemini's own start-up context among them). Kept:

- `user` messages with text: the user's prompts, except Gemini's own `<session_context>`/`<hook_context>`;
  `user` messages holding only `functionResponse` parts repeat results the `toolCalls` already carry;
- `gemini` messages: their text, then each of their `toolCalls` that has a `result` (a failure: status
  `error`, or an `error` response).

codeoid's own records (ids `turn<N>-…`, from `codeoid.fork.gemini`) and the `info` line are skipped. Prompts and
answers are keyed `gemini:<chat session id>:<message id>`, tool calls by Gemini's call id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codeoid.capture.record import Answer, Call, Prompt, Step
from codeoid.capture.transcript import epoch
from codeoid.setup.hook_table import MCP_SERVER_NAME

IMPORTED = "Imported session from "
#: The ids `codeoid.fork.gemini.conversation_records` gives (Gemini adds `turn3-model7_response` beside them).
CODEOID_ID = re.compile(r"turn\d+-")
GEMINI_CONTEXT = ("<session_context>", "<hook_context>")


def read(conversation: Path) -> list[Step]:
    """The steps of every chat Gemini made from the conversation file codeoid wrote at `conversation`."""
    steps: list[Step] = []
    for chat in chats_importing(conversation):
        steps += chat_steps(chat)
    return steps


def chats_importing(conversation: Path) -> list[Path]:
    """Gemini's copies of `conversation`, oldest first. It sits at `<home>/.gemini/codeoid-forks/<id>/`, so the
    chats are under the same home's `.gemini/tmp/`."""
    gemini_dir = conversation.parents[2]
    notice = IMPORTED + str(conversation)
    found = [chat for chat in sorted((gemini_dir / "tmp").glob("*/chats/session-*.jsonl"))
             if _imports(chat, notice)]
    return sorted(found, key=lambda chat: chat.stat().st_mtime)


def chat_steps(chat: Path) -> list[Step]:
    messages: dict[str, dict[str, Any]] = {}
    session_id = ""
    for record in _records(chat):
        if "sessionId" in record and "projectHash" in record:
            session_id = str(record["sessionId"])
        for message in _messages(record):
            messages[message["id"]] = message  # a dict keeps the place of the first version
    steps: list[Step] = []
    for message_id, message in messages.items():
        if CODEOID_ID.match(message_id):
            continue
        key = f"gemini:{session_id}:{message_id}"
        text = _text(message.get("content"))
        if message.get("type") == "user":
            if text and not text.lstrip().startswith(GEMINI_CONTEXT):
                steps.append(Prompt(key, text, epoch(message.get("timestamp"))))
        elif message.get("type") == "gemini":
            if text:
                steps.append(Answer(key, text, epoch(message.get("timestamp"))))
            # Stamped with their message's time, as its text is: a call's own stamp (when it ended) can be later
            # than the next message's, and the steps must keep their order by time.
            steps += [_call(call, epoch(message.get("timestamp"))) for call in message.get("toolCalls") or []
                      if isinstance(call, dict) and "result" in call and isinstance(call.get("id"), str)]
    return steps


def _call(call: dict[str, Any], at: float | None) -> Call:
    result = call["result"]
    responses = [part["functionResponse"].get("response") for part in result
                 if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)] \
        if isinstance(result, list) else []
    errors = [str(r["error"]) for r in responses if isinstance(r, dict) and "error" in r]
    outputs = [r["output"] if isinstance(r.get("output"), str) else json.dumps(r, ensure_ascii=False)
               for r in responses if isinstance(r, dict) and "error" not in r]
    text = result if isinstance(result, str) else "\n".join(outputs)
    failed = bool(errors) or call.get("status") == "error"
    args = call.get("args")
    return Call(call["id"], _tool_name(str(call.get("name"))), args if isinstance(args, dict) else {},
                {"output": text}, ("\n".join(errors) or text) if failed else None, at)


def _tool_name(name: str) -> str:
    """codeoid's own MCP tools as Claude Code names them (`mcp_codeoid_recall` → `mcp__codeoid__recall`), so they
    are recognized as codeoid's; every other tool as Gemini named it."""
    prefix = f"mcp_{MCP_SERVER_NAME}_"
    return f"mcp__{MCP_SERVER_NAME}__{name.removeprefix(prefix)}" if name.startswith(prefix) else name


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))


def _messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    rewritten = record.get("$set")
    listed = rewritten.get("messages") if isinstance(rewritten, dict) else [record]
    return [m for m in listed or [] if isinstance(m, dict) and isinstance(m.get("id"), str) and "type" in m]


def _imports(chat: Path, notice: str) -> bool:
    """Whether the chat's first message is Gemini's note that it imported this file."""
    return any(record.get("type") == "info" and record.get("content") == notice
               for record in _records(chat, limit=2))


def _records(chat: Path, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """The chat's JSON lines; a line Gemini is still writing (no newline yet) or cannot parse is skipped."""
    with chat.open("rb") as lines:
        for number, raw in enumerate(lines):
            if limit is not None and number >= limit:
                return
            if not raw.endswith(b"\n"):
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record
