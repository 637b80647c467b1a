"""Carry one command's stdout to its reader: raw bytes into the store first, then compressed text out.

The order is what makes compression lossless. Every chunk is committed to the store *before* the engine sees it,
so anything the engine prints (or leaves out) is already archived; when the store fails, the engine has not seen
the failing chunk, and the relay can hand over exactly: the raw bytes the engine still holds, that chunk, and
everything after it, unchanged. The same hand-over serves an engine error and a signal.

An output that stays within the engine's hold (256 KiB by default) is not archived unless it is compressed: a
small output passes through unchanged, the model sees it whole in the tool result, and the store keeps it there.

When the archive is closed (or a signal cuts the run short), the relay records for the savings ledger the rule
that removed lines and how many bytes it printed; a store that refuses that write costs the ledger its entry
(the run then counts as saving nothing), never the command its output.

The relay writes with `os.write` to a descriptor so a closed reader (EPIPE) only stops the printing: the relay
keeps reading, so the command writing into it never dies of a broken pipe.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable

from codeoid.compressors.engine import MARKER, Compressor, Thresholds, footer
from codeoid.compressors.rules import Rule
from codeoid.log import log
from codeoid.store import db as store_db
from codeoid.store.ledger import record_shown
from codeoid.store.raw import RawOutputWriter

# Engine verdicts under which `finish()` returned the raw bytes themselves.
UNCHANGED = frozenset({"below threshold", "not smaller"})
DEFAULT_THRESHOLDS = Thresholds()


class RawOutputSpec:
    """What the archived row says besides the bytes: the id, the command and where it ran."""

    __slots__ = ("command", "cwd", "project_dir", "raw_id", "tool_use_id")

    def __init__(self, raw_id: str, command: str, cwd: str, project_dir: str, tool_use_id: str | None) -> None:
        self.raw_id = raw_id
        self.command = command
        self.cwd = cwd
        self.project_dir = project_dir
        self.tool_use_id = tool_use_id


class Relay:
    """`feed` each chunk as read, then `finish` (or `interrupt` on a signal); output goes to `sink`."""

    def __init__(self, rule: Rule, spec: RawOutputSpec, *, sink: int = 1,
                 thresholds: Thresholds = DEFAULT_THRESHOLDS,
                 open_store: Callable[[], sqlite3.Connection] = store_db.connect) -> None:
        self.rule = rule
        self.spec = spec
        self.sink = sink
        self.thresholds = thresholds
        self.started = time.monotonic()
        self._open_store = open_store
        self._compressor = Compressor(rule, thresholds)
        self._held: list[bytes] = []  # raw bytes the engine holds and the store does not have yet
        self._held_size = 0
        self._db: sqlite3.Connection | None = None
        self._writer: RawOutputWriter | None = None
        self.archived = False  # a raw output row exists (complete or not)
        self._derived = False  # the engine streamed with the archive behind it: the footer must name it
        self._raw = False  # everything from here on is copied unchanged
        self._sink_open = True
        self._ends_with_newline = True
        self.shown_size = 0  # bytes printed for the reader, for the savings ledger

    def feed(self, chunk: bytes) -> None:
        if self._writer is not None and not self._archive(chunk):
            self._hand_over(chunk)
            return
        if self._raw:
            self._emit(chunk)
            return
        if self._writer is None:
            if self._held_size + len(chunk) <= self.thresholds.hold_bytes:
                self._held.append(chunk)
                self._held_size += len(chunk)
            elif self.archived or not self._start_archive([*self._held, chunk]):
                self._hand_over(chunk)
                return
            else:
                self._held, self._held_size = [], 0
        taken = self._compressor.result.raw_bytes
        try:
            out = self._compressor.feed(chunk)
        except Exception as error:  # noqa: BLE001 - any engine failure: the rest goes through unchanged
            log("compress", f"{self.spec.raw_id}: engine failed ({error!r}); the rest passes through")
            # A chunk the engine never counted is still ours to pass on; one it took is its to hand back.
            self._hand_over(chunk if self._compressor.result.raw_bytes == taken else b"")
            return
        self._emit_derived(out)

    def finish(self, *, exit_status: int | None) -> None:
        """End of input: the engine's last output, the archive's closing facts, and the footer."""
        if not self._raw:
            try:
                out = self._compressor.finish()
            except Exception as error:  # noqa: BLE001
                log("compress", f"{self.spec.raw_id}: engine failed at the end ({error!r}); the rest passes through")
                self._hand_over(b"")
            else:
                passthrough = self._compressor.result.passthrough
                if passthrough in UNCHANGED:
                    self._emit(out)
                elif self.archived or self._start_archive(self._held):
                    self._emit_derived(out)
                else:
                    self._emit(b"".join(self._held))  # compressed but not archived: the raw held bytes instead
        closing = self._footer_bytes(self._compressor.result.describe()) if self._derived else b""
        self._close_archive(exit_status, shown_size=self.shown_size + len(closing))
        self._emit(closing)

    def interrupt(self) -> None:
        """SIGTERM/SIGINT: write what the engine still holds, raw, at once; keep what is archived."""
        if not self._raw:
            self._hand_over(b"")
        if self._writer is not None:
            try:
                self._writer.flush()
            except (store_db.StoreUnavailable, sqlite3.Error):
                pass
        if self._derived:
            self._emit(self._footer_bytes("interrupted; what was left out is archived"))
        if self._db is not None:
            try:
                record_shown(self._db, self.spec.raw_id, rule=self._rule_applied(), shown_size=self.shown_size)
            except (store_db.StoreUnavailable, sqlite3.Error):
                pass  # the ledger then counts this run as saving nothing; the output is what matters now

    # -- archive -------------------------------------------------------------------------------------------------

    def _start_archive(self, chunks: Iterable[bytes]) -> bool:
        """Create the raw output and commit `chunks` to it; False (nothing printed yet) when the store says no."""
        try:
            db = self._open_store()
        except (store_db.StoreUnavailable, sqlite3.Error, OSError) as error:
            log("compress", f"{self.spec.raw_id}: store unavailable ({error}); output passes through unchanged")
            return False
        try:
            writer = RawOutputWriter(db, self.spec.raw_id, command=self.spec.command, cwd=self.spec.cwd,
                                     tool_use_id=self.spec.tool_use_id,
                                     workspace_id=_workspace_id(db, self.spec.project_dir))
        except (store_db.StoreUnavailable, sqlite3.Error, OSError) as error:
            log("compress", f"{self.spec.raw_id}: cannot archive ({error}); output passes through unchanged")
            db.close()
            return False
        self._db, self._writer, self.archived = db, writer, True
        return all(self._archive(chunk) for chunk in chunks)

    def _archive(self, chunk: bytes) -> bool:
        """Commit one chunk; on failure the archive is closed incomplete and stays that way."""
        assert self._writer is not None and self._db is not None
        try:
            self._writer.write(chunk)
            self._writer.flush()
        except (store_db.StoreUnavailable, sqlite3.Error, OSError) as error:
            log("compress", f"{self.spec.raw_id}: archive failed mid-stream ({error}); the rest passes through")
            self._db.close()
            self._db = self._writer = None
            return False
        return True

    def _close_archive(self, exit_status: int | None, *, shown_size: int) -> None:
        """Mark the archive complete and record for the ledger what the reader is shown instead of it."""
        if self._writer is None or self._db is None:
            return
        try:
            self._writer.finish(exit_status=exit_status,
                                duration_ms=int((time.monotonic() - self.started) * 1000))
            record_shown(self._db, self.spec.raw_id, rule=self._rule_applied(), shown_size=shown_size)
        except (store_db.StoreUnavailable, sqlite3.Error, OSError) as error:
            log("compress", f"{self.spec.raw_id}: could not close the archive ({error})")
        finally:
            self._db.close()
            self._db = self._writer = None

    # -- output --------------------------------------------------------------------------------------------------

    def _hand_over(self, chunk: bytes) -> None:
        """From now on raw: what the engine holds, then `chunk`, then every later chunk unchanged."""
        self._raw = True
        try:
            held = list(self._compressor.abandon())
        except Exception as error:  # noqa: BLE001 - the engine cannot even say what it holds: use our copy
            log("compress", f"{self.spec.raw_id}: engine could not hand over ({error!r})")
            held = list(self._held)
        self._held, self._held_size = [], 0
        for data in held:
            self._emit(data)
        self._emit(chunk)

    def _rule_applied(self) -> str | None:
        """The rule's name when it left lines out; None when the output went through whole (passed through)."""
        return self.rule.name if self._compressor.result.lines_removed else None

    def _footer_bytes(self, description: str) -> bytes:
        newline = b"" if self._ends_with_newline else b"\n"
        return newline + MARKER + footer(self.spec.raw_id, description).encode("utf-8", "surrogateescape") + b"\n"

    def _emit_derived(self, data: bytes) -> None:
        """The engine's output (possibly empty: it may hold or omit lines); once the archive exists, whatever is
        printed from here on may leave lines out, so the footer must name the archive."""
        self._derived = self._derived or self.archived
        self._emit(data)

    def _emit(self, data: bytes) -> None:
        if not data:
            return
        self.shown_size += len(data)
        self._ends_with_newline = data.endswith(b"\n")
        if not self._sink_open:
            return
        view = memoryview(data)
        try:
            while view:
                written = os.write(self.sink, view)
                view = view[written:]
        except BrokenPipeError:
            self._sink_open = False  # nobody reads any more; keep consuming so the writer never gets SIGPIPE
        except OSError as error:
            log("compress", f"{self.spec.raw_id}: cannot write output ({error}); still consuming input")
            self._sink_open = False


def _workspace_id(db: sqlite3.Connection, project_dir: str) -> int:
    from codeoid.store.capture import ensure_workspace
    from codeoid.workspace import identify

    with store_db.write_transaction(db):
        return ensure_workspace(db, identify(project_dir), time.time())
