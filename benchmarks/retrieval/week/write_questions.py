# ruff: noqa: E501
"""The `week` set's questions, written from the session scripts and the stored episodes before any recall or search
ran on this set, and never edited after they were committed.

Each row: (class, style, question, answer keys (any one counts), evidence). `evidence` is a short exact text (or
any of a list) from the line that answers, which the hit must show for it to count; for some `line` questions it
is only in the raw output that compression cut from the episode's text. `class`: turn (the question reads like
the prompt that asked for the work; the answer is what closed that turn), action (broke, crashed, fixed,
committed, checked, decided, ran, measured, reviewed...), topic (ordinary words such as "bug" or "came from" that
match other sessions too; a topical word decides), time (first, last, earliest, latest, before or after an event,
yesterday, N days ago, last week, this morning, the session before), line (one line inside a long output),
lexical (rare identifiers). `style` is natural when the question shares no rare token (identifier, file name,
test name, error string) with its answer. Halves alternate within each class and style (tune, heldout, ...).

    .venv/bin/python benchmarks/retrieval/week/write_questions.py   # writes questions.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

QUESTIONS: list[tuple[str, str, str, list[str], str | list[str]]] = [
    # turn: the question reads like the prompt; the answer is the explanation or the result that closed the turn
    ("turn", "natural", "how does a value travel from an object to the output when a schema turns it into a dict?",
     ["s01.a1"], "Field.serialize"),
    ("turn", "natural", "was anything already broken when I first ran the tests on a fresh checkout, and how long did it take?",
     ["s01.a2", "s01.suite"], "passed in"),
    ("turn", "natural", "what does the guide for contributors say about setting up a development environment?",
     ["s02.a2", "s02.contributing"], ["pre-commit install", "pip install -e '.[dev]'"]),
    ("turn", "natural", "why did the accounts team's signup form refuse a name that was exactly at the limit?",
     ["s03.a1"], "exclusive"),
    ("turn", "natural", "were the billing people's complaints about rejected extra keys a bug on our side?",
     ["s04.a1"], "Not a bug"),
    ("turn", "natural", "why were some invoice totals a cent off?", ["s05.a1"], "12.34 instead of 12.35"),
    ("turn", "natural", "how fast is turning our objects into plain data, per object?", ["s06.a1", "s06.bench"],
     ["microseconds per", "usec/dump"]),
    ("turn", "natural", "would trimming the nightly report down to the columns it needs make it faster?",
     ["s06.a2", "s06.only_bench"], ["ms with", "ms for 10,000 rows"]),
    ("turn", "natural", "what was your verdict on the feature branch my former colleague asked me to look over?",
     ["s07.a1"], "approve"),
    ("turn", "natural", "why couldn't I preview the documentation on my machine?", ["s12.a1"], "isn't installed"),
    ("turn", "natural", "which interpreter versions does the hosted pipeline run the tests on?",
     ["s12.a2", "s12.workflow"], ["3.9 and 3.13", 'python: "3.9"']),
    ("turn", "natural", "why do my side project's tests only fail on the build server with an import problem?",
     ["s12.a3"], "src layout"),
    ("turn", "natural", "what did you find when the customer in Chicago said their times came back wrong?",
     ["s13.a1"], "+06:00"),
    ("turn", "natural", "what should I tell the standup about everything that got fixed?", ["s16.a1"], "user-visible"),
    ("turn", "natural", "what does that git option for remembering how conflicts were resolved actually do?",
     ["s16.a2"], "reuse recorded resolution"),
    # action: broke, crashed, failed, fixed, committed, checked, decided, ran, measured, reviewed, found
    ("action", "natural", "what crashed when we loaded a customer whose billing address had no city?",
     ["s15.repro"], "{'city': ['Missing data"),
    ("action", "natural", "which tests failed when the money rounding was wrong?", ["s05.suite_fail"],
     "test_decimal_field_string"),
    ("action", "natural", "how did we check that the validator fix worked before committing it?", ["s03.pass"],
     "177 passed"),
    ("action", "natural", "did the fix for the username complaint get committed, and under what message?",
     ["s03.commit", "s03.a2"], "Fix Length rejecting values exactly at max"),
    ("action", "natural", "what did we decide about a single app-wide rounding setting?", ["s05.a2"], "I'd rather not"),
    ("action", "natural", "what did we decide about accepting months in durations?", ["s07.a2"], "I'd keep them out"),
    ("action", "natural", "how did we make sure the fix for loading only some nested fields really works?",
     ["s15.verify"], "9 passed"),
    ("action", "natural", "how did we confirm the lint was clean before the merge got pushed?", ["s10.ruff_clean"],
     "All checks passed!"),
    ("action", "natural", "what blew up when I tried to build the documentation?", ["s12.sphinx", "s12.sphinx_module"],
     ["command not found", "No module named sphinx"]),
    ("action", "natural", "how did we reproduce the wrong time zone sign?", ["s13.repro"], "+06:00"),
    ("action", "natural", "what did the bundled speed script report when we ran it on ten thousand objects?",
     ["s06.bench_10k"], "Benchmark Result"),
    ("action", "natural", "which tests broke when error messages started overwriting each other?", ["s11.fail"],
     "test_merging_dict_and_dict"),
    ("action", "natural", "did the whole suite pass once we had merged the teammate's branch?", ["s09.suite"],
     "1242 passed"),
    ("action", "natural", "how did we resolve the clash when merging?", ["s09.resolve", "s09.a1"],
     ["3.24.0 (unreleased)", "kept both"]),
    ("action", "natural", "did we actually tag the first patch release, and what does the tag point at?",
     ["s08.log_after", "s08.a2"], ["tag: 3.23.1", "annotated tag 3.23.1"]),
    ("action", "natural", "what failed in the complete run before we shipped the second release?",
     ["s14.suite_fail", "s14.a1"], ["6 failed", "six failures"]),
    ("action", "natural", "how did we find out which commit broke the time zone handling?", ["s13.pickaxe"],
     "Drop redundant sign handling"),
    ("action", "natural", "what did we measure when the ops people blamed serialization for the slow export?",
     ["s06.a1", "s06.bench", "s06.bench_10k"], ["microseconds per", "usec/dump"]),
    # topic: ordinary words that match other sessions too; one topical word decides
    ("topic", "natural", "where did the rounding bug come from?", ["s05.show", "s05.a1"],
     ["Simplify Decimal quantize call", "\"simplify\" commit"]),
    ("topic", "natural", "where did the time zone bug come from?", ["s13.pickaxe", "s13.a1"],
     ["Drop redundant sign handling", "Marco's cleanup"]),
    ("topic", "natural", "where did the bug with renamed input keys being rejected come from?", ["s14.show", "s14.a1"],
     ["Simplify unknown-field detection", "Marco's simplification"]),
    ("topic", "natural", "what was the problem with the messages for the phone field?", ["s11.a1"],
     "replaces the earlier"),
    ("topic", "natural", "where did the bug with partial loading come from?", ["s15.pickaxe", "s15.a1"],
     ["Use attribute names for nested partial paths", "Since Marco's change"]),
    ("topic", "natural", "where did the length limit bug come from?", ["s03.show", "s03.a1"],
     ["Tighten Length bounds check", "Priya's commit from last night"]),
    ("topic", "natural", "what was the problem with the merge?", ["s09.merge", "s09.a1"],
     ["CONFLICT (content)", "single conflict"]),
    ("topic", "natural", "what was the problem with the import in the tests?", ["s10.ruff", "s10.a1"],
     ["imported but unused", "nothing uses"]),
    ("topic", "natural", "what was the problem with the runner in CI?", ["s01.log", "s12.a2"],
     ["broke the py39 job", "because of Priya's pin"]),
    ("topic", "natural", "what was the weak spot in how the duration code parses numbers?", ["s07.a1"],
     "float rounding"),
    ("topic", "natural", "where did the problem with the docs come from?", ["s12.a1"], "isn't installed"),
    # time: first, last, earliest, latest, before or after an event, yesterday, N days ago, this morning, last week
    ("time", "natural", "how many tests did the suite have the first time we ran all of it?", ["s01.suite"],
     "1231 passed"),
    ("time", "natural", "how many tests passed in the last full run before the first patch release was tagged?",
     ["s08.suite"], "1231 passed"),
    ("time", "natural", "in the most recent full test run, how many tests were there?", ["s14.suite_pass"],
     "1242 passed"),
    ("time", "natural", "what was the first problem reported after the second release went out?",
     ["s15.p1", "s15.a1"], ["insists on its required subfields", "Reproduced and fixed"]),
    ("time", "natural", "what did we work on yesterday morning?", ["s13.p1", "s13.a1"],
     ["came back as 08:15 at +06:00", "2026-12-01T08:15:00-06:00"]),
    ("time", "natural", "what did I ask you first thing this morning?", ["s15.p1"], "A support ticket came in overnight"),
    ("time", "natural", "what did we fix three days ago in the afternoon?", ["s11.a1", "s11.commit"],
     ["restored the per-key recursive merge", "Merge error dicts deeply again"]),
    ("time", "natural", "two days ago, what did we figure out about the documentation?", ["s12.a1"], "isn't installed"),
    ("time", "natural", "last week, when did we say the duration branch should go in?", ["s07.a1"],
     "merge after we cut"),
    ("time", "natural", "what was the last thing we committed before merging the branch?", ["s08.commit"],
     "Bump version to 3.23.1"),
    ("time", "natural", "in the session just before we cut the first patch release, what were we looking at?",
     ["s07.p1", "s07.a1"], ["asked me to review it", "Review of priya/timedelta-iso"]),
    ("time", "natural", "what was the earliest commit we made ourselves?", ["s03.commit"],
     "Fix Length rejecting values exactly at max"),
    ("time", "natural", "the day before we reviewed the branch, what did we time?", ["s06.a1", "s06.bench"],
     ["microseconds per", "usec/dump"]),
    ("time", "natural", "what did we do yesterday afternoon?", ["s14.p1", "s14.a1", "s14.p2", "s14.a2"],
     ["ship 3.24.0 today", "3.24.0 is tagged", "It wasn't green", "do the release"]),
    ("time", "natural", "four days ago, what went wrong when we combined the branches?", ["s09.merge"],
     "CONFLICT (content)"),
    ("time", "natural", "a week ago, which version number did we put into the project metadata?", ["s08.version"],
     'version = "3.23.1"'),
    ("time", "natural", "what was the session right after the merge about?", ["s10.p1", "s10.a1"],
     ["run the linters", "One finding"]),
    ("time", "natural", "what was the latest commit we made?", ["s15.commit"],
     "Use data keys for nested partial paths again"),
    # line: the answer is one line inside a long output (a number, a value, a summary line, a commit body)
    ("line", "natural", "why was the test runner image pinned in CI?", ["s01.log", "s07.log", "s08.log", "s16.log"],
     "broke the py39 job"),
    ("line", "natural", "according to its commit message, why does the duration change refuse months and years?",
     ["s07.log", "s16.log"], "P1M has no fixed length"),
    ("line", "natural", "how many loops per measurement does the speed script do unless told otherwise?",
     ["s06.cat_bench"], "default=1000"),
    ("line", "natural", "which branch does the contributor guide say fixes for bugs should be sent to?",
     ["s02.contributing"], "most recent release branch"),
    ("line", "natural", "what speed numbers did the author of the money rounding simplification quote?",
     ["s07.log", "s08.log", "s16.log"], "39.8 after"),
    ("line", "natural", "did the half-second duration case run in the full suite after the merge?",
     ["s09.suite", "s14.suite_fail"], "test_from_iso_duration[PT0.5S"),
    ("line", "natural", "which versions of the interpreter and of the test runner did the environment check show?",
     ["s02.python", "s02.pip_list"], ["Python 3.11.7", "9.2.0"]),
    ("line", "natural", "what was the time per object when dumping ten thousand objects in one go?",
     ["s06.bench_10k"], "usec/dump"),
    ("line", "natural", "how long did dumping all ten thousand rows take with every field included?",
     ["s06.only_bench"], "all fields:"),
    ("line", "natural", "in the failing money test, what value came out instead of twelve point three?",
     ["s05.suite_fail"], "Decimal('12.4')"),
    ("line", "natural", "which test in the date helpers caught the sign problem?", ["s13.fail"],
     "test_from_iso_datetime"),
    ("line", "natural", "after the fix, what did the reproduction print for the customer's timestamp?",
     ["s13.repro_fixed"], "2026-12-01T08:15:00-06:00"),
    ("line", "natural", "how many tests were picked when we ran only the duration-related ones on the branch?",
     ["s07.branch_tests"], "20 selected"),
    ("line", "natural", "how many files did the duration branch change, and how many lines did it add?",
     ["s07.diff"], "5 files changed"),
    ("line", "natural", "what did the history say the docs summary extension was bumped to?",
     ["s01.log", "s08.log", "s16.log"], "0.2.14"),
    ("line", "natural", "which python does the CI job that builds the package use?", ["s12.workflow", "s12.a2"],
     ['python-version: "3.11"', "package build 3.11"]),
    ("line", "natural", "what share of load time was the error merging supposedly taking?", ["s11.show", "s16.log"],
     "18% of load time"),
    ("line", "natural", "which ticket number did the commit for the username fix mention?",
     ["s03.p2", "s07.log", "s08.log", "s16.log"], "ACC-2291"),
    # lexical: rare identifiers shared with the answer
    ("lexical", "lexical", "where did we see {**errors1, **errors2} in merge_errors?", ["s11.show", "s11.read", "s11.fix"],
     "{**errors1, **errors2}"),
    ("lexical", "lexical", "test_nested_partial_tuple_with_data_key regression test", ["s15.add_test"],
     "def test_nested_partial_tuple_with_data_key"),
    ("lexical", "lexical", "what does _iso8601_duration_re match?", ["s07.diff"], "_iso8601_duration_re"),
    ("lexical", "lexical", "F401 math imported but unused in test_utils.py", ["s10.ruff", "s10.a1"], "F401"),
    ("lexical", "lexical", "what does get_fixed_timezone do with the sign?", ["s13.a1", "s13.read"],
     "get_fixed_timezone"),
    ("lexical", "lexical", "ROUND_HALF_EVEN context default in Decimal quantize", ["s05.a1", "s05.commit"],
     "ROUND_HALF_EVEN"),
    ("lexical", "lexical", "git config rerere.enabled", ["s16.a2", "s16.config"], "rerere.enabled"),
    ("lexical", "lexical", "sphinx-build: command not found", ["s12.sphinx"], "sphinx-build: command not found"),
    ("lexical", "lexical", "test_multiple_validators_merge_dict_errors failure", ["s11.fail", "s11.a1"],
     "test_multiple_validators_merge_dict_errors"),
    ("lexical", "lexical", "partial_repro.py traceback", ["s15.repro"], "partial_repro.py"),
]


def main() -> None:
    seen: dict[tuple[str, str], int] = {}
    rows = []
    for number, (kind, style, question, answers, evidence) in enumerate(QUESTIONS, 1):
        order = seen.get((kind, style), 0)
        seen[(kind, style)] = order + 1
        rows.append({"id": f"w{number:03d}", "class": kind, "style": style, "question": question, "answers": answers,
                     "evidence": evidence, "split": "tune" if order % 2 == 0 else "heldout"})
    with open(HERE / "questions.jsonl", "w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    print(f"{len(rows)} questions")


if __name__ == "__main__":
    main()
