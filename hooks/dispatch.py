"""From hook stdin to the store: parse tolerantly, then hand the event to `codeoid.ingest`.

Input that cannot be read at all is quarantined (kept, never shown to the session) and the reason logged.
"""

from __future__ import annotations

import json
import os
import time

from codeoid import paths
from codeoid.events import ENV_KEYS, HANDLERS
from codeoid.ingest import write
from codeoid.log import log
from codeoid.spool import SpooledEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
    spooled = SpooledEvent(event, payload, {k: os.environ[k] for k in ENV_KEYS if k in os.environ}, time.time())
    return write(spooled)


def parse_payload(event: str, raw: bytes) -> dict[str, Any] | None:
    """The hook's JSON object, or None (with the bytes quarantined) when there is nothing usable."""
    if not raw.strip():
        log("hook", f"{event}: empty stdin; nothing stored")
        return None
    try:
        payload = json.loads(raw)
    except ValueError as error:
        _quarantine_input(event, raw, f"invalid JSON: {error}")
        return None
    if not isinstance(payload, dict):
        _quarantine_input(event, raw, f"expected a JSON object, got {type(payload).__name__}")
        return None
    return payload


def _quarantine_input(event: str, raw: bytes, reason: str) -> None:
    try:
        name = f"hook-input-{time.time_ns()}-{os.getpid()}.bin"
        fd = paths.open_private(os.path.join(paths.quarantine_dir(), name), os.O_CREAT | os.O_WRONLY | os.O_EXCL)
        with os.fdopen(fd, "wb") as file:
            file.write(raw)
        log("hook", f"{event}: {reason}; input kept as quarantine/{name}")
    except OSError as error:
        log("hook", f"{event}: {reason}; could not keep the input ({error})")

