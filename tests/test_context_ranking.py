"""BM25 over episodes with their session neighbours, z-score fusion, and the corpus statistics behind it.

Real SQLite through the capture API, real numpy for the statistics; no model and no Chroma (the dense side is fed
the cosines a query would get).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from codeoid import paths
from codeoid.memory import corpus_stats
from codeoid.memory.actions import query_roles, role_of, tags_of
from codeoid.memory.ranking import (
    DenseCandidates,
    LexicalCandidates,
    RecallWeights,
    fuse_z,
    query_dates,
)
from codeoid.store import capture, context_index, db, queries, retraction
from codeoid.workspace import identify

FIXTURES = Path(__file__).parent / "fixtures"


def _owner(store: sqlite3.Connection, project: Path, backing: str = "cc-1") -> capture.Owner:
    with db.write_transaction(store):
        return capture.ensure_backing_session(store, backing_session_id=backing, workspace=identify(str(project)),
                                              now=1.0)


def _say(store: sqlite3.Connection, owner: capture.Owner, kind: str, text: str, at: float) -> int:
    with db.write_transaction(store):
        if kind == "user":
            found = capture.add_user_turn(store, owner, prompt=text, prompt_id=f"p{at}", origin="user", now=at)
        else:
            found = capture.add_assistant_message(store, owner, message_id=f"m{at}", text=text, now=at)
    assert found is not None
    return found


def _found(store: sqlite3.Connection, query: str) -> list[int]:
    rows, _ = queries.search_context(store, query, workspace_id=None, limit=10)
    return [row["id"] for row in rows]


def test_a_turn_is_found_by_the_words_of_its_neighbours(store: sqlite3.Connection, project: Path) -> None:
    owner = _owner(store, project)
    asked = _say(store, owner, "user", "Which library should we use for retries with backoff?", 1000.0)
    answer = _say(store, owner, "assistant", "Let's go with tenacity, it is already pinned.", 1001.0)
    other = _owner(store, project, backing="cc-2")
    elsewhere = _say(store, other, "assistant", "Tenacity was mentioned in the changelog.", 1002.0)

    found = _found(store, "library for retries")
    assert found[0] == asked and answer in found  # the answer holds neither word; its neighbour does
    assert elsewhere not in found  # a neighbour is of the same session only
    row = store.execute("SELECT self, near FROM episodes_context WHERE rowid = ?", (answer,)).fetchone()
    assert row[0].startswith("assistant 1970-01-01: Let's go with tenacity")
    assert row[1].startswith("user 1970-01-01: Which library")

    # A later turn joins the rows of the turns before it.
    later = _say(store, owner, "user", "And the circuit breaker?", 1003.0)
    assert set(_found(store, "circuit breaker")) == {asked, answer, later}


def test_the_episode_itself_outranks_a_neighbour_that_quotes_it(store: sqlite3.Connection, project: Path) -> None:
    owner = _owner(store, project)
    for n in range(10):
        _say(store, owner, "user", f"an unrelated question about the parser, number {n}", float(n))
    with db.write_transaction(store):
        failing = capture.add_tool_call(
            store, owner, tool_name="Bash", tool_use_id="t1", tool_input={"command": "pytest"}, agent_id=None,
            response={"stdout": "FAILED test_writes - sqlite3.OperationalError: database is locked\n" + "x\n" * 300},
            error=None, now=10.0)
    _say(store, owner, "assistant", "Retried it.", 11.0)
    assert _found(store, "database is locked")[0] == failing
    # With the episode weighted as its nearest neighbours (the recipe), the short reply wins: why not.
    rows, _ = queries.search_context(store, "database is locked", workspace_id=None, limit=3,
                                     columns=(1.0, 1.0, 0.5, 0.25))
    assert rows[0]["id"] == failing + 1
    row = store.execute("SELECT near FROM episodes_context WHERE rowid = ?", (failing + 1,)).fetchone()
    assert len(row[0]) < context_index.NEIGHBOUR_TOOL_CHARS + 100  # a neighbour's output is only a glimpse


def test_a_retracted_turn_leaves_its_neighbours_rows_and_comes_back_on_restore(store: sqlite3.Connection,
                                                                              project: Path) -> None:
    owner = _owner(store, project)
    before = _say(store, owner, "user", "Connect to the staging database.", 1.0)
    pasted = _say(store, owner, "user", "the password is hunter2zebra", 2.0)
    after = _say(store, owner, "assistant", "Connected.", 3.0)
    assert set(_found(store, "hunter2zebra")) == {before, pasted, after}

    retraction.retract(store, [pasted])
    assert _found(store, "hunter2zebra") == []
    assert not any("hunter2zebra" in " ".join(row) for row in store.execute("SELECT * FROM episodes_context"))
    # The rest is still there, and the turns on either side are now each other's neighbours.
    assert set(_found(store, "staging")) == {before, after}

    retraction.restore(store, [pasted])
    assert set(_found(store, "hunter2zebra")) == {before, pasted, after}


def test_appended_text_reaches_the_row_and_its_neighbours(store: sqlite3.Connection, project: Path) -> None:
    owner = _owner(store, project)
    first = _say(store, owner, "user", "start", 1.0)
    _found(store, "start")  # indexed now
    store.execute("UPDATE episodes SET text = text || ' quokka' WHERE id = ?", (first,))
    assert _found(store, "quokka") == [first]


def test_an_upgraded_store_builds_the_neighbour_index_for_its_old_rows(codeoid_home: Path) -> None:
    target = Path(paths.database_path())
    shutil.copy(FIXTURES / "store-m001.db", target)
    connection = db.connect()
    try:
        assert connection.execute("SELECT indexed_upto FROM context_progress").fetchone()[0] == 0
        assert {row["id"] for row in queries.search_context(connection, "flaky", workspace_id=None, limit=10)[0]} \
            == {1, 2, 3}  # the retracted episode 4 never matches
        rows = connection.execute("SELECT count(*) FROM episodes_context").fetchone()[0]
        assert rows == connection.execute("SELECT count(*) FROM episodes WHERE state != 'retracted'").fetchone()[0]
    finally:
        connection.close()


def test_bm25_statistics_cover_every_match_not_only_the_returned_ones(store: sqlite3.Connection,
                                                                      project: Path) -> None:
    owner = _owner(store, project)
    for n in range(30):
        _say(store, owner, "user", f"wombat number {n}" + " filler" * n, float(n * 100))  # far apart: no neighbours
    rows, stats = queries.search_context(store, "wombat", workspace_id=None, limit=5)
    everything, _ = queries.search_context(store, "wombat", workspace_id=None, limit=100)
    assert len(rows) == 5 and len(everything) == 30
    assert stats.corpus == 30
    assert stats.total == pytest.approx(sum(row["score"] for row in everything))
    assert stats.squares == pytest.approx(sum(row["score"] ** 2 for row in everything))


def test_lexical_z_scores_count_unmatched_episodes_as_zero() -> None:
    scores = {1: 6.0, 2: 3.0}
    found = LexicalCandidates(scores, total=9.0, squares=45.0, corpus=10, cut=False)
    values = [6.0, 3.0] + [0.0] * 8
    mean, spread = float(np.mean(values)), float(np.std(values))
    assert found.z(1) == pytest.approx((6.0 - mean) / spread)
    assert found.z(99) == pytest.approx((0.0 - mean) / spread)
    cut = LexicalCandidates(scores, total=12.0, squares=49.0, corpus=10, cut=True)
    assert cut.z(99) == cut.z(2)  # it matched, no better than the last one returned


def test_corpus_statistics_add_up_incrementally_and_standardise_a_cosine(store: sqlite3.Connection) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(120, 8)) + np.array([2.0, 0, 0, 0, 0, 0, 0, 0])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert corpus_stats.load(store, "ws") is None
    corpus_stats.add(store, "ws", vectors[:70].tolist())
    corpus_stats.add(store, "ws", vectors[70:].tolist())
    stats = corpus_stats.load(store, "ws")
    assert stats is not None and stats.count == 120
    assert np.allclose(stats.mean, vectors.mean(axis=0))
    assert np.allclose(stats.covariance, np.cov(vectors, rowvar=False, bias=True))
    query = vectors[0]
    centre, spread = stats.standardiser(query.tolist())
    cosines = vectors @ query
    assert centre == pytest.approx(cosines.mean()) and spread == pytest.approx(cosines.std())


def test_z_fusion_prefers_the_signal_that_is_sure_and_a_zero_weight_leaves_a_signal_out() -> None:
    lexical = LexicalCandidates({1: 5.0, 2: 4.9, 3: 4.8}, total=14.7, squares=72.05, corpus=1000, cut=False)
    # Dense is sure of 3 (far above this query's corpus mean), lukewarm about 1.
    dense = DenseCandidates({3: 0.62, 1: 0.31}, centre=0.2, spread=0.08)
    weights = RecallWeights(recency=0.0, path=0.0)
    fused = fuse_z(lexical, dense, created_at={}, paths={}, tags={}, query="q", weights=weights, now=0.0)
    assert fused[0][0] == 3
    bm25_only = fuse_z(lexical, dense, created_at={}, paths={}, tags={}, query="q",
                       weights=RecallWeights(dense=0.0, recency=0.0, path=0.0), now=0.0)
    assert [i for i, _ in bm25_only] == [1, 2, 3]
    dense_only = fuse_z(lexical, dense, created_at={}, paths={}, tags={}, query="q",
                        weights=RecallWeights(bm25=0.0, recency=0.0, path=0.0), now=0.0)
    assert [i for i, _ in dense_only] == [3, 1]


def _matches(best: int, score: float, others: int = 60) -> LexicalCandidates:
    """BM25 candidates: `best` scoring `score` and `others` look-alikes at 2.5, in a corpus of 1,000 episodes."""
    scores = {best: score, **{1000 + n: 2.5 for n in range(others)}}
    return LexicalCandidates(scores, total=sum(scores.values()), squares=sum(v * v for v in scores.values()),
                             corpus=1000, cut=False)


def test_meaning_a_turn_is_sure_of_reaches_the_tool_calls_beside_it() -> None:
    # The explanation (10) reads like the paraphrased question; the edit after it (11) does not, and only the
    # words of look-alike edits elsewhere (20 and others) match the question at all. 9 is the prompt before it.
    lexical, dense = _matches(20, 3.0), DenseCandidates({10: 0.95, 30: 0.35}, centre=0.2, spread=0.08)
    roles = {9: {"user"}, 10: {"assistant"}, 11: {"change"}, 30: {"assistant"}, 31: {"run", "passed"}}
    tags = {episode_id: frozenset(names) for episode_id, names in roles.items()}
    plain = RecallWeights(recency=0.0, path=0.0, role=0.0)
    without = fuse_z(lexical, dense, created_at={}, paths={}, tags=tags, query="q", now=0.0,
                     weights=RecallWeights(recency=0.0, path=0.0, role=0.0, neighbours=0.0), neighbours={10: [11]})
    assert 11 not in dict(without)
    fused = fuse_z(lexical, dense, created_at={}, paths={}, tags=tags, query="q", weights=plain, now=0.0,
                   neighbours={10: [9, 11], 30: [31]})
    assert [i for i, _ in fused[:3]] == [11, 10, 20]
    assert dict(fused)[11] == dict(fused)[10]  # lent whole (weight 1): as sure as the lender
    assert dict(fused)[31] == dict(fused)[30]
    assert 9 not in dict(fused)  # a prompt lends but never borrows: in a conversation the turn itself answers


def test_an_exact_word_match_no_longer_silences_a_sure_meaning() -> None:
    # Over a corpus where most episodes score 0, the best word match stands far out (z ~ 8); the turn the question
    # paraphrases (2) is the one meaning is sure of.
    lexical, dense = _matches(1, 6.0), DenseCandidates({2: 0.95, 1: 0.2}, centre=0.2, spread=0.08)
    whole = fuse_z(lexical, dense, created_at={}, paths={}, tags={}, query="q", now=0.0,
                   weights=RecallWeights(recency=0.0, path=0.0, bm25_root=0))
    rooted = fuse_z(lexical, dense, created_at={}, paths={}, tags={}, query="q", now=0.0,
                    weights=RecallWeights(recency=0.0, path=0.0))
    assert whole[0][0] == 1 and rooted[0][0] == 2
    # The root keeps BM25's own order.
    assert [i for i, _ in rooted if i != 2][:2] == [1, 1059]


def test_role_cues_name_whose_turn_a_question_wants() -> None:
    assert query_roles("what did you suggest for the cache?") == {"assistant"}
    assert query_roles("what I asked about retries") == {"user"}
    assert query_roles("the traceback of the parser test") == {"run"}
    assert query_roles("the diff where we stopped retrying on 404") == {"change"}
    assert query_roles("the read of src/parser.py around tokenize") == {"read"}
    assert query_roles("the parser and its handling of tabs") == set()
    lexical = LexicalCandidates({1: 2.0, 2: 2.0}, total=4.0, squares=8.0, corpus=100, cut=False)
    fused = fuse_z(lexical, DenseCandidates({}), created_at={}, paths={},
                   tags={1: frozenset({"user"}), 2: frozenset({"assistant"})}, query="what did you recommend",
                   weights=RecallWeights(dense=0.0, recency=0.0, role=0.5), now=0.0)
    assert fused[0][0] == 2


def test_a_question_naming_an_edit_puts_the_edit_above_reads_and_runs_of_the_same_file() -> None:
    # In a coding session a file is read, edited and tested again and again; the read (1) and the test run (3)
    # match "the diff where we stopped retrying on 404" by the file's every word, the edit (2) by a few.
    assert role_of("tool", "Read", None) == "read" and role_of("tool", "Edit", None) == "change"
    assert role_of("tool", "Bash", "git diff src/retry.py") == "change" and role_of("tool", "Bash", "pytest") == "run"
    assert role_of("tool", "Bash", "cat src/retry.py") == "read"
    assert role_of("tool", "Grep", None) == "tool" and role_of("assistant", None, None) == "assistant"
    lexical = LexicalCandidates({1: 6.0, 2: 4.0, 3: 5.0}, total=15.0, squares=77.0, corpus=100, cut=False)
    tags = {1: tags_of("tool", "Read", None, False), 2: tags_of("tool", "Edit", None, False),
            3: tags_of("tool", "Bash", "pytest", True)}
    weights = RecallWeights(dense=0.0, recency=0.0)
    asked = fuse_z(lexical, DenseCandidates({}), created_at={}, paths={}, tags=tags, query="the diff where we "
                   "stopped retrying on 404", weights=weights, now=0.0)
    assert asked[0][0] == 2
    failing = fuse_z(lexical, DenseCandidates({}), created_at={}, paths={}, tags=tags, query="the traceback when "
                     "retrying on 404", weights=weights, now=0.0)
    assert failing[0][0] == 3
    plain = fuse_z(lexical, DenseCandidates({}), created_at={}, paths={}, tags=tags, query="stopped retrying on "
                   "404", weights=weights, now=0.0)
    assert [i for i, _ in plain] == [1, 3, 2]


def test_a_question_naming_a_day_puts_that_days_turn_first() -> None:
    assert query_dates("what did we decide on May 13 about the cache?") == {(5, 13)}
    assert query_dates("the 2nd of November, and 2018-05-13") == {(11, 2), (5, 13)}
    assert query_dates("may I ask why 2 married couples left?") == set()
    # Two turns about the hiking trip; the one of May 2 matches the words a little better.
    may_2, may_13 = 1525262400.0, 1526212800.0  # 2018-05-02 and 2018-05-13, noon UTC
    lexical = LexicalCandidates({1: 3.0, 2: 2.95}, total=5.95, squares=17.7025, corpus=500, cut=False)
    dense = DenseCandidates({1: 0.50, 2: 0.48}, centre=0.2, spread=0.1)
    asked = "what did we say about the hiking trip on May 13?"
    for weights, first in ((RecallWeights(recency=0.0, date=0.0), 1), (RecallWeights(recency=0.0, date=1.0), 2)):
        fused = fuse_z(lexical, dense, created_at={1: may_2, 2: may_13}, paths={}, tags={}, query=asked,
                       weights=weights, now=may_13)
        assert fused[0][0] == first
    plain = fuse_z(lexical, dense, created_at={1: may_2, 2: may_13}, paths={}, tags={},
                   query="what did we say about the hiking trip?", weights=RecallWeights(recency=0.0, date=1.0),
                   now=may_13)
    assert plain[0][0] == 1  # no day named, no bonus
