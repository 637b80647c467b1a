"""Reading back what Codex did from its rollout file: the lines Codex appended to the one a fork wrote, or (for
a session captured live by codeoid's hooks) the model's text in the session's own rollout.

Codex 0.171.0 appends each new turn to the rollout it resumed and leaves the lines codeoid wrote as they were
(docs/backends/codex.md, section 4), so everything from the byte where codeoid's history ended is Codex's own.
From those lines:

- the user's prompts are the `user_message` events: the user `message` items Codex also adds (its
  `<environment_context>`, skills and developer instructions) are not the user's words;
- the model's text is the assistant `message` items (the `agent_message` events repeat it for the TUI);
- a tool call is a `function_call` (an MCP tool: `name` in `namespace`) or `custom_tool_call` (`apply_patch`)
  with the `…_output` of the same `call_id`. An MCP call failed when Codex's `mcp_tool_call_end` event says so
  (the output item itself has no error flag); a shell command (`exec_command`) when the header of its output,
  before `Output:`, says `Process exited with code N` with N other than 0 (seen with 0.171.0; the rollout keeps
  no event with the exit code). A call whose output never came (the run was killed) is not stored.

Reasoning items are left out: Codex keeps them encrypted. Prompts and answers are keyed by the rollout's line
number (`codex:<session id>:<line>`), tool calls by Codex's `call_id`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeoid.capture.record import Answer, Call, Prompt, Step
from codeoid.capture.transcript import epoch
from codeoid.store import episode_text

CALL_TYPES = ("function_call", "custom_tool_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")


def read(path: Path, *, session_id: str, offset: int) -> list[Step]:
    """The steps recorded in the rollout at `path` after its first `offset` bytes (codeoid's history)."""
    steps: list[Step] = []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    failed: set[str] = set()
    position = 0
    with path.open("rb") as rollout:
        for number, raw in enumerate(rollout, start=1):
            start, position = position, position + len(raw)
            if start < offset or not raw.endswith(b"\n"):  # codeoid's own line, or one Codex is still writing
                continue
            record = _parse(raw)
            if record is None:
                continue
            key = f"codex:{session_id}:{number}"
            kind, payload = record.get("type"), record.get("payload")
            if not isinstance(payload, dict):
                continue
            at = epoch(record.get("timestamp"))
            if kind == "event_msg":
                _event(payload, key, at, steps, failed)
            elif kind == "response_item":
                _item(payload, key, at, steps, calls, failed)
    return steps


def _event(payload: dict[str, Any], key: str, at: float | None, steps: list[Step], failed: set[str]) -> None:
    kind = payload.get("type")
    if kind == "user_message" and isinstance(payload.get("message"), str):
        steps.append(Prompt(key, payload["message"], at))
    elif kind == "mcp_tool_call_end" and _mcp_failed(payload.get("result")):
        failed.add(str(payload.get("call_id")))


def _item(payload: dict[str, Any], key: str, at: float | None, steps: list[Step],
          calls: dict[str, tuple[str, dict[str, Any]]], failed: set[str]) -> None:
    kind, call_id = payload.get("type"), payload.get("call_id")
    if kind == "message" and payload.get("role") == "assistant":
        texts = [part.get("text") for part in payload.get("content") or [] if isinstance(part, dict)]
        text = "\n\n".join(t for t in texts if isinstance(t, str) and t)
        if text:
            steps.append(Answer(key, text, at))
    elif kind in CALL_TYPES and isinstance(call_id, str):
        calls[call_id] = (_tool_name(payload), _tool_input(payload))
    elif kind in OUTPUT_TYPES and isinstance(call_id, str) and call_id in calls:
        name, tool_input = calls.pop(call_id)
        output = payload.get("output")
        if call_id in failed or ("__" not in name and _command_failed(output)):
            error = episode_text.result_text(name, output)
        else:
            error = None
        steps.append(Call(call_id, name, tool_input, output, error, at))


def _tool_name(payload: dict[str, Any]) -> str:
    """An MCP tool as Claude Code names it (`mcp__codeoid__recall`), so codeoid's own tools are recognized."""
    name, namespace = str(payload.get("name")), payload.get("namespace")
    return f"{namespace}__{name}" if isinstance(namespace, str) and namespace else name


def _tool_input(payload: dict[str, Any]) -> dict[str, Any]:
    """A function call's JSON arguments; a custom tool's free-form input (a patch) under `input`."""
    if payload.get("type") == "custom_tool_call":
        return {"input": payload.get("input")}
    arguments = payload.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"arguments": arguments}


def _mcp_failed(result: Any) -> bool:
    """Codex's MCP result is `{"Ok": CallToolResult}` or `{"Err": message}`; an Ok result can carry isError."""
    if not isinstance(result, dict):
        return False
    ok = result.get("Ok")
    return "Err" in result or (isinstance(ok, dict) and bool(ok.get("isError")))


def _command_failed(output: Any) -> bool:
    """Whether Codex's own report on a command it ran (`Chunk ID: …\nWall time: …\nProcess exited with code 3\n…
    Output:\n…`) gives a non-zero exit code. Only the header counts: the command's own output follows it."""
    if not isinstance(output, str):
        return False
    header = output.split("\nOutput:\n", 1)[0] if "\nOutput:\n" in output else ""
    for line in header.splitlines():
        for prefix in ("Process exited with code ", "Exit code: "):
            if line.startswith(prefix):
                code = line[len(prefix):].strip()
                return code.lstrip("-").isdigit() and int(code) != 0
    return False


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None
