"""Fitting verbatim text into one answer: the output budget, token estimates, line ranges and line pages.

The MCP server's results and `codeoid search` both page stored text by line number, so the rules live here, below
both: `split_lines` numbers lines the way `get_episode(lines=...)` and `codeoid show --lines` count them.
Claude Code rejects an MCP result over `MAX_MCP_OUTPUT_TOKENS` (25,000 by default) outright, so every
result is built against a byte budget derived from it. Tokens are estimated conservatively: three UTF-8
bytes a token (English and code average nearer four characters; CJK text is about three bytes a
character and a token), and only 90% of the limit is spent, for the tokenizer's bad days (hex, base64).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

DEFAULT_MAX_OUTPUT_TOKENS = 25_000
BYTES_PER_TOKEN = 3
SPENDABLE_SHARE = 0.9
T = TypeVar("T")
_LINE_RANGE = re.compile(r"\s*(\d+)\s*(?:(-)\s*(\d+)?)?\s*")


class LineRangeError(ValueError):
    """A line range that cannot be read; the message says what was expected."""


def parse_line_range(text: str) -> tuple[int, int | None]:
    """`"82-120"` (1-based, inclusive), `"82"` (that line alone) or `"82-"` (to the end) as (first, last or None)."""
    found = _LINE_RANGE.fullmatch(text)
    if found is None:
        raise LineRangeError(f"lines={text!r} is not a line range: write \"82-120\" (first-last, 1-based, "
                             "inclusive), \"82\" for one line or \"82-\" for line 82 to the end.")
    first = int(found.group(1))
    last = first if found.group(2) is None else (int(found.group(3)) if found.group(3) else None)
    if first < 1:
        raise LineRangeError(f"lines={text!r}: lines are numbered from 1.")
    if last is not None and last < first:
        raise LineRangeError(f"lines={text!r}: the last line ({last}) is before the first ({first}).")
    return first, last


def format_line_range(first: int, last: int) -> str:
    """The `lines` argument that asks for `first`..`last` again."""
    return str(first) if first == last else f"{first}-{last}"


def max_output_tokens() -> int:
    """Claude Code's limit as configured for this session (its own environment reaches the server)."""
    try:
        value = int(os.environ.get("MAX_MCP_OUTPUT_TOKENS", DEFAULT_MAX_OUTPUT_TOKENS))
    except ValueError:
        return DEFAULT_MAX_OUTPUT_TOKENS
    return value if value > 0 else DEFAULT_MAX_OUTPUT_TOKENS


def output_budget() -> int:
    """How many UTF-8 bytes one tool result may hold."""
    return int(max_output_tokens() * SPENDABLE_SHARE) * BYTES_PER_TOKEN


def byte_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def estimate_tokens(text: str) -> int:
    """A conservative token count: what the model pays to read `text`."""
    return -(-byte_size(text) // BYTES_PER_TOKEN)


def split_lines(text: str) -> list[str]:
    """Lines as numbered by `start_line`: split on newlines only, a final newline ending the last line."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def byte_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Stored stdout chunks as lines (numbered like `split_lines`), with constant memory per line."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from complete
    if pending:
        yield pending


class Utf8Escaper:
    """Decodes byte lines as UTF-8, showing bytes that are not UTF-8 as `\\xNN` escapes, and counts the
    lines that needed one so the result can say so."""

    def __init__(self) -> None:
        self.escaped_lines = 0

    def __call__(self, line: bytes) -> str:
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError:
            self.escaped_lines += 1
            return line.decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class Page:
    lines: list[str]
    first: int  # line number of lines[0]
    last: int  # line number of the last line shown (first - 1 when none is)
    total: int  # lines in the whole text
    wanted_last: int  # the last line asked for (end_line, else the end of the text)
    cut_within_line: bool  # the last line shown was longer than the budget and only its head is shown

    @property
    def complete(self) -> bool:
        return self.last >= self.wanted_last and not self.cut_within_line

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def page_lines(lines: Iterable[T], *, start: int = 1, end: int | None = None, budget: int,
               decode: Callable[[T], str] | None = None) -> Page:
    """Lines `start`..`end` (1-based, inclusive) that fit in `budget` bytes, counting every line to the end.

    Whole lines only, except that a first line longer than the whole budget shows its head, so a result
    is never empty for want of room. `decode` turns a stored line into text; it is called only for lines
    that are shown.
    """
    shown: list[str] = []
    used, total, last = 0, 0, start - 1
    full = cut = False
    for number, item in enumerate(lines, 1):
        total = number
        if number < start or full or (end is not None and number > end):
            continue
        line = decode(item) if decode is not None else str(item)
        cost = byte_size(line) + 1
        if used + cost > budget:
            full = True
            if not shown and budget > used:
                shown.append(_head(line, budget - used))
                last, cut = number, True
            continue
        shown.append(line)
        used += cost
        last = number
    wanted_last = total if end is None else min(end, total)
    return Page(shown, start, last, total, wanted_last, cut)


def share_budget(costs: list[int], budget: int, weights: list[float] | None = None) -> list[int]:
    """Split `budget` over texts of the given sizes: small ones get all they need, the rest share it in proportion
    to their `weights` (equally without), so one huge episode cannot crowd out the others."""
    weights = weights or [1.0] * len(costs)
    allowances = [0] * len(costs)
    left, weight_left = budget, sum(weights)
    for index in sorted(range(len(costs)), key=lambda index: costs[index] / weights[index]):
        give = min(costs[index], int(left * weights[index] / weight_left)) if weight_left > 0 else 0
        allowances[index] = give
        left -= give
        weight_left -= weights[index]
    return allowances


def _head(line: str, size: int) -> str:
    return line.encode("utf-8", "surrogatepass")[:size].decode("utf-8", "ignore")
