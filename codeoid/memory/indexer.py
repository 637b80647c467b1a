"""The vector indexer: new episodes into Chroma within seconds, in the background of the MCP server.

It never runs in a hook (hooks sit on the user's hot path and must not load a model). The MCP server starts
it on a daemon thread once it is serving; `codeoid reindex` drives the same code in the foreground.

Wake-up is a poll of SQLite's `PRAGMA data_version` every `poll_seconds` (1 s): it changes exactly when another
connection commits, costs microseconds, and needs neither a watchdog thread nor trust in WAL-file mtimes
(a checkpoint rewrites the WAL without a new episode). Work goes in batches claimed in a write transaction
(`codeoid.store.vector_progress`), so a kill -9 loses nothing and two indexers never embed the same episode.
Embedding uses one onnxruntime thread, so the indexer costs at most one core. On each wake-up it also brings the
keyword indexes up to date (`queries.catch_up_fts`), which recall would otherwise do on its own time.

What enters the index: live and archived episodes, redacted (`codeoid.memory.privacy`), and of a compressed Bash
output also the lines compression cut (chunks marked `source: raw`, which choose the lines a hit shows and rank
nothing); not codeoid's own tool calls or rotation seeds (copies of stored episodes), not episodes touching an
excluded path, not retracted ones (and a retraction of an indexed episode removes its chunks). When Chroma is
unreachable the indexer gives its claim back, waits `retry_seconds` and tries again, then catches up from its
watermark.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from codeoid.log import log
from codeoid.memory import chunking, corpus_stats, privacy
from codeoid.memory.embedding import Embedder, default_embedder
from codeoid.memory.vector_index import CUT_SOURCE, Chunk, VectorIndex, VectorIndexUnavailable, workspace_index_id
from codeoid.store import db as store_db
from codeoid.store import identity, queries, raw, vector_progress
from codeoid.store.queries import Row

SKIPPED_ORIGINS = ("codeoid", "seed")  # as retrieval.NOT_RECALLED_ORIGINS: copies of episodes already stored
INDEXED_STATES = ("live", "archived")


def _env_number(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


@dataclass(frozen=True)
class IndexerSettings:
    batch_episodes: int = 16  # one claim; small, so a kill -9 redoes little and a new episode waits little
    poll_seconds: float = 1.0
    lease_seconds: float = 120.0  # a claim older than this belongs to a dead indexer
    retry_seconds: float = 5.0  # between attempts to reach a Chroma that is down
    max_chunks: int = 128  # per episode: 128 x 256 tokens; later lines stay with BM25 and get_episode
    # Of them, chunks of the lines compression cut from a Bash output (`raw_chunks`): 16 x 256 tokens, about 16 KB, so
    # the middle of a file `cat` cut or a commit body cut from `git log` is found by meaning too, and a test log of
    # megabytes costs the background a second or two of embedding, not a minute.
    raw_chunks: int = 16

    @classmethod
    def from_env(cls) -> IndexerSettings:
        return cls(
            batch_episodes=max(1, int(_env_number("CODEOID_INDEX_BATCH", cls.batch_episodes))),
            poll_seconds=max(0.05, _env_number("CODEOID_INDEX_POLL_SECONDS", cls.poll_seconds)),
            lease_seconds=max(0.1, _env_number("CODEOID_INDEX_LEASE_SECONDS", cls.lease_seconds)),
            retry_seconds=max(0.1, _env_number("CODEOID_INDEX_RETRY_SECONDS", cls.retry_seconds)),
            max_chunks=max(1, int(_env_number("CODEOID_INDEX_MAX_CHUNKS", cls.max_chunks))),
            raw_chunks=max(0, int(_env_number("CODEOID_INDEX_RAW_CHUNKS", cls.raw_chunks))),
        )


class Indexer:
    """One indexer over one store connection (create it on the thread that runs it)."""

    def __init__(self, db: sqlite3.Connection, *, index: VectorIndex | None = None, embedder: Embedder | None = None,
                 settings: IndexerSettings | None = None) -> None:
        self.db = db
        self.index = index or VectorIndex(store=identity.store_id(db))
        self.embedder = embedder or default_embedder()
        self.settings = settings or IndexerSettings.from_env()
        self.policy = privacy.Policy.from_env()
        self.owner = f"{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def step(self) -> int | None:
        """Remove pending retractions, embed restored episodes again, then index one batch; the number of
        episodes the batch covered (0: none left), None when another indexer holds the current batch. Raises
        `VectorIndexUnavailable`."""
        self._remove_retracted()
        self._index_restored()
        batch = vector_progress.claim_batch(self.db, self.owner, limit=self.settings.batch_episodes,
                                            lease_seconds=self.settings.lease_seconds)
        if not batch:
            return batch if batch is None else 0
        written: dict[str, list[Sequence[float]]] = {}
        try:
            for episode in batch:
                if not self.indexable(episode):
                    continue
                workspace, vectors = self._replace_chunks(episode)
                written.setdefault(workspace, []).extend(vectors)
                vector_progress.renew_claim(self.db, self.owner)  # one long episode takes a while
            for workspace, vectors in written.items():
                corpus_stats.add(self.db, workspace, vectors)
        except BaseException:
            vector_progress.release_claim(self.db, self.owner)
            raise
        vector_progress.finish_batch(self.db, self.owner, batch[-1]["id"])
        return len(batch)

    def catch_up(self, on_batch: Callable[[int], None] | None = None, stop: threading.Event | None = None) -> int:
        """Index until the watermark reaches the newest episode (or another indexer holds the next batch, or
        `stop` is set: a stopping service finishes its batch and goes, instead of leaving a claim to expire)."""
        done = 0
        while stop is None or not stop.is_set():
            count = self.step()
            if not count:
                return done
            done += count
            if on_batch is not None:
                on_batch(count)
        return done

    def run(self, stop: threading.Event) -> None:
        """Index whenever the store changes until `stop` is set; survives Chroma and the store going away."""
        last_version: int | None = None
        idle_polls = 0
        while not stop.is_set():
            try:
                version = int(self.db.execute("PRAGMA data_version").fetchone()[0])
                idle_polls += 1
                # A change by another connection, or every 30 polls anyway (a dead indexer's claim expiring).
                if version != last_version or idle_polls >= 30:
                    idle_polls = 0
                    # The keyword indexes too, so a recall does not tokenize a new megabyte of raw output itself.
                    queries.catch_up_fts(self.db)
                    self.catch_up(stop=stop)
                    last_version = version
            except VectorIndexUnavailable as error:
                log("indexer", f"waiting for the vector index: {error}")
                last_version = None
                stop.wait(self.settings.retry_seconds)
                continue
            except (store_db.StoreUnavailable, sqlite3.OperationalError) as error:
                log("indexer", f"store busy, retrying: {error}")
                last_version = None
            stop.wait(self.settings.poll_seconds)

    def indexable(self, episode: Row) -> bool:
        if episode["state"] not in INDEXED_STATES or episode["origin"] in SKIPPED_ORIGINS:
            return False
        return not self.policy.excluded(_paths(episode))

    def chunks(self, episode: Row) -> list[Chunk]:
        """The episode's text in chunks, then the lines compression cut from the raw output behind it, in chunks
        numbered on and marked `source: raw` (their lines are the raw output's)."""
        metadata = {"session_id": episode["session_id"], "kind": episode["kind"],
                    "tool_name": episode["tool_name"] or "", "created_at": float(episode["created_at"])}
        header = self.policy.redact(chunking.episode_header(episode))
        chunks = chunking.chunk_text(
            episode["id"], header, self.policy.redact(episode["text"]),
            count_tokens=self.embedder.count_tokens, max_tokens=self.embedder.max_tokens,
            max_chunks=self.settings.max_chunks, metadata=metadata,
        )
        room = min(self.settings.raw_chunks, self.settings.max_chunks - len(chunks))
        cut = self._cut_lines(episode) if room > 0 else None
        if cut is None:
            return chunks
        return chunks + chunking.chunk_text(
            episode["id"], header, self.policy.redact(cut), count_tokens=self.embedder.count_tokens,
            max_tokens=self.embedder.max_tokens, max_chunks=room, metadata={**metadata, "source": CUT_SOURCE},
            first=len(chunks),
        )

    def _cut_lines(self, episode: Row) -> str | None:
        """What only the raw output behind a compressed episode says (`chunking.cut_lines`), from its searched
        head; None when it has none, its bytes are gone, or no rule cut it."""
        text = str(episode["text"] or "")
        head = raw.cut_head(self.db, episode["raw_output_id"], text) if episode["raw_output_id"] else None
        return chunking.cut_lines(text, head[0]) if head is not None else None

    def _replace_chunks(self, episode: Row) -> tuple[str, list[Sequence[float]]]:
        """Write the episode's chunks; its collection and the embeddings of its text's chunks (those that rank, and
        that recall's cosines are standardised over)."""
        workspace = workspace_index_id(episode["portable_id"], episode["key"])
        self.index.delete_episode(workspace, episode["id"])  # a redo may make fewer chunks than before
        chunks = self.chunks(episode)
        vectors = self.index.add_chunks(workspace, chunks)
        return workspace, [vector for chunk, vector in zip(chunks, vectors, strict=True)
                           if not chunk.cut]

    def _index_restored(self) -> None:
        """Episodes `codeoid restore` gave back after the watermark passed them (their chunks left the index when
        they were retracted). Two indexers may both embed one: rare, and the same chunk ids make it harmless."""
        pending = vector_progress.pending_restores(self.db)
        for episode in pending:
            if self.indexable(episode):
                self._replace_chunks(episode)
        if pending:
            vector_progress.restores_done(self.db, [episode["id"] for episode in pending])

    def _remove_retracted(self) -> None:
        pending = vector_progress.pending_removals(self.db)
        for row in pending:
            self.index.delete_episode(workspace_index_id(row["portable_id"], row["key"]), row["episode_id"])
        if pending:
            vector_progress.removals_done(self.db, [row["episode_id"] for row in pending])


def _paths(episode: Row) -> list[str]:
    try:
        value = json.loads(episode["paths"] or "[]")
    except ValueError:
        return []
    return [path for path in value if isinstance(path, str)] if isinstance(value, list) else []


def run_forever(stop: threading.Event, *, db_path: str | None = None, delay: float = 2.0) -> None:
    """Index until `stop` is set, after `delay` (so the MCP server answers `initialize` and `tools/list` before
    the model loads); every failure is logged, never raised: this runs on a background thread."""
    if stop.wait(delay):
        return
    try:
        db = store_db.connect(db_path)
    except store_db.StoreUnavailable as error:
        log("indexer", f"not started: {error}")
        return
    try:
        Indexer(db).run(stop)
    except Exception as error:  # noqa: BLE001 - a background thread must leave a trace, never a traceback on stdio
        log("indexer", f"stopped: {error!r}")
    finally:
        db.close()


def start_background(db_path: str | None = None, *, delay: float = 2.0) -> tuple[threading.Thread, threading.Event]:
    """`run_forever` on a daemon thread (it dies with the process; the next indexer redoes its batch)."""
    stop = threading.Event()
    thread = threading.Thread(target=run_forever, args=(stop,), kwargs={"db_path": db_path, "delay": delay},
                              name="codeoid-indexer", daemon=True)
    thread.start()
    return thread, stop
