"""Reading Claude Code's transcript JSONL defensively.

The file has no published schema, is written asynchronously (it lags the hooks) and stores each content
block of one API response as its own line, repeating `message.id`. Readers therefore consume complete
lines only, from a byte watermark, and skip anything they do not recognise.

The path comes from the hook's payload, so it is opened as untrusted: without blocking (a FIFO or a device
would hang `open()` and, inside a write transaction, every other writer with it), and read only when it is a
regular file, at most `MAX_TAIL_BYTES` at a time.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator
from datetime import datetime

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_TAIL_BYTES = 64 * 1024 * 1024


class AssistantText:
    """One text block of an assistant message, as one transcript line holds it."""

    __slots__ = ("message_id", "text", "uuid", "timestamp")

    def __init__(self, message_id: str, text: str, uuid: str | None, timestamp: float | None) -> None:
        self.message_id = message_id
        self.text = text
        self.uuid = uuid
        self.timestamp = timestamp  # when Claude Code wrote it: the episode's place in the timeline


def read_new_records(path: str, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Parse the complete lines after `offset`; return them and the offset just past the last one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return [], offset
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return [], offset  # a FIFO, socket or device is no transcript: never wait on one
        size = status.st_size
        if offset > size:  # the file was replaced: start over
            offset = 0
        data = os.pread(fd, min(size - offset, MAX_TAIL_BYTES), offset)
    except OSError:
        return [], offset
    finally:
        os.close(fd)
    end = data.rfind(b"\n") + 1
    return list(_parse_lines(data[:end])), offset + end


def read_records(path: str) -> list[dict[str, Any]]:
    records, _ = read_new_records(path, 0)
    return records


def _parse_lines(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def assistant_texts(records: Iterable[dict[str, Any]], *, sidechain: bool = False) -> list[AssistantText]:
    """The text blocks of assistant messages, one entry per transcript line, in file order.

    With `sidechain=False` only the main chain counts (subagent lines live in their own files in 2.1.332,
    but older versions interleaved them with `isSidechain: true`).
    """
    texts = []
    for record in records:
        if record.get("type") != "assistant" or bool(record.get("isSidechain")) != sidechain:
            continue
        message = model_reply(record)
        if message is None:
            continue
        message_id = message.get("id")
        content = message.get("content")
        if not isinstance(message_id, str) or not isinstance(content, list):
            continue
        for block in content:
            text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
            if isinstance(text, str) and text.strip():
                texts.append(AssistantText(message_id, text, record.get("uuid"), epoch(record.get("timestamp"))))
    return texts


def model_reply(record: dict[str, Any]) -> dict[str, Any] | None:
    """The `message` of an assistant line the model really sent; None for an API error Claude Code recorded as
    an assistant line, or a `<synthetic>` one it made up itself (both carry no real text or usage)."""
    if record.get("isApiErrorMessage"):
        return None
    message = record.get("message")
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return None
    return message


def epoch(stamp: Any) -> float | None:
    """A record timestamp (Claude Code, Codex and Gemini all write ISO 8601 with a `Z`) as epoch seconds;
    anything else is None."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def preserved_keys(records: list[dict[str, Any]]) -> set[str] | None:
    """The episode keys still in the window after the last compaction, or None if there was none.

    The `compact_boundary` record names its preserved segment by head and tail uuid; walking `parentUuid`
    back from the tail to the head gives its lines, and their tool-use ids, prompt ids and message ids are
    the episodes that stay live.
    """
    boundary_index = None
    for index, record in enumerate(records):
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            boundary_index = index
    if boundary_index is None:
        return None
    metadata = records[boundary_index].get("compactMetadata") or {}
    segment = metadata.get("preservedSegment") if isinstance(metadata, dict) else None
    if not isinstance(segment, dict) or not segment.get("tailUuid"):
        return set()
    by_uuid = {record["uuid"]: record for record in records[:boundary_index] if isinstance(record.get("uuid"), str)}
    keys: set[str] = set()
    current, head = segment.get("tailUuid"), segment.get("headUuid")
    seen: set[str] = set()
    while isinstance(current, str) and current in by_uuid and current not in seen:
        seen.add(current)
        keys |= _keys_of(by_uuid[current])
        if current == head:
            break
        current = by_uuid[current].get("parentUuid")
    return keys


def _is_tool_result(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def _keys_of(record: dict[str, Any]) -> set[str]:
    keys = set()
    message = record.get("message")
    if record.get("type") == "user" and isinstance(record.get("promptId"), str) and not _is_tool_result(message):
        keys.add(record["promptId"])
    if isinstance(message, dict):
        if record.get("type") == "assistant" and isinstance(message.get("id"), str):
            keys.add(message["id"])
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    keys.add(block["id"])
                elif block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                    keys.add(block["tool_use_id"])
    return keys
