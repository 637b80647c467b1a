"""Retention: the data dir kept under a disk budget, and `forget`, the one real delete.

Nothing here touches an episode of a live window. When the data dir is over its budget, the raw outputs of
archived episodes expire first, oldest first: their bytes go, their metadata and the episode's compressed text
stay, and the episode's summary says "raw expired" (so recall, timeline and get_episode say it too). If that is
not enough, those episodes' vector chunks go next (queued for the indexer, which removes them from Chroma);
BM25 still finds them. Incomplete raw outputs (a `codeoid-compress` killed mid-run) and quarantined events are
swept after a grace period (corrupt databases moved aside are never swept). `plan` only looks; `apply` does it
and vacuums so the file really shrinks.

`forget` is different in kind: it deletes an episode's text, input, response, raw output and FTS entries for
good (with `secure_delete`, the FTS index merged so no segment keeps the old terms, the WAL truncated), drops the
prebuilt workspace index that may quote it, and queues its vectors for removal (`codeoid forget` removes them from
Chroma at once, `codeoid.memory.forgetting`), leaving a tombstone row (id, time, kind, session, summary
"forgotten") so the timeline stays consistent and a replayed hook cannot bring it back. `retract` stays the
undoable hide.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
import tomllib
from dataclasses import dataclass, field

from codeoid import paths
from codeoid.store import context_index, session_titles
from codeoid.store.db import write_transaction

DEFAULT_BUDGET = 2 * 1024**3
ENV_BUDGET = "CODEOID_DISK_BUDGET"
INCOMPLETE_GRACE_SECONDS = 24 * 3600
QUARANTINE_GRACE_SECONDS = 30 * 24 * 3600
RAW_EXPIRED = "[raw expired]"
FORGOTTEN = "forgotten"
UNFINISHED_SPOOL = "unfinished spool writes"
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2,
          "g": 1024**3, "gb": 1024**3, "gib": 1024**3, "t": 1024**4, "tb": 1024**4, "tib": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
# Top-level entries of the data dir, by what they hold (anything else counts as "other").
_KINDS = {"store.db": "store", "store.db-wal": "store", "store.db-shm": "store", "chroma": "vectors",
          "chroma-server": "vectors", "spool": "spool", "quarantine": "quarantine", "logs": "logs", "cache": "cache"}


class RetentionConfigError(ValueError):
    """The budget setting is unusable; the message names it and says what it must be."""


def parse_size(text: str) -> int:
    """`2GB`, `500 MB`, `1.5g`, `1048576`: a size in bytes (units are powers of 1024)."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise RetentionConfigError(f"{text!r} is not a size: write bytes or a number with KB, MB, GB or TB")
    return int(float(match.group(1)) * _UNITS[unit])


def disk_budget() -> int:
    """`CODEOID_DISK_BUDGET`, else `[retention] budget` in config.toml, else 2 GB."""
    value = os.environ.get(ENV_BUDGET)
    if value:
        return parse_size(value)
    try:
        with open(paths.config_file(), "rb") as file:
            table = tomllib.load(file).get("retention", {})
    except FileNotFoundError:
        return DEFAULT_BUDGET
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise RetentionConfigError(f"{paths.config_file()}: {error}") from error
    configured = table.get("budget") if isinstance(table, dict) else None
    if configured is None:
        return DEFAULT_BUDGET
    return configured if isinstance(configured, int) else parse_size(str(configured))


def file_sizes(data_dir: str) -> dict[str, int]:
    """Bytes on disk under the data dir by kind: store, vectors, spool, quarantine, logs, cache, other, and the
    unfinished spool writes of hooks killed while spooling (`.tmp` in the spool: no event waits in them)."""
    sizes: dict[str, int] = {}
    try:
        entries = os.listdir(data_dir)
    except FileNotFoundError:
        return sizes
    for name in entries:
        kind = _KINDS.get(name, "other")
        sizes[kind] = sizes.get(kind, 0) + _tree_size(os.path.join(data_dir, name))
    unfinished = _unfinished_spool_bytes(os.path.join(data_dir, "spool"))
    if unfinished:
        sizes["spool"] -= unfinished
        sizes[UNFINISHED_SPOOL] = unfinished
    return sizes


def _unfinished_spool_bytes(directory: str) -> int:
    try:
        return sum(_size(entry.path) for entry in os.scandir(directory) if entry.name.endswith(".tmp"))
    except FileNotFoundError:
        return 0


def store_breakdown(db: sqlite3.Connection) -> dict[str, int]:
    """The store's pages by what they hold: episodes, raw outputs, FTS, free pages, other tables."""
    parts: dict[str, int] = {}
    for name, size in db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
        part = ("raw outputs" if name.startswith("raw_") else "full-text index" if name.startswith("episodes_fts")
                else "episodes" if name.startswith("episodes") or name.startswith("sqlite_autoindex_episodes")
                else "other tables")
        parts[part] = parts.get(part, 0) + int(size)
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    parts["free pages"] = int(db.execute("PRAGMA freelist_count").fetchone()[0]) * int(page_size)
    return parts


@dataclass
class Plan:
    """What a gc would do, and the sizes it decided by."""

    budget: int
    used: int  # bytes on disk under the data dir now
    projected: int  # what would remain, as far as the store's own accounting can tell
    incomplete_raw: list[str] = field(default_factory=list)
    old_quarantine: list[str] = field(default_factory=list)
    expire_raw: list[tuple[str, int]] = field(default_factory=list)  # (raw output id, bytes)
    expire_vectors: list[int] = field(default_factory=list)  # episode ids

    @property
    def empty(self) -> bool:
        return not (self.incomplete_raw or self.old_quarantine or self.expire_raw or self.expire_vectors)


def plan(db: sqlite3.Connection, data_dir: str, *, budget: int, now: float | None = None) -> Plan:
    """Decide, without changing anything, what gc would remove to bring the data dir under `budget`."""
    now = time.time() if now is None else now
    used = sum(file_sizes(data_dir).values())
    page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
    projected = used - int(db.execute("PRAGMA freelist_count").fetchone()[0]) * page_size
    result = Plan(budget=budget, used=used, projected=projected)
    result.old_quarantine = _old_quarantine(os.path.join(data_dir, "quarantine"), now)
    projected -= sum(_size(path) for path in result.old_quarantine)
    for raw_id, size in db.execute(
        f"""SELECT r.id, {_RAW_BYTES} FROM raw_outputs r WHERE r.complete = 0 AND r.expired_at IS NULL
            AND r.created_at < ? AND {_NOT_LIVE} ORDER BY r.created_at""", (now - INCOMPLETE_GRACE_SECONDS,)):
        result.incomplete_raw.append(raw_id)
        projected -= int(size)
    if projected > budget:
        swept = set(result.incomplete_raw)
        for raw_id, size in db.execute(
            f"""SELECT r.id, {_RAW_BYTES} FROM raw_outputs r WHERE r.expired_at IS NULL AND {_NOT_LIVE}
                AND (EXISTS (SELECT 1 FROM episodes e WHERE e.raw_output_id = r.id AND e.state = 'archived')
                     OR (r.created_at < ? AND NOT EXISTS (SELECT 1 FROM episodes e WHERE e.raw_output_id = r.id)))
                ORDER BY r.created_at, r.id""", (now - INCOMPLETE_GRACE_SECONDS,)):
            if projected <= budget:
                break
            if raw_id in swept or not size:
                continue
            result.expire_raw.append((raw_id, int(size)))
            projected -= int(size)
    if projected > budget:
        # The bytes alone were not enough: the expired episodes' vectors go too (their size is Chroma's to
        # know, so the projection does not count them).
        expiring = [raw_id for raw_id, _ in result.expire_raw]
        result.expire_vectors = [int(row[0]) for row in db.execute(
            f"""SELECT e.id FROM episodes e JOIN raw_outputs r ON r.id = e.raw_output_id
                WHERE e.state = 'archived' AND e.vectors_expired_at IS NULL
                AND (r.expired_at IS NOT NULL OR r.id IN ({', '.join('?' for _ in expiring)}))
                ORDER BY e.created_at, e.id""", expiring)]
    result.projected = projected
    return result


_RAW_BYTES = "coalesce((SELECT sum(length(c.data)) FROM raw_chunks c WHERE c.raw_output_id = r.id), 0)"
_NOT_LIVE = "NOT EXISTS (SELECT 1 FROM episodes e WHERE e.raw_output_id = r.id AND e.state = 'live')"


@dataclass
class Outcome:
    expired_raw: int
    swept_incomplete: int
    removed_quarantine: int
    expired_vectors: int
    vacuumed: bool
    used_after: int
    notes: list[str] = field(default_factory=list)


def apply(db: sqlite3.Connection, planned: Plan, data_dir: str, *, now: float | None = None) -> Outcome:
    """Carry out a plan, one raw output per transaction (a hook waits at most one of them), then vacuum.

    Each step checks again that no live episode holds what it removes: a window may have resumed since.
    """
    now = time.time() if now is None else now
    expired = sum(_expire_raw(db, raw_id, now) for raw_id, _ in planned.expire_raw)
    swept = sum(_expire_raw(db, raw_id, now) for raw_id in planned.incomplete_raw)
    removed = 0
    for path in planned.old_quarantine:
        try:
            os.unlink(path)
            removed += 1
        except FileNotFoundError:
            pass
    vectors = 0
    if planned.expire_vectors:
        with write_transaction(db):
            claimed = int(db.execute("SELECT claimed_upto FROM vector_progress").fetchone()[0])
            for episode_id in planned.expire_vectors:
                if db.execute("UPDATE episodes SET vectors_expired_at = ? WHERE id = ? AND state = 'archived'"
                              " AND vectors_expired_at IS NULL", (now, episode_id)).rowcount:
                    vectors += 1
                    if episode_id <= claimed:
                        db.execute("INSERT OR IGNORE INTO vector_removals VALUES (?)", (episode_id,))
    notes: list[str] = []
    vacuumed = False
    if expired or swept:
        vacuumed = _vacuum(db, notes)
    return Outcome(expired, swept, removed, vectors, vacuumed, sum(file_sizes(data_dir).values()), notes)


def _expire_raw(db: sqlite3.Connection, raw_id: str, now: float) -> int:
    with write_transaction(db):
        live = db.execute("SELECT 1 FROM episodes WHERE raw_output_id = ? AND state = 'live' LIMIT 1",
                          (raw_id,)).fetchone()
        if live is not None:
            return 0
        db.execute("DELETE FROM raw_chunks WHERE raw_output_id = ?", (raw_id,))
        changed = db.execute("UPDATE raw_outputs SET expired_at = ? WHERE id = ? AND expired_at IS NULL",
                             (now, raw_id)).rowcount
        db.execute(f"UPDATE episodes SET summary = summary || ' {RAW_EXPIRED}' WHERE raw_output_id = ?"
                   f" AND summary NOT LIKE '%{RAW_EXPIRED}'", (raw_id,))
        # Its words leave the raw index at the next catch-up (`codeoid.store.context_index`).
        db.execute("INSERT OR IGNORE INTO context_dirty SELECT id FROM episodes WHERE raw_output_id = ?", (raw_id,))
    return int(changed)


def _vacuum(db: sqlite3.Connection, notes: list[str]) -> bool:
    """Give the freed pages back to the file system; a busy store only postpones it."""
    try:
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError as error:
        notes.append(f"vacuum postponed ({error}); the freed space is reused by the store until then")
        return False
    return True


def collect(db: sqlite3.Connection, data_dir: str) -> Outcome | None:
    """One automatic pass (the MCP server's background gc): apply the plan when there is anything to do."""
    planned = plan(db, data_dir, budget=disk_budget())
    return None if planned.empty else apply(db, planned, data_dir)


@dataclass
class Forgotten:
    episode_ids: list[int]
    raw_outputs: int
    vacuumed: bool
    notes: list[str] = field(default_factory=list)


def forget(db: sqlite3.Connection, episode_ids: list[int], *, vacuum: bool = False,
           now: float | None = None) -> Forgotten:
    """Delete the episodes' content for good, leaving tombstones; see the module docstring."""
    now = time.time() if now is None else now
    db.execute("PRAGMA secure_delete = ON")  # freed pages are overwritten, not merely unlinked
    marks = ", ".join("?" for _ in episode_ids)
    with write_transaction(db):
        rows = db.execute(f"SELECT id, raw_output_id FROM episodes WHERE id IN ({marks}) AND forgotten_at IS NULL"
                          " ORDER BY id", episode_ids).fetchall()
        claimed = int(db.execute("SELECT claimed_upto FROM vector_progress").fetchone()[0])
        raw_ids = [raw_id for _, raw_id in rows if raw_id]
        for raw_id in raw_ids:
            db.execute("DELETE FROM raw_chunks WHERE raw_output_id = ?", (raw_id,))
            db.execute("DELETE FROM raw_output_reads WHERE raw_output_id = ?", (raw_id,))
            db.execute("DELETE FROM raw_outputs WHERE id = ?", (raw_id,))
        for episode_id, _ in rows:
            # The update trigger takes the old text out of the FTS index (when it was indexed at all).
            db.execute(
                """UPDATE episodes SET text = '', input = NULL, command = NULL, original_command = NULL, wrapper = NULL,
                   cut = NULL,
                   response = NULL, paths = NULL, transcript_uuid = NULL, raw_output_id = NULL,
                   summary = ?, token_estimate = 0, forgotten_at = ? WHERE id = ?""",
                (FORGOTTEN, now, episode_id))
            if episode_id <= claimed:
                db.execute("INSERT OR IGNORE INTO vector_removals VALUES (?)", (episode_id,))
        # The neighbour index holds copies of the text in the rows around each one: rebuilt now, not at the
        # next search.
        context_index.rebuild_around(db, [int(episode_id) for episode_id, _ in rows])
        # The prebuilt workspace index (and what each window was shown of it) may quote the text in a topic or a
        # session's one-liner: dropped, for the builder to make again from what is left.
        workspaces = f"SELECT DISTINCT workspace_id FROM episodes WHERE id IN ({marks})"
        db.execute(f"DELETE FROM workspace_index WHERE workspace_id IN ({workspaces})", episode_ids)
        db.execute(f"DELETE FROM workspace_index_views WHERE workspace_id IN ({workspaces})", episode_ids)
        session_titles.refresh_titles(db, session_titles.sessions_of(db, [int(episode_id) for episode_id, _ in rows]))
    notes: list[str] = []
    if rows:
        with write_transaction(db):
            # FTS5 deletes add tombstones to new segments; merging them all drops the old terms for good.
            db.execute("INSERT INTO episodes_fts(episodes_fts) VALUES ('optimize')")
            db.execute("INSERT INTO episodes_context(episodes_context) VALUES ('optimize')")
            db.execute("INSERT INTO raw_context(raw_context) VALUES ('optimize')")
    # Asked for, a vacuum runs even when nothing was left to forget: `forget --vacuum` after a `forget` is how the
    # free pages the first one left are given back.
    vacuumed = _vacuum(db, notes) if vacuum else False
    if rows and not vacuumed:
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # old page images in the WAL still hold the text
        except sqlite3.OperationalError as error:
            notes.append(f"the write-ahead log could not be truncated yet ({error})")
    return Forgotten([int(episode_id) for episode_id, _ in rows], len(raw_ids), vacuumed, notes)


def _old_quarantine(directory: str, now: float) -> list[str]:
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    # A corrupt database moved aside may be the only copy of a whole history: only the user removes one.
    return sorted(entry.path for entry in entries
                  if entry.is_file(follow_symlinks=False) and not entry.name.startswith("store-")
                  and now - entry.stat(follow_symlinks=False).st_mtime > QUARANTINE_GRACE_SECONDS)


def _tree_size(path: str) -> int:
    if not os.path.isdir(path) or os.path.islink(path):
        return _size(path)
    total = 0
    for root, _dirs, files in os.walk(path):
        total += sum(_size(os.path.join(root, name)) for name in files)
    return total


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0
