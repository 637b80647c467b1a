"""How full the backing window is, read from Claude Code's transcript the way Claude Code itself measures it.

Occupancy is the input side of the last main-chain assistant message: `input_tokens + cache_creation_input_tokens
+ cache_read_input_tokens` (output tokens excluded), counted only after the last compact boundary. Each content
block of one API response is its own transcript line repeating the same `usage`, so messages are deduplicated on
`message.id`; "last" means the message seen most recently for the first time, so a late block of an earlier
message cannot take the place of a newer one. Subagent usage never counts: their lines are sidechains (in
2.1.332 they live in files of their own, which are never read here).

The window size comes from what Claude Code reports (the status line's `context_window.context_window_size`, or
a `modelUsage.<model>.contextWindow` where one appears), else from a table by model id.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeoid.capture import transcript
from codeoid.capture.prompt_kinds import is_task_notification
from codeoid.rotation.seed import split_seeded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Used only when Claude Code has not reported a window. An unknown model gets the smaller window: rotating
# early loses nothing, overflowing loses the turn.
FALLBACK_WINDOWS = {
    "claude-sonnet-4-5": 200_000,
    "claude-opus-5-5": 1_000_000,
}
DEFAULT_WINDOW = 200_000
LONG_CONTEXT_MARK = "[1m]"
LONG_CONTEXT_WINDOW = 1_000_000
# Written after a turn's Stop hooks have run (2.1.332): from then on nothing of that turn is still being stored.
TURN_ENDS = ("stop_hook_summary", "turn_duration")


def fallback_window(model: str | None) -> int:
    """The window for a model id when Claude Code did not say."""
    if not model:
        return DEFAULT_WINDOW
    if LONG_CONTEXT_MARK in model.lower():
        return LONG_CONTEXT_WINDOW
    return FALLBACK_WINDOWS.get(model, DEFAULT_WINDOW)


def usage_tokens(usage: Any) -> int | None:
    """Claude Code's own occupancy formula for one `usage` object; None when it holds no counts."""
    if not isinstance(usage, dict):
        return None
    fields = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    counts = [usage.get(name) for name in fields]
    if not any(isinstance(count, int) for count in counts):
        return None
    return sum(count for count in counts if isinstance(count, int))


@dataclass
class Reading:
    """What the transcript says so far about one backing window."""

    tokens: int = 0
    model: str | None = None
    reported_window: int | None = None  # a `modelUsage.<model>.contextWindow` seen in the transcript
    prompts: int = 0  # user prompts in this window: the min-turns guard counts these
    last_prompt: str | None = None  # the seed's last user turn when the store cannot be read
    turn_open: bool = False  # a turn started and its Stop hooks have not finished yet


class TranscriptSensor:
    """Follows one transcript file from a byte watermark; `poll()` reads what was appended since the last call."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.reading = Reading()
        self._usage_by_message: dict[str, int] = {}
        self._prompt_ids: set[str] = set()

    def poll(self) -> bool:
        """Read new complete lines; True when the reading changed."""
        records, self.offset = transcript.read_new_records(self.path, self.offset)
        before = (self.reading.tokens, self.reading.model, self.reading.reported_window, self.reading.prompts)
        for record in records:
            self._take(record)
        after = (self.reading.tokens, self.reading.model, self.reading.reported_window, self.reading.prompts)
        return after != before

    def _take(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "system" and record.get("subtype") == "compact_boundary":
            self._after_compaction(record)
        elif kind == "system" and record.get("subtype") in TURN_ENDS and _is_main_chain(record):
            self.reading.turn_open = False
        elif kind == "assistant" and _is_main_chain(record):
            self._take_assistant(record)
        elif kind == "user" and _is_main_chain(record):
            prompt_id = record.get("promptId")
            if isinstance(prompt_id, str) and _is_prompt(record):
                self._prompt_ids.add(prompt_id)
                self.reading.prompts = len(self._prompt_ids)
                self.reading.last_prompt = _prompt_text(record) or self.reading.last_prompt
                self.reading.turn_open = True
        elif kind == "cost-state":
            self._take_model_usage(record.get("modelUsage"))

    def _take_assistant(self, record: dict[str, Any]) -> None:
        message = transcript.model_reply(record)
        if message is None:
            return
        message_id = message.get("id")
        tokens = usage_tokens(message.get("usage"))
        if not isinstance(message_id, str) or tokens is None:
            return
        if message_id in self._usage_by_message:
            self._usage_by_message[message_id] = tokens  # another block of a message already seen
            if next(reversed(self._usage_by_message)) != message_id:
                return
        else:
            self._usage_by_message[message_id] = tokens
        self.reading.tokens = tokens
        self.reading.turn_open = True
        if isinstance(message.get("model"), str):
            self.reading.model = message["model"]

    def _after_compaction(self, record: dict[str, Any]) -> None:
        """Only what follows the boundary is in the window; until a new message reports usage, Claude Code's
        own count of what the compaction kept (`postTokens`) is the best reading."""
        self._usage_by_message.clear()
        metadata = record.get("compactMetadata")
        post = metadata.get("postTokens") if isinstance(metadata, dict) else None
        self.reading.tokens = post if isinstance(post, int) else 0

    def _take_model_usage(self, model_usage: Any) -> None:
        if not isinstance(model_usage, dict):
            return
        model = self.reading.model
        entry = model_usage.get(model) if model else None
        if not isinstance(entry, dict) and len(model_usage) == 1:
            entry = next(iter(model_usage.values()))
        window = entry.get("contextWindow") if isinstance(entry, dict) else None
        if isinstance(window, int) and window > 0:
            self.reading.reported_window = window


def _is_main_chain(record: dict[str, Any]) -> bool:
    return not record.get("isSidechain") and not record.get("agentId")


def _prompt_text(record: dict[str, Any]) -> str | None:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        content = "".join(block.get("text", "") for block in content
                          if isinstance(block, dict) and block.get("type") == "text")
    return split_seeded(content)[1] if isinstance(content, str) and content else None


def _is_prompt(record: dict[str, Any]) -> bool:
    """A prompt the user (or the supervisor, for the seeded first message) sent, not a tool result, a background
    agent's task notification, or a meta line such as stop-hook feedback or a compaction summary."""
    if record.get("isMeta") or record.get("isCompactSummary") or record.get("toolUseResult") is not None:
        return False
    origin = record.get("origin")
    if isinstance(origin, dict) and origin.get("kind") == "task-notification":
        return False  # a background agent reporting back opens a turn, but nobody typed it
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return not is_task_notification(content)
    return isinstance(content, list) and not any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )
