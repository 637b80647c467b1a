"""Recall treats a turn (a prompt, its tool calls, its answer) as a unit: a question that reads like the prompt
finds the explanation or the run that answered it, and a page of hits is not filled with pieces of one turn.
Real model, real `chroma run`, the ranking recall and `codeoid search` use."""

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


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    for name in ("CODEOID_CHROMA_URL", "CODEOID_VECTOR", "CODEOID_SECRET_PATTERNS", "CODEOID_EXCLUDE_PATHS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(retrieval, "_index", None)
    found = Memory(home, git_project(tmp_path / "project"))
    try:
        yield found
    finally:
        found.db.close()
        chroma_server.stop_server()
        for process in chroma_processes(home):
            process.kill()


def glued_lines_session(memory: Memory) -> dict[str, int]:
    """A debugging turn: the prompt names the symptom, the explanation names the cause in other words."""
    owner = memory.backing("b-bug")
    ids = {"prompt": memory.user(owner, "When I split a script on line breaks the lines come back glued together"
                                        " into one. Why?")}
    ids["fail"] = memory.tool(owner, "Bash", {"command": "python -m pytest tests/test_split.py -q"}, None,
                              error="Exit code 1\nFAILED tests/test_split.py::test_split_lines - assert 1 == 3\n"
                                    "1 failed, 8 passed in 0.4s")
    ids["grep"] = memory.bash(owner, "grep -n LINE_MATCH sqlparse/utils.py", "31:LINE_MATCH = re.compile(r'(\\r\\n"
                                                                            "|\\r|\\n)')\n47:        elif LINE_MATCH")
    ids["explain"] = memory.assistant(owner, "Found it: in split_unquoted_newlines the branch for a break piece"
                                             " skips it with `continue` instead of appending a new empty output"
                                             " string, so every following piece is added to the same entry.")
    ids["pass"] = memory.bash(owner, "python -m pytest tests/test_split.py -q", "9 passed in 0.3s")
    ids["done"] = memory.assistant(owner, "Fixed; the split tests pass.")
    other = memory.backing("b-other")  # another session's work, on other words
    memory.user(other, "Add a changelog entry for the release.")
    memory.bash(other, "git log --oneline -3", "8ee9613 Release 0.6.1\n1d78c57 Accept wrap_after=0 again")
    memory.assistant(other, "Changelog entry added under the release heading.")
    Indexer(memory.db).catch_up()
    return ids


def test_a_question_in_the_prompts_words_finds_the_explanation_that_closed_its_turn(memory: Memory) -> None:
    ids = glued_lines_session(memory)
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))

    found = retrieval.recall_ranked(memory.db, "why did the lines of a script come back glued together?",
                                    workspace_id=workspace_id, limit=5)

    assert found.signals == "BM25 + semantic"
    assert found.rows[0]["id"] == ids["explain"], [row["text"][:60] for row in found.rows]


def test_a_turn_shows_its_best_evidence_first_not_all_its_pieces(memory: Memory) -> None:
    ids = glued_lines_session(memory)
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))

    found = retrieval.recall_ranked(memory.db, "the lines of a script glued together into one",
                                    workspace_id=workspace_id, limit=5)

    top = [row["id"] for row in found.rows]
    # the prompt matches every word, yet its turn's answer is shown ahead of it, and the prompt, which only asked,
    # is not the first hit
    assert top.index(ids["explain"]) < top.index(ids["prompt"]) if ids["prompt"] in top else True, top
    assert top[0] != ids["prompt"], [row["text"][:60] for row in found.rows]
