"""The `<rotation_context>` seed: the only thing a fresh window carries over from the one it replaces.

It is a task anchor, not a summary: a notice that the session continues, where (workspace, session, rotation
number), how to page history back (the four memory tools by the names the active install route gives them), and
the user's last turn before the rotation, verbatim up to `MAX_LAST_TURN_CHARS`. That turn was answered in the old
window, and the seed says so, so the model never takes it for a new request. The same inputs always give the same
text. Without memory (the store could not be read) the seed is a generic continuation notice without tools.
"""

from __future__ import annotations

from codeoid.memory_tools import TOOLS

SEED_OPEN = "<rotation_context>"
SEED_CLOSE = "</rotation_context>"
# A fork started without a native history carries the parent's turns in a first message under this tag
# (`codeoid.fork.seed`); it is a seed too: a copy of stored history, stored as one and never recalled.
FORK_OPEN = "<fork_context>"
FORK_CLOSE = "</fork_context>"
_SEED_TAGS = ((SEED_OPEN, SEED_CLOSE), (FORK_OPEN, FORK_CLOSE))
MAX_LAST_TURN_CHARS = 2000


class LastTurn:
    """The user's last prompt before the rotation (plain class: hooks import this module, dataclasses are slow)."""

    __slots__ = ("text", "episode_id")

    def __init__(self, text: str, episode_id: int | None = None) -> None:
        self.text = text
        self.episode_id = episode_id  # where the whole turn can be read when the seed cuts it


class SeedFacts:
    """Everything the seed says; `tool_prefix` None means there is no memory to page back from."""

    __slots__ = ("workspace", "session_id", "session_name", "rotation", "tool_prefix", "last_turn")

    def __init__(self, *, workspace: str, session_id: str, session_name: str | None, rotation: int,
                 tool_prefix: str | None, last_turn: LastTurn | None) -> None:
        self.workspace = workspace
        self.session_id = session_id
        self.session_name = session_name
        self.rotation = rotation
        self.tool_prefix = tool_prefix
        self.last_turn = last_turn


def build_seed(facts: SeedFacts) -> str:
    session = f"{facts.session_name} ({facts.session_id})" if facts.session_name else facts.session_id
    lines = [SEED_OPEN]
    if facts.tool_prefix is not None:
        lines += [
            "This session continues in a fresh context window: codeoid rotated it instead of compacting it. Nothing "
            "was summarized or lost: every earlier prompt, answer and tool result is stored verbatim, and the tools "
            "below page it back. When you need something from before this point, look it up instead of guessing.",
            "",
            f"workspace: {facts.workspace}",
            f"session: {session} · rotation {facts.rotation}",
            "",
            "memory tools:",
            *(f"- {facts.tool_prefix}{name}{args}: {purpose}" for name, args, purpose in TOOLS),
        ]
    else:
        lines += [
            "This session continues in a fresh context window. The earlier conversation is not available in it: "
            "ask the user for anything you need from before this point.",
            "",
            f"workspace: {facts.workspace}",
            f"session: {session} · rotation {facts.rotation}",
        ]
    if facts.last_turn is not None:
        lines += [
            "",
            "The user's last turn before the rotation, verbatim. It was answered in the previous window; it is "
            "quoted so you know where things stand, not as a new request:",
            "<last_user_turn>",
            _clip(facts.last_turn),
            "</last_user_turn>",
        ]
    lines.append(SEED_CLOSE)
    return "\n".join(lines)


def seeded_prompt(seed: str, prompt: str) -> str:
    """The fresh window's first message: the seed, then the prompt that was handed over, untouched."""
    return f"{seed}\n\n{prompt}"


def split_seeded(prompt: str) -> tuple[str | None, str]:
    """(seed, the user's own prompt) for a seeded first message (a rotation's or a fork's); (None, prompt) for
    any other prompt."""
    for opening, closing in _SEED_TAGS:
        if not prompt.startswith(opening):
            continue
        end = prompt.rfind(closing) if opening == FORK_OPEN else prompt.find(closing)
        if end < 0:
            return None, prompt
        end += len(closing)
        rest = prompt[end:]
        return prompt[:end], rest[2:] if rest.startswith("\n\n") else rest.lstrip("\n")
    return None, prompt


def _clip(turn: LastTurn) -> str:
    text = turn.text
    if len(text) <= MAX_LAST_TURN_CHARS:
        return text
    where = f"; the whole turn is episode {turn.episode_id} (get_episode)" if turn.episode_id is not None else ""
    return f"{text[:MAX_LAST_TURN_CHARS]}\n[… {len(text) - MAX_LAST_TURN_CHARS} more characters{where}]"
