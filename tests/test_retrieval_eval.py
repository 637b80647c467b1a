"""The retrieval evaluation end to end on one session of its corpus: store, real model, real Chroma, recall.

The full run (`benchmarks/retrieval/evaluate.py`) takes minutes; this keeps its machinery working in CI.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from test_mcp_server import Memory
from test_memory_index import memory  # noqa: F401  (the fixture: a data dir whose Chroma server is stopped after)

from codeoid.memory.indexer import Indexer
from codeoid.memory.ranking import RecallWeights
from codeoid.store import queries

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "retrieval"))
import evaluate  # noqa: E402

pytestmark = pytest.mark.slow


def test_one_session_of_the_corpus_is_evaluated_through_recall_with_each_signal(memory: Memory,  # noqa: F811
                                                                                 tmp_path: Path) -> None:
    episodes, questions = evaluate.sessions_slice(evaluate.load_corpus(), evaluate.load_questions(), {"s01"})
    assert {q["type"] for q in questions} >= {"failure_lexical", "failure_paraphrase", "explain_paraphrase"}
    ids = evaluate.fill_store(memory, episodes, now=time.time())
    assert queries.count_episodes(memory.db) == len(episodes)
    Indexer(memory.db).catch_up()
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))
    assert workspace_id is not None

    ranks = {name: evaluate.ranks_of(evaluate.recall_ranker(memory.db, workspace_id, weights), questions, ids)
             for name, weights in (("BM25 alone", evaluate.BM25_ALONE), ("dense alone", evaluate.DENSE_ALONE),
                                   ("fused (defaults)", RecallWeights()))}
    by_type = {q["type"]: i for i, q in enumerate(questions)}
    # The error string asked for word by word is BM25's first answer; a paraphrase of the cause is found by meaning.
    assert ranks["BM25 alone"][by_type["failure_lexical"]] == 1
    assert ranks["dense alone"][by_type["explain_paraphrase"]] is not None
    assert ranks["fused (defaults)"][by_type["failure_lexical"]] is not None

    with evaluate.stop_words_kept():
        kept = evaluate.ranks_of(evaluate.recall_ranker(memory.db, workspace_id, evaluate.BM25_ALONE), questions, ids)
    assert queries.any_term_query("where did the tokenizer crash") == '"tokenizer" OR "crash"'  # dropped again
    out = tmp_path / "results.json"
    evaluate.write_results(out, questions, ranks, {"stop words kept": kept}, None, len(episodes))
    result = json.loads(out.read_text())
    assert result["episodes"] == len(episodes)
    for name, found in result["heldout"].items():
        for metric in ("R@1", "R@5", "R@10", "MRR"):
            assert found[metric]["low"] <= found[metric]["value"] <= found[metric]["high"], (name, metric)
