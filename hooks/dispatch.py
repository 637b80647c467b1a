"""From hook stdin to the store: parse tolerantly, then hand the event to `codeoid.capture.ingest`.

A PostToolUse whose result Claude Code saved to a file gets the whole file read back into it first
(`codeoid.capture.persisted`). A Bash call's PostToolUse is then offered to `post_tool_use`, which compresses an
output the rewrite left alone; the compressed text travels with the event, and the handler stores the raw text
before it answers with it.

Input that cannot be read at all is quarantined (kept, never shown to the session) and the reason logged.
"""

from __future__ import annotations

import json
import os
import re
import time

from codeoid import exclusions, paths
from codeoid.capture.events import ENV_KEYS, HANDLERS
from codeoid.capture.ingest import write
from codeoid.capture.spool import SpooledEvent
from codeoid.log import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The JSON escape of a UTF-16 surrogate (\ud800 to \udfff): only input holding one can decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def run(event: str, raw: bytes) -> str | None:
    payload = parse_payload(event, raw)
    if payload is None:
        return None
    named = payload.get("hook_event_name")
    if not event:
        event = named if isinstance(named, str) else ""
    elif named != event:
        log("hook", f"{event}: payload says hook_event_name={named!r}; handled as {event}")
    if event not in HANDLERS:
        log("hook", f"unknown event {event!r}; nothing stored")
        return None
    if exclusions.excluded_by(os.environ.get("CLAUDE_PROJECT_DIR") or _text(payload.get("cwd"))):
        return None  # the user excluded this project: not even a log line says what happened in it
    received_at = time.time()
    replacement = None
    if event == "PostToolUse":
        from codeoid.capture import persisted

        persisted.load(payload, os.environ)  # a result Claude Code saved to a file: the whole of it, from here on
    if event == "PostToolUse" and payload.get("tool_name") == "Bash":
        from codeoid.hooks import post_tool_use

        replacement = post_tool_use.plan(payload, os.environ)[0]  # outside the store's write lock
    spooled = SpooledEvent(event, payload, {k: os.environ[k] for k in ENV_KEYS if k in os.environ}, received_at,
                           replacement)
    return write(spooled)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def parse_payload(event: str, raw: bytes) -> dict[str, Any] | None:
    """The hook's JSON object, or None (with the bytes quarantined) when there is nothing usable.

    Readable parts are kept: bytes that are not UTF-8 and lone surrogates (valid JSON escapes that no
    UTF-8 text, so no SQLite text, can hold) each become U+FFFD and the rest of the payload is untouched.
    """
    if not raw.strip():
        log("hook", f"{event}: empty stdin; nothing stored")
        return None
    try:
        try:
            payload = json.loads(raw)
        except UnicodeDecodeError:
            log("hook", f"{event}: stdin is not valid UTF-8; the undecodable bytes are read as U+FFFD")
            payload = json.loads(raw.decode("utf-8", "replace"))
        if isinstance(payload, dict) and _SURROGATE_ESCAPE.search(raw):
            payload = _replace_lone_surrogates(event, payload)
    except (ValueError, RecursionError) as error:
        _quarantine_input(event, raw, f"invalid JSON: {error}")
        return None
    if not isinstance(payload, dict):
        _quarantine_input(event, raw, f"expected a JSON object, got {type(payload).__name__}")
        return None
    return payload


def _replace_lone_surrogates(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`json.loads` pairs valid surrogate escapes into one character, so any surrogate left is a lone one."""
    text = json.dumps(payload, ensure_ascii=False)
    cleaned = _LONE_SURROGATE.sub("\ufffd", text)
    if cleaned == text:
        return payload
    log("hook", f"{event}: lone UTF-16 surrogates in the payload; stored as U+FFFD")
    result: dict[str, Any] = json.loads(cleaned)
    return result


def _quarantine_input(event: str, raw: bytes, reason: str) -> None:
    try:
        name = f"hook-input-{time.time_ns()}-{os.getpid()}.bin"
        fd = paths.open_private(os.path.join(paths.quarantine_dir(), name), os.O_CREAT | os.O_WRONLY | os.O_EXCL)
        with os.fdopen(fd, "wb") as file:
            file.write(raw)
        log("hook", f"{event}: {reason}; input kept as quarantine/{name}")
    except OSError as error:
        log("hook", f"{event}: {reason}; could not keep the input ({error})")

