"""What an episode did and what a question asks for: roles, run tags and cues, in the words people use."""

from __future__ import annotations

import pytest

from codeoid.memory.actions import asked, fit, fit_or_explains, tags_of


@pytest.mark.parametrize(("command", "is_error", "expected"), [
    ("git commit -am 'Keep hints'", False, {"run", "passed", "commit"}),
    ("cd repo && git merge --no-ff docs-typos", False, {"run", "passed", "commit"}),
    ("git tag -a v0.6.1 -m 'Release 0.6.1'", False, {"run", "passed", "commit"}),
    ("python3 -m pytest -q tests/test_format.py", True, {"run", "failed", "test"}),
    ("PYTHONPATH=. pytest -x", False, {"run", "passed", "test"}),
    ("npm test -- --watch=false", True, {"run", "failed", "test"}),
    ("cargo test --lib", False, {"run", "passed", "test"}),
    ("make -j4 check", False, {"run", "passed", "test"}),
    ("grep -rn MAX_GROUPING_TOKENS sqlparse", False, {"run", "passed"}),
    ("git diff --stat", False, {"change", "passed"}),
    ("cat pyproject.toml", False, {"read", "passed"}),
    ("git log --oneline -5", False, {"run", "passed"}),
])
def test_a_shell_run_is_tagged_by_how_it_went_and_what_it_was(command: str, is_error: bool,
                                                                 expected: set[str]) -> None:
    assert tags_of("tool", "Bash", command, is_error) == expected


def test_other_calls_have_their_role_only() -> None:
    assert tags_of("tool", "Edit", None, False) == {"change"}
    assert tags_of("tool", "Read", None, False) == {"read"}
    assert tags_of("tool", "Grep", None, False) == {"tool"}
    assert tags_of("assistant", None, None, False) == {"assistant"}


@pytest.mark.parametrize(("question", "roles", "tags", "explanation"), [
    ("what broke when we tried to format a huge insert?", {"run"}, {"failed"}, False),
    ("show me the crash from formatting with reindent", {"run"}, {"failed"}, False),
    ("did we commit the fix for statements that start with WITH?", {"run", "change"}, {"commit"}, False),
    ("how did we check that a tiny right margin is refused?", {"run"}, {"passed", "test"}, False),
    ("how did we make sure the fix for nested loading really works?", {"run", "change"}, {"passed", "test"}, False),
    ("what was your verdict on the branch my colleague asked me to look over?", {"assistant"}, set(), True),
    ("did the whole suite pass?", {"run"}, {"passed", "test"}, False),
    ("which test failed when the names changed?", {"run", "change"}, {"failed", "test"}, False),
    ("what was the last commit we made?", {"run"}, {"commit"}, False),
    ("what changed in the code to bring the hints back?", {"change"}, set(), False),
    ("what test did we add for the quotes problem?", {"change"}, set(), False),
    ("what release date did we write into the notes?", {"change"}, set(), False),
    ("which file does the script write its profile to?", {"read"}, set(), False),  # a program's lines, no change
    ("why did our optimizer hints disappear?", set(), set(), True),
    ("where did the bug with the quotes come from?", set(), set(), True),
    ("what did we decide about the token limit?", set(), set(), True),
    ("what did all the failures of the last red run have in common?", {"run"}, {"failed"}, True),
    ("what did the review of the uncommitted change conclude?", {"change"}, set(), True),
    ("could you reproduce the overnight CI failure?", {"run"}, {"failed"}, True),
    # A yes-or-no question about the work asks for a verdict: its verbs are hypothetical, no action done.
    ("would the teammate's change break callers who send a plain number?", set(), set(), True),
    ("can the duration parser cope with a negative span?", set(), set(), True),
    ("if I edit the library's code, do my edits apply right away?", set(), set(), True),
    ("is the linter the same version the commit hooks pin?", set(), set(), True),
    # A file's kind names the read of it.
    ("how many objects does the bundled speed script dump by default?", {"read"}, set(), False),
    ("which jobs does the release workflow run first?", {"read"}, set(), False),
    # A leading clause says which turn; the main clause names what is wanted.
    ("when you checked my setup, why did you stop the linter from changing files?", set(), set(), True),
    ("what should the billing folks actually do so their payloads stop failing?", {"run"}, {"failed"}, True),
    ("what commit message did we use when we fixed the invoices?", {"run"}, {"commit"}, False),
    ("which other commit turned up besides the culprit?", {"run"}, {"commit"}, False),
    # A trailing purpose says what the work was for: the change is wanted, not the green run.
    ("what did we change in the check, to get the suite green before the release?", {"change"}, set(), False),
    ("what did we run to make sure the fix works?", {"run"}, {"passed", "test"}, False),
    # ... unless the main clause names nothing: then the clause does.
    ("how many tests were picked when we ran only the duration ones?", {"run"}, {"test"}, False),
    # Nouns that name no action: a check, a run of words, passing something along.
    ("cure flaky sign-in check", set(), set(), False),
    ("the diff where we pass the configured help flags through", {"change"}, set(), False),
    ("what values does the case option accept?", set(), set(), False),
    # An edit named by what it did to the code, after its subject; the code's own doing names none.
    ("which line did we delete so the linter would stop complaining?", {"change"}, set(), False),
    ("the most recent time we bumped the version, what did the metadata say?", {"change"}, set(), False),
    ("what did we rename the option to?", {"change"}, set(), False),
    ("does the function remove the quotes?", set(), set(), True),  # a verdict, no action
])
def test_a_question_names_the_action_it_wants(question: str, roles: set[str], tags: set[str],
                                              explanation: bool) -> None:
    found = asked(question)
    assert (set(found.roles), set(found.tags), found.explanation) == (roles, tags, explanation)


def test_a_question_that_asks_why_of_a_named_action_gives_the_answer_half_a_role_and_the_run_its_own() -> None:
    why = asked("why did the import crash when we ran the tests?")
    assert fit_or_explains(why, frozenset({"assistant"})) == 0.5
    failing_run = frozenset({"run", "failed", "test"})
    assert fit_or_explains(why, failing_run) == fit(why, failing_run) == 1.0
    plain = asked("what crashed when we ran the tests?")
    assert fit_or_explains(plain, frozenset({"assistant"})) == 0.0
    about_oneself = asked("how do I pay for school without working during the semester?")
    assert about_oneself.explanation and fit_or_explains(about_oneself, frozenset({"assistant"})) == 0.0


def test_an_action_named_only_in_a_clause_that_says_which_turn_weighs_half() -> None:
    clause = asked("which columns did we keep when we timed the trimmed dump?")
    assert clause.roles == {"run"} and clause.strength == 0.5
    main = asked("what did the timing report when we trimmed the dump?")
    assert main.strength == 1.0
