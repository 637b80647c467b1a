"""Time and order words in a question: each form read, and resolved against a real store of sessions on known days.

The store is filled through the capture API at fixed local times (days and parts of days are the user's local
time); resolution is checked by what a user would see: which episodes the words point at.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from test_mcp_server import Memory

from codeoid.memory import when
from codeoid.store import capture, queries, rotations
from codeoid.store import db as store_db
from codeoid.workspace import identify

TODAY = dt.date(2026, 12, 4)  # a Friday
NOW = dt.datetime.combine(TODAY, dt.time(16, 0)).timestamp()


def at(days_ago: int, hour: float) -> float:
    return (dt.datetime.combine(TODAY - dt.timedelta(days=days_ago), dt.time()) + dt.timedelta(hours=hour)).timestamp()


@pytest.mark.parametrize(("question", "expected"), [
    ("what did we do today?", {"days": (when.Days(0, 0),)}),
    ("what did we look at this morning?", {"days": (when.Days(0, 0, "morning"),)}),
    ("what did we do yesterday afternoon?", {"days": (when.Days(1, 1, "afternoon"),)}),
    ("what broke last night?", {"days": (when.Days(1, 1, "night"),)}),
    ("what did we try the day before yesterday?", {"days": (when.Days(2, 2),)}),
    ("what did we fix three days ago?", {"days": (when.Days(3, 3),)}),
    ("which tests failed 2 days ago?", {"days": (when.Days(2, 2),)}),
    ("what did we change a few days ago?", {"days": (when.Days(2, 4),)}),
    ("what did we release two weeks ago?", {"days": (when.Days(11, 17),)}),
    ("what did we merge last week?", {"days": (when.Days(5, 11),)}),  # Friday: last week is 5 to 11 days back
    ("what did we commit earlier this week?", {"days": (when.Days(0, 4),)}),
    ("what did we run on Monday?", {"days": (when.Days(4, 4),)}),
    ("what did we decide last Friday evening?", {"days": (when.Days(7, 7, "evening"),)}),
    ("what did we fix three days ago in the afternoon?", {"days": (when.Days(3, 3, "afternoon"),)}),
    ("did yesterday morning's fix make it into the release we tagged that afternoon?",
     {"days": (when.Days(1, 1, "morning"), when.Days(1, 1, "afternoon"))}),
    ("what broke on Monday, and did we fix it later that day?", {"days": (when.Days(4, 4), when.Days(4, 4))}),
    ("did the whole suite pass once we had merged the teammate's branch?", {"event": when.Event("merge", "after")}),
    ("what were we looking at just before we cut the first patch release?",
     {"event": when.Event("release", "before", close=True, first=True, qualifier=("patch",)), "order": None}),
    ("what did we commit in the previous session?", {"sessions": ("previous",)}),
    ("what did we read earlier in this session?", {"sessions": ("this",)}),
    ("what did we do in session 8?", {"sessions": ("8",)}),
    ("what happened in the third session?", {"sessions": ("3",)}),
    ("what was the earliest session about?", {"sessions": ("first",)}),
    ("what did the latest conversation cover?", {"sessions": ("last",)}),
    ("what was the last commit we made?", {"order": "last"}),
    ("on the afternoon of my first day on the library, what did I ask?", {"end_days": (("first", "afternoon"),)}),
    ("what did we finish on our last day?", {"end_days": (("last", None),)}),
    ("at the end of my first morning on the project, what did I ask you about?",
     {"end_days": (("first", "morning"),)}),
    ("has the first patch release been published anywhere?",
     {"event": when.Event("release", "at", first=True, qualifier=("patch",)), "order": None}),
    ("what date did we write into the notes for the feature release?",
     {"event": when.Event("release", "at", qualifier=("feature",))}),
    ("once the bug-fix release was done, what came next?",
     {"event": when.Event("release", "after", qualifier=("bug", "fix"))}),
    ("was everything green for the latest release?", {"event": when.Event("release", "at"), "order": None}),
    ("what was the first test run that failed?", {"order": "first"}),
    ("what was the first thing we fixed?", {"order": "first"}),
    ("what did we fix right after the release?", {"event": when.Event("release", "after", close=True)}),
    ("what did we fix just before we merged?", {"event": when.Event("merge", "before", close=True)}),
    ("did the whole suite pass before we cut the release?", {"event": when.Event("release", "before")}),
    ("what changed since the upgrade?", {"event": when.Event("upgrade", "after")}),
    ("what was the session right after the merge about?",
     {"event": when.Event("merge", "after", close=True, beside="session")}),
    ("the day before we reviewed the branch, what did we time?",
     {"event": when.Event(None, "before", beside="day", phrase="reviewed the branch")}),
    ("what did we try after I asked about the cache?",
     {"event": when.Event(None, "after", phrase="asked about the cache")}),
    ("what did we run three days back?", {"days": (when.Days(3, 3),)}),
    ("what did we fix the other day?", {"days": (when.Days(1, 6),)}),
    ("what did we do over the weekend?", {"days": (when.Days(5, 6),)}),  # Friday: Sunday 5 days back, Saturday 6
    ("what did we change at the start of the week?", {"days": (when.Days(3, 4),)}),  # Monday and Tuesday
    ("what did we do in our second session?", {"sessions": ("2",)}),
    ("when did we last bump the version?", {"order": "last", "nth": 1}),
    ("when did I first see this error?", {"order": "first"}),
    ("which test failed most recently?", {"order": "last"}),
    ("the previous time we ran the linter, did it pass?", {"order": "last", "nth": 1}),
    ("the second time we ran the suite, how many failed?", {"order": "first", "nth": 2}),
    ("the time before last, what did the benchmark print?", {"order": "last", "nth": 2}),
    ("what was the penultimate commit?", {"order": "last", "nth": 2}),
])
def test_each_time_and_order_form_is_read(question: str, expected: dict[str, object]) -> None:
    found = when.read(question, TODAY)
    for name, value in expected.items():
        assert getattr(found, name) == value, (question, found)


@pytest.mark.parametrize("question", [
    "When did Melanie first go camping?",  # "first" with no work noun after it
    "What did Caroline do after summer camp?",  # an event no command is
    "what is the last argument of parse()?",
    "the sign-in check is flaky",
    "which jobs have to succeed before the pipeline pushes a release?",  # any release, not one that happened
    "what is the first day of the month?",
    "How was Caroline's first day at the new job?",
    "what did the bot bump shortly before the last upstream release?",  # someone else's release, not a command
    "what is new since the official release?",
    "what did we do that afternoon?",  # a day named before it, or none
    "my first morning at the new job was odd",
    "did Caroline last see her family in May?",  # someone else's order, not ours
    "which is the second argument?",
])
def test_ordinary_words_are_not_read_as_time(question: str) -> None:
    found = when.read(question, TODAY)
    assert not found.anything, found


def test_the_words_that_only_point_in_time_leave_the_question() -> None:
    found = when.read("how many tests passed in the full run before the release?", TODAY)
    assert found.without("how many tests passed in the full run before the release?", {"event"}) == \
        "how many tests passed in the full run?"
    found = when.read("what did we fix eight days ago?", TODAY)
    assert found.without("what did we fix eight days ago?", {"days"}) == "what did we fix?"


@pytest.fixture
def week(codeoid_home: Path, project: Path) -> tuple[Memory, dict[str, int]]:
    """Four sessions over a week: a fix and its commit ten days ago, a release (tag) three days ago, the fix after
    it the same afternoon, a merge yesterday afternoon with a fix just before it."""
    memory = Memory(codeoid_home, project)
    ids: dict[str, int] = {}

    def session(name: str, days_ago: int, hour: float) -> object:
        memory.clock = at(days_ago, hour)
        return memory.backing(name)

    first = session("s-first", 10, 9)
    ids["first_prompt"] = memory.user(first, "The parser drops blank lines; please fix it.")
    ids["first_edit"] = memory.tool(first, "Edit", {"file_path": "parser.py", "old_string": "skip",
                                                    "new_string": "keep"}, {"filePath": "parser.py"})
    ids["first_commit"] = memory.bash(first, "git commit -am 'Keep blank lines'", "[main 1a2b3c4] Keep blank lines")
    release = session("s-release", 3, 10)
    ids["release_suite"] = memory.bash(release, "python -m pytest -q", "506 passed in 9.1s")
    ids["release_tag"] = memory.bash(release, "git tag v0.6.1", "")
    after = session("s-after", 3, 14)
    ids["after_prompt"] = memory.user(after, "Hints vanish when stripping comments since the upgrade.")
    ids["after_edit"] = memory.tool(after, "Edit", {"file_path": "others.py", "old_string": "False", "new_string":
                                                    "True"}, {"filePath": "others.py"})
    ids["after_commit"] = memory.bash(after, "git commit -am 'Keep SQL hints'", "[main 5d6e7f8] Keep SQL hints")
    merge = session("s-merge", 1, 15)
    ids["merge_prompt"] = memory.user(merge, "Reindent crashes with the default wrap; fix it, then merge the docs.")
    ids["merge_edit"] = memory.tool(merge, "Edit", {"file_path": "reindent.py", "old_string": "< 1", "new_string":
                                                    "< 0"}, {"filePath": "reindent.py"})
    ids["merge_commit"] = memory.bash(merge, "git commit -am 'Allow wrap_after 0'", "[main 9a8b7c6] Allow wrap_after 0")
    ids["merge"] = memory.bash(merge, "git merge --no-ff docs-typos", "Merge made by the 'ort' strategy.")
    ids["merge_done"] = memory.assistant(merge, "Fixed reindent and merged the docs branch.")
    return memory, ids


def resolve(memory: Memory, question: str) -> when.Resolved:
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))
    return when.resolve(memory.db, question, workspace_id=workspace_id, caller_session=None, skip_live_of=None,
                        exclude_origins=("codeoid", "seed"), now=NOW)


def pointed(resolved: when.Resolved, ids: dict[str, int], memory: Memory) -> list[str]:
    """The episodes the resolved words give a full bonus to, by name."""
    names = {episode_id: name for name, episode_id in ids.items()}
    rows = {row["id"]: row for row in (queries.get_episode(memory.db, i) for i in ids.values()) if row}
    return sorted(names[i] for i, row in rows.items()
                  if resolved.bonus(i, float(row["created_at"]), str(row["session_id"])) >= 0.99)


def test_a_day_and_a_part_of_it_point_at_what_happened_then(week: tuple[Memory, dict[str, int]]) -> None:
    memory, ids = week
    assert pointed(resolve(memory, "what did we do yesterday afternoon?"), ids, memory) == \
        ["merge", "merge_commit", "merge_done", "merge_edit", "merge_prompt"]
    three = resolve(memory, "what did we work on three days ago in the afternoon?")
    assert set(pointed(three, ids, memory)) == {"after_prompt", "after_edit", "after_commit"}  # not the morning's
    assert {ids["after_prompt"]} <= set(three.added)  # found by the day alone, not by any word
    assert resolve(memory, "what did we work on three days ago in the afternoon?").query == \
        "what did we work on?"


def test_the_first_day_is_the_first_day_the_workspace_saw_work(week: tuple[Memory, dict[str, int]]) -> None:
    memory, ids = week
    first = resolve(memory, "what did I ask for on my first day?")
    assert pointed(first, ids, memory) == ["first_commit", "first_edit", "first_prompt"]
    assert first.query == "what did I ask for?"


def test_the_first_and_the_last_of_an_action(week: tuple[Memory, dict[str, int]]) -> None:
    memory, ids = week
    last = resolve(memory, "what was the last commit we made?")
    assert max(last.ordered, key=lambda i: last.ordered[i]) == ids["merge"]  # a merge writes history too
    assert ids["merge_commit"] in last.ordered
    first = resolve(memory, "what was the first commit?")
    assert max(first.ordered, key=lambda i: first.ordered[i]) == ids["first_commit"]
    fixed = resolve(memory, "what was the first thing we fixed?")
    assert max(fixed.ordered, key=lambda i: fixed.ordered[i]) == ids["first_edit"]
    second = resolve(memory, "what was the second thing we fixed?")
    assert max(second.ordered, key=lambda i: second.ordered[i]) == ids["after_edit"]
    before_last = resolve(memory, "what was the penultimate fix?")
    assert max(before_last.ordered, key=lambda i: before_last.ordered[i]) == ids["after_edit"]


def test_before_and_after_an_event_point_at_the_sessions_beside_it(week: tuple[Memory, dict[str, int]]) -> None:
    memory, ids = week
    after = pointed(resolve(memory, "what did we fix right after the release?"), ids, memory)
    assert "after_edit" in after and "release_suite" not in after and "first_edit" not in after
    before = resolve(memory, "what did we fix just before the merge?")
    assert {"merge_edit", "merge_commit"} <= set(pointed(before, ids, memory))
    assert before.bonus(ids["merge_done"], at(1, 16), "") == 0.0  # after it, not before
    assert before.query == "what did we fix?"
    # "The session before the merge" is the one before the merge's own.
    assert pointed(resolve(memory, "what was the session just before the merge about?"), ids, memory) == \
        ["after_commit", "after_edit", "after_prompt"]
    # Something we did, in the question's own words, is an event too, and "the day before" the day of work before.
    assert pointed(resolve(memory, "what did we change the day before we stripped the comments?"), ids, memory) == \
        ["first_commit", "first_edit", "first_prompt"]
    suite = pointed(resolve(memory, "did the whole suite pass before we cut the release?"), ids, memory)
    assert "release_suite" in suite and "after_commit" not in suite


def test_an_event_named_by_its_order_points_at_its_session_and_asks_for_no_action(
        week: tuple[Memory, dict[str, int]]) -> None:
    memory, ids = week
    # "patch" is not an edit here: the release's session, not the first change of the store.
    patch = resolve(memory, "has the first patch release been published anywhere?")
    assert pointed(patch, ids, memory) == ["release_suite", "release_tag"]
    assert not patch.ordered and patch.query == "has the first patch release been published anywhere?"


def test_the_words_before_an_events_noun_single_out_which_of_several(codeoid_home: Path, project: Path) -> None:
    """Two releases: "the bug-fix release" is the earlier one, whose prompts spoke of fixes, though the feature
    release came later; "the feature release" the later one; plain "the release" the latest."""
    memory = Memory(codeoid_home, project)
    memory.clock = at(6, 10)
    patch = memory.backing("s-patch")
    memory.user(patch, "Let's cut a patch release with the two bug fixes from this week.")
    patch_tag = memory.bash(patch, "git tag -a 1.0.1 -m 1.0.1", "")
    memory.clock = at(5, 10)
    after_patch = memory.backing("s-after-patch")
    merged = memory.bash(after_patch, "git merge --no-ff duration-branch", "Merge made by the 'ort' strategy.")
    memory.clock = at(2, 10)
    feature = memory.backing("s-feature")
    memory.user(feature, "Ship 1.1.0 today with the duration feature.")
    feature_tag = memory.bash(feature, "git tag -a 1.1.0 -m 1.1.0", "")
    memory.clock = at(1, 10)
    later = memory.backing("s-later")
    later_edit = memory.tool(later, "Edit", {"file_path": "fields.py", "old_string": "a", "new_string": "b"},
                             {"filePath": "fields.py"})

    ids = {"patch_tag": patch_tag, "merged": merged, "feature_tag": feature_tag, "later_edit": later_edit}
    assert pointed(resolve(memory, "has the bug-fix release been published?"), ids, memory) == ["patch_tag"]
    assert pointed(resolve(memory, "what did we write into the notes for the feature release?"), ids, memory) == \
        ["feature_tag"]
    assert pointed(resolve(memory, "was everything green for the latest release?"), ids, memory) == ["feature_tag"]
    next_to_patch = resolve(memory, "once the bug-fix release was done, what was the next piece of work?")
    assert next_to_patch.around.get(after_patch.session_id, (0.0, 0.0))[1] > 0
    assert feature.session_id not in next_to_patch.around or \
        next_to_patch.around[feature.session_id][1] < next_to_patch.around[after_patch.session_id][1]


def test_something_we_did_is_found_by_the_stems_of_its_words(week: tuple[Memory, dict[str, int]]) -> None:
    memory, ids = week
    # The prompt says "drops blank lines"; the question "dropped the blanks".
    assert pointed(resolve(memory, "what did we do after we dropped the blanks?"), ids, memory) == \
        ["first_commit", "first_edit"]


def test_sessions_named_by_order_or_number(week: tuple[Memory, dict[str, int]]) -> None:
    memory, ids = week
    assert pointed(resolve(memory, "what did we commit in the previous session?"), ids, memory) == \
        ["merge", "merge_commit", "merge_done", "merge_edit", "merge_prompt"]
    assert pointed(resolve(memory, "what was the earliest session about?"), ids, memory) == \
        ["first_commit", "first_edit", "first_prompt"]
    assert pointed(resolve(memory, "what did we do in session 3?"), ids, memory) == \
        ["after_commit", "after_edit", "after_prompt"]


def test_words_that_point_at_nothing_in_the_store_change_nothing(week: tuple[Memory, dict[str, int]]) -> None:
    memory, _ = week
    for question in ("what did we do two weeks ago?", "what did we deploy after the rebase?",
                     "what did we discuss in session 12?",
                     "what did we run before we stripped it?"):  # one word of what we did is in too much
        resolved = resolve(memory, question)
        assert not resolved.anything and resolved.query == question


def test_under_a_rotating_session_the_previous_session_is_the_window_before_the_rotation(
        codeoid_home: Path, project: Path) -> None:
    """`codeoid run` keeps one session for weeks: "the previous session" and "before the rotation" point at the
    window the last rotation closed."""
    memory = Memory(codeoid_home, project)
    memory.clock = at(2, 10)
    first = memory.backing("window-1")
    early = memory.user(first, "Profile the exporter on the big fixture.")
    timed = memory.bash(first, "python bench.py", "exported 10000 rows in 4.2 s")
    memory.clock = at(1, 10)
    with store_db.write_transaction(memory.db):
        rotations.record_rotation(memory.db, session_id=first.session_id, workspace=identify(str(project)),
                                  from_backing_session_id="window-1", to_backing_session_id="window-2",
                                  reason="threshold", occupancy_tokens=180_000, window_tokens=200_000,
                                  now=memory.now())
        second = capture.ensure_backing_session(memory.db, backing_session_id="window-2",
                                                workspace=identify(str(project)), now=memory.now(),
                                                codeoid_session_id=first.session_id, source="startup")
    later = memory.user(second, "Now add the CSV option.")
    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))

    def pointed_at(question: str) -> set[int]:
        resolved = when.resolve(memory.db, question, workspace_id=workspace_id, caller_session=first.session_id,
                                skip_live_of="window-2", exclude_origins=("codeoid", "seed"), now=NOW)
        rows = [queries.get_episode(memory.db, i) for i in (early, timed, later)]
        return {int(row["id"]) for row in rows if row is not None
                and resolved.bonus(int(row["id"]), float(row["created_at"]), str(row["session_id"])) >= 0.99}

    assert pointed_at("how long did the export take in the previous session?") == {early, timed}
    assert pointed_at("what did we time before the rotation?") == {early, timed}
    assert pointed_at("what did we start after we rotated?") == {later}
