"""A fork's history as a Gemini CLI session: a conversation file `gemini --session-file` imports natively.

Gemini CLI 0.61.0 records chats as JSONL (a metadata line, then one line per message) and `--session-file PATH`
imports such a file as a new session: it copies it under `~/.gemini/tmp/<project>/chats/` with a fresh session
id and replays its `user` and `gemini` messages as the conversation (docs/backends/gemini.md). A `gemini` message
carries its text and its `toolCalls`, each with the result the model saw; Gemini turns those into a model
content with `functionCall` parts followed by a user content with the matching `functionResponse` parts, the same
shape it sends for its own past turns. Call ids and tool names stay as the source backend had them, except MCP
tools, named the way Gemini names them (`mcp_codeoid_recall`) so a past recall matches the tool the fork offers.

codeoid's MCP server is registered at user scope, in `<home>/.gemini/settings.json` (the file `gemini mcp add
-s user` edits), the way `codeoid install` registers it with Claude Code. Gemini 0.61.0 has no per-run way to add
an MCP server: no flag, and the one settings file an environment variable can move (system settings) is ignored
unless root owns it and every folder above it.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeoid.fork.launch import Launch, McpServer, mcp_tool, timestamp
from codeoid.fork.turns import ToolCall, Turn, UserMessage
from codeoid.setup.hook_table import MCP_SERVER_NAME, is_codeoid_server
from codeoid.setup.json_config import InstallError, back_up, load_object, write_atomic

#: Under the Gemini home's `.gemini/`: one folder per fork holding the conversation file it was started from.
FORKS_DIR = "codeoid-forks"


def gemini_home() -> Path:
    """The folder holding Gemini's `.gemini/`: `$GEMINI_CLI_HOME`, else the user's home."""
    override = os.environ.get("GEMINI_CLI_HOME")
    return Path(override) if override else Path.home()


def prepare(
    turns: Sequence[Turn],
    *,
    cwd: Path,
    mcp: McpServer,
    home: Path | None = None,
    prompt: str | None = None,
    binary: str = "gemini",
    fork_id: str | None = None,
    now: datetime | None = None,
) -> Launch:
    """Write `turns` as a Gemini conversation file under `home` and return how to start Gemini on it in `cwd`.

    With `prompt`, the launch is headless (`gemini --session-file F --prompt=PROMPT`): one answer, then exit.
    Without it, interactive Gemini opens on the imported conversation. Gemini gives the imported session an id
    of its own, so `Launch.session_id` is None.
    """
    home = home or gemini_home()
    # First, so a refused registration leaves nothing behind.
    settings = register_mcp_server(home, mcp)
    fork_id = fork_id or str(uuid.uuid4())
    now = now or datetime.now(UTC)
    folder = home / ".gemini" / FORKS_DIR / fork_id
    folder.mkdir(parents=True, exist_ok=False)
    conversation = folder / "conversation.jsonl"
    stamp = timestamp(now)
    # Gemini replaces both ids on import, but rejects a file whose metadata lacks either.
    metadata = {"sessionId": fork_id, "projectHash": _project_hash(cwd), "startTime": stamp, "lastUpdated": stamp}
    records = [metadata, *conversation_records(turns, stamp)]
    conversation.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    argv = [binary, "--session-file", str(conversation)]
    if prompt is not None:
        # One word, so a prompt that starts with a dash is not read as an option.
        argv.append(f"--prompt={prompt}")
    edited = () if settings is None else (settings,)
    return Launch(argv=argv, env={"GEMINI_CLI_HOME": str(home)}, cwd=cwd, files=(conversation,), session_id=None,
                  edited=edited)


def conversation_records(turns: Sequence[Turn], stamp: str) -> list[dict[str, Any]]:
    """The turns as Gemini chat message records, in conversation order.

    Assistant steps share one `gemini` record until a text follows a tool call: Gemini sends a record's text
    before all of its calls, so text written after a result needs a record of its own to stay after it. What the
    user typed mid-turn is a `user` record of its own between two `gemini` records; after a tool call Gemini
    sends it in one user content with the call's results, after them (before each request it joins consecutive
    contents of one role).
    """
    records: list[dict[str, Any]] = []
    for turn in turns:
        records.append(_user(f"turn{turn.number}-user", turn.user, stamp))
        current: dict[str, Any] | None = None
        for step in turn.steps:
            if isinstance(step, UserMessage):
                records.append(_user(f"turn{turn.number}-user{len(records)}", step.text, stamp))
                current = None
                continue
            if current is None or (not isinstance(step, ToolCall) and current["toolCalls"]):
                current = _message(f"turn{turn.number}-model{len(records)}", "gemini", stamp)
                current["toolCalls"] = []
                records.append(current)
            if isinstance(step, ToolCall):
                current["toolCalls"].append(_tool_call(step, stamp))
            else:
                current["content"].append({"text": step})
    return records


def register_mcp_server(home: Path, mcp: McpServer) -> Path | None:
    """Make sure Gemini's user settings start codeoid's MCP server; the settings path if it was changed.

    Gemini starts a stdio server in its own working directory (the fork's workspace, which codeoid-mcp answers
    for) with its own environment, sanitized, plus `env`. `trust` lets the model call the read-only tools without
    a confirmation prompt, which a headless run could not answer. A server of the same name that is not
    codeoid's is left alone and reported.
    """
    path = home / ".gemini" / "settings.json"
    settings = load_object(path)
    servers = (settings or {}).get("mcpServers") or {}
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: mcpServers is not an object; fix it by hand, then run again.")
    existing = servers.get(MCP_SERVER_NAME)
    if existing is not None and not is_codeoid_server(existing):
        raise InstallError(
            f"{path} already has an MCP server named {MCP_SERVER_NAME!r} that does not run codeoid-mcp; "
            "rename or remove it (`gemini mcp remove codeoid`), then run again."
        )
    entry = {"command": mcp.command, "args": list(mcp.args), "env": dict(mcp.env), "trust": True}
    if existing == entry:
        return None
    if settings is None:
        path.parent.mkdir(parents=True, exist_ok=True)
    else:
        back_up(path)
    write_atomic(path, {**(settings or {}), "mcpServers": {**servers, MCP_SERVER_NAME: entry}})
    return path


def _tool_call(call: ToolCall, stamp: str) -> dict[str, Any]:
    name = gemini_tool_name(call.name)
    record: dict[str, Any] = {"id": call.call_id, "name": name, "args": call.input, "timestamp": stamp}
    if call.is_error:
        # Gemini's own failed calls answer with `{"error": ...}`; a string result would read as a success.
        response = {"id": call.call_id, "name": name, "response": {"error": call.output}}
        record.update(status="error", result=[{"functionResponse": response}])
    else:
        record.update(status="success", result=call.output)
    return record


def gemini_tool_name(name: str) -> str:
    """How Gemini names a tool: an MCP tool as `mcp_<server>_<tool>`, anything else as it was."""
    server_tool = mcp_tool(name)
    return name if server_tool is None else f"mcp_{server_tool[0]}_{server_tool[1]}"


def _project_hash(cwd: Path) -> str:
    """Gemini's id for a project: the SHA-256 of its root path."""
    return hashlib.sha256(str(cwd).encode()).hexdigest()


def _user(record_id: str, text: str, stamp: str) -> dict[str, Any]:
    record = _message(record_id, "user", stamp)
    record["content"].append({"text": text})
    return record


def _message(record_id: str, kind: str, stamp: str) -> dict[str, Any]:
    return {"id": record_id, "timestamp": stamp, "type": kind, "content": []}
