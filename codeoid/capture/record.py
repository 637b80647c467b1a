"""What a session did in another agent CLI, read back from that CLI's own session record.

A fork's run in Codex or Gemini without codeoid's hooks is read from the record the CLI keeps (Codex's rollout
file, Gemini's chat file) into these steps once it exits (`codeoid.fork.capture`); with the hooks, Codex's
rollout gives the model's text between tool calls, which no hook carries (`codeoid.capture.agent_events`). Each
step carries a key that stays the same every time the record is read, so reading it again stores nothing twice.
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
