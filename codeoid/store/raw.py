"""Raw outputs: the exact stdout bytes of a command whose output the model saw only compressed.

Stdout is stored in fixed-size chunks as it streams, each chunk committed before anything derived from it
is printed, so memory stays constant and a crash keeps what was already read. A chunk is stored zstd-compressed
(`codec = 'zstd'`) when that makes it smaller, so the disk budget holds more; chunks from before compression
(`codec` NULL) read back as they are. The id is known before the
tool-call episode exists: it is derived from the `tool_use_id`, or fresh for a by-hand run.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass

from codeoid.store.db import write_transaction

CHUNK_BYTES = 1 << 20
# How much of a raw output's head is searched: its words in BM25 (`codeoid.store.context_index`) and its lines when a
# recall hit chooses what to show (`codeoid.memory.line_choice`). A 100 MB log costs the index and recall this much;
# its later lines are paged with get_episode.
SEARCHED_BYTES = 1 << 20


def raw_output_id_for(tool_use_id: str | None) -> str:
    return f"raw-{tool_use_id}" if tool_use_id else f"raw-{os.urandom(16).hex()}"


@dataclass(frozen=True)
class RawOutput:
    id: str
    command: str
    cwd: str | None
    exit_status: int | None
    duration_ms: int | None
    stdout_size: int
    stderr: bytes | None
    complete: bool
    tool_use_id: str | None
    session_id: str | None
    workspace_id: int | None
    created_at: float
    expired_at: float | None = None  # set when retention dropped the bytes (the metadata stays)


class RawOutputWriter:
    """Streams stdout into the store chunk by chunk; `finish` records exit status and duration."""

    def __init__(self, db: sqlite3.Connection, raw_id: str, *, command: str, cwd: str | None = None,
                 tool_use_id: str | None = None, session_id: str | None = None,
                 workspace_id: int | None = None) -> None:
        self.db = db
        self.id = raw_id
        self.size = 0
        self._seq = 0
        self._pending = bytearray()
        with write_transaction(db):
            db.execute(
                "INSERT INTO raw_outputs (id, workspace_id, session_id, tool_use_id, command, cwd, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (raw_id, workspace_id, session_id, tool_use_id, command, cwd, time.time()),
            )

    def write(self, data: bytes) -> None:
        self._pending += data
        while len(self._pending) >= CHUNK_BYTES:
            self._flush(bytes(self._pending[:CHUNK_BYTES]))
            del self._pending[:CHUNK_BYTES]

    def flush(self) -> None:
        """Commit whatever is buffered, so it is stored before the caller prints anything derived from it."""
        if self._pending:
            self._flush(bytes(self._pending))
            self._pending.clear()

    def finish(self, *, exit_status: int | None, duration_ms: int | None, stderr: bytes | None = None) -> None:
        self.flush()
        with write_transaction(self.db):
            self.db.execute(
                "UPDATE raw_outputs SET exit_status = ?, duration_ms = ?, stderr = ?, complete = 1 WHERE id = ?",
                (exit_status, duration_ms, stderr, self.id),
            )

    def _flush(self, chunk: bytes) -> None:
        data, codec = _pack(chunk)
        with write_transaction(self.db):
            self.db.execute(
                "INSERT INTO raw_chunks (raw_output_id, seq, data, codec) VALUES (?, ?, ?, ?)",
                (self.id, self._seq, data, codec),
            )
            self.db.execute(
                "UPDATE raw_outputs SET stdout_size = stdout_size + ? WHERE id = ?", (len(chunk), self.id)
            )
        self._seq += 1
        self.size += len(chunk)


def store_raw_output(db: sqlite3.Connection, raw_id: str, *, command: str, stdout: bytes,
                     exit_status: int | None = None, duration_ms: int | None = None,
                     stderr: bytes | None = None, cwd: str | None = None, tool_use_id: str | None = None,
                     session_id: str | None = None, workspace_id: int | None = None) -> RawOutput:
    """Store a whole output at once (the streaming writer underneath, so large outputs are chunked too)."""
    writer = RawOutputWriter(db, raw_id, command=command, cwd=cwd, tool_use_id=tool_use_id,
                             session_id=session_id, workspace_id=workspace_id)
    view = memoryview(stdout)
    for start in range(0, len(view), CHUNK_BYTES):
        writer.write(bytes(view[start:start + CHUNK_BYTES]))
    writer.finish(exit_status=exit_status, duration_ms=duration_ms, stderr=stderr)
    found = get_raw_output(db, raw_id)
    assert found is not None
    return found


def insert_raw_output(db: sqlite3.Connection, raw_id: str, *, command: str, stdout: bytes, cwd: str | None,
                      tool_use_id: str | None, session_id: str | None, workspace_id: int | None,
                      exit_status: int | None, rule: str | None, shown_size: int | None) -> None:
    """Store a whole, complete output inside the caller's write transaction, with what the model was shown
    instead of it for the savings ledger (`rule`, `shown_size`): the after-the-fact compression of PostToolUse
    stores the output and the tool call's episode in one commit, before it answers. A result Claude Code saved to
    a file and codeoid read back whole is stored the same way with no rule and no shown size (nothing of codeoid's
    reached the window: the ledger claims no saving for it)."""
    db.execute(
        "INSERT INTO raw_outputs (id, workspace_id, session_id, tool_use_id, command, cwd, exit_status, stdout_size,"
        " complete, rule, shown_size, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
        (raw_id, workspace_id, session_id, tool_use_id, command, cwd, exit_status, len(stdout), rule, shown_size,
         time.time()),
    )
    view = memoryview(stdout)
    for seq, start in enumerate(range(0, len(view), CHUNK_BYTES)):
        data, codec = _pack(bytes(view[start:start + CHUNK_BYTES]))
        db.execute("INSERT INTO raw_chunks (raw_output_id, seq, data, codec) VALUES (?, ?, ?, ?)",
                   (raw_id, seq, data, codec))


def get_raw_output(db: sqlite3.Connection, raw_id: str) -> RawOutput | None:
    row = db.execute(
        "SELECT id, command, cwd, exit_status, duration_ms, stdout_size, stderr, complete, tool_use_id,"
        " session_id, workspace_id, created_at, expired_at FROM raw_outputs WHERE id = ?",
        (raw_id,),
    ).fetchone()
    if row is None:
        return None
    return RawOutput(row[0], row[1], row[2], row[3], row[4], row[5], row[6], bool(row[7]), row[8], row[9],
                     row[10], row[11], row[12])


def iter_raw_stdout(db: sqlite3.Connection, raw_id: str) -> Iterator[bytes]:
    """The stdout bytes in order, one chunk at a time (constant memory however large the output)."""
    seq = 0
    while True:
        row = db.execute(
            "SELECT data, codec FROM raw_chunks WHERE raw_output_id = ? AND seq = ?", (raw_id, seq)
        ).fetchone()
        if row is None:
            return
        yield _unpack(bytes(row[0]), row[1])
        seq += 1


def read_raw_stdout(db: sqlite3.Connection, raw_id: str) -> bytes:
    return b"".join(iter_raw_stdout(db, raw_id))


def read_text_head(db: sqlite3.Connection, raw_id: str, limit: int) -> tuple[str, bool] | None:
    """The whole lines of a raw output's stdout within its first `limit` bytes, as text the way `get_episode` shows
    it (bytes that are not UTF-8 as `\\xNN`), and whether that is all of it; None when it or its bytes are gone."""
    found = get_raw_output(db, raw_id)
    return text_head(db, found, limit) if found is not None else None


def text_head(db: sqlite3.Connection, found: RawOutput, limit: int) -> tuple[str, bool] | None:
    """`read_text_head` of a raw output already looked up."""
    if found.expired_at is not None:
        return None
    data = bytearray()
    for chunk in iter_raw_stdout(db, found.id):
        data += chunk
        if len(data) > limit:
            del data[data.rfind(b"\n", 0, limit + 1) + 1:]
            return _as_shown(bytes(data)), False
    return _as_shown(bytes(data)), True


def cut_head(db: sqlite3.Connection, raw_id: str, text: str) -> tuple[str, bool] | None:
    """The searched head (`SEARCHED_BYTES`) of the raw output behind an episode whose stored `text` compression
    made from it, as `get_episode` shows it, and whether that is all of it; None when its bytes are gone, or when
    no rule cut it (the text is the whole output)."""
    found = get_raw_output(db, raw_id)
    if found is None or found.stdout_size == len(text.encode("utf-8", "surrogatepass")):
        return None
    return text_head(db, found, SEARCHED_BYTES)


def _as_shown(data: bytes) -> str:
    """Decoded whole, bytes that are not UTF-8 as the `\\xNN` get_episode shows line by line: a newline byte is
    never inside a UTF-8 sequence, so each line comes out as it does alone."""
    return data.decode("utf-8", "backslashreplace")


ZSTD_LEVEL = 3  # zstd's own default: fast enough to stay off the command's way


def _pack(chunk: bytes) -> tuple[bytes, str | None]:
    """The chunk as stored: zstd-compressed when that is smaller, else as it is."""
    import zstandard  # only when an output is archived: hooks never pay for it

    packed = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(chunk)
    return (packed, "zstd") if len(packed) < len(chunk) else (chunk, None)


def _unpack(data: bytes, codec: str | None) -> bytes:
    if codec is None:
        return data
    if codec != "zstd":
        raise ValueError(f"raw chunk stored with an unknown codec {codec!r}")
    import zstandard

    return zstandard.ZstdDecompressor().decompress(data, max_output_size=CHUNK_BYTES)
