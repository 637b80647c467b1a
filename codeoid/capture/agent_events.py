"""Storing what Codex and Gemini CLI report through codeoid's hooks (docs/agent-protocols.md), live.

`codeoid.hooks.agents` turns each CLI's own hook payload into one of the events below, whose payload is already
normalized: the CLI's session id, the working directory, and an idempotency `key` made from the CLI's own ids
(Codex: `turn_id`, `tool_use_id`; Gemini, which gives no tool call or turn id: its session id and the event's
`timestamp`), so a hook that is replayed from the spool stores nothing twice. The agent's name travels in the
event's environment (`AGENT_ENV`), which the spool keeps with the event. Claude Code's transcript reader is never
used here; Codex's rollout is read at Stop for the model's text between tool calls (`codex_record`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from codeoid.capture import codex_record
from codeoid.capture.events import HANDLERS as CLAUDE_HANDLERS
from codeoid.capture.events import Handler, unwrapped_bash
from codeoid.capture.record import Answer
from codeoid.capture.spool import SpooledEvent
from codeoid.log import log
from codeoid.memory import workspace_index
from codeoid.store import capture
from codeoid.store import workspace_index as stored_index
from codeoid.store.capture import Owner
from codeoid.workspace import identify

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Names the agent CLI in an event's environment; set by the hook itself, never by the CLI.
AGENT_ENV = "CODEOID_AGENT"
AGENTS = ("codex", "gemini")
#: How each CLI names codeoid's MCP tools to its model: Codex as tools of the namespace `mcp__codeoid`, Gemini as
#: `mcp_codeoid_recall` (docs/backends/*.md, MCP sections).
TOOL_PREFIXES = {"codex": "mcp__codeoid.", "gemini": "mcp_codeoid_"}
#: Context is handed over only while the CLI waits on the hook, never when the event is replayed from the spool.
LIVE_SECONDS = 10.0
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
    """Register the run and, while the CLI waits on it, hand it the workspace's memory index (Codex and Gemini
    both take SessionStart's `additionalContext`), with the memory tools under that CLI's names for them."""
    owner = agent_owner(db, event, registering=True)
    stored = stored_index.latest(db, owner.workspace_id) if time.time() - event.received_at < LIVE_SECONDS else None
    prefix = TOOL_PREFIXES.get(event.env.get(AGENT_ENV) or "")
    if stored is None or prefix is None:
        return None
    stored_index.mark_shown(db, owner.backing_session_id, owner.workspace_id, stored, event.received_at)
    text = workspace_index.for_window(stored, prefix)
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}})


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
    """The turn's text, which also ends the turn: for Codex every assistant message its rollout holds (the text
    between tool calls reaches no hook), then the turn's final text (Codex's Stop, Gemini's AfterAgent) unless the
    turn holds it already."""
    owner = agent_owner(db, event)
    if event.env.get(AGENT_ENV) == "codex":
        _codex_texts(db, owner, event)
    text, key = _str(event.payload, "text"), _str(event.payload, "key")
    if text and text.strip() and key and not _in_turn(db, owner, text):
        capture.add_assistant_message(db, owner, message_id=key, text=text, now=event.received_at)
    capture.end_turn(db, owner, reason="stop", now=event.received_at)
    return None


def _codex_texts(db: sqlite3.Connection, owner: Owner, event: SpooledEvent) -> None:
    """Store the assistant messages of Codex's rollout written since the last Stop, keyed by their line there as a
    fork's read-back keys them. One the Stop before already stored as its final text (the rollout lagged then) is
    not stored again."""
    path = _str(event.payload, "transcript_path")
    if not path:
        return
    row = db.execute("SELECT transcript_offset FROM backing_sessions WHERE id = ?",
                     (owner.backing_session_id,)).fetchone()
    offset = int(row[0]) if row and row[0] else 0
    try:
        with open(path, "rb") as rollout:
            rollout.seek(offset)
            complete = offset + rollout.read().rfind(b"\n") + 1  # a line Codex is still writing waits
        steps = codex_record.read(Path(path), session_id=owner.backing_session_id, offset=offset)
    except OSError as error:
        log("capture", f"codex rollout {path} unreadable ({error}); only the turn's final text is stored")
        return
    for step in steps:
        if isinstance(step, Answer) and not _stored_as_final(db, owner, step.text):
            capture.add_assistant_message(db, owner, message_id=step.key, text=step.text,
                                          now=step.at or event.received_at)
    db.execute("UPDATE backing_sessions SET transcript_offset = ? WHERE id = ?",
               (max(offset, complete), owner.backing_session_id))


def _in_turn(db: sqlite3.Connection, owner: Owner, text: str) -> bool:
    return db.execute(
        "SELECT 1 FROM episodes WHERE kind = 'assistant' AND session_id = ? AND turn = ? AND text = ?",
        (owner.session_id, capture.current_turn(db, owner), text),
    ).fetchone() is not None


def _stored_as_final(db: sqlite3.Connection, owner: Owner, text: str) -> bool:
    return db.execute(
        "SELECT 1 FROM episodes WHERE kind = 'assistant' AND backing_session_id = ? AND message_id LIKE ? AND text = ?",
        (owner.backing_session_id, "%:answer", text),
    ).fetchone() is not None


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
