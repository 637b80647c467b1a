"""`codeoid-hook --agent=codex|gemini EVENT`: a Codex or Gemini CLI hook event, as each CLI sends it
(docs/agent-protocols.md), turned into codeoid's normalized agent events (`codeoid.capture.agent_events`).

Keys come from the CLI's own ids so a replayed event is stored once: Codex gives a `turn_id` per prompt and the
model's `call_id` as `tool_use_id`; Gemini gives neither, so its events are keyed on its session id and the event's
`timestamp` (with the tool and its input for a tool call): the same payload, replayed, is the same key.

Codex's PreToolUse may rewrite a shell command through `codeoid-compress` (`codeoid.hooks.pre_tool_use`, with
Codex's own permission rule); Gemini's BeforeTool is never registered, because Gemini judges the rewritten text
with its policy (docs/agent-protocols.md). Like every hook, this exits 0 and prints nothing but a valid answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

from codeoid import exclusions
from codeoid.capture import agent_events
from codeoid.capture.ingest import write
from codeoid.capture.spool import SpooledEvent
from codeoid.hooks.dispatch import parse_payload
from codeoid.log import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Variables a hook keeps with its event: the codeoid session a fork or `codeoid run` pins the CLI to.
ENV_KEYS = ("CODEOID_SESSION_ID",)

#: Each CLI's hook event -> codeoid's normalized event.
EVENTS = {
    "codex": {
        "SessionStart": agent_events.SESSION_START,
        "UserPromptSubmit": agent_events.PROMPT,
        "PostToolUse": agent_events.TOOL,
        "Stop": agent_events.ANSWER,
        "SessionEnd": agent_events.SESSION_END,
    },
    "gemini": {
        "SessionStart": agent_events.SESSION_START,
        "BeforeAgent": agent_events.PROMPT,
        "AfterTool": agent_events.TOOL,
        "AfterAgent": agent_events.ANSWER,
        "SessionEnd": agent_events.SESSION_END,
    },
}


def run(agent: str, event: str, raw: bytes) -> str | None:
    """Store one hook event of `agent`; the hook's stdout (SessionStart's memory index), or None. (Codex's
    PreToolUse never comes here: `codeoid.hooks.main` sends it to the rewrite, which opens no store.)"""
    normalized = EVENTS.get(agent, {}).get(event)
    if normalized is None:
        log("hook", f"{agent} {event}: not an event codeoid stores; nothing stored")
        return None
    payload = parse_payload(f"{agent} {event}", raw)
    if payload is None:
        return None
    if exclusions.excluded_by(_text(payload.get("cwd"))):
        return None
    translated = TRANSLATE[agent](normalized, payload)
    env = {key: os.environ[key] for key in ENV_KEYS if key in os.environ}
    output = write(SpooledEvent(normalized, translated, {**env, agent_events.AGENT_ENV: agent}, time.time()))
    return output if normalized == agent_events.SESSION_START else None


def _codex(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    base = _base(payload)
    turn = _text(payload.get("turn_id"))
    if event == agent_events.PROMPT:
        return {**base, "prompt": payload.get("prompt"), "key": f"codex:{turn}" if turn else None}
    if event == agent_events.TOOL:
        call = _text(payload.get("tool_use_id"))
        return {**base, "tool_name": payload.get("tool_name"), "tool_input": payload.get("tool_input"),
                "tool_response": payload.get("tool_response"), "key": call}
    if event == agent_events.ANSWER:
        return {**base, "text": payload.get("last_assistant_message"), "key": f"codex:{turn}:answer" if turn else None}
    return base


def _gemini(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    base = _base(payload)
    stamp = _text(payload.get("timestamp")) or ""
    session = base.get("session_id") or ""
    if event == agent_events.PROMPT:
        return {**base, "prompt": payload.get("prompt"), "key": f"gemini:{session}:{stamp}:prompt"}
    if event == agent_events.TOOL:
        digest = _digest([session, stamp, payload.get("tool_name"), payload.get("tool_input")])
        response, error = _gemini_result(payload.get("tool_response"))
        return {**base, "tool_name": payload.get("tool_name"), "tool_input": payload.get("tool_input"),
                "tool_response": response, "error": error, "key": f"gemini:{session}:{digest}"}
    if event == agent_events.ANSWER:
        return {**base, "text": payload.get("prompt_response"), "key": f"gemini:{session}:{stamp}:answer"}
    return base


def _gemini_result(response: object) -> tuple[object, str | None]:
    """What the model was given (`llmContent`), and the failure text when the tool failed (`error`)."""
    if not isinstance(response, dict):
        return response, None
    error = response.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        return None, message if isinstance(message, str) else json.dumps(error, ensure_ascii=False)
    return response.get("llmContent", response), None


def _base(payload: dict[str, Any]) -> dict[str, Any]:
    """What every normalized event carries; `source`, `reason` and `model` only where the CLI sends them."""
    keys = ("session_id", "cwd", "transcript_path", "source", "reason", "model")
    return {key: payload[key] for key in keys if isinstance(payload.get(key), str)}


def _digest(parts: list[object]) -> str:
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


TRANSLATE = {"codex": _codex, "gemini": _gemini}
