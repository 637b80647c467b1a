"""Episode text: turning what Claude Code reports about a tool call into text: the result as the model read it, the
file paths it touched, and a one-line summary built by rules (never by a model).

Pure functions over plain JSON values, used by the store when it writes an episode and reads its response
back; the general text helpers they build on are in `codeoid.text`.
"""

from __future__ import annotations

import json
import re

from codeoid.text import one_line, to_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_EXIT_CODE = re.compile(r"^Exit code (-?\d+)")
_PATH_KEYS = ("file_path", "notebook_path", "path")


def result_text(tool_name: str, response: Any) -> str:
    """The tool result as text, taken from the fields that carry it for each tool."""
    if isinstance(response, str):
        if tool_name.startswith("mcp__"):
            parsed = _maybe_json(response)
            if isinstance(parsed, list):
                return _content_blocks_text(parsed)
        return response
    if isinstance(response, list):
        return _content_blocks_text(response)
    if isinstance(response, dict):
        return _dict_result_text(response)
    return "" if response is None else to_json(response)


def _dict_result_text(response: dict[str, Any]) -> str:
    if "stdout" in response or "stderr" in response:
        stdout, stderr = _str(response.get("stdout")), _str(response.get("stderr"))
        return stdout + ("\n" + stderr if stdout and stderr else stderr)
    file = response.get("file")
    if isinstance(file, dict) and isinstance(file.get("content"), str):
        return file["content"]
    patch = response.get("structuredPatch")
    if isinstance(patch, list) and patch:
        return _patch_text(patch)
    for key in ("content", "result", "output", "text"):
        if isinstance(response.get(key), str):
            return response[key]
        if key == "content" and isinstance(response.get(key), list):
            return _content_blocks_text(response[key])
    filenames = response.get("filenames")
    if isinstance(filenames, list) and all(isinstance(name, str) for name in filenames):
        return "\n".join(filenames)
    return to_json(response)


def _content_blocks_text(blocks: list[Any]) -> str:
    parts = []
    for block in blocks:
        # `input_text`: how Codex gives a tool's output back to the model (a Codex fork's calls, read back).
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str) and block.get("type") in ("text", "input_text"):
            parts.append(text)
        else:
            parts.append(to_json(block))
    return "\n".join(parts)


def _patch_text(hunks: list[Any]) -> str:
    lines = []
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        lines.append(
            f"@@ -{hunk.get('oldStart')},{hunk.get('oldLines')} +{hunk.get('newStart')},{hunk.get('newLines')} @@"
        )
        lines.extend(line for line in hunk.get("lines", []) if isinstance(line, str))
    return "\n".join(lines)


# Stands in a stored tool response for the field that holds the result text, which the episode already
# keeps in its `text` column: a 1 MB Read result is then written once, not twice, on the hook's hot path.
TEXT_MARKER = {"$codeoid": "episode text"}
_MARKER_MIN_CHARS = 4096


def response_without_text(response: Any, text: str) -> Any:
    """`response` with the first string field equal to `text` replaced by `TEXT_MARKER` (large texts only)."""
    if len(text) < _MARKER_MIN_CHARS:
        return response
    replaced = False

    def strip(value: Any) -> Any:
        nonlocal replaced
        if not replaced and isinstance(value, str) and value == text:
            replaced = True
            return TEXT_MARKER
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items()}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return strip(response)


def response_with_text(stored: Any, text: str) -> Any:
    """The inverse of `response_without_text`: the response exactly as Claude Code reported it."""
    if stored == TEXT_MARKER:
        return text
    if isinstance(stored, dict):
        return {key: response_with_text(item, text) for key, item in stored.items()}
    if isinstance(stored, list):
        return [response_with_text(item, text) for item in stored]
    return stored


def exit_status_of(error: str | None) -> int | None:
    """Claude Code reports a failed Bash call only as `Exit code N\\n...` text."""
    match = _EXIT_CODE.match(error or "")
    return int(match.group(1)) if match else None


def touched_paths(tool_input: dict[str, Any]) -> list[str]:
    return [tool_input[key] for key in _PATH_KEYS if isinstance(tool_input.get(key), str)]


def tool_summary(tool_name: str, tool_input: dict[str, Any], text: str, exit_status: int | None,
                 is_error: bool) -> str:
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    outcome = f"exit {exit_status}" if exit_status is not None else ("error" if is_error else "ok")
    if tool_name == "Bash":
        subject = _str(tool_input.get("command"))
    elif tool_name in ("Read", "Write", "Edit", "NotebookEdit"):
        subject = ", ".join(touched_paths(tool_input))
    elif tool_name in ("Grep", "Glob"):
        subject = _str(tool_input.get("pattern")) + (f" in {tool_input['path']}" if tool_input.get("path") else "")
    elif tool_name in ("Agent", "Task"):
        subject = _str(tool_input.get("description"))
    elif tool_name == "WebFetch":
        subject = _str(tool_input.get("url"))
    else:
        subject = to_json(tool_input)
    return one_line(f"{tool_name} {subject} -> {outcome}, {lines} line{'' if lines == 1 else 's'}")


def text_summary(label: str, text: str) -> str:
    return one_line(f"{label}: {text}")


def _maybe_json(text: str) -> Any:
    if not text.lstrip().startswith(("[", "{")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else to_json(value))
