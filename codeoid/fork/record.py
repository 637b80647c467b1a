"""What a forked session did in another agent CLI, read back from that CLI's own session record.

Codex and Gemini run no codeoid hooks, so after a fork's run codeoid reads the record the CLI keeps (Codex's
rollout file, Gemini's chat file) into these steps, in the order they happened, and stores them as episodes
(`codeoid.fork.capture`). Each step carries a key that stays the same every time the record is read, so reading
it again stores nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Prompt:
    """What the user typed: opens a turn."""

    key: str
    text: str
    at: float | None = None  # when the CLI recorded it (epoch seconds), if it said


@dataclass(frozen=True)
class Answer:
    """The model's text."""

    key: str
    text: str
    at: float | None = None


@dataclass(frozen=True)
class Call:
    """A tool call the CLI ran, with its whole result; `error` is the failure text when the call failed."""

    call_id: str
    name: str
    input: dict[str, Any]
    response: Any
    error: str | None = None
    at: float | None = None


Step = Prompt | Answer | Call
