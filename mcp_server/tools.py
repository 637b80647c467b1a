"""The four memory tools as plain functions over the store: arguments checked, results as bounded text.

Each call opens the store afresh (hooks and other sessions write to it all the time, and a short-lived
connection always reads their latest commits), lands any spooled events first, and closes it again.
A failure the caller can act on is raised as `ToolError` with a sentence saying what to do; the SDK turns
it into an `isError` result without a traceback.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from codeoid import exclusions
from codeoid.capture import ingest
from codeoid.fork.lineage import lineage_notes
from codeoid.log import log
from codeoid.mcp_server.pages import (
    Page,
    Utf8Escaper,
    byte_lines,
    byte_size,
    estimate_tokens,
    output_budget,
    page_lines,
    share_budget,
    split_lines,
)
from codeoid.memory import retrieval
from codeoid.store import db as store_db
from codeoid.store import ledger, queries, raw
from codeoid.store.queries import Row
from codeoid.text import one_line
from codeoid.workspace import identify

TYPE_CHECKING = False
if TYPE_CHECKING:
    from codeoid.memory.vector_index import Hit

MAX_RECALL_LIMIT = 50
MAX_TIMELINE_LIMIT = 200
INPUT_PREVIEW_CHARS = 500
RECALL_COMMAND_CHARS = 500
EPISODE_COMMAND_CHARS = 4000
RETRACTED = ("{what} was retracted by the user (`codeoid retract`): it is kept but not shown. Do not try to "
             "reconstruct it; ask the user if you need what it held.")
# Room kept per recalled episode for its header and cut note, beyond the text itself.
EPISODE_FRAME_BYTES = 400


class MemoryTools:
    """The tools of one server process, bound to the workspace of the project it was started in."""

    def __init__(self, project_dir: str) -> None:
        self.project_dir = os.path.realpath(project_dir)
        self.root = os.path.realpath(identify(self.project_dir).root)

    def recall(
        self,
        query: Annotated[str, Field(description="Words to look for: names, error text, file names, topics.")],
        limit: Annotated[int, Field(description="At most this many episodes.", ge=1, le=MAX_RECALL_LIMIT)] = 6,
    ) -> str:
        """Search this workspace's stored history (every session, archived turns included) and return the
        best-matching episodes verbatim: user prompts, assistant messages, tool calls with their full results.
        Any of the words may match (BM25). Episodes still in your current context window are skipped. Long
        episodes are cut; each cut names the get_episode call that shows the rest."""
        if not query.strip():
            raise ToolError("The query is empty: pass the words to look for, e.g. recall(query=\"busy timeout\").")
        if queries.any_term_query(query) is None:
            raise ToolError(f"The query {query!r} has no words to search for (letters or digits).")
        with self._store() as db:
            workspace_id = queries.workspace_id_for(db, self.project_dir)
            if workspace_id is None:
                return self._nothing_stored()
            caller = self._caller(db)
            found = retrieval.recall_ranked(db, query, workspace_id=workspace_id, limit=limit, skip_live_of=caller)
            notes = lineage_notes(db, caller, found.rows)
        rows, shared = found.rows, found.shared
        skipped = "; episodes still in your current window are skipped" if caller else ""
        fallback = f" BM25 only: {found.fallback}." if found.fallback else ""
        if not rows and not shared:
            return f"No stored episode in this workspace ({self.root}) matches {query!r}{skipped}.{fallback}"
        head = (f"recall {query!r}: {len(rows)} episode{'s' if len(rows) != 1 else ''} from {self.root}, best first "
                f"({found.signals}, any word; archived included{skipped}).{fallback}")
        budget = output_budget()
        shared_budget = budget * len(shared) // (len(rows) + len(shared))
        parts = [_fit_episodes(head, rows, budget - shared_budget, notes) if rows else head]
        if shared:
            parts.append(_shared_text(shared, shared_budget))
        return "\n\n".join(parts)

    def recall_file(
        self,
        path: Annotated[str, Field(description="The file, absolute or relative to the project directory.")],
    ) -> str:
        """Return the most recent stored read of a file in this workspace, verbatim (a Read result, also a
        partial one, or the output of `cat <file>`), and whether the file changed on disk since then."""
        wanted = self._workspace_path(path)
        shown = os.path.relpath(wanted, self.root)
        with self._store() as db:
            workspace_id = queries.workspace_id_for(db, self.project_dir)
            found = None
            if workspace_id is not None:
                found = retrieval.latest_file_read(db, workspace_id, wanted, default_cwd=self.project_dir)
            if found is not None:
                caller = self._caller(db)
                text = _file_read_text(found, wanted, shown, in_window=caller is not None
                                       and found.backing_session_id == caller and found.state == "live")
                if found.raw_output_id is not None:
                    self._charge_back(db, found.raw_output_id, text, reader="recall_file")
                return text
        on_disk = f"It is on disk now ({os.path.getsize(wanted):,} bytes)." if os.path.isfile(wanted) else (
            "It does not exist on disk now.")
        return (f"No stored read of {shown} in this workspace (Read results and `cat {shown}` outputs are "
                f"searched). {on_disk}")

    def timeline(
        self,
        offset: Annotated[int, Field(description="Episodes to skip from the newest end; 0 is the newest page.",
                                     ge=0)] = 0,
        limit: Annotated[int, Field(description="Episodes on the page.", ge=1, le=MAX_TIMELINE_LIMIT)] = 50,
    ) -> str:
        """List this workspace's history, one line per episode (id, time, kind, summary), oldest first within
        the page. offset 0 is the newest page; pass offset=50 for the 50 before it, and so on."""
        with self._store() as db:
            workspace_id = queries.workspace_id_for(db, self.project_dir)
            if workspace_id is None:
                return self._nothing_stored()
            total = queries.count_episodes(db, workspace_id=workspace_id)
            if offset and offset >= total:
                raise ToolError(f"offset {offset} is past the start of the history: this workspace has {total} "
                                "episodes. Use a smaller offset (0 is the newest page).")
            rows = queries.timeline(db, workspace_id=workspace_id, offset=offset, limit=limit)
        return _timeline_text(rows, total=total, offset=offset, limit=limit, root=self.root, budget=output_budget())

    def get_episode(
        self,
        episode_id: Annotated[int | str, Field(description="An episode id such as 42, or a raw output id raw-...")],
        start_line: Annotated[int | None, Field(description="First line to show (1-based).", ge=1)] = None,
        end_line: Annotated[int | None, Field(description="Last line to show (inclusive).", ge=1)] = None,
    ) -> str:
        """Show one stored episode (its fields, then its text) or raw output (a command's exact stdout before
        compression), paged by line range. Results are capped; the end says which start_line comes next."""
        if start_line is not None and end_line is not None and end_line < start_line:
            raise ToolError(f"end_line {end_line} is before start_line {start_line}.")
        wanted = str(episode_id).strip()
        with self._store() as db:
            workspace_id = queries.workspace_id_for(db, self.project_dir)
            if wanted.startswith("raw-"):
                found = raw.get_raw_output(db, wanted)
                if found is None or workspace_id is None or queries.raw_output_workspace(db, wanted) != workspace_id:
                    raise ToolError(f"No raw output {wanted} in this workspace.")
                if queries.raw_output_retracted(db, wanted):
                    raise ToolError(RETRACTED.format(what=f"Raw output {wanted}"))
                if found.expired_at is not None:
                    raise ToolError(f"Raw output {wanted}: raw expired (its {found.stdout_size:,} bytes were dropped "
                                    "to keep the data dir under its disk budget); the episode's compressed text "
                                    "remains.")
                text = _raw_output_text(db, found, start_line, end_line, output_budget())
                self._charge_back(db, wanted, text, reader="get_episode", start_line=start_line,
                                  end_line=end_line)
                return text
            if not wanted.isdigit():
                raise ToolError(f"{episode_id!r} is not an episode id (a number such as 42) or a raw output id "
                                "(raw-...).")
            row = queries.get_episode(db, int(wanted))
        if row is None or row["workspace_id"] != workspace_id:
            raise ToolError(f"No episode {wanted} in this workspace.")
        if row["state"] == "retracted":
            raise ToolError(RETRACTED.format(what=f"Episode {wanted}"))
        return _episode_text(row, start_line, end_line, output_budget())

    def _charge_back(self, db: sqlite3.Connection, raw_id: str, text: str, *, reader: str,
                     start_line: int | None = None, end_line: int | None = None) -> None:
        """The model pays for what it reads of a raw output: charge it against that output's savings. A busy
        store costs the ledger one entry, never the model its answer."""
        try:
            ledger.charge_read(db, raw_id, text, reader=reader, backing_session_id=self._caller(db),
                               start_line=start_line, end_line=end_line)
        except (store_db.StoreUnavailable, sqlite3.Error) as error:
            log("mcp", f"{raw_id}: read not charged to the savings ledger ({error})")

    def _caller(self, db: sqlite3.Connection) -> str | None:
        return retrieval.caller_backing_session(
            db, parent_pid=os.getppid(), session_env=os.environ.get("CLAUDE_CODE_SESSION_ID")
        )

    def _workspace_path(self, path: str) -> str:
        if not path.strip():
            raise ToolError("The path is empty: pass a file path, absolute or relative to the project directory.")
        resolved = os.path.realpath(os.path.join(self.project_dir, os.path.expanduser(path.strip())))
        if os.path.commonpath([resolved, self.root]) != self.root:
            raise ToolError(f"{path} is outside the workspace ({self.root}); recall_file answers only for files "
                            "inside it.")
        if os.path.isdir(resolved):
            raise ToolError(f"{path} is a directory; recall_file needs a file.")
        return resolved

    def _nothing_stored(self) -> str:
        return f"Nothing is stored for this workspace ({self.root}) yet."

    @contextmanager
    def _store(self) -> Iterator[sqlite3.Connection]:
        excluded = exclusions.excluded_by(self.project_dir)
        if excluded is not None:
            raise ToolError(f"codeoid keeps no memory of this project: the user excluded it ({excluded!r} in "
                            "CODEOID_EXCLUDE_PROJECTS or `codeoid exclude`), so there is nothing to look up.")
        try:
            db = store_db.connect()
        except store_db.StoreUnavailable as error:
            raise ToolError(f"The codeoid store cannot be opened right now ({error}); try again shortly.") from error
        try:
            _land_spooled_events(db)
            yield db
        except sqlite3.OperationalError as error:
            if store_db.is_unavailable(error):
                raise ToolError(f"The codeoid store is busy ({error}); try again shortly.") from error
            raise
        finally:
            db.close()


def _land_spooled_events(db: sqlite3.Connection) -> None:
    """Events the hooks could not write yet (store busy) are in the spool; land them so answers are complete."""
    try:
        ingest.replay_backlog(db)
    except (store_db.StoreUnavailable, store_db.StoreCorrupt):
        pass  # still busy: what is committed is the best answer there is
    except Exception as error:  # noqa: BLE001 - a replay bug must not cost the model its answer
        log("mcp", f"replaying the spool failed: {error!r}")


def _fit_episodes(head: str, rows: list[Row], budget: int, notes: dict[int, str]) -> str:
    """Every hit's header (with its lineage note, in a fork), and its text cut to a fair share of what is left;
    hits whose headers alone would take more than half the budget are named at the end instead."""
    frames = [_episode_header(row, notes.get(row["id"])) for row in rows]
    left_out: list[Row] = []
    while True:
        fixed = byte_size(head) + 2 + sum(byte_size(frame) + EPISODE_FRAME_BYTES for frame in frames)
        if fixed <= budget // 2 or len(frames) == 1:
            break
        frames.pop()
        left_out.insert(0, rows[len(frames)])
    shown = rows[:len(frames)]
    allowances = share_budget([byte_size(row["text"]) + 1 for row in shown], max(budget - fixed, 0))
    parts = [head]
    for row, frame, allowance in zip(shown, frames, allowances, strict=True):
        page = page_lines(split_lines(row["text"]), budget=allowance)
        parts.append(frame + "\n" + _page_body(page, row["id"], escaped_lines=0))
    if left_out:
        parts.append(f"[{len(left_out)} more matching episodes did not fit the output limit: "
                     + ", ".join(str(row["id"]) for row in left_out) + "; get_episode shows each]")
    return "\n\n".join(parts)


def _shared_text(hits: tuple[Hit, ...], budget: int) -> str:
    """Chunks another machine's codeoid put on the shared Chroma server, nearest first. Their episodes are in
    that machine's store, not here: the chunk text is all there is, so no get_episode is offered."""
    head = (f"From other machines sharing this workspace's Chroma server ({len(hits)} chunk"
            f"{'s' if len(hits) != 1 else ''}; text only, their episodes are not in this store):")
    frames = [_shared_header(hit) for hit in hits]
    fixed = byte_size(head) + sum(byte_size(frame) + EPISODE_FRAME_BYTES for frame in frames)
    allowances = share_budget([byte_size(hit.document) + 1 for hit in hits], max(budget - fixed, 0))
    parts = [head]
    for hit, frame, allowance in zip(hits, frames, allowances, strict=True):
        page = page_lines(split_lines(hit.document), budget=allowance)
        cut = "" if page.complete else f"\n[cut at the output limit: lines {page.first}-{page.last} of {page.total}]"
        parts.append(f"{frame}\n-----\n{page.text}\n-----{cut}")
    return "\n\n".join(parts)


def _shared_header(hit: Hit) -> str:
    meta = hit.metadata
    kind = f"tool {meta['tool_name']}" if meta.get("kind") == "tool" and meta.get("tool_name") else meta.get("kind")
    fields = [f"=== shared episode {hit.episode_id} of store {hit.store[:8]}", str(kind or "episode")]
    if isinstance(meta.get("created_at"), int | float):
        fields.append(_time(float(meta["created_at"])))
    fields.append(f"lines {hit.start_line}-{hit.end_line} of the episode")
    fields.append(f"similarity {1 - hit.distance:.2f}")
    return " · ".join(fields) + (f"\nsession: {meta['session_id']}" if meta.get("session_id") else "")


def _episode_header(row: Row, note: str | None = None) -> str:
    kind = f"tool {row['tool_name']}" if row["kind"] == "tool" else row["kind"]
    fields = [f"=== episode {row['id']}", kind, _time(row["created_at"])]
    if row.get("score") is not None:
        fields.append(f"score {row['score']:.3g}")
    if row.get("matched_lines") is not None:
        fields.append("best match lines {}-{}".format(*row["matched_lines"]))
    fields.append(f"~{estimate_tokens(row['text']):,} tokens")
    fields.append(row["state"])
    lines = [" · ".join(fields), f"summary: {row['summary']}", *([f"lineage: {note}"] if note else [])]
    lines.extend(_command_lines(row, command_chars=RECALL_COMMAND_CHARS, with_wrapper=False))
    return "\n".join(lines)


def _command_lines(row: Row, *, command_chars: int, with_wrapper: bool) -> list[str]:
    lines = []
    if row["kind"] == "tool" and row["tool_name"] == "Bash":
        if row["original_command"]:
            lines.append(f"command: {_clip(row['original_command'], command_chars)}")
        if with_wrapper and row["command"] and row["command"] != row["original_command"]:
            lines.append(f"ran as: {_clip(row['command'], command_chars)}")
    elif row["kind"] == "tool" and row["input"]:
        lines.append(f"input: {one_line(row['input'], INPUT_PREVIEW_CHARS)}")
    if row["raw_output_id"]:
        lines.append(f"raw output: {row['raw_output_id']} (the exact stdout before compression: "
                     f"get_episode(\"{row['raw_output_id']}\"))")
    return lines


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit:,} more characters; `codeoid show --json` has them]"


def _page_body(page: Page, item_id: object, *, escaped_lines: int) -> str:
    """The shown lines between rules, then a note on what is not shown and how to get it."""
    body = "-----\n" + page.text + ("\n" if page.lines else "") + "-----"
    notes = []
    if escaped_lines:
        notes.append(f"[{escaped_lines} line{'s' if escaped_lines != 1 else ''} shown here held bytes that are not "
                     f"UTF-8, written as \\xNN escapes; `codeoid show --raw {item_id}` writes the exact bytes]")
    if page.cut_within_line:
        notes.append(f"[line {page.last} is longer than the output limit and only its head is shown; "
                     f"`codeoid show --raw {item_id}` prints it whole; "
                     + (f"next: get_episode(\"{item_id}\", start_line={page.last + 1})]"
                        if page.last < page.wanted_last else "it is the last line asked for]"))
    elif not page.complete:
        notes.append(f"[cut at the output limit: lines {page.first}-{page.last} of {page.total} shown; "
                     f"next: get_episode(\"{item_id}\", start_line={page.last + 1})]")
    return "\n".join([body, *notes])


def _episode_text(row: Row, start_line: int | None, end_line: int | None, budget: int) -> str:
    lines = split_lines(row["text"])
    _check_range(f"episode {row['id']}", len(lines), start_line)
    kind = f"tool {row['tool_name']}" if row["kind"] == "tool" else row["kind"]
    fields = [f"episode {row['id']} · {kind} · {row['state']} · {_time(row['created_at'])}"
              + (f" · turn {row['turn']}" if row["turn"] is not None else ""),
              f"session: {row['session_id']}",
              *_command_lines(row, command_chars=EPISODE_COMMAND_CHARS, with_wrapper=True)]
    if row["kind"] == "tool":
        status = "error" if row["is_error"] else "ok"
        fields.append(f"exit status: {row['exit_status']} ({status})" if row["exit_status"] is not None
                      else f"outcome: {status}")
    fields.append(f"summary: {row['summary']}")
    head = "\n".join(fields)
    start = start_line or 1
    page = page_lines(lines, start=start, end=end_line, budget=budget - byte_size(head) - EPISODE_FRAME_BYTES)
    span = f"text: lines {start}-{page.last} of {page.total}" if page.total else "text: empty"
    return f"{head}\n{span} (~{estimate_tokens(row['text']):,} tokens whole)\n" + _page_body(
        page, row["id"], escaped_lines=0)


def _raw_output_text(db: sqlite3.Connection, found: raw.RawOutput, start_line: int | None, end_line: int | None,
                     budget: int) -> str:
    fields = [f"raw output {found.id} · {_time(found.created_at)}", f"command: {found.command}"]
    if found.cwd:
        fields.append(f"cwd: {found.cwd}")
    fields.append(f"exit status: {found.exit_status}" + ("" if found.complete else " (still running or interrupted)"))
    if found.duration_ms is not None:
        fields.append(f"duration: {found.duration_ms} ms")
    head = "\n".join(fields)
    start = start_line or 1
    escaper = Utf8Escaper()
    stderr = (found.stderr or b"").decode("utf-8", "backslashreplace")
    room = budget - byte_size(head) - EPISODE_FRAME_BYTES - min(byte_size(stderr), budget // 4)
    page = page_lines(byte_lines(raw.iter_raw_stdout(db, found.id)), start=start, end=end_line, budget=room,
                      decode=escaper)
    _check_range(f"raw output {found.id}", page.total, start_line)
    span = f"stdout: {found.stdout_size:,} bytes" + (f", lines {start}-{page.last} of {page.total}" if page.total
                                                     else "")
    text = f"{head}\n{span}\n" + _page_body(page, found.id, escaped_lines=escaper.escaped_lines)
    if stderr and page.last >= page.total:
        stderr_page = page_lines(split_lines(stderr), budget=budget // 4)
        text += "\nstderr:\n" + stderr_page.text
        if not stderr_page.complete:
            text += f"\n[stderr cut at {stderr_page.last} of {stderr_page.total} lines; `codeoid show {found.id}`]"
    return text


def _check_range(what: str, total: int, start_line: int | None) -> None:
    if start_line is not None and start_line > max(total, 1):
        raise ToolError(f"{what} has {total} line{'s' if total != 1 else ''}; start_line {start_line} is past the "
                        "end.")


def _file_read_text(found: retrieval.FileRead, wanted: str, shown: str, *, in_window: bool) -> str:
    lines = [f"Most recent read of {shown}: episode {found.episode_id}, {_read_kind(found)}, {_time(found.read_at)}, "
             f"{found.state}." + (" It is still in your current context window." if in_window else "")]
    disk = retrieval.compare_with_disk(found, wanted)
    if not disk.exists:
        lines.append(f"Changed on disk since this read: {disk.detail}.")
    else:
        assert disk.size is not None and disk.mtime is not None
        stamp = f"{disk.size:,} bytes, modified {_time(disk.mtime)}" + (
            " (after the read)" if disk.modified_after_read else " (before the read)")
        if disk.verdict == "unchanged":
            lines.append(f"Unchanged on disk since this read ({disk.detail}); now {stamp}.")
        else:
            was = f"{len(found.content):,} bytes at the read, " if found.whole else ""
            hashes = (f"; sha256 now {disk.sha256}, at the read {disk.stored_sha256}"
                      if disk.stored_sha256 else "")
            lines.append(f"Changed on disk since this read: {disk.detail} ({was}now {stamp}{hashes}).")
    if not found.whole and found.start_line > 1:
        lines.append(f"Line 1 below is line {found.start_line} of the file.")
    if found.raw_output_id:
        lines.append(f"Shown from raw output {found.raw_output_id}: the exact bytes `{found.command}` printed.")
    head = "\n".join(lines)
    escaper = Utf8Escaper()
    page = page_lines(byte_lines([found.content]), budget=output_budget() - byte_size(head) - EPISODE_FRAME_BYTES,
                      decode=escaper)
    return f"{head}\n" + _page_body(page, found.raw_output_id or found.episode_id,
                                    escaped_lines=escaper.escaped_lines)


def _read_kind(found: retrieval.FileRead) -> str:
    if found.source == "Bash":
        return f"`{found.command}`, which printed the whole file"
    if found.whole:
        return "Read of the whole file"
    of_total = f" of {found.total_lines}" if found.total_lines is not None else ""
    last = found.start_line + max(found.line_count, 1) - 1
    return f"Read, lines {found.start_line}-{last}{of_total} (a partial read)"


def _timeline_text(rows: list[Row], *, total: int, offset: int, limit: int, root: str, budget: int) -> str:
    if not rows:
        return f"Nothing is stored for this workspace ({root}) yet."
    last = total - offset
    first = last - len(rows) + 1
    older = f"older: timeline(offset={offset + limit}, limit={limit})" if first > 1 else "this is the oldest page"
    newer = f"; newer: timeline(offset={max(offset - limit, 0)}, limit={limit})" if offset else ""
    page = "the newest page" if offset == 0 else f"offset {offset} from the newest"
    head = f"Timeline of {root}: episodes {first}-{last} of {total}, oldest first ({page}; {older}{newer})."
    lines = []
    for row in rows:
        kind = f"tool {row['tool_name']}" if row["kind"] == "tool" else row["kind"]
        state = "" if row["state"] == "live" else f"[{row['state']}] "
        lines.append(f"{row['id']:>6}  {_time(row['created_at'])}  {kind:<14} {state}{row['summary']}")
    fitted = page_lines(reversed(lines), budget=budget - byte_size(head) - 200)
    kept = fitted.lines[::-1]
    text = head + "\n" + "\n".join(kept)
    if len(kept) < len(lines):
        text += (f"\n[the oldest {len(lines) - len(kept)} lines of this page did not fit the output limit; "
                 f"use a smaller limit]")
    return text


def _time(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))
