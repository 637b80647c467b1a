"""Recall and search return no hit below the score floor: a short list of what matches rather than slots filled
with the store's filler ("Done.", "ok"), which z-score fusion scores below an average episode. Real model, real
`chroma run`, the ranking recall and `codeoid search` use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_chroma_server import chroma_processes
from test_mcp_server import Memory, git_project

from codeoid.memory import chroma_server, retrieval
from codeoid.memory.indexer import Indexer
from codeoid.store import queries

pytestmark = pytest.mark.slow

FILLER = ["Done.", "ok", "Sure.", "Thanks!", "Done, all green.", "ok, next", "Yes.", "Fine.", "Great, thanks.",
          "Will do."]


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    for name in ("CODEOID_CHROMA_URL", "CODEOID_VECTOR", "CODEOID_SECRET_PATTERNS", "CODEOID_EXCLUDE_PATHS"):
        monkeypatch.delenv(name, raising=False)
    for name in ("ZSCORE", "DENSE", "BM25"):
        monkeypatch.delenv(f"CODEOID_RECALL_{name}", raising=False)
    monkeypatch.setattr(retrieval, "_index", None)
    found = Memory(home, git_project(tmp_path / "project"))
    try:
        yield found
    finally:
        found.db.close()
        chroma_server.stop_server()
        for process in chroma_processes(home):
            process.kill()


def test_recall_leaves_out_filler_that_scores_below_the_floor(memory: Memory) -> None:
    owner = memory.backing("b-1")
    wanted = memory.bash(owner, "pytest tests/test_parser.py", "FAILED tests/test_parser.py::test_unicode_names - "
                         "KeyError: 'name'\n1 failed, 41 passed")
    memory.user(owner, "the parser chokes on unicode names, can you look?")
    chatter = memory.backing("b-2")  # another session: none of its turns sits beside a match
    filler = {memory.assistant(chatter, text) for text in FILLER}
    Indexer(memory.db).catch_up()
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))

    found = retrieval.recall_ranked(memory.db, "KeyError in the unicode parser test", workspace_id=workspace_id,
                                    limit=8)

    assert found.signals == "BM25 + semantic"
    assert found.rows and found.rows[0]["id"] == wanted
    assert all(row["score"] >= retrieval.SCORE_FLOOR for row in found.rows)
    assert not {row["id"] for row in found.rows} & filler, [(row["text"], row["score"]) for row in found.rows]
    assert len(found.rows) < 8
