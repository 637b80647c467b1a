"""`codeoid gain` over time: per day and per week, the share of raw output saved, `--since`, a bar chart, CSV and
JSON. Runs are archived in a real store with the ledger's own writers and dated by hand."""

from __future__ import annotations

import csv
import datetime
import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import executable

from codeoid.store import db as store_db
from codeoid.store import ledger, raw


def local_noon(days_ago: int) -> float:
    today = datetime.date.today() - datetime.timedelta(days=days_ago)
    return datetime.datetime.combine(today, datetime.time(12)).timestamp()


def archive(db: object, raw_id: str, *, raw_size: int, shown: int, when: float, rule: str = "git-status") -> None:
    raw.store_raw_output(db, raw_id, command="git status", stdout=b"x" * raw_size, exit_status=0)  # type: ignore[arg-type]
    ledger.record_shown(db, raw_id, rule=rule, shown_size=shown)  # type: ignore[arg-type]
    with store_db.write_transaction(db):  # type: ignore[arg-type]
        db.execute("UPDATE raw_outputs SET created_at = ? WHERE id = ?", (when, raw_id))  # type: ignore[attr-defined]


@pytest.fixture
def dated_runs(codeoid_home: Path) -> Path:
    """Runs on three days: 20 days ago, 2 days ago (two runs) and today."""
    db = store_db.connect()
    try:
        archive(db, "raw-old", raw_size=10_000, shown=1_000, when=local_noon(20))
        archive(db, "raw-a", raw_size=28_000, shown=4_000, when=local_noon(2))  # under Claude Code's cap
        archive(db, "raw-b", raw_size=8_000, shown=8_000, when=local_noon(2) + 60, rule="pytest")
        archive(db, "raw-today", raw_size=4_000, shown=3_000, when=local_noon(0))
    finally:
        db.close()
    return codeoid_home


def gain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([executable("codeoid"), "gain", "--all-workspaces", *args], capture_output=True,
                          text=True, env={**os.environ}, timeout=60)


def test_daily_json_sums_each_local_day_with_its_percent(dated_runs: Path) -> None:
    done = gain("--daily", "--json")
    assert done.returncode == 0, done.stderr
    days = json.loads(done.stdout)["by_day"]
    assert [day["key"] for day in days] == [str(datetime.date.fromtimestamp(local_noon(n))) for n in (20, 2, 0)]
    assert [(day["runs"], day["raw_bytes"], day["saved_chars"]) for day in days] == [
        (1, 10_000, 9_000), (2, 36_000, 24_000), (1, 4_000, 1_000)]
    assert [day["saved_percent"] for day in days] == [90.0, 66.7, 25.0]


def test_since_leaves_out_older_runs_by_age_or_by_date(dated_runs: Path) -> None:
    for since in ("7d", "1w", str(datetime.date.today() - datetime.timedelta(days=7))):
        total = json.loads(gain("--since", since, "--json").stdout)["total"]
        assert (total["runs"], total["saved_chars"]) == (3, 25_000), since
    refused = gain("--since", "last tuesday")
    assert refused.returncode == 2 and "neither a date" in refused.stderr


def test_weekly_groups_by_the_monday_that_starts_each_week(dated_runs: Path) -> None:
    weeks = json.loads(gain("--weekly", "--json").stdout)["by_week"]
    mondays = sorted({str(datetime.date.fromtimestamp(local_noon(n)) - datetime.timedelta(
        days=datetime.date.fromtimestamp(local_noon(n)).weekday())) for n in (20, 2, 0)})
    assert [week["key"] for week in weeks] == mondays
    assert sum(week["runs"] for week in weeks) == 4


def test_daily_table_has_a_percent_column_and_a_bar_per_day(dated_runs: Path) -> None:
    lines = gain("--daily").stdout.splitlines()
    header = next(line for line in lines if line.startswith("day "))
    assert "saved%" in header.split()
    rows = [line for line in lines if line[:4].isdigit()]
    assert len(rows) == 3
    bars = [row.count("\u2588") for row in rows]
    assert bars[1] == ledger_bar_width() and 0 < bars[0] < bars[1] and "66.7%" in rows[1]


def ledger_bar_width() -> int:
    from codeoid.cli.history import BAR_WIDTH

    return BAR_WIDTH


def test_csv_has_one_row_per_day_and_every_column(dated_runs: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(gain("--daily", "--csv").stdout)))
    assert [row["group"] for row in rows] == ["day"] * 3
    assert [int(row["saved_chars"]) for row in rows] == [9_000, 24_000, 1_000]
    overall = list(csv.DictReader(io.StringIO(gain("--csv").stdout)))
    assert {row["group"] for row in overall} == {"rule", "session", "total"}
    assert next(row for row in overall if row["group"] == "total")["saved_percent"] == str(round(
        100 * 34_000 / 50_000, 1))


def test_gain_with_nothing_in_range_says_so(dated_runs: Path) -> None:
    done = gain("--since", str(datetime.date.today() + datetime.timedelta(days=1)))
    assert done.returncode == 0 and "No compressed output is recorded here since then." in done.stdout
