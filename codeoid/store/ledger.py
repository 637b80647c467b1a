"""The savings ledger: what compression kept out of the model's window, less what the model read back later.

The baseline is the window Claude Code alone would have shown for the call (`codeoid.claude_window`): the
output whole under its cap, a 2 KB preview note for a success over it, the first and last 5,000 characters of a
failure. A compressed run saves that less the window its compressed text took (what `codeoid-compress` printed,
footer and marker lines included, through the same model), so a run can save a negative amount: a 1.3 MB
success Claude Code would have previewed in 2.3k characters, shown by codeoid in 7k, costs 4.7k. Raw bytes less
shown bytes stay beside it as a second column (`raw_saved_bytes`), never the headline. A run whose shown size
was never recorded (archived before the ledger existed, or cut short before it could write) saves nothing: the
ledger claims no saving it cannot show. Each read of the raw bytes for the model is charged back, every time:
the window paid for each. Sizes count a byte as a character; tokens are estimated at `render`'s rate.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from codeoid.claude_window import stored_persisted, stored_window_size, window_size
from codeoid.store.db import write_transaction
from codeoid.text import estimate_tokens, estimate_tokens_of_size

PASSED_THROUGH = "(passed through)"
NOT_RECORDED = "(not recorded)"
BY_HAND = "(by hand)"

# One row per raw output in scope: its rule label, session and sizes, with its reads summed.
_RUNS = """
    SELECT CASE WHEN r.shown_size IS NULL THEN :not_recorded
                WHEN r.rule IS NULL THEN :passed_through ELSE r.rule END AS rule,
           coalesce(r.session_id, :by_hand) AS session,
           r.stdout_size AS raw_bytes,
           coalesce(r.shown_size, r.stdout_size) AS shown_bytes,
           claude_window_size(r.stdout_size, r.exit_status) AS alone_chars,
           claude_window_size(coalesce(r.shown_size, r.stdout_size), r.exit_status) AS window_chars,
           coalesce(c.reads, 0) AS reads,
           coalesce(c.bytes, 0) AS charged_bytes,
           coalesce(c.tokens, 0) AS charged_tokens,
           r.created_at AS created_at
    FROM raw_outputs r
    LEFT JOIN (SELECT raw_output_id, count(*) AS reads, sum(bytes) AS bytes, sum(tokens) AS tokens
               FROM raw_output_reads GROUP BY raw_output_id) c ON c.raw_output_id = r.id
    WHERE (:workspace_id IS NULL OR coalesce(r.workspace_id,
               (SELECT s.workspace_id FROM sessions s WHERE s.id = r.session_id)) = :workspace_id)
      AND (:session_id IS NULL OR r.session_id = :session_id)
      AND (:since IS NULL OR r.created_at >= :since)
"""


def record_shown(db: sqlite3.Connection, raw_id: str, *, rule: str | None, shown_size: int) -> None:
    """What the model was shown instead of the raw stdout, and the rule that made it (None: passed through)."""
    with write_transaction(db):
        db.execute("UPDATE raw_outputs SET rule = ?, shown_size = ? WHERE id = ?", (rule, shown_size, raw_id))


def charge_read(db: sqlite3.Connection, raw_id: str, text: str, *, reader: str, backing_session_id: str | None,
                start_line: int | None, end_line: int | None) -> None:
    """Charge one read of a raw output back against its savings: `text` is what the model received."""
    with write_transaction(db):
        db.execute(
            "INSERT INTO raw_output_reads (raw_output_id, reader, backing_session_id, start_line, end_line, bytes,"
            " tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (raw_id, reader, backing_session_id, start_line, end_line,
             len(text.encode("utf-8", "surrogatepass")), estimate_tokens(text), time.time()),
        )


# The local calendar day of a run, and the Monday that starts its week (SQLite's 'weekday 0' moves to the next
# Sunday, or stays on one; six days back is that week's Monday).
PERIODS = {
    "day": "date(created_at, 'unixepoch', 'localtime')",
    "week": "date(created_at, 'unixepoch', 'localtime', 'weekday 0', '-6 days')",
}
_SUMS = ("count(*) AS runs, coalesce(sum(raw_bytes), 0) AS raw_bytes, coalesce(sum(shown_bytes), 0) AS "
         "shown_bytes, coalesce(sum(alone_chars), 0) AS alone_chars, coalesce(sum(window_chars), 0) AS window_chars, "
         "coalesce(sum(reads), 0) AS reads, coalesce(sum(charged_bytes), 0) AS charged_bytes, "
         "coalesce(sum(charged_tokens), 0) AS charged_tokens")


def _with_window(db: sqlite3.Connection) -> None:
    """The window model as an SQL function, so the sums stay in SQLite."""
    db.create_function("claude_window_size", 2, _window_size, deterministic=True)


def _window_size(size: int | None, exit_status: int | None) -> int:
    return window_size(size or 0, exit_status)


def _params(workspace_id: int | None, session_id: str | None, since: float | None) -> dict[str, Any]:
    return {"not_recorded": NOT_RECORDED, "passed_through": PASSED_THROUGH, "by_hand": BY_HAND,
            "workspace_id": workspace_id, "session_id": session_id, "since": since}


def gain(db: sqlite3.Connection, *, workspace_id: int | None = None, session_id: str | None = None,
         since: float | None = None) -> dict[str, Any]:
    """The ledger in scope (runs archived at `since` or later), summed per rule (most saved first), per session
    (newest first) and in total."""
    params = _params(workspace_id, session_id, since)
    _with_window(db)
    by_rule = db.execute(
        f"SELECT rule AS key, {_SUMS} FROM ({_RUNS}) GROUP BY rule"
        " ORDER BY sum(alone_chars) - sum(window_chars) DESC, rule", params).fetchall()
    by_session = db.execute(
        f"SELECT session AS key, {_SUMS} FROM ({_RUNS}) GROUP BY session ORDER BY max(created_at) DESC",
        params).fetchall()
    total = db.execute(f"SELECT 'total' AS key, {_SUMS} FROM ({_RUNS})", params).fetchone()
    return {"by_rule": [_account(row) for row in by_rule], "by_session": [_account(row) for row in by_session],
            "total": _account(total)}


def over_time(db: sqlite3.Connection, period: str, *, workspace_id: int | None = None,
              session_id: str | None = None, since: float | None = None) -> list[dict[str, Any]]:
    """The ledger per local day or week (`PERIODS`), oldest first, only periods with runs. A read is charged to
    the period of the run it read, so each period's net says what that period's compression was worth."""
    bucket = PERIODS[period]
    _with_window(db)
    rows = db.execute(f"SELECT {bucket} AS key, {_SUMS} FROM ({_RUNS}) GROUP BY key ORDER BY key",
                      _params(workspace_id, session_id, since)).fetchall()
    return [_account(row) for row in rows]


def _account(row: tuple[Any, ...]) -> dict[str, Any]:
    """One line of the ledger: the window Claude Code alone would have shown (`alone_chars`), the one codeoid's
    text took (`window_chars`), the difference (`saved_chars`, negative when codeoid showed more), the same in
    raw bytes as a second account, and the reads charged back."""
    key, runs, raw_bytes, shown_bytes, alone_chars, window_chars, reads, charged_bytes, charged_tokens = row
    saved_chars = alone_chars - window_chars
    saved_tokens = estimate_tokens_of_size(saved_chars)
    return {"key": key, "runs": runs, "alone_chars": alone_chars, "window_chars": window_chars,
            "saved_chars": saved_chars,
            "saved_percent": round(100 * saved_chars / alone_chars, 1) if alone_chars else 0.0,
            "saved_tokens": saved_tokens, "raw_bytes": raw_bytes, "shown_bytes": shown_bytes,
            "raw_saved_bytes": raw_bytes - shown_bytes, "reads": reads,
            "charged_bytes": charged_bytes, "charged_tokens": charged_tokens,
            "net_chars": saved_chars - charged_bytes, "net_tokens": saved_tokens - charged_tokens}


# `gain` and `doctor` point at `codeoid discover` when more than this share of Bash output went in whole...
MISSED_SHARE_WORTH_A_HINT = 0.3
# ...and it is more than a few calls' worth.
MISSED_BYTES_WORTH_A_HINT = 64 * 1024


def missed(db: sqlite3.Connection, *, workspace_id: int | None = None,
           session_id: str | None = None) -> tuple[int, int]:
    """Characters of Bash results the window received in scope (each as Claude Code showed it: a persisted output
    as its preview note), and how many of them no rule compressed (calls never wrapped, and wrapped calls
    `codeoid-compress` passed through). A persisted output is not missed: Claude Code kept it out of the window
    itself. `codeoid discover` says why, call by call."""
    db.create_function("stored_window_size", 2, _stored_window, deterministic=True)
    db.create_function("stored_persisted", 2, _stored_persisted, deterministic=True)
    row = db.execute(
        """SELECT coalesce(sum(stored_window_size(length(e.text), e.is_error)), 0),
                  coalesce(sum(CASE WHEN r.rule IS NULL AND NOT stored_persisted(length(e.text), e.is_error)
                                    THEN stored_window_size(length(e.text), e.is_error) ELSE 0 END), 0)
           FROM episodes e LEFT JOIN raw_outputs r ON r.id = e.raw_output_id
           WHERE e.kind = 'tool' AND e.tool_name = 'Bash' AND e.state != 'retracted'
             AND (:workspace_id IS NULL OR e.workspace_id = :workspace_id)
             AND (:session_id IS NULL OR e.session_id = :session_id)""",
        {"workspace_id": workspace_id, "session_id": session_id}).fetchone()
    return int(row[0]), int(row[1])


def _stored_window(size: int | None, failed: int | None) -> int:
    return stored_window_size(size or 0, bool(failed))


def _stored_persisted(size: int | None, failed: int | None) -> bool:
    return stored_persisted(size or 0, bool(failed))


def missed_hint(window_bytes: int, missed_bytes: int) -> str | None:
    """One sentence for `gain` and `doctor` when compression misses a large share of Bash output, else None."""
    share = missed_bytes / window_bytes if window_bytes else 0.0
    if share < MISSED_SHARE_WORTH_A_HINT or missed_bytes < MISSED_BYTES_WORTH_A_HINT:
        return None
    return (f"{share:.0%} of Bash output in the window ({missed_bytes:,} characters) reached it uncompressed: "
            "`codeoid discover` says which commands and why.")
