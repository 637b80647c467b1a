"""Storing what Codex and Gemini CLI report through codeoid's hooks (docs/agent-protocols.md), live.

`codeoid.hooks.agents` turns each CLI's own hook payload into one of the events below, whose payload is already
normalized: the CLI's session id, the working directory, and an idempotency `key` made from the CLI's own ids
(Codex: `turn_id`, `tool_use_id`; Gemini, which gives no tool call or turn id: its session id and the event's
`timestamp`), so a hook that is replayed from the spool stores nothing twice. The agent's name travels in the
event's environment (`AGENT_ENV`), which the spool keeps with the event. Claude Code's transcript is never read
here: these CLIs' records are not in its format, and the hooks carry the text that matters.
"""

from __future__ import annotations

import os
import sqlite3

from codeoid.capture.events import HANDLERS as CLAUDE_HANDLERS
from codeoid.capture.events import Handler, unwrapped_bash
from codeoid.capture.spool import SpooledEvent
from codeoid.store import capture
from codeoid.store.capture import Owner
from codeoid.workspace import identify

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Names the agent CLI in an event's environment; set by the hook itself, never by the CLI.
AGENT_ENV = "CODEOID_AGENT"
AGENTS = ("codex", "gemini")
SESSION_START = "AgentSessionStart"
PROMPT = "AgentPrompt"
TOOL = "AgentTool"
ANSWER = "AgentAnswer"
SESSION_END = "AgentSessionEnd"


def _str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def agent_owner(db: sqlite3.Connection, event: SpooledEvent, *, registering: bool = False) -> Owner:
    """The backing session of this CLI run (keyed on the CLI's session id), registered on first sight."""
    payload = event.payload
    agent = event.env.get(AGENT_ENV) or "unknown-agent"
    backing_id = _str(payload, "session_id") or f"{agent}-unknown-session"
    cwd = _str(payload, "cwd") or os.getcwd()
    return capture.ensure_backing_session(
        db, backing_session_id=backing_id, workspace=identify(cwd), now=event.received_at,
        codeoid_session_id=event.env.get("CODEOID_SESSION_ID"),
        source=_str(payload, "source") if registering else None,
        transcript_path=_str(payload, "transcript_path"), model=_str(payload, "model"),
        agent=agent, hooked=True,
    )


def session_start(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    agent_owner(db, event, registering=True)
    return None


def prompt(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    owner = agent_owner(db, event)
    capture.end_turn(db, owner, reason="stop", now=event.received_at)  # a turn a Stop never closed (interrupted)
    capture.add_user_turn(db, owner, prompt=_str(event.payload, "prompt") or "", prompt_id=_str(event.payload, "key"),
                          origin="user", now=event.received_at)
    return None


def tool(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    payload = event.payload
    owner = agent_owner(db, event)
    tool_name = _str(payload, "tool_name") or "unknown"
    key = _str(payload, "key")
    tool_input = payload.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {"value": tool_input}
    original = unwrapped_bash(tool_input, key) if tool_name == "Bash" else None
    capture.add_tool_call(
        db, owner, tool_name=tool_name, tool_use_id=key, tool_input=tool_input,
        response=payload.get("tool_response"), error=_str(payload, "error"), agent_id=None, now=event.received_at,
        original_command=original[0] if original else None, raw_output_id=original[1] if original else None,
    )
    return None


def answer(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    """The turn's final text (Codex's Stop, Gemini's AfterAgent), which also ends the turn."""
    owner = agent_owner(db, event)
    text, key = _str(event.payload, "text"), _str(event.payload, "key")
    if text and text.strip() and key:
        capture.add_assistant_message(db, owner, message_id=key, text=text, now=event.received_at)
    capture.end_turn(db, owner, reason="stop", now=event.received_at)
    return None


def session_end(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    owner = agent_owner(db, event)
    capture.end_turn(db, owner, reason="stop", now=event.received_at)
    capture.end_backing_session(db, owner.backing_session_id, reason=_str(event.payload, "reason") or "other",
                                now=event.received_at)
    return None


#: Claude Code's events and the agent CLIs' normalized ones: what ingest and spool replay dispatch on.
HANDLERS: dict[str, Handler] = {
    **CLAUDE_HANDLERS,
    SESSION_START: session_start,
    PROMPT: prompt,
    TOOL: tool,
    ANSWER: answer,
    SESSION_END: session_end,
}
