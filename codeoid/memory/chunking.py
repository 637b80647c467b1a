"""Cutting an episode into chunks the embedding model reads whole, by lines, each remembering its line range.

The model reads at most `max_tokens` word pieces and silently drops the rest, so one vector per long tool
result would make everything after its first screen unfindable. Chunks are runs of whole lines (a line
longer than a chunk is cut into pieces that share its line number), each prefixed with a short header naming
the episode (tool and command, or who spoke) so a chunk of bare output still carries what produced it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from codeoid.memory.vector_index import Chunk, MetadataValue

HEADER_CHARS = 160
# Room for [CLS], [SEP] and the newline between header and body, and for tokenizer merges across line joins.
SPECIAL_TOKENS = 4


def episode_header(episode: Mapping[str, object]) -> str:
    """One short line saying what the episode is: `Bash: pytest -x`, `user:`, `Read: src/app.py`."""
    if episode.get("kind") == "tool":
        what = episode.get("original_command") or episode.get("command") or episode.get("summary") or ""
        head = f"{episode.get('tool_name') or 'tool'}: {what}"
    else:
        head = f"{episode.get('kind')}:"
    return " ".join(str(head).split())[:HEADER_CHARS]


def cut_lines(text: str, raw_text: str) -> str:
    """The raw output behind a compressed episode with every line its `text` kept blanked, numbered as before:
    what only the raw output says (the middle of a file `cat` cut, a commit body cut from `git log`)."""
    kept = set(text.split("\n"))
    return "\n".join("" if line in kept else line for line in raw_text.split("\n")).rstrip("\n")


def chunk_text(episode_id: int, header: str, body: str, *, count_tokens: Callable[[str], int], max_tokens: int,
               max_chunks: int, metadata: Mapping[str, MetadataValue] | None = None, first: int = 0) -> list[Chunk]:
    """`body` in chunks of whole lines within `max_tokens` (header included), at most `max_chunks` of them
    (the lines beyond stay searchable by BM25 and readable with get_episode), numbered from `first`."""
    budget = max(16, max_tokens - SPECIAL_TOKENS - count_tokens(header))
    chunks: list[Chunk] = []
    lines: list[str] = []
    used = 0
    start = 1

    def flush(end_line: int) -> None:
        nonlocal lines, used
        if lines and len(chunks) < max_chunks:
            text = header + "\n" + "\n".join(lines) if header else "\n".join(lines)
            chunks.append(Chunk(episode_id=episode_id, number=first + len(chunks), start_line=start, end_line=end_line,
                                text=text, metadata=dict(metadata or {})))
        lines, used = [], 0

    for number, line in enumerate(body.split("\n"), 1):
        if len(chunks) >= max_chunks:
            break
        if not line.strip():
            if lines:
                lines.append(line)
            continue
        cost = count_tokens(line) + 1
        if cost > budget:  # a giant line: cut it into pieces of about `budget` tokens each
            flush(number - 1)
            for piece in _pieces(line, budget, count_tokens):
                start, lines, used = number, [piece], budget
                flush(number)
            start = number + 1
            continue
        if used + cost > budget:
            flush(number - 1)
        if not lines:
            start = number
        lines.append(line)
        used += cost
    flush(_last_line(body, start, lines))
    return chunks


def _last_line(body: str, start: int, lines: list[str]) -> int:
    return start + len(lines) - 1 if lines else start


def _pieces(line: str, budget: int, count_tokens: Callable[[str], int]) -> list[str]:
    """A long line in pieces of at most `budget` tokens, cut at a character count scaled from its density."""
    tokens = max(1, count_tokens(line))
    counted = min(len(line), 64 * 1024)  # count_tokens reads at most this much of a text
    width = max(16, int(counted * budget / tokens * 0.9))
    return [line[at:at + width] for at in range(0, len(line), width)]
