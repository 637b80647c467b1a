"""Reading the store: episodes by id, the timeline, sessions, and BM25 search.

Readers get plain dicts with every column, so the CLI's `--json` and the MCP server print whole rows
without a second schema to keep in step.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any, NamedTuple

from codeoid.store import context_index, episode_text
from codeoid.store.db import store_path
from codeoid.workspace import identify

Row = dict[str, Any]
_WORD = re.compile(r"\w+", re.UNICODE)
SEARCHABLE_STATES = ("live", "archived")
# Function words, and the question words a model uses when it asks its memory ("where did we see ...").
STOP_WORDS = frozenset("""a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing done down during each few for from further had has
have having he her here hers him his how i if in into is it its itself just let me more most my no nor not now of
off on once only or other our ours out over own same she should so some such than that the their theirs them then
there these they this those through to too under until up us very was we were what when where which while who
whom why will with would you your yours show find see saw seen got get tell""".split())  # noqa: SIM905
# Transactions of raw outputs a search indexes before it answers (`catch_up_fts`).
SEARCH_RAW_ROUNDS = 1
# A query word in more episodes than both of these is left out of BM25 search (see `selective_words`).
COMMON_TERM_DOCS = 5000
COMMON_TERM_SHARE = 0.1


def _rows(cursor: sqlite3.Cursor) -> list[Row]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def workspace_id_for(db: sqlite3.Connection, directory: str) -> int | None:
    """The stored workspace a directory belongs to (worktrees of one repository share one)."""
    row = db.execute("SELECT id FROM workspaces WHERE key = ?", (identify(directory).key,)).fetchone()
    return int(row[0]) if row else None


def get_episode(db: sqlite3.Connection, episode_id: int) -> Row | None:
    rows = _rows(db.execute("SELECT * FROM episodes WHERE id = ?", (episode_id,)))
    return rows[0] if rows else None


def tool_response(row: Row) -> Any:
    """The tool response exactly as Claude Code reported it (the store keeps its large text only once)."""
    if row.get("response") is None:
        return None
    return episode_text.response_with_text(json.loads(row["response"]), row["text"])


def timeline(db: sqlite3.Connection, *, workspace_id: int | None = None, session_id: str | None = None,
             offset: int = 0, limit: int = 50, include_retracted: bool = False) -> list[Row]:
    """One page of history in chronological order; offset 0 is the newest page. A forked session's history
    starts with its parent's episodes up to the fork point (their `session_id` is the parent's)."""
    where, params = _scope(workspace_id, _lineage(db, session_id), include_retracted)
    rows = _rows(db.execute(
        f"SELECT * FROM episodes {where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?", (*params, limit, offset)
    ))
    return rows[::-1]


def count_episodes(db: sqlite3.Connection, *, workspace_id: int | None = None, session_id: str | None = None,
                   include_retracted: bool = False) -> int:
    where, params = _scope(workspace_id, _lineage(db, session_id), include_retracted)
    return int(db.execute(f"SELECT count(*) FROM episodes {where}", params).fetchone()[0])


def session_lineage(db: sqlite3.Connection, session_id: str) -> list[tuple[str, int | None]]:
    """The session and its ancestors, each with the last turn of it the session's history holds (None: all).

    A fork holds its parent's turns up to `at_turn`, and a fork of a fork its grandparent's up to the smaller
    of the two fork points (a fork's turn numbers continue its parent's)."""
    chain: list[tuple[str, int | None]] = [(session_id, None)]
    seen = {session_id}
    upto: int | None = None
    while True:
        row = db.execute("SELECT forked_from, at_turn FROM sessions WHERE id = ?", (chain[-1][0],)).fetchone()
        if row is None or row[0] is None or row[0] in seen:
            return chain
        upto = int(row[1]) if upto is None else min(upto, int(row[1]))
        chain.append((str(row[0]), upto))
        seen.add(row[0])


def _lineage(db: sqlite3.Connection, session_id: str | None) -> list[tuple[str, int | None]]:
    return session_lineage(db, session_id) if session_id is not None else []


def sessions(db: sqlite3.Connection, *, workspace_id: int | None = None) -> list[Row]:
    """Sessions with their workspace, episode count, backing sessions and last activity, newest first."""
    where = "WHERE s.workspace_id = ?" if workspace_id is not None else ""
    params: tuple[Any, ...] = (workspace_id,) if workspace_id is not None else ()
    return _rows(db.execute(
        f"""SELECT s.id, s.name, s.title, w.root AS workspace, s.forked_from, s.at_turn, s.rotation_count, s.turn_count,
                   s.created_at,
                   (SELECT count(*) FROM episodes e WHERE e.session_id = s.id) AS episodes,
                   (SELECT count(*) FROM backing_sessions b WHERE b.session_id = s.id) AS backing_sessions,
                   (SELECT group_concat(agent, ',') FROM (SELECT DISTINCT coalesce(b.agent, 'claude') AS agent
                        FROM backing_sessions b WHERE b.session_id = s.id ORDER BY agent)) AS agents,
                   coalesce((SELECT max(created_at) FROM episodes e WHERE e.session_id = s.id), s.created_at)
                       AS last_activity
            FROM sessions s JOIN workspaces w ON w.id = s.workspace_id {where}
            ORDER BY last_activity DESC""",
        params,
    ))


def backing_sessions(db: sqlite3.Connection, session_id: str) -> list[Row]:
    return _rows(db.execute(
        "SELECT * FROM backing_sessions WHERE session_id = ? ORDER BY started_at", (session_id,)
    ))


class LexicalQuery(NamedTuple):
    """An FTS5 match for a question, and each of its phrases with how many index rows hold it (an upper bound for a
    phrase of several tokens); the counts are only taken in a large store, else `phrase_rows` is empty."""

    match: str | None
    phrase_rows: tuple[tuple[str, int], ...] = ()


def any_term_query(text: str, db: sqlite3.Connection | None = None) -> str | None:
    """An FTS5 query matching any of the words (BM25 ranks documents with more and rarer words higher).

    FTS5's default is all-terms, which turns a natural question into zero hits; each word is quoted so
    operators and punctuation in the user's text are never parsed as query syntax. English stop words are
    left out unless nothing else remains: with any-term matching, "where did we see the ..." otherwise
    ranks every chatty episode that shares its function words (measured in benchmarks/retrieval: BM25 MRR
    0.271 -> 0.298 on the tuning half). Given the store, words too common to tell episodes apart are left
    out too (`selective_words`).
    """
    return lexical_query(text, db).match


def lexical_query(text: str, db: sqlite3.Connection | None = None) -> LexicalQuery:
    """`any_term_query`'s match, and the rows its phrases reach (what bounds the cost of ranking it)."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))
    content = [word for word in words if word not in STOP_WORDS] or words
    rows: dict[str, int] = {}
    if db is not None:
        content, rows = selective_words(db, content)
    return LexicalQuery(" OR ".join(f'"{word}"' for word in content) or None,
                        tuple((f'"{word}"', rows[word]) for word in content if word in rows))


def selective_words(db: sqlite3.Connection, words: list[str]) -> tuple[list[str], dict[str, int]]:
    """`words` without those in more than `COMMON_TERM_DOCS` episodes and `COMMON_TERM_SHARE` of all of them
    (the rarest word stays if every one is that common), and the rows of the index each word kept reaches (empty
    for a small store, where nothing is counted).

    An any-term query ranks every episode holding any of its words, so "test" in a 100k-episode store of
    coding sessions means scoring tens of thousands of rows (0.2 s and more) for a word whose inverse document
    frequency is near zero: it barely moves the ranking of the episodes that hold the rarer words. Counts are
    rows of the index recall searches, `episodes_context`, where a word is in its episode's row and in up to six
    neighbours' (counting episodes instead kept words that match most of the rows: at 100k episodes under load,
    BM25's median 240-350 ms against 109 ms, docs/benchmarks.md). They come from FTS5's own vocabulary, for each
    word as the index's porter tokenizer stems it (a scratch FTS5 table in the connection's temp schema does
    the stemming). Small stores are left alone.
    """
    if not words:
        return words, {}
    total = int(db.execute("SELECT coalesce(max(id), 0) FROM episodes").fetchone()[0])
    threshold = max(COMMON_TERM_DOCS, COMMON_TERM_SHARE * total)
    if total <= threshold:
        return words, {}
    _ensure_vocabulary(db)
    db.execute("DELETE FROM temp.codeoid_query_words")
    db.executemany("INSERT INTO temp.codeoid_query_words (rowid, word) VALUES (?, ?)",
                   list(enumerate(words, start=1)))
    stems: dict[int, set[str]] = {}
    for number, stem in db.execute("SELECT doc, term FROM temp.codeoid_query_stems"):
        stems.setdefault(int(number), set()).add(stem)  # `snake_case` is two tokens, searched as a phrase
    counts = _term_rows(db, set().union(*stems.values()) if stems else set(), total)
    documents = {word: min((counts[stem] for stem in stems.get(number, ())), default=0)
                 for number, word in enumerate(words, start=1)}
    # A phrase is at most as common as its rarest token, and often far rarer: `make_context` is in 388 rows of a
    # store where "make" is in 7,077 and "context" in 16,840. Counting its own rows takes under a millisecond.
    documents.update(_phrase_rows(db, [word for number, word in enumerate(words, start=1)
                                       if len(stems.get(number, ())) > 1], total))
    kept = [word for word in words if documents[word] <= threshold] or [min(words, key=lambda word: documents[word])]
    return kept, {word: documents[word] for word in kept}


# Rows of the neighbour index holding a stem, by (store file, newest episode id, stem): a new episode starts afresh
# (a retraction's rebuilt rows may leave a count off by a few, which a threshold of thousands does not notice).
# Counting reads the stem's whole doclist (~7 ms for a word in every row of 100k), and the
# memory service answers many questions that share their words between two stored episodes.
_term_rows_cache: dict[tuple[str, int, str], int] = {}
_TERM_ROWS_CACHED = 4096


def _term_rows(db: sqlite3.Connection, stems: set[str], total: int) -> dict[str, int]:
    """How many rows of `episodes_context` hold each stem. One lookup per stem: fts5vocab answers `term = ?` from
    the index, but `term IN (...)` of several makes it walk its vocabulary (50 ms against 10 at 100k episodes)."""
    store = store_path(db)
    counts: dict[str, int] = {}
    for stem in stems:
        key = (store, total, stem)
        if key not in _term_rows_cache:
            if len(_term_rows_cache) >= _TERM_ROWS_CACHED:
                _term_rows_cache.clear()
            row = db.execute("SELECT doc FROM temp.codeoid_vocabulary WHERE term = ?", (stem,)).fetchone()
            _term_rows_cache[key] = int(row[0]) if row else 0
        counts[stem] = _term_rows_cache[key]
    return counts


def _phrase_rows(db: sqlite3.Connection, phrases: list[str], total: int) -> dict[str, int]:
    """How many rows of `episodes_context` hold each phrase of several tokens (cached with the stems' counts,
    under the phrase quoted, which no stem is)."""
    store = store_path(db)
    counts: dict[str, int] = {}
    for phrase in phrases:
        key = (store, total, f'"{phrase}"')
        if key not in _term_rows_cache:
            if len(_term_rows_cache) >= _TERM_ROWS_CACHED:
                _term_rows_cache.clear()
            _term_rows_cache[key] = int(db.execute(
                "SELECT count(*) FROM episodes_context WHERE episodes_context MATCH ?", (f'"{phrase}"',)).fetchone()[0])
        counts[phrase] = _term_rows_cache[key]
    return counts


def _ensure_vocabulary(db: sqlite3.Connection) -> None:
    """The temp-schema tables `selective_words` reads (per connection, created on first use)."""
    for statement in (
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.codeoid_vocabulary USING fts5vocab(main, episodes_context, row)",
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.codeoid_query_words USING fts5(word, tokenize='porter unicode61')",
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.codeoid_query_stems USING fts5vocab(temp, codeoid_query_words, "
        "instance)",
    ):
        db.execute(statement)


def catch_up_fts(db: sqlite3.Connection, *, batch: int = 200, raw_rounds: int | None = None) -> int:
    """Index the episodes stored since the last catch-up (hooks leave FTS off their hot path); return how many.
    The neighbour index (`codeoid.store.context_index`) is brought up to date first, and its raw outputs' words
    by at most `raw_rounds` transactions (a search does one: after an upgrade, a store's megabytes of raw output
    are the memory service's indexer's to tokenize, not one recall's).

    Runs in small write transactions so a concurrent hook never waits long; if the store is busy the index
    simply stays behind until the next call.
    """
    from codeoid.store.db import StoreUnavailable, write_transaction

    context_index.catch_up(db, raw_rounds=raw_rounds)
    indexed = 0
    behind = db.execute("SELECT (SELECT coalesce(max(id), 0) FROM episodes) > indexed_upto FROM fts_progress")
    if not behind.fetchone()[0]:
        return 0  # the common case for a search: checked without taking the write lock hooks need
    try:
        while True:
            with write_transaction(db):
                upto = int(db.execute("SELECT indexed_upto FROM fts_progress").fetchone()[0])
                last = db.execute(
                    "SELECT max(id) FROM (SELECT id FROM episodes WHERE id > ? ORDER BY id LIMIT ?)", (upto, batch)
                ).fetchone()[0]
                if last is None:
                    return indexed
                cursor = db.execute(
                    "INSERT INTO episodes_fts(rowid, input, text) SELECT id, input, text FROM episodes"
                    " WHERE id > ? AND id <= ?",
                    (upto, last),
                )
                db.execute("UPDATE fts_progress SET indexed_upto = ?", (last,))
            indexed += cursor.rowcount
    except StoreUnavailable:
        return indexed


def search_bm25(db: sqlite3.Connection, query: str, *, workspace_id: int | None = None, limit: int = 10,
                include_retracted: bool = False, skip_live_of: str | None = None,
                exclude_origins: tuple[str, ...] = ()) -> list[Row]:
    """Episodes ranked by BM25 over their input and text; each row carries its `score` (higher is better).
    The index is brought up to date first.

    `skip_live_of` names a backing session whose live episodes are left out (they are still in that
    window); `exclude_origins` leaves out episodes by origin (codeoid's own tool calls are copies).
    """
    catch_up_fts(db, raw_rounds=SEARCH_RAW_ROUNDS)
    match = any_term_query(query, db)
    if match is None:
        return []
    states = ("live", "archived", "retracted") if include_retracted else SEARCHABLE_STATES
    filters, params = _recall_filters(states, workspace_id, skip_live_of, exclude_origins)
    # Rank ids first and read whole rows only for the winners: sorting `e.*` would carry the text of every
    # matching episode through the sorter (100k episodes: ~10x slower).
    # The match runs once, first, as in `context_index.search` (the planner may otherwise run it per episode).
    return _rows(db.execute(
        f"""WITH hits AS MATERIALIZED (
                SELECT rowid AS id, -bm25(episodes_fts) AS score FROM episodes_fts WHERE episodes_fts MATCH ?)
            SELECT e.*, ranked.score FROM (
                SELECT hits.id AS id, hits.score AS score FROM hits JOIN episodes e ON e.id = hits.id
                WHERE {' AND '.join(filters)}
                ORDER BY hits.score DESC LIMIT ?
            ) AS ranked JOIN episodes e ON e.id = ranked.id ORDER BY ranked.score DESC""",
        (match, *params, limit),
    ))


class LexicalStats(NamedTuple):
    """What standardising one query's BM25 scores over the whole corpus needs: the sum and sum of squares of
    every matching episode's score, and how many episodes the corpus holds (those that do not match score 0)."""

    total: float
    squares: float
    corpus: int


def search_context(db: sqlite3.Connection, query: str, *, workspace_id: int | None, limit: int,
                   skip_live_of: str | None = None, exclude_origins: tuple[str, ...] = (),
                   columns: tuple[float, float, float, float] = context_index.WEIGHTS
                   ) -> tuple[list[Row], LexicalStats]:
    """Episodes ranked by BM25 over their text with their session neighbours' (`codeoid.store.context_index`),
    under the same rules as `search_bm25`, each row with its `score`; and the corpus-wide sums of the scores."""
    catch_up_fts(db, raw_rounds=SEARCH_RAW_ROUNDS)
    match, phrase_rows = lexical_query(query, db)
    filters, params = _recall_filters(SEARCHABLE_STATES, workspace_id, skip_live_of, exclude_origins)
    corpus = _corpus_size(db, workspace_id)
    if match is None:
        return [], LexicalStats(0.0, 0.0, corpus)
    ranked, (total, squares) = context_index.search(db, match, filters=filters, params=params, limit=limit,
                                                     weights=columns, phrase_rows=phrase_rows)
    rows = recallable_episodes(db, [episode_id for episode_id, _ in ranked], workspace_id=workspace_id,
                               skip_live_of=skip_live_of, exclude_origins=exclude_origins)
    return ([{**rows[episode_id], "score": score} for episode_id, score in ranked if episode_id in rows],
            LexicalStats(total, squares, corpus))


# Episodes per (store file, newest episode id, workspace): counting 100k rows of the workspace index takes 5-14 ms
# a query, for a number that only changes when an episode is stored.
_corpus_cache: dict[tuple[str, int, int | None], int] = {}


def _corpus_size(db: sqlite3.Connection, workspace_id: int | None) -> int:
    """How many episodes the searched corpus holds (a workspace's, or the store's)."""
    store = store_path(db)
    newest = int(db.execute("SELECT coalesce(max(id), 0) FROM episodes").fetchone()[0])
    key = (store, newest, workspace_id)
    if key not in _corpus_cache:
        if workspace_id is None:
            count = db.execute("SELECT count(*) FROM episodes").fetchone()[0]
        else:
            count = db.execute("SELECT count(*) FROM episodes WHERE workspace_id = ?", (workspace_id,)).fetchone()[0]
        if len(_corpus_cache) >= 64:
            _corpus_cache.clear()
        _corpus_cache[key] = int(count)
    return _corpus_cache[key]


def open_backing_session(db: sqlite3.Connection, *, claude_pid: int | None = None,
                         backing_session_id: str | None = None) -> str | None:
    """The backing session still open for a `claude` pid (the newest, should a pid have been reused), else
    the open one with the given id; None when neither is known or open."""
    if claude_pid is not None:
        row = db.execute(
            "SELECT id FROM backing_sessions WHERE claude_pid = ? AND ended_at IS NULL"
            " ORDER BY started_at DESC LIMIT 1",
            (claude_pid,),
        ).fetchone()
        if row is not None:
            return str(row[0])
    if backing_session_id is not None:
        row = db.execute(
            "SELECT id FROM backing_sessions WHERE id = ? AND ended_at IS NULL", (backing_session_id,)
        ).fetchone()
        if row is not None:
            return str(row[0])
    return None


def file_read_candidates(db: sqlite3.Connection, workspace_id: int, name: str, *, limit: int = 200) -> list[Row]:
    """Successful Read and Bash calls whose paths or command mention `name`, newest first, without their text.

    A cheap pre-filter on the file's base name; the caller decides which of them really read the file.
    """
    return _rows(db.execute(
        """SELECT id, tool_name, input, paths, command, original_command, raw_output_id, response, created_at
           FROM episodes e
           WHERE e.workspace_id = ? AND e.kind = 'tool' AND e.is_error = 0 AND e.state != 'retracted'
             AND ((e.tool_name = 'Read' AND instr(e.paths, ?) > 0)
                  OR (e.tool_name = 'Bash' AND instr(coalesce(e.original_command, e.command, ''), ?) > 0))
           ORDER BY e.created_at DESC, e.id DESC LIMIT ?""",
        (workspace_id, name, name, limit),
    ))


def raw_output_retracted(db: sqlite3.Connection, raw_id: str) -> bool:
    """Whether the tool call a raw output belongs to was retracted: its bytes are taken back with it."""
    return db.execute("SELECT 1 FROM episodes WHERE raw_output_id = ? AND state = 'retracted' LIMIT 1",
                      (raw_id,)).fetchone() is not None


def raw_output_workspace(db: sqlite3.Connection, raw_id: str) -> int | None:
    """The workspace a raw output belongs to: its own, else that of the episode or session it came from."""
    row = db.execute(
        """SELECT coalesce(r.workspace_id,
                           (SELECT e.workspace_id FROM episodes e WHERE e.raw_output_id = r.id LIMIT 1),
                           (SELECT s.workspace_id FROM sessions s WHERE s.id = r.session_id))
           FROM raw_outputs r WHERE r.id = ?""",
        (raw_id,),
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def _scope(workspace_id: int | None, lineage: list[tuple[str, int | None]],
           include_retracted: bool) -> tuple[str, tuple[Any, ...]]:
    filters: list[str] = []
    params: list[Any] = []
    if workspace_id is not None:
        filters.append("workspace_id = ?")
        params.append(workspace_id)
    if lineage:
        terms = []
        for member, upto in lineage:
            terms.append("session_id = ?" if upto is None else "(session_id = ? AND turn <= ?)")
            params.extend([member] if upto is None else [member, upto])
        filters.append("(" + " OR ".join(terms) + ")")
    if not include_retracted:
        filters.append("state != 'retracted'")
    return ("WHERE " + " AND ".join(filters)) if filters else "", tuple(params)


def recallable_episodes(db: sqlite3.Connection, episode_ids: list[int], *, workspace_id: int | None,
                        skip_live_of: str | None = None, exclude_origins: tuple[str, ...] = (),
                        columns: str = "e.*") -> dict[int, Row]:
    """The episodes among `episode_ids` that recall may return, by id: under the same rules as `search_bm25`
    (not retracted, in the workspace, not the caller's live ones, not of an excluded origin). `columns` may name
    fewer than all (`"e.id, e.kind"`): a ranking that only weighs candidates need not read their text."""
    if not episode_ids:
        return {}
    filters, params = _recall_filters(SEARCHABLE_STATES, workspace_id, skip_live_of, exclude_origins)
    filters.append(f"e.id IN ({', '.join('?' for _ in episode_ids)})")
    params.extend(episode_ids)
    rows = _rows(db.execute(f"SELECT {columns} FROM episodes e WHERE {' AND '.join(filters)}", params))
    return {row["id"]: row for row in rows}


def recallable_episodes_where(db: sqlite3.Connection, where: str, params: list[Any], *, workspace_id: int | None,
                              skip_live_of: str | None = None, exclude_origins: tuple[str, ...] = (),
                              columns: str = "e.*", order: str = "e.id", limit: int | None = None) -> list[Row]:
    """The episodes recall may return (as `recallable_episodes`) that also meet `where` (SQL on alias `e`)."""
    filters, values = _recall_filters(SEARCHABLE_STATES, workspace_id, skip_live_of, exclude_origins)
    filters.append(f"({where})")
    values.extend(params)
    tail = f" LIMIT {int(limit)}" if limit is not None else ""
    return _rows(db.execute(f"SELECT {columns} FROM episodes e WHERE {' AND '.join(filters)} ORDER BY {order}{tail}",
                            values))


def _recall_filters(states: tuple[str, ...], workspace_id: int | None, skip_live_of: str | None,
                    exclude_origins: tuple[str, ...]) -> tuple[list[str], list[Any]]:
    """The WHERE terms (on alias `e`) every recall path applies, BM25 and vector hits alike."""
    filters: list[str] = [f"e.state IN ({', '.join('?' for _ in states)})"]
    params: list[Any] = [*states]
    if workspace_id is not None:
        filters.append("e.workspace_id = ?")
        params.append(workspace_id)
    if skip_live_of is not None:  # a result the window saw only a preview of (`partly_shown`) is not skipped
        filters.append("NOT (e.state = 'live' AND e.backing_session_id IS ? AND e.partly_shown IS NULL)")
        params.append(skip_live_of)
    if exclude_origins:
        filters.append(f"e.origin NOT IN ({', '.join('?' for _ in exclude_origins)})")
        params.extend(exclude_origins)
    return filters, params


def workspace_ids(db: sqlite3.Connection, workspace_id: int) -> tuple[str | None, str] | None:
    """A workspace's portable id and key, which name its vector collection."""
    row = db.execute("SELECT portable_id, key FROM workspaces WHERE id = ?", (workspace_id,)).fetchone()
    return (row[0], row[1]) if row else None
