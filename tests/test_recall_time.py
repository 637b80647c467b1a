"""Recall resolves time and order in a question against the store: a day ("yesterday", "three days ago"), a week,
a session ("the previous session", "session 2"), an order ("first", "last") and an event ("before the merge",
"after the release"). Six fixes of look-alike crashes over ten days; each question names which one only by
time. Real model, real `chroma run`, the ranking recall and `codeoid search` use."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from test_chroma_server import chroma_processes
from test_mcp_server import Memory, git_project

from codeoid.memory import chroma_server, ranking, retrieval
from codeoid.memory.indexer import Indexer
from codeoid.store import queries

pytestmark = pytest.mark.slow
DAY = 86400.0
# (days ago, hour, what crashed, why): each session fixes one crash and commits it
FIXES = [(9, 10, "parser", "the tokenizer dropped a closing quote"),
         (8, 11, "config", "the loader read the file before it existed"),
         (6, 15, "logging", "the handler was closed twice"),
         (3, 10, "cache", "the key ignored the locale"),
         (1, 14, "export", "the writer forgot to flush"),
         (0, 1, "import", "a module name had a typo")]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Memory, dict[str, int]]]:
    home = tmp_path_factory.mktemp("time") / "codeoid-home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CODEOID_HOME", str(home))
        for name in ("CODEOID_CHROMA_URL", "CODEOID_VECTOR", "CODEOID_SECRET_PATTERNS", "CODEOID_EXCLUDE_PATHS"):
            patch.delenv(name, raising=False)
        patch.setattr(retrieval, "_index", None)
        memory = Memory(home, git_project(home.parent / "project"))
        midnight = time.mktime(time.localtime()[:3] + (0, 0, 0, 0, 0, -1))
        ids: dict[str, int] = {}
        for days_ago, hour, what, why in FIXES:
            memory.clock = midnight - days_ago * DAY + hour * 3600
            owner = memory.backing(f"b-{what}")
            ids[f"{what}-prompt"] = memory.user(owner, f"The {what} step crashes on startup. Please fix the crash.")
            ids[f"{what}-run"] = memory.tool(owner, "Bash", {"command": "python -m pytest -q"}, None,
                                             error=f"Exit code 1\nFAILED tests/test_{what}.py::test_startup - crash"
                                                   "\n1 failed")
            ids[what] = memory.assistant(owner, f"Fixed the {what} crash: {why}.")
            ids[f"{what}-commit"] = memory.bash(owner, f"git commit -am 'Fix the {what} crash'",
                                                f"[main 1a2b3c{len(ids)}] Fix the {what} crash")
            if what == "logging":  # the release follows the logging fix
                memory.user(owner, "Tag the release.")
                ids["release"] = memory.bash(owner, "git tag -a v2.0 -m 'Release 2.0'", "")
            if what == "cache":  # the merge follows the cache fix
                memory.user(owner, "Merge the docs branch.")
                ids["merge"] = memory.bash(owner, "git merge --no-ff docs", "Merge made by the 'ort' strategy.")
        Indexer(memory.db).catch_up()
        try:
            yield memory, ids
        finally:
            memory.db.close()
            chroma_server.stop_server()
            for process in chroma_processes(home):
                process.kill()


def first_fix(store: tuple[Memory, dict[str, int]], question: str) -> str:
    memory, ids = store
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))
    found = retrieval.recall_ranked(memory.db, question, workspace_id=workspace_id, limit=5)
    assert found.signals == "BM25 + semantic"
    names = {episode_id: name for name, episode_id in ids.items()}
    top = [names.get(row["id"], "") for row in found.rows]
    fixes = {what for _, _, what, _ in FIXES}
    # any episode of the fix's session answers: its prompt, its failing run, its explanation or its commit
    return next((name.split("-")[0] for name in top if name.split("-")[0] in fixes), f"none of {top}")


@pytest.mark.parametrize(("question", "expected"), [
    ("which crash did we fix yesterday?", "export"),
    ("which crash did we fix yesterday afternoon?", "export"),
    ("what crash did we fix three days ago?", "cache"),
    ("what was the first crash we fixed?", "parser"),
    ("what was the earliest crash fix?", "parser"),
    ("which crash did we fix in the previous session?", "import"),
    ("what crash did we fix in session 2?", "config"),
    ("which crash did we fix right after the release?", "cache"),
    ("which crash did we fix just before the merge?", "cache"),
    ("what crash was fixed before the release?", "logging"),
])
def test_a_question_that_names_a_time_finds_the_fix_of_that_time(store: tuple[Memory, dict[str, int]],
                                                                 question: str, expected: str) -> None:
    assert first_fix(store, question) == expected


def test_last_week_and_the_latest_fix_are_resolved_against_today() -> None:
    now = time.mktime((2026, 12, 2, 15, 0, 0, 0, 0, -1))
    midnight = time.mktime((2026, 12, 2, 0, 0, 0, 0, 0, -1))
    week = ranking.query_time("which bugs did we fix last week?", now)
    assert (week.start, week.end) == (midnight - 7 * DAY, midnight)
    assert week.rest == "which bugs did we fix ?"
    assert ranking.query_time("what was the latest commit?", now).order == "last"
    assert ranking.query_time("what did we do in the last session?", now).previous_session
    assert ranking.query_time("what did we do in the last session?", now).order is None
    ago = ranking.query_time("what did we run two days ago?", now)
    assert (ago.start, ago.end) == (midnight - 2 * DAY, midnight - DAY)
    after = ranking.query_time("what broke right after the release?", now)
    assert (after.side, after.anchor, after.rest) == ("after", "the release", "what broke ?")
    assert not ranking.query_time("why were the lines glued together?", now)
