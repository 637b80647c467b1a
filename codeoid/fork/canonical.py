"""A codeoid session's conversation as canonical turns, read from the store.

The store keeps more than the conversation: rotation seeds (codeoid's own copies of stored history), subagent
turns (the main conversation saw only the Agent tool's result), retracted episodes (taken back by the user).
What a fork carries is what the model of the main conversation saw: each user prompt (and what the user typed
while a turn ran), the assistant's text, and each tool call with the input the model wrote and the result it
got. A session's episodes span all its rotations; a forked session's conversation starts with its parent's, up
to the fork point.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from codeoid.fork.turns import Step, ToolCall, Turn, UserMessage


def session_turns(db: sqlite3.Connection, session_id: str, upto_turn: int | None = None) -> list[Turn]:
    """The session's turns in order (only those numbered up to `upto_turn` when given), inherited ones first."""
    row = db.execute("SELECT forked_from, at_turn FROM sessions WHERE id = ?", (session_id,)).fetchone()
    inherited: list[Turn] = []
    if row is not None and row[0] is not None:
        parent_upto = int(row[1]) if upto_turn is None else min(int(row[1]), upto_turn)
        inherited = session_turns(db, str(row[0]), parent_upto)
    return inherited + _own_turns(db, session_id, upto_turn)


def _own_turns(db: sqlite3.Connection, session_id: str, upto_turn: int | None) -> list[Turn]:
    # Assistant text is stored with the time Claude Code wrote it, tool calls with the time they ended and a
    # prompt typed mid-turn with the time it was typed, so creation time (not id: transcript lines are stored
    # after the tool calls that followed them) gives the order. A turn's first user episode is its prompt; a
    # later one is something the user typed while the turn ran.
    rows = db.execute(
        """SELECT turn, kind, text, tool_name, tool_use_id, input, original_command, is_error
           FROM episodes
           WHERE session_id = ? AND turn >= 1 AND (? IS NULL OR turn <= ?)
             AND origin != 'seed' AND agent_id IS NULL AND state != 'retracted'
           ORDER BY turn, created_at, id""",
        (session_id, upto_turn, upto_turn),
    ).fetchall()
    turns: list[Turn] = []
    prompt: str | None = None
    steps: list[Step] = []
    number = 0
    for turn, kind, text, tool_name, tool_use_id, tool_input, original_command, is_error in rows:
        if turn != number:
            if prompt is not None:
                turns.append(Turn(number, prompt, _as_delivered(steps)))
            number, prompt, steps = turn, None, []
        if kind == "user" and prompt is None:
            prompt = text
        elif prompt is None:
            continue  # a turn whose prompt was retracted: what answered it makes no sense alone
        elif kind == "user":
            steps.append(UserMessage(text))
        elif kind == "assistant":
            steps.append(text)
        else:
            steps.append(ToolCall(call_id=tool_use_id, name=tool_name, input=_model_input(tool_input, original_command),
                                  output=text, is_error=bool(is_error)))
    if prompt is not None:
        turns.append(Turn(number, prompt, _as_delivered(steps)))
    return turns


def _as_delivered(steps: list[Step]) -> tuple[Step, ...]:
    """The steps in the order the model saw them: a message typed mid-turn reached the model with the next tool
    result (Claude Code appends it there), so it moves past the tool call that was running when it was typed
    (the first call after it, which ended later), or stays where it is if no call followed."""
    ordered: list[Step] = []
    waiting: list[UserMessage] = []
    for step in steps:
        if isinstance(step, UserMessage):
            waiting.append(step)
            continue
        ordered.append(step)
        if isinstance(step, ToolCall):
            ordered += waiting
            waiting = []
    return (*ordered, *waiting)


def _model_input(stored: str | None, original_command: str | None) -> dict[str, Any]:
    """The input as the model wrote it: for a Bash call codeoid rewrote, the stored input is what ran (the
    compression wrapper) and the model's own command is kept beside it."""
    try:
        value = json.loads(stored) if stored else {}
    except ValueError:
        value = {}
    tool_input = value if isinstance(value, dict) else {"value": value}
    if original_command is not None and "command" in tool_input:
        tool_input = {**tool_input, "command": original_command}
    return tool_input
