"""Text helpers every layer needs, the store included: making text storable (lone surrogates), JSON that keeps
every character, one-line summaries and token estimates. Plain functions over strings, no imports above the
standard library, so the bottom layer can use them without depending on anything that presents results.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SUMMARY_WIDTH = 120


def clean_text(value: str) -> str:
    """Replace lone surrogates (valid JSON escapes, invalid UTF-8) so SQLite can store the text."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return value


def to_json(value: Any) -> str:
    """JSON that keeps every character: readable UTF-8 normally, ASCII escapes when lone surrogates occur."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True)
    return text


def one_line(text: str, width: int = SUMMARY_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def estimate_tokens(text: str) -> int:
    """About four characters a token for English and code; callers that must not overflow divide by three."""
    return estimate_tokens_of_size(len(text))


def estimate_tokens_of_size(size: int) -> int:
    """The same rate for a size alone (the savings ledger knows byte counts, not text); negative stays negative."""
    return (size + 3) // 4 if size >= 0 else -estimate_tokens_of_size(-size)


def agent_label(agent: object) -> str:
    """The agent CLI an episode or session came from, as shown to people and models: a stored NULL is Claude Code."""
    return agent if isinstance(agent, str) and agent else "claude"
