"""A fork's history as a Codex CLI session: a rollout file Codex resumes natively, and the argv that resumes it.

Codex keeps each session as a rollout JSONL file under `$CODEX_HOME/sessions/YYYY/MM/DD/` and `codex resume ID`
(or `codex exec resume ID PROMPT`) replays its `response_item` records as the conversation, in order, ahead of
the new prompt (docs/backends/codex.md). Observed on codex-cli 0.171.0: a file holding only a `session_meta`
line and `response_item` lines is enough for the model (an `event_msg` beside each message lets the TUI show it
too). The history reaches the model as Responses API input items, the shape Codex sends for its own past turns:
user and assistant messages, `function_call` and `function_call_output`. Call ids and tool names stay as the
source backend had them, so the model reads what really happened and a call id still leads back to the stored
episode; only MCP tools are named the way Codex names them (tool `recall` in namespace `mcp__codeoid`), so a
past recall matches the tool the fork offers.

codeoid's MCP server is registered for this launch only, with `-c mcp_servers.codeoid.*` overrides on the
command line, so the user's `config.toml` is never edited.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeoid.fork.launch import Launch, McpServer, mcp_tool, timestamp
from codeoid.fork.turns import ToolCall, Turn, UserMessage
from codeoid.setup.hook_table import MCP_SERVER_NAME

#: The Responses API has no error flag on a tool result; the model learns of a failure from this first line.
ERROR_PREFIX = "Tool call failed:\n"
#: Written into `session_meta` as the program that made the session, so a session list shows where it came from.
ORIGINATOR = "codeoid_fork"
#: The Codex release whose rollout format this file follows; `session_meta` must name one or Codex rejects it.
ROLLOUT_FORMAT_VERSION = "0.171.0"


def codex_home() -> Path:
    """Where Codex keeps its state: `$CODEX_HOME`, else `~/.codex`."""
    override = os.environ.get("CODEX_HOME")
    return Path(override) if override else Path.home() / ".codex"


def prepare(
    turns: Sequence[Turn],
    *,
    cwd: Path,
    mcp: McpServer,
    home: Path | None = None,
    prompt: str | None = None,
    binary: str = "codex",
    session_id: str | None = None,
    now: datetime | None = None,
) -> Launch:
    """Write `turns` as a new Codex session under `home` and return how to resume it in `cwd`.

    With `prompt`, the launch is headless (`codex exec resume ID PROMPT`): one answer, then exit. Without it,
    the interactive `codex resume ID` opens on the forked conversation and waits for the user.
    """
    home = home or codex_home()
    session_id = session_id or str(uuid.uuid4())
    now = now or datetime.now(UTC)
    path = rollout_path(home, session_id, now)
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = timestamp(now)
    records = [_record(stamp, "session_meta", _session_meta(session_id, cwd, stamp))]
    for item in history_items(turns):
        records.append(_record(stamp, "response_item", item))
        shown = _display_event(item)
        if shown is not None:
            records.append(_record(stamp, "event_msg", shown))
    # Exclusive create: a session id is never reused, and an existing session must not be overwritten.
    with path.open("x", encoding="utf-8") as out:
        out.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    options = mcp_overrides(mcp, cwd)
    if prompt is None:
        argv = [binary, "resume", *options, session_id]
    else:
        # The parent session already worked in `cwd`; exec would otherwise refuse a folder outside a git repo.
        # `--`: a prompt that starts with a dash is still the prompt.
        argv = [binary, "exec", "--skip-git-repo-check", "resume", *options, "--", session_id, prompt]
    return Launch(argv=argv, env={"CODEX_HOME": str(home)}, cwd=cwd, files=(path,), session_id=session_id)


def rollout_path(home: Path, session_id: str, when: datetime) -> Path:
    """Where Codex itself would file a session started at `when` (its resume looks the id up by file name)."""
    day = when.astimezone(UTC)
    name = f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{session_id}.jsonl"
    return home / "sessions" / day.strftime("%Y/%m/%d") / name


def history_items(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """The turns as Responses API input items, in conversation order."""
    items: list[dict[str, Any]] = []
    for turn in turns:
        items.append(_user_message(turn.user))
        for step in turn.steps:
            if isinstance(step, UserMessage):
                # Typed while the turn ran: a user message among the turn's items, after the result it came with.
                items.append(_user_message(step.text))
            elif isinstance(step, ToolCall):
                items.append(
                    {
                        "type": "function_call",
                        **_function_name(step.name),
                        "arguments": json.dumps(step.input, ensure_ascii=False),
                        "call_id": step.call_id,
                    }
                )
                output = ERROR_PREFIX + step.output if step.is_error else step.output
                items.append({"type": "function_call_output", "call_id": step.call_id, "output": output})
            else:
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": step}]}
                )
    return items


def _user_message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _function_name(name: str) -> dict[str, str]:
    """How Codex names a call: an MCP tool by its server's namespace and its own name, anything else as it was."""
    server_tool = mcp_tool(name)
    if server_tool is None:
        return {"name": name}
    server, tool = server_tool
    return {"name": tool, "namespace": f"mcp__{server}"}


def mcp_overrides(mcp: McpServer, cwd: Path) -> list[str]:
    """`-c` options that register codeoid's MCP server for one run.

    Codex starts stdio servers with a short allow-list of the caller's environment, so the workspace the server
    answers for (`CLAUDE_PROJECT_DIR`, the variable codeoid-mcp reads) and `mcp.env` are passed explicitly.
    """
    env = {"CLAUDE_PROJECT_DIR": str(cwd), **mcp.env}
    prefix = f"mcp_servers.{MCP_SERVER_NAME}"
    values = {
        "command": _toml(mcp.command),
        "args": _toml(list(mcp.args)),
        "env": "{" + ", ".join(f"{_toml(k)} = {_toml(v)}" for k, v in env.items()) + "}",
        # Otherwise Codex sends the first request without waiting for the server, and recall is missing from it.
        "required": "true",
    }
    options: list[str] = []
    for key, value in values.items():
        options += ["-c", f"{prefix}.{key}={value}"]
    return options


def _toml(value: str | list[str]) -> str:
    """A TOML literal for a string or a list of strings. A JSON string is a valid TOML basic string as long as
    non-ASCII text stays literal (TOML has no surrogate-pair escapes)."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _display_event(item: dict[str, Any]) -> dict[str, Any] | None:
    """The event Codex's TUI draws a message from on resume; the model reads only the response items.

    Tool calls get none: the TUI draws them from execution events that carry Codex's own command details.
    """
    if item["type"] != "message":
        return None
    text = item["content"][0]["text"]
    if item["role"] == "user":
        return {"type": "user_message", "message": text, "kind": "plain"}
    return {"type": "agent_message", "message": text}


def _record(stamp: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": stamp, "type": kind, "payload": payload}


def _session_meta(session_id: str, cwd: Path, stamp: str) -> dict[str, Any]:
    return {"id": session_id, "timestamp": stamp, "cwd": str(cwd), "originator": ORIGINATOR,
            "cli_version": ROLLOUT_FORMAT_VERSION, "source": "cli"}
