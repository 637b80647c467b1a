"""Each episode's text indexed together with its neighbours in the same session, for BM25 that finds a turn by
what was said around it.

A question rarely repeats the words of the one turn that answers it: "which library did we pick for retries" is
answered by "let's use tenacity", whose neighbours say "retries". `episodes_context` (migration m010) holds one
row per episode, rowid = episode id, in four columns weighted at query time: `self` is the episode itself (input
and text, whole), `near` the turns just before and after it, `mid` those two away, `far` three away. The issue's
experiment kept the episode in `near`; a column of its own lets an episode that holds every word of the question
outrank a short neighbour that quotes a glimpse of it (a failing run against the answer after it). Every line
starts with its role and date, so "what did I ask on the 12th" has words to match. A neighbour is only a glimpse:
its text is cut at `NEIGHBOUR_CHARS` (a tool's output at `NEIGHBOUR_TOOL_CHARS`, which costs almost nothing in
recall and keeps a 1 MB log out of thirty rows). Measured on LoCoMo (issue 13): BM25 R@10 0.62 -> 0.73.

A compressed Bash output's words are in its raw output, not its text: a commit body `git log` lost, the lines a
test run's rule folded. `raw_context` (migration m016) holds, per episode with a raw output, the lines of its first
`raw.SEARCHED_BYTES` that the text does not hold, and a search adds its BM25 score there, weighted `RAW_WEIGHT`, to
the episode's own. A table of its own, not a column of `episodes_context`: a row there is rebuilt whenever a
neighbour arrives, and a megabyte of raw words would be tokenized again each time.

Rows are built after the fact, like `episodes_fts`: hooks never pay for them. `catch_up` indexes new episodes in
id order (and rebuilds the rows of the three before each in its session, which gained a neighbour) and rebuilds
the rows that `context_dirty` names (an episode retracted, restored or appended to, and its neighbours, or whose
raw output expired): a retracted episode's words leave its neighbours' rows too, before the next search reads them.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from codeoid.store import raw

REACH = 3  # neighbours on each side
WEIGHTS = (4.0, 1.0, 0.5, 0.25)  # bm25() column weights: self, near, mid, far (see `search`)
# What a match in an episode's raw output adds to its score, as a share of its BM25 score there.
RAW_WEIGHT = 2.0
# Raw outputs indexed per write transaction (each up to `raw.SEARCHED_BYTES` of words).
RAW_BATCH = 8
# A raw output with more than one byte that is not UTF-8 in this many characters is binary, and not indexed.
BINARY_ESCAPES = 100
NEIGHBOUR_CHARS = 1000
NEIGHBOUR_TOOL_CHARS = 150
# BM25 scores at most about this many rows of a match, and every row of its rarer phrases while they fit in this
# share of them (see `search`).
SCORED_ROWS = 5000
WHOLE_SHARE = 0.75
# Episodes that never count as anyone's neighbour: codeoid's own tool results and rotation seeds are copies of
# other episodes (the same origins recall leaves out).
NOT_NEIGHBOURS = ("codeoid", "seed")
_COLUMNS = "id, session_id, kind, state, tool_name, origin, created_at"


def catch_up(db: sqlite3.Connection, *, batch: int = 500, raw_rounds: int | None = None) -> int:
    """Bring `episodes_context` up to date in small write transactions, and `raw_context` by at most `raw_rounds`
    transactions of `RAW_BATCH` raw outputs (None: all the way); return how many rows were (re)built. A busy store
    leaves them behind until the next call."""
    from codeoid.store.db import StoreUnavailable, write_transaction

    if not _behind(db):
        return 0  # checked without the write lock hooks need
    built = 0
    try:
        while raw_rounds is None or raw_rounds > 0:
            with write_transaction(db):
                dirty = [int(row[0]) for row in db.execute(
                    "SELECT episode_id FROM context_dirty ORDER BY episode_id LIMIT ?", (batch,))]
                if dirty:
                    db.executemany("DELETE FROM context_dirty WHERE episode_id = ?", [(i,) for i in dirty])
                    built += _rebuild(db, _with_neighbours(db, dirty, before=REACH, after=REACH))
                    _rebuild_raw(db, dirty)
                    continue
                upto = int(db.execute("SELECT indexed_upto FROM context_progress").fetchone()[0])
                fresh = [int(row[0]) for row in db.execute(
                    "SELECT id FROM episodes WHERE id > ? ORDER BY id LIMIT ?", (upto, batch))]
                if fresh:
                    built += _rebuild(db, _with_neighbours(db, fresh, before=REACH, after=0))
                    db.execute("UPDATE context_progress SET indexed_upto = ?", (fresh[-1],))
                    continue
                raw_upto = int(db.execute("SELECT indexed_upto FROM raw_context_progress").fetchone()[0])
                # The raw words go in fewer at a time: each is up to a megabyte to tokenize.
                pending = db.execute(
                    "SELECT max(id), group_concat(CASE WHEN raw_output_id IS NOT NULL THEN id END) FROM"
                    " (SELECT id, raw_output_id FROM episodes WHERE id > ? AND id <= ? ORDER BY id LIMIT ?)",
                    (raw_upto, upto, batch)).fetchone()
                if pending[0] is None:
                    return built
                with_raw = sorted(int(found) for found in str(pending[1]).split(",")) if pending[1] else []
                last = with_raw[RAW_BATCH - 1] if len(with_raw) > RAW_BATCH else int(pending[0])
                _rebuild_raw(db, [episode_id for episode_id in with_raw if episode_id <= last])
                db.execute("UPDATE raw_context_progress SET indexed_upto = ?", (last,))
                if raw_rounds is not None and with_raw:
                    raw_rounds -= 1
        return built
    except StoreUnavailable:
        return built


def rebuild_around(db: sqlite3.Connection, ids: list[int]) -> None:
    """Rebuild the rows of `ids` and their neighbours now, inside the caller's write transaction (forgetting an
    episode must not leave its words in the rows around it until the next search)."""
    if ids:
        db.executemany("DELETE FROM context_dirty WHERE episode_id = ?", [(i,) for i in ids])
        _rebuild(db, _with_neighbours(db, ids, before=REACH, after=REACH))
        _rebuild_raw(db, ids)


def _behind(db: sqlite3.Connection) -> bool:
    # The raw index follows the neighbour index: behind it, or with it, whenever either is.
    row = db.execute("SELECT (SELECT coalesce(max(id), 0) FROM episodes) > indexed_upto"
                     " OR EXISTS (SELECT 1 FROM context_dirty) FROM raw_context_progress").fetchone()
    return bool(row[0])


def _with_neighbours(db: sqlite3.Connection, ids: list[int], *, before: int, after: int) -> set[int]:
    """`ids` and the episodes of their sessions up to `before` / `after` places away (any state: a retracted
    episode's neighbours are exactly the rows that held its words)."""
    found = set(ids)
    for near in session_neighbours(db, ids, before=before, after=after).values():
        found.update(near)
    return found


def session_neighbours(db: sqlite3.Connection, ids: list[int], *, before: int, after: int) -> dict[int, list[int]]:
    """The episodes up to `before` places before and `after` places after each of `ids` in its session, nearest
    first, earlier ones first (any state and origin: the caller filters)."""
    found: dict[int, list[int]] = {}
    for episode_id in ids:
        session = db.execute("SELECT session_id FROM episodes WHERE id = ?", (episode_id,)).fetchone()
        if session is None:
            continue
        near: list[int] = []
        if before:
            near += [int(row[0]) for row in db.execute(
                "SELECT id FROM episodes WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
                (session[0], episode_id, before))]
        if after:
            near += [int(row[0]) for row in db.execute(
                "SELECT id FROM episodes WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
                (session[0], episode_id, after))]
        found[episode_id] = near
    return found


def _rebuild(db: sqlite3.Connection, ids: Iterable[int]) -> int:
    """Replace the rows of `ids` (inside the caller's transaction); a retracted episode gets none."""
    ordered = sorted(ids)
    db.executemany("DELETE FROM episodes_context WHERE rowid = ?", [(i,) for i in ordered])
    rows = []
    for episode_id in ordered:
        columns = _row(db, episode_id)
        if columns is not None:
            rows.append((episode_id, *columns))
    db.executemany("INSERT INTO episodes_context(rowid, self, near, mid, far) VALUES (?, ?, ?, ?, ?)", rows)
    return len(rows)


def _rebuild_raw(db: sqlite3.Connection, ids: Iterable[int]) -> None:
    """Replace the `raw_context` rows of `ids` (inside the caller's transaction): the words of each one's raw output
    that its text does not hold; none for a retracted or forgotten episode, or one whose raw output is gone."""
    ordered = sorted(ids)
    db.executemany("DELETE FROM raw_context WHERE rowid = ?", [(i,) for i in ordered])
    for episode_id in ordered:
        words = raw_words(db, episode_id)
        if words:
            db.execute("INSERT INTO raw_context(rowid, raw) VALUES (?, ?)", (episode_id, words))


def raw_words(db: sqlite3.Connection, episode_id: int) -> str | None:
    """The lines of an episode's raw output (its first `raw.SEARCHED_BYTES`) that its own text does not hold: what
    compression cut. None when it has none to add (no raw output, no rule cut it, retracted, its bytes gone)."""
    episode = db.execute("SELECT state, raw_output_id, text FROM episodes WHERE id = ?", (episode_id,)).fetchone()
    if episode is None or episode[0] == "retracted" or not episode[1]:
        return None
    found = raw.read_text_head(db, str(episode[1]), raw.SEARCHED_BYTES)
    if found is None or found[0].count("\\x") * BINARY_ESCAPES > len(found[0]):
        return None  # gone, or binary: its `\xNN` escapes are no words anyone asks for
    kept = set(str(episode[2]).split("\n"))
    cut = [line for line in found[0].split("\n") if line not in kept]
    return "\n".join(cut) if any(line.strip() for line in cut) else None


def _row(db: sqlite3.Connection, episode_id: int) -> tuple[str, str, str, str] | None:
    episode = db.execute(f"SELECT {_COLUMNS}, input, text FROM episodes WHERE id = ?", (episode_id,)).fetchone()
    if episode is None or episode[3] == "retracted":
        return None
    session = episode[1]
    neighbour = (f"SELECT {_COLUMNS}, substr(input, 1, {NEIGHBOUR_TOOL_CHARS}), substr(text, 1, {NEIGHBOUR_CHARS})"
                 " FROM episodes WHERE session_id = ? AND id {} ? AND state != 'retracted'"
                 f" AND origin NOT IN ({', '.join('?' for _ in NOT_NEIGHBOURS)}) ORDER BY id {{}} LIMIT {REACH}")
    earlier = db.execute(neighbour.format("<", "DESC"), (session, episode_id, *NOT_NEIGHBOURS)).fetchall()
    later = db.execute(neighbour.format(">", "ASC"), (session, episode_id, *NOT_NEIGHBOURS)).fetchall()
    columns: list[list[str]] = [[], [], []]
    for found in (earlier, later):
        for distance, other in enumerate(found):
            columns[distance].append(_line(other, whole=False))
    near, mid, far = ("\n".join(lines) for lines in columns)
    return _line(episode, whole=True), near, mid, far


def _line(episode: tuple[object, ...], *, whole: bool) -> str:
    """`role date: [input] text`; a neighbour's tool output cut short (its own text is cut by the query)."""
    kind, tool_name, created_at, tool_input, text = episode[2], episode[4], episode[6], episode[7], episode[8]
    role = f"tool {tool_name}" if kind == "tool" and tool_name else str(kind)
    date = time.strftime("%Y-%m-%d", time.gmtime(float(created_at)))  # type: ignore[arg-type]
    body = str(text or "")
    if not whole and kind == "tool":
        body = body[:NEIGHBOUR_TOOL_CHARS]
    head = f" {tool_input}" if tool_input else ""
    return f"{role} {date}:{head} {body}"


def search(db: sqlite3.Connection, match: str, *, filters: list[str], params: list[object], limit: int,
           weights: tuple[float, float, float, float] = WEIGHTS, phrase_rows: Sequence[tuple[str, int]] = (),
           ) -> tuple[list[tuple[int, float]], tuple[float, float]]:
    """The best `limit` episodes for an FTS5 `match` over their context rows, with their BM25 scores (higher is
    better), and the sum and sum of squares of the scores of every match: what standardising them over the whole
    corpus needs (`codeoid.memory.ranking`). `filters` are WHERE terms on alias `e` (the episodes table);
    `weights` are the columns' (self, near, mid, far), chosen on the tuning halves of benchmarks/retrieval; a
    match in an episode's raw output adds `RAW_WEIGHT` times its BM25 score there.

    BM25 costs about 1.3 us a row it scores, and a question of common words reaches most of a large store: "why
    does the dispatcher run into a timeout" is 16k rows of 100k episodes, 26 ms. So a match is scored on at most
    about `SCORED_ROWS` rows (`phrase_rows` gives each phrase's rows; see `_scoring_plan`): every row of its
    rarer phrases, which tell episodes apart, and only the newest rows of the others. Sums of the rows left out
    are estimated from the newest, as from a sample. Those rows hold nothing but words too common to weigh
    much, so BM25 ranks them mostly by length; meaning (the vector side) still searches them all.
    """
    columns = ", ".join(str(float(w)) for w in weights)
    plan = _scoring_plan(db, match, phrase_rows)
    # The match runs once, first (MATERIALIZED), and the filters then look each hit up by its id, in the index
    # that holds just the columns they read (migration m012). Left to itself SQLite's planner may walk the
    # workspace's episodes instead and run the match once per episode: 87 s a query at 100k episodes. The sums
    # are plain aggregates over the kept hits: a window over them made SQLite sort every hit.
    context = (f"SELECT rowid AS id, -bm25(episodes_context, {columns}) AS score, {plan.whole} AS whole"
               f" FROM episodes_context WHERE episodes_context MATCH ? AND ({plan.whole} OR rowid >= ?)")
    arguments: tuple[object, ...] = (*plan.params, match, *plan.params, plan.floor)
    if db.execute("SELECT 1 FROM raw_context WHERE raw_context MATCH ? LIMIT 1", (match,)).fetchone():
        # An episode's raw words add to its score; one matched in its raw output alone is a hit too.
        context = (f"SELECT id, total(score) AS score, max(whole) AS whole FROM ({context} UNION ALL"
                   f" SELECT rowid, -bm25(raw_context) * {float(RAW_WEIGHT)}, 1 FROM raw_context"
                   " WHERE raw_context MATCH ?) GROUP BY id")
        arguments = (*arguments, match)
    rows = db.execute(
        f"""WITH hits AS MATERIALIZED ({context}),
            kept AS MATERIALIZED (
                SELECT hits.id AS id, hits.score AS score, hits.whole AS whole
                FROM hits JOIN episodes e INDEXED BY episodes_recall_filter ON e.id = hits.id
                WHERE {' AND '.join(filters)})
            SELECT id, score,
                   (SELECT total(score) FROM kept WHERE whole), (SELECT total(score * score) FROM kept WHERE whole),
                   (SELECT total(score) FROM kept WHERE NOT whole),
                   (SELECT total(score * score) FROM kept WHERE NOT whole),
                   (SELECT count(*) FROM hits WHERE NOT whole)
            FROM kept ORDER BY score DESC LIMIT ?""",
        (*arguments, *params, limit),
    ).fetchall()
    if not rows:
        return [], (0.0, 0.0)
    whole_total, whole_squares, newest_total, newest_squares, newest_rows = rows[0][2:]
    # Rows of the windowed phrases alone: those scored are the newest `newest_rows` of `plan.window_rows`.
    scale = plan.window_rows / newest_rows if plan.window_rows and newest_rows else 1.0
    return ([(int(row[0]), float(row[1])) for row in rows],
            (float(whole_total) + float(newest_total) * scale, float(whole_squares) + float(newest_squares) * scale))


class ScoringPlan(NamedTuple):
    """Which rows of a match BM25 scores: those `whole` (an SQL test on `rowid`, with its `params`) holds, and
    any with a rowid at least `floor`; `window_rows` is how many rows outside `whole` match (0: no window)."""

    whole: str
    params: tuple[str, ...]
    floor: int
    window_rows: int


def _scoring_plan(db: sqlite3.Connection, match: str, phrase_rows: Sequence[tuple[str, int]]) -> ScoringPlan:
    """Score every row when the match holds at most `SCORED_ROWS` (the common case, and every small store, whose
    phrases are not counted). Otherwise the rarest phrases, as many as fit in `WHOLE_SHARE` of the budget, are
    scored on every row, and the rest on their newest rows up to the budget. The match itself is counted before
    deciding: phrases share rows, so their counts add up to more than it holds."""
    every = ScoringPlan("1", (), 0, 0)
    if sum(rows for _, rows in phrase_rows) <= SCORED_ROWS:
        return every
    matched = int(db.execute("SELECT count(*) FROM episodes_context WHERE episodes_context MATCH ?",
                             (match,)).fetchone()[0])
    if matched <= SCORED_ROWS:
        return every
    whole, spent = [], 0
    for phrase, rows in sorted(phrase_rows, key=lambda item: item[1]):
        if spent + rows > WHOLE_SHARE * SCORED_ROWS:
            break
        whole.append(phrase)
        spent += rows
    if whole:
        rare = " OR ".join(whole)
        in_whole = ScoringPlan("rowid IN (SELECT rowid FROM episodes_context WHERE episodes_context MATCH ?)",
                               (rare,), 0, 0)
        whole_rows = int(db.execute("SELECT count(*) FROM episodes_context WHERE episodes_context MATCH ?",
                                    (rare,)).fetchone()[0])
    else:
        in_whole, whole_rows = ScoringPlan("0", (), 0, 0), 0
    newest = SCORED_ROWS - spent
    floor = db.execute("SELECT rowid FROM episodes_context WHERE episodes_context MATCH ?"
                       " ORDER BY rowid DESC LIMIT 1 OFFSET ?", (match, newest - 1)).fetchone()
    if floor is None:
        return every
    return in_whole._replace(floor=int(floor[0]), window_rows=matched - whole_rows)
