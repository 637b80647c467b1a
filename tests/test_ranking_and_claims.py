"""Fusion, chunking and the indexer's claims, without a model or a Chroma server."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mcp_server import Memory

from codeoid.memory.chunking import chunk_text
from codeoid.memory.ranking import RecallWeights, fuse, path_overlap, query_paths
from codeoid.store import db as store_db
from codeoid.store import vector_progress
from codeoid.workspace import identify


def words(text: str) -> int:
    return len(text.split())


def test_chunks_hold_whole_lines_within_the_budget_and_record_their_range() -> None:
    body = "\n".join(f"w{n} x x x x x x x x x" for n in range(1, 101))  # 10 words a line
    chunks = chunk_text(5, "Bash: make", body, count_tokens=words, max_tokens=60, max_chunks=100)
    assert all(words(chunk.text) <= 60 for chunk in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 100
    assert [c.start_line for c in chunks[1:]] == [c.end_line + 1 for c in chunks[:-1]]
    line_73 = next(chunk for chunk in chunks if chunk.start_line <= 73 <= chunk.end_line)
    assert "w73 " in line_73.text and line_73.text.startswith("Bash: make\n")
    assert [c.number for c in chunks] == list(range(len(chunks)))
    assert len(chunk_text(5, "h", body, count_tokens=words, max_tokens=60, max_chunks=3)) == 3


def test_a_line_longer_than_a_chunk_is_cut_into_pieces_on_its_line_number() -> None:
    chunks = chunk_text(1, "", "short\n" + " ".join(["w"] * 500) + "\nlast", count_tokens=words, max_tokens=100,
                        max_chunks=50)
    assert chunks[0].start_line == chunks[0].end_line == 1
    middle = [c for c in chunks if c.start_line == 2]
    assert len(middle) > 1 and all(c.end_line == 2 and words(c.text) <= 100 for c in middle)
    assert chunks[-1].start_line == 3


def test_fusion_rewards_agreement_recency_and_named_paths() -> None:
    weights = RecallWeights(recency=0.0, path=0.0)
    now = 1_000_000.0
    created = {1: now, 2: now, 3: now}
    both = fuse([1, 2], [2, 3], created_at=created, paths={}, query="q", weights=weights, now=now)
    assert [episode for episode, _ in both][0] == 2
    recent = fuse([1, 2], [], created_at={1: now - 60 * 86400, 2: now}, paths={}, query="q",
                  weights=RecallWeights(recency=1.0, path=0.0), now=now)
    assert recent[0][0] == 2
    named = fuse([1, 2], [], created_at=created, paths={2: ["/repo/src/db.py"]}, query="the bug in src/db.py",
                 weights=RecallWeights(recency=0.0, path=1.0), now=now)
    assert named[0][0] == 2
    assert query_paths("fix src/db.py and test_db.py, not Makefile") == ["src/db.py", "test_db.py"]
    assert path_overlap(["db.py"], ["/a/db.py"]) == 1.0 and path_overlap(["x/db.py"], ["/a/db.py"]) == 0.0


def test_a_signal_weighted_zero_brings_no_candidates_so_the_other_ranks_alone() -> None:
    now = 1_000_000.0
    created = {1: now - 30 * 86400, 2: now - 30 * 86400, 3: now}
    alone = fuse([1, 2], [3], created_at=created, paths={}, query="q", weights=RecallWeights(dense=0.0), now=now)
    assert [episode for episode, _ in alone] == [1, 2]
    meaning = fuse([1, 2], [3], created_at=created, paths={}, query="q", weights=RecallWeights(bm25=0.0), now=now)
    assert [episode for episode, _ in meaning] == [3]


def test_weights_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEOID_RECALL_DENSE", "2.5")
    monkeypatch.setenv("CODEOID_RECALL_CANDIDATES", "80")
    weights = RecallWeights.from_env()
    assert weights.dense == 2.5 and weights.candidates == 80 and weights.bm25 == 1.0


def test_two_indexers_never_claim_the_same_batch_and_a_dead_ones_claim_expires(codeoid_home: Path,
                                                                               project: Path) -> None:
    memory = Memory(codeoid_home, project)
    owner = memory.backing("b1")
    ids = [memory.user(owner, f"prompt {n}") for n in range(5)]
    other = store_db.connect()
    first = vector_progress.claim_batch(memory.db, "a", limit=3, lease_seconds=60)
    assert first is not None and [row["id"] for row in first] == ids[:3]
    assert first[0]["key"] == identify(str(project)).key
    assert vector_progress.claim_batch(other, "b", limit=3, lease_seconds=60) is None
    taken_over = vector_progress.claim_batch(other, "b", limit=3, lease_seconds=0)  # "a" died: its lease ran out
    assert taken_over is not None and [row["id"] for row in taken_over] == ids[:3]
    assert not vector_progress.finish_batch(memory.db, "a", ids[2])  # the dead one's late finish changes nothing
    assert vector_progress.finish_batch(other, "b", ids[2])
    rest = vector_progress.claim_batch(memory.db, "a", limit=10, lease_seconds=60)
    assert rest is not None and [row["id"] for row in rest] == ids[3:]
    assert vector_progress.finish_batch(memory.db, "a", ids[4])
    assert vector_progress.claim_batch(memory.db, "a", limit=10, lease_seconds=60) == []
    memory.set_state(ids[1], "retracted")
    assert [row["episode_id"] for row in vector_progress.pending_removals(memory.db)] == [ids[1]]
    other.close()
