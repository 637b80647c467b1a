"""Which lines of a recalled episode matched the query, so a hit can show those few lines instead of the episode.

A line matches as its episode did: the same any-word query (`queries.any_term_query`) against the same tokenizer
as the episodes' FTS5 index (porter stemming over unicode61, so "timeouts" finds "timeout"), here over the lines of
one episode in a private in-memory FTS5 table, ranked by BM25 (more and rarer query words first). An episode found
by meaning alone holds none of the words; its lines are those of the chunk the vector index matched (chunks carry
their line span), else its first lines, and the hit says which it is.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from codeoid.pages import split_lines
from codeoid.store import queries

# The episodes index's tokenizer (migration m001's episodes_fts): a line must match the way its episode did.
TOKENIZER = "porter unicode61"
# Lines beyond this are not searched for the words: an episode this long is a log, and its first screenfuls
# are where a word is looked for before get_episode pages the rest.
MAX_SEARCHED_LINES = 50_000

_local = threading.local()


@dataclass(frozen=True)
class MatchedLines:
    """Line numbers (1-based) of the episode text to show, best first, and how they were chosen."""

    numbers: tuple[int, ...]
    how: str  # "words": they hold query words; "meaning": the chunk found by meaning; "start": the first lines
    total: int  # lines in the episode text
    searched: int  # lines searched for the words (all of them unless the episode is longer than MAX_SEARCHED_LINES)


def matched_lines(text: str, query: str, *, chunk: tuple[int, int] | None = None, most: int = 8) -> MatchedLines:
    """At most `most` lines of `text` to show for `query`: the best lines holding its words, else the matched
    chunk's lines (`chunk`: first and last line), else the first lines."""
    lines = split_lines(text)
    searched = min(len(lines), MAX_SEARCHED_LINES)
    numbers = _lines_with_words(lines[:searched], query, most)
    if numbers:
        return MatchedLines(tuple(numbers), "words", len(lines), searched)
    if chunk is not None and 1 <= chunk[0] <= len(lines):
        last = min(chunk[1], len(lines))
        return MatchedLines(tuple(range(chunk[0], min(last, chunk[0] + most - 1) + 1)), "meaning", len(lines),
                            searched)
    return MatchedLines(tuple(range(1, min(len(lines), most) + 1)), "start", len(lines), searched)


def _lines_with_words(lines: Sequence[str], query: str, most: int) -> list[int]:
    match = queries.any_term_query(query)
    if match is None or not lines:
        return []
    db = _scratch()
    db.execute("BEGIN")
    db.execute("DELETE FROM lines")
    db.executemany("INSERT INTO lines (rowid, line) VALUES (?, ?)", enumerate(lines, 1))
    db.execute("COMMIT")
    return [int(number) for (number,) in db.execute(
        "SELECT rowid FROM lines WHERE lines MATCH ? ORDER BY rank, rowid LIMIT ?", (match, most))]


def _scratch() -> sqlite3.Connection:
    """A private in-memory database per thread: matching never touches the store or takes any of its locks."""
    db: sqlite3.Connection | None = getattr(_local, "db", None)
    if db is None:
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=True)
        db.execute(f"CREATE VIRTUAL TABLE lines USING fts5(line, tokenize='{TOKENIZER}')")
        _local.db = db
    return db
