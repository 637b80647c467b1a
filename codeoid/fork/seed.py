"""What every fork carries besides the turns themselves: a notice, and the newest turns that fit the window.

A fork's window must keep room to work in, so the history may take at most `HISTORY_SHARE` of the target's
window. When the whole history does not fit, the newest turns are kept (they are where the work stands) and
the notice says which turns were left out and that the memory tools page them back: every one of them is in
the store, in the same workspace. A backend without a native way to start from a history gets the kept turns
as a structured first message instead (`first_message`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from codeoid.fork.turns import ToolCall, Turn, UserMessage
from codeoid.memory_tools import TOOLS
from codeoid.rotation.seed import FORK_CLOSE, FORK_OPEN

HISTORY_SHARE = 0.5


class WindowTooSmall(ValueError):
    """Not even the newest turn fits the target's window; the message says by how much."""


@dataclass(frozen=True)
class Lineage:
    parent_id: str
    parent_name: str | None
    at_turn: int
    workspace: str


def turn_tokens(turn: Turn) -> int:
    """A conservative token count (three characters a token: the fork must not overflow the window)."""
    chars = len(turn.user)
    for step in turn.steps:
        if isinstance(step, ToolCall):
            chars += len(step.name) + len(json.dumps(step.input, ensure_ascii=False)) + len(step.output) + 64
        elif isinstance(step, UserMessage):
            chars += len(step.text)
        else:
            chars += len(step)
    return chars // 3 + 16


def newest_that_fit(turns: list[Turn], window_tokens: int) -> list[Turn]:
    """The newest turns whose total stays within the history's share of the window, oldest first."""
    budget = int(window_tokens * HISTORY_SHARE)
    kept: list[Turn] = []
    used = 0
    for turn in reversed(turns):
        cost = turn_tokens(turn)
        if used + cost > budget:
            break
        kept.append(turn)
        used += cost
    if turns and not kept:
        newest = turns[-1]
        raise WindowTooSmall(
            f"turn {newest.number} alone needs about {turn_tokens(newest):,} tokens, more than the "
            f"{budget:,} a fork may fill of a {window_tokens:,}-token window; fork at an earlier turn (--at) "
            "or onto a model with a larger window")
    return kept[::-1]


def notice(lineage: Lineage, kept: list[Turn], total: int, tool_prefix: str) -> str:
    """The fork's opening note: whose conversation follows, what was left out, and how to page it back."""
    parent = f"{lineage.parent_name} ({lineage.parent_id})" if lineage.parent_name else lineage.parent_id
    lines = [
        FORK_OPEN,
        f"This session is a fork of codeoid session {parent} at turn {lineage.at_turn}, made with "
        "`codeoid fork`. The conversation that follows is the parent's, verbatim; what happened in the parent "
        "after that turn is not part of this session.",
    ]
    dropped = total - len(kept)
    if dropped:
        first = kept[0].number if kept else lineage.at_turn + 1
        lines.append(
            f"Only the newest turns fit this window: turns {first}-{lineage.at_turn} follow; the {dropped} earlier "
            f"turns are stored verbatim and the memory tools below page them back (search them with "
            f"{tool_prefix}recall).")
    lines += [
        "",
        f"workspace: {lineage.workspace}",
        "memory tools:",
        *(f"- {tool_prefix}{name}{args}: {purpose}" for name, args, purpose in TOOLS),
        FORK_CLOSE,
    ]
    return "\n".join(lines)


def with_notice(fork_notice: str, kept: list[Turn]) -> list[Turn]:
    """The kept turns with the notice opening the first prompt, for a backend whose starting history has no
    place of its own for it (Codex, Gemini): the model reads it first, before the parent's own words."""
    if not kept:
        return kept
    return [replace(kept[0], user=f"{fork_notice}\n\n{kept[0].user}"), *kept[1:]]


def first_message(fork_notice: str, kept: list[Turn]) -> str:
    """The kept turns as one structured message, for a backend that cannot start from a history of its own.

    The turns go inside the notice's tag, so the whole message is one seed that codeoid's hooks store apart
    from the user's own prompt after it (`codeoid.rotation.seed.split_seeded`)."""
    parts = [fork_notice.removesuffix(FORK_CLOSE).rstrip("\n"), "<parent_turns>"]
    for turn in kept:
        parts.append(f'<turn number="{turn.number}">')
        parts.append(f"<user>\n{turn.user}\n</user>")
        for step in turn.steps:
            if isinstance(step, ToolCall):
                error = ' is_error="true"' if step.is_error else ""
                parts.append(f'<tool_call name="{step.name}" id="{step.call_id}">\n'
                             f"{json.dumps(step.input, ensure_ascii=False)}\n</tool_call>")
                parts.append(f'<tool_result id="{step.call_id}"{error}>\n{step.output}\n</tool_result>')
            elif isinstance(step, UserMessage):
                parts.append(f"<user>\n{step.text}\n</user>")  # typed while the turn ran, read at this point
            else:
                parts.append(f"<assistant>\n{step}\n</assistant>")
        parts.append("</turn>")
    parts += ["</parent_turns>", FORK_CLOSE]
    return "\n".join(parts)
