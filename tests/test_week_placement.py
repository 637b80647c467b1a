"""The `week` retrieval set's placement (`benchmarks/retrieval/week/placement.py`): the store the real CLI's hooks
filled, moved to its sessions' simulated days, keeps every row's content and order and lands each turn where
`sessions.json` says; nothing here ranks or recalls."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

WEEK = Path(__file__).resolve().parent.parent / "benchmarks" / "retrieval" / "week"
sys.path.insert(0, str(WEEK))
from placement import DAY, place  # noqa: E402

MIDNIGHT = 1_800_000_000 // DAY * DAY
WORKSPACE = ("/elsewhere/marshmallow/.git", "/elsewhere/marshmallow", "github.com/marshmallow-code/marshmallow")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    path = tmp_path / "store.db"
    with gzip.open(WEEK / "store.db.gz", "rb") as packed, open(path, "wb") as out:
        shutil.copyfileobj(packed, out)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        yield db
    finally:
        db.close()


def test_every_turn_starts_at_its_simulated_time_and_keeps_its_rows_in_order(store: sqlite3.Connection) -> None:
    sessions = json.loads((WEEK / "sessions.json").read_text())
    before = store.execute("SELECT id, text, created_at FROM episodes ORDER BY id").fetchall()
    latest = place(store, sessions, midnight=MIDNIGHT, workspace=WORKSPACE)

    after = store.execute("SELECT id, text, created_at FROM episodes ORDER BY id").fetchall()
    assert [(i, t) for i, t, _ in after] == [(i, t) for i, t, _ in before]
    assert latest >= max(at for _, _, at in after)  # a turn or a session ends after its last episode
    for session in sessions:
        base = MIDNIGHT - session["days_ago"] * DAY + session["hour"] * 3600
        starts = dict(store.execute("SELECT number, started_at FROM turns WHERE backing_session_id = ?",
                                    (session["backing_session_id"],)).fetchall())
        assert starts == {t["number"]: pytest.approx(base + t["at"] * 60) for t in session["turns"]}
        times = [at for (at,) in store.execute("SELECT created_at FROM episodes WHERE backing_session_id = ?",
                                               (session["backing_session_id"],))]
        assert base - 5 <= min(times) and max(times) < base + DAY / 2, session["key"]
    # A raw output is dated with its call, not left on the day the set was built.
    gaps = store.execute("SELECT max(abs(r.created_at - e.created_at)) FROM raw_outputs r "
                         "JOIN episodes e ON e.tool_use_id = r.tool_use_id AND e.kind = 'tool'").fetchone()[0]
    assert gaps < 60
    assert store.execute("SELECT key, root, portable_id FROM workspaces").fetchall() == [WORKSPACE]
    assert store.execute("SELECT indexed_upto FROM fts_progress").fetchone() == (0,)
    assert store.execute("SELECT count(*) FROM episodes_context").fetchone() == (0,)
    keys = json.loads((WEEK / "keys.json").read_text())
    assert set(keys.values()) <= {i for i, _, _ in after}


def test_a_time_column_placement_does_not_know_stops_it(store: sqlite3.Connection) -> None:
    store.execute("ALTER TABLE episodes ADD COLUMN reviewed_at REAL")
    with pytest.raises(SystemExit, match="reviewed_at"):
        place(store, json.loads((WEEK / "sessions.json").read_text()), midnight=MIDNIGHT, workspace=WORKSPACE)
