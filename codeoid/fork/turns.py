"""The canonical turn format a fork carries from one backend to another.

It is what every backend can be given as a starting history: the user's words (the prompt that opened a turn
and any typed while it ran), the assistant's text and each tool call with its input and the result the model
saw, in order. Backend-specific detail (Claude Code's message ids, cache usage, thinking blocks) stays in the
store; a translator needs only this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One tool call and the result the model received for it."""

    call_id: str  # the original tool_use_id; translators may need to re-mint ids in their own format
    name: str  # the tool's name as the source backend called it, e.g. "Bash" or "mcp__codeoid__recall"
    input: dict[str, Any]
    output: str  # the result text as the model saw it (after compression, if codeoid compressed it)
    is_error: bool = False


@dataclass(frozen=True)
class UserMessage:
    """What the user typed while the turn was running: Claude Code hands it to the model inside that turn, so it
    sits among the turn's steps, after the step the model had reached, not in a turn of its own."""

    text: str


Step = str | ToolCall | UserMessage  # assistant text, a tool call with its result, or the user's word mid-turn


@dataclass(frozen=True)
class Turn:
    """One user turn: the prompt and everything the assistant did in answer, in order."""

    number: int  # 1-based turn number within the codeoid session
    user: str  # the prompt that opened the turn, verbatim
    steps: tuple[Step, ...] = field(default_factory=tuple)
