"""Finding history to page back: ranked episodes for a query, the caller's own window, the latest read of a file.

`recall_ranked` is the one entry point for ranked retrieval (`recall` is its rows alone); the MCP server and
`codeoid search` both call it: BM25 and vector candidates fused (`codeoid.memory.ranking`), BM25's candidates alone
(still with time, actions and turns) when the vector index cannot answer, and the result says which.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from codeoid.memory import chroma_server, ranking, turns, when
from codeoid.store import context_index, identity, queries, raw, rotations, vector_progress
from codeoid.store.queries import Row

if TYPE_CHECKING:  # the vector index and the model load only when a query reaches them (~0.8 s)
    from codeoid.memory.vector_index import Hit, VectorIndex

# codeoid's own tool results and rotation seeds are copies of episodes already stored; recalling them would only
# repeat them.
NOT_RECALLED_ORIGINS = ("codeoid", "seed")
T = TypeVar("T")
# How far along its session a turn lends its meaning score to others (`ranking.RecallWeights.neighbours`).
NEIGHBOUR_REACH = 2
# Beyond this a file's change is judged by its mtime alone, so one call never reads a huge file into memory.
MAX_COMPARED_BYTES = 64 << 20
# Under z-score fusion, 0 is what an episode scores that matches no word and is of average meaning for the query:
# below it a candidate is further from the query than most of the store ("Done.", "ok"), and a hit list is
# better short than filled with such filler. Reciprocal rank fusion's scores are all positive and have no floor.
SCORE_FLOOR = 0.0
# The vector index is asked for this many times the chunks ranking takes, so the chunks of lines compression cut
# (`source: raw`), which rank nothing, do not take the place of a text's chunk.
CUT_ROOM = 2


@dataclass(frozen=True)
class Recalled:
    """Ranked episodes and how they were found: `fallback` says why vector candidates are missing, if they are."""

    rows: list[Row]
    signals: str  # "BM25 + semantic" or "BM25"
    fallback: str | None = None
    # Chunks other stores put in a shared collection (a team's Chroma server): their text is all there is here.
    shared: tuple[Hit, ...] = ()


def recall(db: sqlite3.Connection, query: str, *, workspace_id: int | None, limit: int = 6,
           skip_live_of: str | None = None) -> list[Row]:
    """The episodes of a workspace that best match `query`, best first, each row with its `score`
    (`recall_ranked` without the note on which signals took part)."""
    return recall_ranked(db, query, workspace_id=workspace_id, limit=limit, skip_live_of=skip_live_of).rows


def recall_ranked(db: sqlite3.Connection, query: str, *, workspace_id: int | None, limit: int = 6,
                  skip_live_of: str | None = None, weights: ranking.RecallWeights | None = None) -> Recalled:
    """BM25 and vector candidates fused with recency, path and role bonuses (`codeoid.memory.ranking`), best first.

    Live and archived episodes of every session are candidates, retracted ones never; `skip_live_of` names
    the caller's backing session, whose live episodes are still in its window and so are left out.
    `workspace_id=None` searches every workspace (the CLI's `--all-workspaces`), never a default; it is BM25
    only, since each workspace has its own collection. When the vector index cannot answer, the ranking is
    BM25's alone and `fallback` says why, so the caller can say so. A signal weighted 0 is not queried
    (`dense=0` is BM25 alone, `bm25=0` ranks by meaning alone): the retrieval benchmark measures each signal
    through this same path.
    """
    weights = weights or ranking.RecallWeights.from_env()
    pool = max(limit, weights.candidates)
    resolved = _when(db, query, workspace_id, skip_live_of) if weights.zscore and weights.time else None
    query = resolved.query if resolved is not None else query  # the words that only pointed in time are spent
    dense_beside = _dense_beside(db, query, workspace_id, pool) if weights.dense else None
    lexical, lexical_stats = _lexical_candidates(db, query, workspace_id, pool, skip_live_of, weights.columns()) \
        if weights.bm25 else ([], queries.LexicalStats(0.0, 0.0, 0))
    if dense_beside is None:  # BM25 alone, by choice (`dense=0`): the benchmarks' reference
        return Recalled(lexical[:limit], "BM25")
    dense, fallback = dense_beside()
    if dense is None and not weights.zscore:
        return Recalled(lexical[:limit], "BM25", fallback)
    # Without the vector index (off, unreachable, still empty) the words alone rank, but time, actions and turns
    # still apply: a question asked in the first minutes after install, or with Chroma down, still knows
    # "yesterday" and "what broke".
    dense = dense or _Dense([], None)
    store = identity.store_id(db)
    hits = [hit for hit in dense.hits if hit.store == store]
    raw_hits = [hit for hit in dense.cut if hit.store == store]
    shared = _shared_hits(dense.hits[:limit], store, limit) \
        if fallback is None and chroma_server.shared_hits_enabled() else ()
    by_id = {row["id"]: row for row in lexical}
    dense_ids = list(dict.fromkeys(hit.episode_id for hit in hits))
    by_id.update({episode_id: row for episode_id, row in queries.recallable_episodes(
        db, [i for i in dense_ids if i not in by_id], workspace_id=workspace_id, skip_live_of=skip_live_of,
        exclude_origins=NOT_RECALLED_ORIGINS).items()})
    best_chunk: dict[int, Hit] = {}
    for hit in hits:
        if hit.episode_id in by_id:
            best_chunk.setdefault(hit.episode_id, hit)
    neighbours, weighed = _tool_neighbours(db, list(best_chunk), by_id, workspace_id, skip_live_of) \
        if weights.zscore and weights.neighbours else ({}, {})
    known = {**weighed, **by_id}
    if resolved is not None:
        known.update(queries.recallable_episodes(db, [i for i in resolved.added if i not in known],
                                                 workspace_id=workspace_id, skip_live_of=skip_live_of,
                                                 exclude_origins=NOT_RECALLED_ORIGINS, columns=turns.MEMBER_COLUMNS))
    fused, fusion = _fuse(query, weights, lexical, lexical_stats, pool, best_chunk, dense.standardiser, known,
                          neighbours, resolved)
    if fusion is not None and (weights.turn_lend or weights.turn_repeat):
        fused = _by_turns(db, fused, fusion, known, workspace_id, skip_live_of, weights)
    if weights.zscore and fallback is None:  # every word match stays a hit when words alone found them
        fused = [(episode_id, score) for episode_id, score in fused if score >= SCORE_FLOOR]
    by_id.update(queries.recallable_episodes(db, [i for i, _ in fused[:limit] if i not in by_id],
                                             workspace_id=workspace_id, skip_live_of=skip_live_of,
                                             exclude_origins=NOT_RECALLED_ORIGINS))
    rows = []
    for episode_id, score in fused[:limit]:
        row = {**by_id[episode_id], "score": score}
        chunk = best_chunk.get(episode_id)
        if chunk is not None:
            row["matched_lines"] = (chunk.start_line, chunk.end_line)
            # Every chunk of it among the nearest, for the lines its hit shows (`codeoid.memory.line_choice`).
            row["chunks"] = [(hit.start_line, hit.end_line, 1.0 - hit.distance) for hit in hits
                             if hit.episode_id == episode_id]
        # And of the lines compression cut from the raw output behind it, numbered as that is.
        row["raw_chunks"] = [(hit.start_line, hit.end_line, 1.0 - hit.distance) for hit in raw_hits
                             if hit.episode_id == episode_id]
        rows.append(row)
    if fallback is not None:
        return Recalled(rows, "BM25", fallback)
    return Recalled(rows, "BM25 + semantic", shared=shared)


# Candidate generation and scores (owned by the ranking work of issue 13; the answer format lives elsewhere).

def _lexical_candidates(db: sqlite3.Connection, query: str, workspace_id: int | None, pool: int,
                        skip_live_of: str | None, columns: tuple[float, float, float, float]
                        ) -> tuple[list[Row], queries.LexicalStats]:
    """BM25 over each episode with its session neighbours (`codeoid.store.context_index`), best first."""
    return queries.search_context(db, query, workspace_id=workspace_id, limit=pool, skip_live_of=skip_live_of,
                                  exclude_origins=NOT_RECALLED_ORIGINS, columns=columns)


def _tool_neighbours(db: sqlite3.Connection, ids: list[int], by_id: dict[int, Row], workspace_id: int | None,
                     skip_live_of: str | None) -> tuple[dict[int, list[int]], dict[int, Row]]:
    """The tool calls recall may return among each of `ids`' session neighbours (`NEIGHBOUR_REACH` places either
    way), and what ranking weighs of those not in `by_id` (kind, time, paths, tool: not their outputs, which may be
    megabytes; the few that make the answer are read whole afterwards)."""
    near = context_index.session_neighbours(db, ids, before=NEIGHBOUR_REACH, after=NEIGHBOUR_REACH)
    weighed = queries.recallable_episodes(
        db, [i for others in near.values() for i in others if i not in by_id], workspace_id=workspace_id,
        skip_live_of=skip_live_of, exclude_origins=NOT_RECALLED_ORIGINS,
        columns=turns.MEMBER_COLUMNS)
    known = {**weighed, **by_id}
    return ({episode_id: [i for i in others if i in known and known[i]["kind"] == "tool"]
             for episode_id, others in near.items()}, weighed)


@dataclass(frozen=True)
class _Dense:
    hits: list[Hit]  # the nearest chunks of episodes' texts: what ranks
    standardiser: tuple[float, float] | None  # (q.mu, sqrt(q' Sigma q)) from the corpus statistics, when known
    # The nearest chunks of what compression cut from raw outputs (`source: raw`): they rank nothing, they say
    # which of a hit's cut lines to show (`line_choice`).
    cut: list[Hit] = field(default_factory=list)


def _when(db: sqlite3.Connection, query: str, workspace_id: int | None, skip_live_of: str | None
          ) -> when.Resolved | None:
    """What the question's time and order words point at (`codeoid.memory.when`); None when it names no time the
    store knows."""
    caller = rotations.session_of_backing(db, skip_live_of) if skip_live_of else None
    resolved = when.resolve(db, query, workspace_id=workspace_id, caller_session=caller, skip_live_of=skip_live_of,
                            exclude_origins=NOT_RECALLED_ORIGINS)
    return resolved if resolved.anything else None


def _fuse(query: str, weights: ranking.RecallWeights, lexical: list[Row], lexical_stats: queries.LexicalStats,
          pool: int, best_chunk: dict[int, Hit], standardiser: tuple[float, float] | None,
          by_id: dict[int, Row], neighbours: dict[int, list[int]], resolved: when.Resolved | None = None,
          ) -> tuple[list[tuple[int, float]], ranking.ZFusion | None]:
    """The candidates of both signals in one ranking: z-score fusion by default (with the fusion, which scores
    any other episode the same way), reciprocal rank fusion when `zscore=0`."""
    created_at = {i: row["created_at"] for i, row in by_id.items()}
    paths = {i: _json_list(row["paths"]) for i, row in by_id.items()}
    if not weights.zscore:
        return ranking.fuse([row["id"] for row in lexical], list(best_chunk), created_at=created_at, paths=paths,
                            query=query, weights=weights), None
    centre, spread = standardiser if standardiser is not None else (None, None)
    fusion = ranking.ZFusion(
        ranking.LexicalCandidates({row["id"]: row["score"] for row in lexical}, lexical_stats.total,
                                  lexical_stats.squares, lexical_stats.corpus, cut=len(lexical) >= pool),
        ranking.DenseCandidates({i: 1.0 - hit.distance for i, hit in best_chunk.items()}, centre, spread),
        query=query, weights=weights, when=resolved)
    return fusion.fuse(created_at=created_at, paths=paths,
                       tags={i: turns.tags_of_row(row) for i, row in by_id.items()}, neighbours=neighbours,
                       sessions={i: str(row["session_id"]) for i, row in by_id.items()},
                       extra=resolved.added if resolved is not None else ()), fusion


def _by_turns(db: sqlite3.Connection, fused: list[tuple[int, float]], fusion: ranking.ZFusion, known: dict[int, Row],
              workspace_id: int | None, skip_live_of: str | None,
              weights: ranking.RecallWeights) -> list[tuple[int, float]]:
    """`fused` with the turns of work among its best candidates ranked as units (`codeoid.memory.turns`)."""
    work, read = turns.members_of_turns(db, known, [i for i, _ in fused[:turns.TURNS_OF_BEST]],
                                        workspace_id=workspace_id, skip_live_of=skip_live_of,
                                        exclude_origins=NOT_RECALLED_ORIGINS)
    if not work:
        return fused
    known.update(read)

    def score_of(episode_id: int) -> float:
        row = known[episode_id]
        return fusion.score(episode_id, float(row["created_at"]), _json_list(row["paths"]), turns.tags_of_row(row),
                            str(row["session_id"]))

    return turns.rerank(fused, work, score_of, fusion.asked, turns.TurnWeights(
        lend=weights.turn_lend, step=weights.turn_step, prompt=weights.turn_prompt, repeat=weights.turn_repeat,
        explanation=weights.turn_explanation, answer=weights.turn_answer))


def _shared_hits(nearest: list[Hit], store: str, limit: int) -> tuple[Hit, ...]:
    """Other stores' chunks among the nearest `limit`, one per episode, at most half of `limit` (rounded up):
    a teammate's history helps, but this machine's own comes first."""
    chosen: dict[tuple[str, int], Hit] = {}
    for hit in nearest:
        if hit.store != store:
            chosen.setdefault((hit.store, hit.episode_id), hit)
    return tuple(chosen.values())[:(limit + 1) // 2]


_index: VectorIndex | None = None
# Why vectors must not be asked in this call, where the process cannot load them (a thin MCP server whose memory
# service did not start): set by `without_vectors`, per thread and task, never process-wide.
_no_vectors: ContextVar[str | None] = ContextVar("codeoid_no_vectors", default=None)


@contextmanager
def without_vectors(reason: str) -> Iterator[None]:
    """Within this block recall ranks by words alone and its answer says `reason`."""
    token = _no_vectors.set(reason)
    try:
        yield
    finally:
        _no_vectors.reset(token)


def _dense_candidates(db: sqlite3.Connection, query: str, workspace_id: int | None, n: int
                      ) -> tuple[_Dense | None, str | None]:
    """The nearest chunks of the workspace's collection with the query's standardiser, or why there are none."""
    return _dense_beside(db, query, workspace_id, n)()


def _dense_beside(db: sqlite3.Connection, query: str, workspace_id: int | None, n: int
                  ) -> Callable[[], tuple[_Dense | None, str | None]]:
    """Start asking the vector index on a worker thread (`_run_beside`); the call returned waits for the answer
    and standardises it on this thread, which owns `db`."""
    asked = _dense_question(db, workspace_id)
    if isinstance(asked, str):
        return lambda: (None, asked)
    nearest = _run_beside(partial(_nearest, asked, query, n))
    return lambda: _dense_answer(db, asked, nearest.result(), n)


@dataclass(frozen=True)
class _DenseQuestion:
    index: VectorIndex
    collection: str


def _dense_question(db: sqlite3.Connection, workspace_id: int | None) -> _DenseQuestion | str:
    """What asking the vector index needs from the store, or why it must not be asked."""
    global _index
    if not ranking.vector_enabled():
        return "semantic memory is off (CODEOID_VECTOR=off)"
    if (reason := _no_vectors.get()) is not None:
        return reason
    if workspace_id is None:
        return "semantic search covers one workspace at a time"
    if vector_progress.progress(db).indexed_upto == 0 and chroma_server.remote_url() is None:
        return "the vector index is still empty"
    ids = queries.workspace_ids(db, workspace_id)
    if ids is None:
        return "the workspace is unknown"
    from codeoid.memory.vector_index import VectorIndex, workspace_index_id

    store = identity.store_id(db)
    if _index is None or _index.store != store:
        _index = VectorIndex(store=store)
    return _DenseQuestion(_index, workspace_index_id(*ids))


def _nearest(asked: _DenseQuestion, query: str, n: int) -> tuple[Sequence[float], list[Hit]] | str:
    """The query's embedding and its nearest chunks, or why the index could not answer. Reads nothing of the
    store, so it runs beside the BM25 search (`recall_ranked`)."""
    from codeoid.memory.vector_index import VectorIndexUnavailable

    try:
        vector = asked.index.embed([query])[0]
        return vector, asked.index.query(query, asked.collection, CUT_ROOM * n, embedding=vector)
    except VectorIndexUnavailable as error:
        return f"the vector index is unreachable ({error})"


def _dense_answer(db: sqlite3.Connection, asked: _DenseQuestion, found: tuple[Sequence[float], list[Hit]] | str,
                  n: int) -> tuple[_Dense | None, str | None]:
    if isinstance(found, str):
        return None, found
    from codeoid.memory import corpus_stats

    vector, hits = found
    stats = corpus_stats.load(db, asked.collection)
    # Ranking sees the `n` nearest chunks of texts (this store's, and teammates'), as if the cut lines' chunks were
    # not there (tried: ranked, they put a log's cut middle above the run's own summary).
    store = identity.store_id(db)
    text = [hit for hit in hits if not hit.cut]
    ranked = sorted([hit for hit in text if hit.store == store][:n] + [hit for hit in text if hit.store != store][:n],
                    key=lambda hit: hit.distance)
    return _Dense(ranked, stats.standardiser(vector) if stats is not None else None,
                  [hit for hit in hits if hit.cut]), None


_beside: ThreadPoolExecutor | None = None


def _run_beside(work: Callable[[], T]) -> Future[T]:
    """`work` on a worker thread of this process: the vector half of a recall waits on the model and on Chroma
    while the BM25 half waits on SQLite, and neither holds the GIL meanwhile (the two halves took 16 and 13 ms
    of a 44 ms recall at 100k episodes, one after the other)."""
    global _beside
    if _beside is None:
        _beside = ThreadPoolExecutor(max_workers=2, thread_name_prefix="codeoid-recall")
    return _beside.submit(work)


def caller_backing_session(db: sqlite3.Connection, *, parent_pid: int | None,
                           session_env: str | None) -> str | None:
    """The backing session a process started by `claude` serves: the open one the hooks recorded for its
    parent pid (which follows `/clear`), else the one `CLAUDE_CODE_SESSION_ID` names if still open."""
    return queries.open_backing_session(db, claude_pid=parent_pid, backing_session_id=session_env or None)


@dataclass(frozen=True)
class FileRead:
    """What one stored call returned of a file: a Read (whole or a line range) or a `cat` that printed it."""

    episode_id: int
    source: str  # "Read" or "Bash"
    command: str | None  # the Bash command, for `cat` reads
    content: bytes  # the text the call returned (a compressed call's exact stdout from its raw output)
    raw_output_id: str | None  # set when content is a raw output's bytes: exactly what was printed
    whole: bool
    start_line: int
    line_count: int
    total_lines: int | None
    read_at: float
    backing_session_id: str | None
    state: str


@dataclass(frozen=True)
class DiskState:
    """The file as it is now, compared with a stored read of it."""

    exists: bool
    size: int | None = None
    mtime: float | None = None
    sha256: str | None = None
    stored_sha256: str | None = None
    modified_after_read: bool = False
    verdict: str = ""  # "unchanged", "changed", "gone"
    detail: str = ""


def latest_file_read(db: sqlite3.Connection, workspace_id: int, path: str, *, default_cwd: str) -> FileRead | None:
    """The most recent successful call in the workspace that read `path` (a real path): a Read, or a Bash
    `cat <path>` (relative paths resolved against the raw output's cwd where known, else `default_cwd`)."""
    for candidate in queries.file_read_candidates(db, workspace_id, os.path.basename(path)):
        if candidate["tool_name"] == "Read":
            if any(_same_path(stored, path, default_cwd) for stored in _json_list(candidate["paths"])):
                return _read_of(db, candidate)
        elif candidate["tool_name"] == "Bash":
            command = candidate["original_command"] or candidate["command"] or ""
            target = cat_target(command)
            if target is None:
                continue
            found = raw.get_raw_output(db, candidate["raw_output_id"]) if candidate["raw_output_id"] else None
            cwd = found.cwd if found is not None and found.cwd else default_cwd
            if _same_path(target, path, cwd):
                return _cat_of(db, candidate, command, found is not None)
    return None


def cat_target(command: str) -> str | None:
    """The one file a `cat FILE` (or `cat -- FILE`) command prints whole; None for anything else."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) == 2 and words[0] == "cat" and not words[1].startswith("-"):
        return words[1]
    if len(words) == 3 and words[:2] == ["cat", "--"]:
        return words[2]
    return None


def compare_with_disk(read: FileRead, path: str) -> DiskState:
    """Whether the file changed since the read: size and mtime always, content where it can be compared
    (the whole file for a whole read, the same line range for a partial one)."""
    try:
        stat = os.stat(path)
        if stat.st_size > MAX_COMPARED_BYTES:
            return DiskState(exists=True, size=stat.st_size, mtime=stat.st_mtime,
                             modified_after_read=stat.st_mtime > read.read_at,
                             verdict="changed" if stat.st_mtime > read.read_at else "unchanged",
                             detail="by mtime only; the file is too large to compare its content")
        with open(path, "rb") as file:
            current = file.read()
    except FileNotFoundError:
        return DiskState(exists=False, verdict="gone", detail="the file no longer exists")
    except OSError as error:
        return DiskState(exists=False, verdict="gone", detail=f"the file cannot be read now ({error.strerror})")
    now = DiskState(exists=True, size=stat.st_size, mtime=stat.st_mtime, sha256=hashlib.sha256(current).hexdigest(),
                    modified_after_read=stat.st_mtime > read.read_at)
    if read.whole:
        stored = replace(now, stored_sha256=hashlib.sha256(read.content).hexdigest())
        if current == read.content:
            return replace(stored, verdict="unchanged", detail="same sha256")
        if read.raw_output_id is None and _normalized(current) == _normalized(read.content):
            return replace(stored, verdict="unchanged", detail="same text apart from line endings or trailing newlines")
        return replace(stored, verdict="changed", detail="content differs")
    stored_lines = read.content.split(b"\n")
    start = read.start_line - 1
    current_lines = current.split(b"\n")[start:start + len(stored_lines)]
    if [line.rstrip(b"\r") for line in current_lines] == [line.rstrip(b"\r") for line in stored_lines]:
        return replace(now, verdict="unchanged", detail=f"lines {_line_span(read)} are the same")
    return replace(now, verdict="changed", detail=f"lines {_line_span(read)} differ")


def _line_span(read: FileRead) -> str:
    return f"{read.start_line}-{read.start_line + max(read.line_count, 1) - 1}"


def _normalized(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").rstrip(b"\n")


def _read_of(db: sqlite3.Connection, candidate: Row) -> FileRead:
    episode = queries.get_episode(db, candidate["id"])
    assert episode is not None
    content = episode["text"]
    tool_input = _json_dict(episode["input"])
    file = _json_dict(episode["response"]).get("file")
    file = file if isinstance(file, dict) else {}
    lines = content.split("\n")
    start = _int(file.get("startLine")) or _int(tool_input.get("offset")) or 1
    count = _int(file.get("numLines")) or len(lines)
    total = _int(file.get("totalLines"))
    if total is not None:
        whole = start == 1 and count >= total
    else:
        whole = tool_input.get("offset") is None and tool_input.get("limit") is None
    return FileRead(
        episode_id=episode["id"], source="Read", command=None, content=content.encode("utf-8", "surrogatepass"),
        raw_output_id=None, whole=whole, start_line=start, line_count=count, total_lines=total,
        read_at=episode["created_at"], backing_session_id=episode["backing_session_id"], state=episode["state"],
    )


def _cat_of(db: sqlite3.Connection, candidate: Row, command: str, has_raw: bool) -> FileRead:
    episode = queries.get_episode(db, candidate["id"])
    assert episode is not None
    if has_raw:
        content = raw.read_raw_stdout(db, candidate["raw_output_id"])
    else:
        content = episode["text"].encode("utf-8", "surrogatepass")
    count = content.count(b"\n") + (1 if content and not content.endswith(b"\n") else 0)
    return FileRead(
        episode_id=episode["id"], source="Bash", command=command, content=content,
        raw_output_id=candidate["raw_output_id"] if has_raw else None,
        whole=True, start_line=1, line_count=count, total_lines=count, read_at=episode["created_at"],
        backing_session_id=episode["backing_session_id"], state=episode["state"],
    )


def _same_path(stored: str, wanted: str, cwd: str) -> bool:
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(stored))) == wanted


def _json_list(text: str | None) -> list[str]:
    value = _json(text)
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _json_dict(text: str | None) -> dict[str, object]:
    value = _json(text)
    return value if isinstance(value, dict) else {}


def _json(text: str | None) -> object:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
