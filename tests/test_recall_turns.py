"""Recall over turns of work and time, as a developer asks days later: real store, real model, real Chroma server,
the ranking the MCP server's `recall` uses.

Each question is worded the way people ask it, not with the answer's words: it matches the prompt that asked for
the work (or nothing at all, for a question about when), and the answer is another episode of that turn.
"""

from __future__ import annotations

import datetime as dt

import pytest
from test_mcp_server import Memory
from test_memory_index import memory  # noqa: F401  (the fixture: a data dir whose Chroma server is stopped after)

from codeoid.memory import line_choice, ranking, retrieval
from codeoid.memory.indexer import Indexer
from codeoid.store import queries

pytestmark = pytest.mark.slow


def days_ago(days: int, hour: float) -> float:
    today = dt.date.today()
    return (dt.datetime.combine(today - dt.timedelta(days=days), dt.time()) + dt.timedelta(hours=hour)).timestamp()


def week_of_work(memory: Memory) -> dict[str, int]:  # noqa: F811
    """Three sessions: a crash found and fixed nine days ago, a release three days ago, a quoting bug yesterday
    afternoon; and a chat with no tool call that evening."""
    ids: dict[str, int] = {}
    memory.clock = days_ago(9, 10)
    crash = memory.backing("b-crash")
    ids["crash_prompt"] = memory.user(crash, "Formatting our huge insert statement dies halfway; what is going on?")
    ids["crash_grep"] = memory.bash(crash, "grep -rn MAX_GROUPING_TOKENS sqlparse",
                                    "sqlparse/engine/grouping.py:17:MAX_GROUPING_TOKENS = 100")
    ids["crash_run"] = memory.tool(crash, "Bash", {"command": "python -m sqlparse.format big.sql"}, None, error=(
        "Exit code 1\nTraceback (most recent call last):\n  File \"sqlparse/engine/grouping.py\", line 37, in group\n"
        "sqlparse.exceptions.SQLParseError: Maximum number of tokens exceeded (100)"))
    ids["crash_explain"] = memory.assistant(crash, "A teammate's commit lowered the grouping limit from 10000 to "
                                                   "100 tokens, so any statement longer than that is refused.")
    ids["crash_edit"] = memory.tool(crash, "Edit", {"file_path": "sqlparse/engine/grouping.py", "old_string":
                                                    "MAX_GROUPING_TOKENS = 100", "new_string":
                                                    "MAX_GROUPING_TOKENS = 10000"}, {"filePath": "grouping.py"})
    ids["crash_commit"] = memory.bash(crash, "git commit -am 'Restore the grouping limit'",
                                      "[main 3f2a1b0] Restore the grouping limit")
    memory.clock = days_ago(3, 11)
    release = memory.backing("b-release")
    ids["release_prompt"] = memory.user(release, "Let's cut 0.6.1 once everything is green.")
    ids["release_suite"] = memory.bash(release, "python -m pytest -q", "........\n506 passed in 9.13s")
    ids["release_tag"] = memory.bash(release, "git tag -a v0.6.1 -m 'Release 0.6.1'", "")
    memory.clock = days_ago(1, 15)
    quotes = memory.backing("b-quotes")
    ids["quotes_prompt"] = memory.user(quotes, "remove_quotes strips 'abc\" even though the quotes differ.")
    ids["quotes_fail"] = memory.tool(quotes, "Bash", {"command": "python -m pytest -q tests/test_utils.py"}, None,
                                     error="Exit code 1\nFAILED tests/test_utils.py::test_remove_quotes[foo]\n"
                                           "1 failed, 12 passed")
    ids["quotes_edit"] = memory.tool(quotes, "Edit", {"file_path": "sqlparse/utils.py", "old_string":
                                                      "if val[0] in quotes:", "new_string":
                                                      "if val[0] in quotes and val[0] == val[-1]:"},
                                     {"filePath": "utils.py"})
    ids["quotes_commit"] = memory.bash(quotes, "git commit -am 'Strip quotes only when they match'",
                                       "[main 8c9d0e1] Strip quotes only when they match")
    ids["quotes_done"] = memory.assistant(quotes, "Quotes are only removed now when both ends match; committed.")
    memory.clock = days_ago(1, 19)
    chat = memory.backing("b-chat")
    ids["chat_question"] = memory.user(chat, "Should we rename the project's default branch to trunk?")
    ids["chat_answer"] = memory.assistant(chat, "Renaming it would break every contributor's checkout; keep main.")
    Indexer(memory.db).catch_up()
    return ids


def ranked(memory: Memory, question: str, *, limit: int = 5,  # noqa: F811
           weights: ranking.RecallWeights | None = None) -> list[int]:
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))
    return [row["id"] for row in retrieval.recall_ranked(memory.db, question, workspace_id=workspace_id, limit=limit,
                                                         weights=weights).rows]


def test_a_turn_answers_with_the_episode_the_question_wants_not_the_prompt(memory: Memory) -> None:  # noqa: F811
    ids = week_of_work(memory)

    def top(question: str, limit: int = 3) -> list[int]:
        return ranked(memory, question, limit=limit)

    assert top("why did formatting the huge insert stop working?")[0] == ids["crash_explain"]
    assert top("what broke when we formatted the huge insert?")[0] == ids["crash_run"]
    assert top("did we commit the fix for the huge insert?")[0] == ids["crash_commit"]
    # Without turns, the prompt that restates the question comes first.
    alone = ranking.RecallWeights(turn_lend=0.0, turn_repeat=0.0)
    assert ranked(memory, "why did formatting the huge insert stop working?", weights=alone)[0] == ids["crash_prompt"]
    # A question that names no action, in the prompt's words: what closed that turn answers it.
    options = top("what were my choices about that huge insert statement?", limit=2)
    assert ids["crash_explain"] in options, options
    assert ids["crash_explain"] not in ranked(memory, "what were my choices about that huge insert statement?",
                                              limit=2, weights=ranking.RecallWeights(turn_answer=0.0))
    # A conversation's turns are not a turn of work: its question and answer are ranked as before.
    chat = top("what did we say about renaming the default branch?", limit=2)
    assert set(chat) == {ids["chat_question"], ids["chat_answer"]}


def test_a_question_about_when_finds_what_happened_then(memory: Memory) -> None:  # noqa: F811
    ids = week_of_work(memory)

    def top(question: str, limit: int = 5) -> list[int]:
        return ranked(memory, question, limit=limit)

    quotes = {ids[name] for name in ("quotes_prompt", "quotes_fail", "quotes_edit", "quotes_commit", "quotes_done")}
    assert top("what did we do yesterday afternoon?", limit=1)[0] in quotes
    assert top("what was the last commit we made?", limit=1) == [ids["quotes_commit"]]
    assert top("what was the first commit?", limit=1) == [ids["crash_commit"]]
    assert top("did the whole suite pass before we cut the release?", limit=1) == [ids["release_suite"]]
    assert top("what did we fix right after the release?", limit=3)[0] in quotes
    assert top("what did we change nine days ago?", limit=1) == [ids["crash_edit"]]


def test_the_first_or_last_time_we_did_something_is_ordered_among_what_matches_it(memory: Memory) -> None:  # noqa: F811
    """"The last time we edited the grouping limit" is the last edit of the grouping limit, not the last edit; with
    no topic named, the store's last commit."""
    ids = week_of_work(memory)
    memory.clock = days_ago(0, 9)
    docs = memory.backing("b-docs")
    for path in ("README.rst", "docs/index.rst", "CHANGELOG"):  # edits since, of other things
        memory.tool(docs, "Edit", {"file_path": path, "old_string": "0.6.0", "new_string": "0.6.1"}, {"filePath": path})
    Indexer(memory.db).catch_up()
    question = "the last time we edited the grouping limit, what did we set it to?"
    assert ranked(memory, question, limit=1) == [ids["crash_edit"]]
    # Ordered among every edit, whatever it touched, this morning's came first.
    assert ranked(memory, question, limit=1, weights=ranking.RecallWeights(order_margin=0)) != [ids["crash_edit"]]
    assert ranked(memory, "the first time we ran the test suite, how many passed?", limit=1) == \
        [ids["release_suite"]]
    assert ranked(memory, "what was the last commit we made?", limit=1) == [ids["quotes_commit"]]


def test_without_the_vector_index_the_words_still_know_when_and_what_broke(
        memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """With Chroma down, or before the first minutes of indexing, recall ranks by words alone, and time, actions and
    turns still apply to them."""
    monkeypatch.setenv("CODEOID_VECTOR", "off")
    ids = week_of_work(memory)
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))
    found = retrieval.recall_ranked(memory.db, "what was the last commit we made?", workspace_id=workspace_id,
                                    limit=3)
    assert found.signals == "BM25" and "CODEOID_VECTOR=off" in str(found.fallback)
    assert found.rows[0]["id"] == ids["quotes_commit"]
    assert ranked(memory, "what did we change nine days ago?", limit=1) == [ids["crash_edit"]]
    assert ranked(memory, "what broke when we formatted the huge insert?", limit=1) == [ids["crash_run"]]
    # Every episode that holds a word of the question is still a hit, as BM25 alone gave them.
    assert ids["crash_prompt"] in ranked(memory, "huge insert statement", limit=10)


def test_a_diff_found_by_meaning_shows_the_line_it_changed_first(memory: Memory) -> None:  # noqa: F811
    """The notes' section names share the question's words; the release date is the line the edit wrote, and the
    vector index found the hunk that holds it."""
    owner = memory.backing("b-notes")
    lines = [" Changelog", " ---------", " ", "-0.7.0 (unreleased)", "+0.7.0 (2026-12-03)", " *****************",
             " ", " Features:", " ", " - Duration fields are parsed from ISO 8601 strings.", " ", " Bug fixes:",
             " ", " - Offsets keep their sign."]
    path = str(memory.project / "CHANGELOG.rst")
    edit = memory.tool(owner, "Edit", {"file_path": path, "old_string": "unreleased", "new_string": "2026-12-03"},
                       {"filePath": path, "oldString": "unreleased", "newString": "2026-12-03",
                        "structuredPatch": [{"oldStart": 1, "oldLines": 13, "newStart": 1, "newLines": 13,
                                             "lines": lines}], "userModified": False, "replaceAll": False})
    memory.assistant(owner, "The changelog is ready for the release.")
    Indexer(memory.db).catch_up()
    question = "what release date did we write into the notes for the feature release?"
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))
    row = next(row for row in retrieval.recall_ranked(memory.db, question, workspace_id=workspace_id, limit=5).rows
               if row["id"] == edit)

    picks = line_choice.choose(memory.db, line_choice.question_terms(memory.db, question), row).picks

    texts = [memory.db.execute("SELECT text FROM episodes WHERE id = ?", (edit,)).fetchone()[0].split("\n")[
        pick.number - 1] for pick in picks]
    assert "+0.7.0 (2026-12-03)" in texts[:2], texts
