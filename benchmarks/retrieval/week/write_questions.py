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

# A second tuning half, written later and the same way (from the session scripts and the stored episodes, by a
# session that ran no recall on this set), when the first tuning half no longer told changes apart: ids x001-x044,
# split `tune2`. One question names a weekday ("Tuesday morning this week"): it holds only when the set is prepared
# on a Friday, the day it was written, and is left out on other days (`WEEKDAY_BOUND`).
SECOND_TUNING: list[tuple[str, str, str, list[str], str | list[str]]] = [
    # turn (8)
    ("turn","natural","what had been going on in the repository just before I took it over, and had my predecessor changed anything that matters?",
     ["s01.a3"], "release housekeeping"),
    ("turn","natural","when you checked my setup, why did you stop the linter from changing files on its own?",
     ["s02.a1"], "rewriting files behind your back"),
    ("turn","natural","what should the billing folks actually do so their payloads with extra keys stop failing?",
     ["s04.a1"], "EXCLUDE in Meta is the usual choice"),
    ("turn","natural","when we got the first patch release ready, which of the commits since the last upstream release did we leave out of the notes, and why?",
     ["s08.a1"], "none of which belongs in user-facing notes"),
    ("turn","natural","has the first patch release actually been published anywhere, or is it only local?",
     ["s08.a2"], ["Publishing is still a manual step", "nothing has left this machine"]),
    ("turn","natural","what ended up in the release notes for the feature release besides the new duration support?",
     ["s14.a2"], "three fixes since"),
    ("turn","natural","how did the problem with partially loading a renamed nested field get past our tests and into a release?",
     ["s15.a1"], "No existing test loaded"),
    ("turn","natural","was there really much speed to win from that faster way of combining error messages?",
     ["s11.a1"], "little to win there anyway"),
    # action (9)
    ("action","natural","what commit message did we use when we fixed the invoices being a cent off?",
     ["s05.commit", "s07.log", "s08.log", "s08.log_after", "s09.graph", "s16.log"], "Restore rounding argument in Decimal quantize"),
    ("action","natural","what did we call the commit that fixed the shifted times for the customer in Chicago?",
     ["s13.commit", "s16.log"], "Keep the sign of negative UTC offsets"),
    ("action","natural","after combining the teammate's feature branch, what did the history graph show on top?",
     ["s09.graph", "s09.merge_commit"], "Merge branch 'priya/timedelta-iso' into dev"),
    ("action","natural","what did we read to find out how the documentation is supposed to get built?",
     ["s12.tox", "s12.a1"], "extras = docs"),
    ("action","natural","how many tests broke when we ran the date tests while the offset sign was wrong?",
     ["s13.fail", "s13.a1"], ["4 failed, 413 passed", "four failures"]),
    ("action","natural","how many of the validator tests were failing when we looked into the username being turned away at exactly the limit?",
     ["s03.fail"], "2 failed, 175 passed"),
    ("action","natural","did we check whether git was already set up here to remember how conflicts got resolved?",
     ["s16.a2"], "off in this clone"),
    ("action","natural","when we searched the history for where the money field passes its rounding mode, which other commit turned up besides the culprit?",
     ["s05.pickaxe"], "Add Decimal field"),
    ("action","natural","which columns did we keep when we timed a trimmed-down dump of the report rows?",
     ["s06.write_bench", "s06.a2"], ['"author.first", "author.last"', "author's first and last name"]),
    # topic (8)
    ("topic","natural","where did the bug with one of two validation messages going missing come from?",
     ["s11.log", "s11.show", "s11.a1"], ["Speed up merge_errors for two dicts", "Marco's speed-up"]),
    ("topic","natural","what was the problem with the changelog on the branch we reviewed?",
     ["s07.a1"], "will collide with whatever we write"),
    ("topic","natural","how can an app get a different rounding mode everywhere without a library-wide switch?",
     ["s05.a2"], "getcontext().rounding"),
    ("topic","natural","which part of dumping a row turned out to be the expensive bit?",
     ["s06.a2"], "nested schema is the expensive part"),
    ("topic","natural","which of this sprint's fixes came with a brand new test?",
     ["s15.a1"], "added a regression test"),
    ("topic","natural","what changed about the supported interpreter versions in the last upstream release?",
     ["s01.a3", "s08.read_changelog", "s09.read_conflict"], ["3.8 dropped", "Drop support for Python 3.8"]),
    ("topic","natural","what error does a caller get when they send a badly formed duration?",
     ["s07.a1", "s07.diff"], "Not a valid period of time"),
    ("topic","natural","why doesn't our own repository hit that import failure on the build server, even with the same layout?",
     ["s12.a3"], "installs the package first"),
    # time (8)
    ("time","natural","on the afternoon of my first day on the library, what did I ask you to check?",
     ["s02.p1", "s02.a1"], ["sanity check", "You're on CPython"]),
    ("time","natural","ten days ago in the afternoon, whose complaint did we look into?",
     ["s04.p1", "s04.a1"], "webhook payloads"),
    ("time","natural","what did we commit on Tuesday morning this week?",
     ["s10.commit", "s16.log"], "Remove unused import from the duration tests"),
    ("time","natural","this morning, what did I ask for right after we fixed the nested loading problem?",
     ["s16.p1", "s16.a1"], ["for the standup", "Since 3.23.0, user-visible"]),
    ("time","natural","the first time a full run of the suite came back red, how many failures were there?",
     ["s05.suite_fail"], "3 failed, 1228 passed"),
    ("time","natural","what was the last fix we committed before tagging the second release?",
     ["s14.commit_fix", "s16.log"], "Honour data_key when detecting unknown fields"),
    ("time","natural","the most recent time we bumped the version, what did the project metadata end up saying?",
     ["s14.version"], 'version = "3.24.0"'),
    ("time","natural","what was the very first support ticket I brought to you?",
     ["s03.p1", "s03.a1"], ["Support ticket from the accounts team", "It's ours"]),
    # line (8)
    ("line","natural","which jobs have to succeed before the hosted pipeline pushes a release to the package index?",
     ["s12.workflow"], "needs: [mypy, build, tests, lint-pre-release]"),
    ("line","natural","why does the pipeline run its own lint job only when a tag is pushed?",
     ["s12.workflow"], "duplicates pre-commit.ci"),
    ("line","natural","is there a ready-made test-runner environment for the speed script, and which settings does it use?",
     ["s12.tox"], "[testenv:benchmark]"),
    ("line","natural","where in the source is the default message for input keys that no field claims defined?",
     ["s04.grep"], "schema.py:313"),
    ("line","natural","among the failures before the second release, was there one about a field whose external name is left blank?",
     ["s14.suite_fail"], "data_key_as_empty_string"),
    ("line","natural","what extra flag does the contributor guide pass when installing the commit hooks?",
     ["s02.contributing"], "--allow-missing-config"),
    ("line","natural","how does the bundled speed script turn its timings into a per-object figure?",
     ["s06.cat_bench"], "best * 1e6 / iterations / len(quotes)"),
    ("line","natural","which malformed inputs does the branch's test for rejected durations try?",
     ["s07.diff"], '"P1Y2D", "1D", "PT1H2"'),
    # lexical (3)
    ("lexical","lexical","test_load_many_stores_error_indices failure",
     ["s11.fail"], "test_load_many_stores_error_indices"),
    ("lexical","lexical","Decimal._format_num quantize without rounding",
     ["s05.a1", "s05.read"], "_format_num"),
    ("lexical","lexical","where is sub_partial built from the nested prefix?",
     ["s15.read", "s15.fix"], "sub_partial"),
]
WEEKDAY_BOUND = {"what did we commit on Tuesday morning this week?": 4}  # Monday is 0

# A third tuning half, written the same way by a session that ran no recall on it, after the second had been tuned
# on: ids y001-y040, split `tune3`, for the round after. Each row's comment names the episode or raw output its
# evidence was found in.
THIRD_TUNING: list[tuple[str, str, str, list[str], str | list[str]]] = [
    # turn (7)
    # verified: s02.a1 = ep 19
    ("turn", "natural", "if I edit the library's code in this checkout, do my edits apply right away or do I have to set it up again?",
     ["s02.a1"], "take effect without reinstalling"),
    # verified: s02.a2 = ep 22
    ("turn", "natural", "what gets installed along with the contributor dependencies the guide tells you to set up?",
     ["s02.a2"], "pulls in the test extra, tox and pre-commit"),
    # verified: s10.a1 = ep 95
    ("turn", "natural", "why did you put the lint cleanup in a commit of its own instead of folding it into the merge?",
     ["s10.a1"], "so the merge commit stays as"),
    # verified: s16.a2 = ep 159
    ("turn", "natural", "would having git remember how we settled conflicts actually have helped with the clash we ran into?",
     ["s16.a2"], "would have saved nothing"),
    # verified: s15.a1 = ep 153 ("It needs a 3.24.1"), s16.a1 = ep 156 ("fixed this morning, not released")
    ("turn", "natural", "the fix for the ticket that came in overnight: is it in a published version yet, or do we owe users another one?",
     ["s15.a1", "s16.a1"], ["It needs a 3.24.1", "fixed this morning, not released"]),
    # verified: s12.a1 = ep 109
    ("turn", "natural", "what were my two options for getting a local documentation build working?",
     ["s12.a1"], "keep it in its own environment"),
    # verified: s14.a1 = ep 134 (both alternatives)
    ("turn", "natural", "right before we shipped the feature release, what exactly was wrong with the check that flags input no field asked for?",
     ["s14.a1"], ["compared the incoming keys with the attribute names", "even though it had just been loaded"]),
    # action (7)
    # verified: s05.pass = ep 44 ("506 passed"), s05.a1 = ep 47 ("both test modules pass")
    ("action", "natural", "once the rounding was put back, which tests did we rerun and how did they do?",
     ["s05.pass", "s05.a1"], ["506 passed", "both test modules pass"]),
    # verified: s13.pass = ep 123 and its raw raw-toolu_018DT09XdxOr4whrmXh03vhQ
    ("action", "natural", "after restoring the minus sign on offsets, how many of the date and loading tests came back green?",
     ["s13.pass"], "417 passed"),
    # verified: s12.grep_layout = ep 114
    ("action", "natural", "how did we check that this repository keeps its package in the same kind of layout as my side project?",
     ["s12.grep_layout"], 'src = ["src"]'),
    # verified: s14.a2 = ep 142 (the tag command itself, ep 141, has no output)
    ("action", "natural", "did the feature release get a real tag object with a message, and where does it sit?",
     ["s14.a2"], "annotated tag are on dev"),
    # verified: s15.write_repro = ep 144
    ("action", "natural", "what little script did we write to reproduce the ticket that arrived overnight, and what input did it feed in?",
     ["s15.write_repro"], 'payload = {"name": "Ada"'),
    # verified: s11.suite_pass = ep 102 ("1242 passed"), s11.a1 = ep 104 ("the complete suite passes again")
    ("action", "natural", "after fixing the validation messages that clobbered each other, did we rerun only the failing modules or everything?",
     ["s11.suite_pass", "s11.a1"], ["1242 passed", "the complete suite passes again"]),
    # verified: s04.read_docs = ep 36
    ("action", "natural", "which part of the getting-started docs did we read before answering the billing people?",
     ["s04.read_docs"], "Handling Unknown Fields"),
    # topic (7)
    # verified: s07.a1 = ep 65
    ("topic", "natural", "can the teammate's duration parsing cope with a negative span of time, like minus one day?",
     ["s07.a1"], "leading sign"),
    # verified: s16.a1 = ep 156
    ("topic", "natural", "which of our fixes were for breakage we ourselves caused during these two weeks?",
     ["s16.a1"], "Everything but the duration feature was a regression"),
    # verified: s13.a1 = ep 125
    ("topic", "natural", "why was it wrong to assume the time zone helper would deal with the minus sign by itself?",
     ["s13.a1"], "it never sees the string"),
    # verified: s04.a1 = ep 37 ("passes them through without validation"), s04.read_docs = ep 36 ("accept and include the unknown fields")
    ("topic", "natural", "if a client wants unexpected keys kept rather than dropped or refused, what happens to them?",
     ["s04.a1", "s04.read_docs"], ["passes them through without validation", "accept and include the unknown fields"]),
    # verified: s06.a1 = ep 56
    ("topic", "natural", "if the reporting job is slow, what is more likely to blame than the serialization library?",
     ["s06.a1"], "queries or the file writing"),
    # verified: s07.a2 = ep 67
    ("topic", "natural", "what goes wrong if a one-month period is quietly treated as thirty days?",
     ["s07.a2"], "drift by a day or two"),
    # verified: s01.a2 = ep 11 ("one line per test", "-v --tb=short"), s12.grep_layout = ep 114 ("-v --tb=short")
    ("topic", "natural", "why is the test runner's output so chatty in this repo?",
     ["s01.a2", "s12.grep_layout"], ["one line per test", "-v --tb=short"]),
    # time (7): days_ago 0 = today (s15 08:18, s16 09:39), 1 = yesterday (s13 morning, s14 afternoon),
    # s09 = 4, s08 = 7, s05 = 9 (morning), s01 = 11 (morning)
    # verified: s05.p1 = ep 38, s05.a1 = ep 47
    ("time", "natural", "nine days ago in the morning, which team complained, and what turned out to be wrong?",
     ["s05.p1", "s05.a1"], ["a cent off on some invoices", "12.34 instead of 12.35"]),
    # verified: s01.p1 = ep 1, s01.a1 = ep 8
    ("time", "natural", "on my very first morning with the project, what did I ask you for before anything else?",
     ["s01.p1", "s01.a1"], ["give me a map of the package", "Here's the map."]),
    # verified: s16.p2 = ep 157, s16.a2 = ep 159
    ("time", "natural", "what was the last thing I asked you about today?",
     ["s16.p2", "s16.a2"], ["someone suggested turning on", "reuse recorded resolution"]),
    # verified: s11.a1 = ep 104, s11.log = ep 98, s11.show = ep 99 (s03/s05 culprits were Priya's; s11 is the first of Marco's)
    ("time", "natural", "what was the first breakage we traced to someone other than the person I took over from?",
     ["s11.a1", "s11.log", "s11.show"], ["Marco's speed-up", "Speed up merge_errors for two dicts"]),
    # verified: s09.p1 = ep 81, s09.a1 = ep 88 (next session after s08)
    ("time", "natural", "once the bug-fix release was done, what was the next piece of work?",
     ["s09.p1", "s09.a1"], ["bring in Priya's duration branch", "Merged. Git stopped"]),
    # verified: s14.a2 = ep 142, s14.changelog = ep 137, s16.a1 = ep 156
    ("time", "natural", "did yesterday morning's fix make it into the release we tagged that afternoon?",
     ["s14.a2", "s14.changelog", "s16.a1"], "negative UTC offsets"),
    # verified: s15.a1 = ep 153, s15.add_test = ep 150
    ("time", "natural", "earlier today, where did we put the test that guards against that bug coming back?",
     ["s15.a1", "s15.add_test"], ["beside the other nested-partial tests", "def test_nested_partial_tuple_with_data_key"]),
    # line (7)
    # verified: only in raw raw-toolu_01z2eReYYEnHvqY676JOw982 of s06.cat_bench (ep 52), raw line 110
    ("line", "natural", "when the speed script is asked to profile, which file does it save the profile to?",
     ["s06.cat_bench"], "marshmallow.pprof"),
    # verified: s14.changelog = ep 137
    ("line", "natural", "what release date did we write into the notes for the feature release?",
     ["s14.changelog"], "3.24.0 (2026-12-03)"),
    # verified: s01.log = ep 13 (and its raw raw-toolu_0148h16GANmdMo2JOn5lXEwc)
    ("line", "natural", "shortly before the last upstream release, what did the dependency bot bump the documentation generator up to?",
     ["s01.log"], "8.1.0 to 8.1.3"),
    # verified: s14.suite_fail = ep 127 (and its raw raw-toolu_01IdEmfHC5RMtaqvIVsmG7Sb)
    ("line", "natural", "in the red run before the feature release, which stray entry showed up in the result where it shouldn't have?",
     ["s14.suite_fail"], "{'bar.baz': 'okay'}"),
    # verified: s11.fail = ep 97
    ("line", "natural", "when messages were clobbering each other, which whole-object validation message was the only one that survived in the failing tests?",
     ["s11.fail"], "Must be greater than 3"),
    # verified: s12.workflow = ep 111
    ("line", "natural", "which ready-made marketplace step does the pipeline use to upload a release to the package index?",
     ["s12.workflow"], "gh-action-pypi-publish"),
    # verified: s12.tox = ep 108
    ("line", "natural", "which interpreter versions does the local multi-environment test config list, as opposed to the hosted pipeline?",
     ["s12.tox"], "py{39,310,311,312,313}"),
    # lexical (5)
    # verified: s12.workflow = ep 111
    ("lexical", "lexical", "twine check --strict dist/*", ["s12.workflow"], "twine check --strict"),
    # verified: s13.fail = ep 118 (and its raw raw-toolu_01roWExJGtQapjJh2RF5Kenv)
    ("lexical", "lexical", "test_naive_datetime_with_timezone -03:00 failure", ["s13.fail"],
     "test_naive_datetime_with_timezone"),
    # verified: s14.suite_fail = ep 127, s14.a1 = ep 134
    ("lexical", "lexical", "why did TestPluckSchema.test_pluck_with_data_key fail?", ["s14.suite_fail", "s14.a1"],
     "test_pluck_with_data_key"),
    # verified: s07.diff = ep 63 (hunk header, also in raw raw-toolu_01LmYZn8ZjEzLPI8AoX4nDFW)
    ("lexical", "lexical", "timedelta_to_microseconds in utils.py", ["s07.diff"], "timedelta_to_microseconds"),
    # verified: s02.contributing = ep 21
    ("lexical", "lexical", "Tidelift security contact", ["s02.contributing"], "Tidelift"),
]


# A fourth tuning half, written the same way by a session that ran no recall on it: ids z001-z040, split `tune4`.
# Each row's comment names the episode or raw output its evidence was found in. Days (local = UTC): today = s15, s16;
# 1 = s13, s14; 2 = s12; 3 = s10 (morning), s11 (afternoon); 4 = s09; 7 = s08; 8 = s07; 9 = s05 (morning), s06
# (afternoon); 10 = s03, s04; 11 = s01 (morning), s02 (afternoon).
FOURTH_TUNING: list[tuple[str, str, str, list[str], str | list[str]]] = [
    # turn (7)
    # verified: s01.a1 = ep 8
    ("turn", "natural", "in the tour of the package you gave me, which module did you say holds the hooks that run before loading and after dumping?",
     ["s01.a1"], "decorators.py"),
    # verified: s02.a1 = ep 19
    ("turn", "natural", "is the linter installed in my environment the same version the commit hooks are set up to use?",
     ["s02.a1"], "the version the pre-commit config pins"),
    # verified: s04.a1 = ep 37
    ("turn", "natural", "could the billing folks relax the check on extra keys for a single load, without changing their schema class?",
     ["s04.a1"], "overrides whatever the class says"),
    # verified: s06.a2 = ep 60
    ("turn", "natural", "if someone wants to rework the nightly report job for speed, what did you say they should do first?",
     ["s06.a2"], "profile the export before anyone rewrites anything"),
    # verified: s07.a1 = ep 65
    ("turn", "natural", "would the teammate's duration change break callers who send a plain number of seconds as a string?",
     ["s07.a1"], "take the old path"),
    # verified: s13.a1 = ep 125
    ("turn", "natural", "how far off were the times the customer in Chicago sent us, once they came back?",
     ["s13.a1"], "twelve hours away"),
    # verified: s16.a2 = ep 159
    ("turn", "natural", "when does having git replay my earlier conflict resolutions actually pay off?",
     ["s16.a2"], "long-lived branch is rebased again and again"),
    # action (7)
    # verified: s08.commit = ep 77, s16.log = ep 155 (its text and its raw raw-toolu_01YfJnuYhUUn7lccrjFdpWLq)
    ("action", "natural", "when we committed the first patch release, how many files and lines did that commit touch?",
     ["s08.commit", "s16.log"], "2 files changed, 9 insertions(+), 1 deletion(-)"),
    # verified: s13.fix = ep 121
    ("action", "natural", "what check did we put back into the date parsing to fix the Chicago customer's shifted times?",
     ["s13.fix"], 'if tzinfo[0] == "-":'),
    # verified: s15.fix = ep 148
    ("action", "natural", "what one-line change did we make to get partial loading working again for a nested field with a different input name?",
     ["s15.fix"], 'prefix = field_name + "."'),
    # verified: s05.grep = ep 49
    ("action", "natural", "when we searched the library's source for rounding settings, where did it show the field keeping its rounding mode?",
     ["s05.grep"], "self.rounding = rounding"),
    # verified: s15.verify = ep 151
    ("action", "natural", "once partial loading was fixed, what did rerunning the little reproduction script print?",
     ["s15.verify"], "{'name': 'Ada', 'address': {'street': '1 Main St'}}"),
    # verified: s13.pickaxe = ep 119
    ("action", "natural", "when we searched the history for the line that flips the offset's sign, which much older commit turned up besides the culprit?",
     ["s13.pickaxe"], "Copy ISO8601 deserialization functions from Django"),
    # verified: s14.fix = ep 131
    ("action", "natural", "what did we change in the check that flags keys no field claims, to get the suite green before the feature release?",
     ["s14.fix"], "field_obj.data_key if field_obj.data_key is not None else field_name"),
    # topic (7)
    # verified: s06.a1 = ep 56
    ("topic", "natural", "does dumping get slower per row as the number of rows grows?",
     ["s06.a1"], "stays flat as the list grows"),
    # verified: s04.a1 = ep 37
    ("topic", "natural", "since which major version has the library refused input keys it doesn't recognise by default?",
     ["s04.a1"], "Since 3.0"),
    # verified: s12.a1 = ep 109
    ("topic", "natural", "which optional extras did we install into this environment?",
     ["s12.a1"], "We only installed the `tests` extra"),
    # verified: s01.a1 = ep 8
    ("topic", "natural", "where in the library does the parsing of date strings live?",
     ["s01.a1"], "has the ISO date parsing"),
    # verified: s02.a2 = ep 22 ("run the suite on every supported Python"), s02.contributing = ep 21 (the other)
    ("topic", "natural", "how can I try the test suite against all the interpreter versions the project claims to support, on my own machine?",
     ["s02.a2", "s02.contributing"], ["run the suite on every supported Python", "To run tests in all supported Python versions"]),
    # verified: s03.show = ep 26; only in the raws of s07.log (raw-toolu_01WkT4gR0Z7awEOJAtjcmZIU), s08.log
    # (raw-toolu_01beTM2ixWB6YggNb9OuFs0P) and s16.log (raw-toolu_01YfJnuYhUUn7lccrjFdpWLq)
    ("topic", "natural", "why did the teammate change the length limit comparison in the first place?",
     ["s03.show", "s07.log", "s08.log", "s16.log"], "reads the same way as the other"),
    # verified: s14.show = ep 129, s16.log = only in raw raw-toolu_01YfJnuYhUUn7lccrjFdpWLq
    ("topic", "natural", "what reason did the colleague give for simplifying the check that finds keys no field claims?",
     ["s14.show", "s16.log"], "no need to rebuild a set"),
    # time (7)
    # verified: s01.p3 = ep 12, s01.a3 = ep 14 (s01's last turn, 09:59 on day 11)
    ("time", "natural", "at the end of my first morning on the project, what did I ask you about?",
     ["s01.p3", "s01.a3"], ["Anything from Priya I should know about", "Priya's one commit on top of that"]),
    # verified: s12.p3 = ep 113, s12.a3 = ep 115 (s12 is the only session two days ago; p3 is its last turn)
    ("time", "natural", "two days ago, what was the last thing I asked you about?",
     ["s12.p3", "s12.a3"], ["my own side project", "Nine times out of ten"]),
    # verified: s06.p1 = ep 51 (16:18, nine days ago)
    ("time", "natural", "nine days ago in the afternoon, which group suspected our library was what made their export slow?",
     ["s06.p1"], "the ops folks think serialization is the slow part"),
    # verified: s11.p1 = ep 96 (s09 merge and s10 lint came between the release s08 and it)
    ("time", "natural", "after the first patch release went out, which team was the first to report a problem to us?",
     ["s11.p1"], "The mobile team says"),
    # verified: s14.a1 = ep 134 (the last full run that failed: s14.suite_fail; s15 ran only a subset)
    ("time", "natural", "the last time a full run of the suite came back red, what did all the failures have in common?",
     ["s14.a1"], "all about input keys that arrive under a"),
    # verified: s07.a1 = ep 65 (eight days ago)
    ("time", "natural", "eight days ago, how many commits did the branch I was asked to review have, and what were they?",
     ["s07.a1"], "two commits: the feature, then a changelog entry"),
    # verified: s11.fail = ep 97 (14:00, three days ago)
    ("time", "natural", "three days ago in the afternoon, how many tests failed when we first ran the modules around error messages?",
     ["s11.fail"], "7 failed, 304 passed"),
    # line (7)
    # verified: only in raw raw-toolu_01YfJnuYhUUn7lccrjFdpWLq of s16.log (ep 155)
    ("line", "natural", "what reason did the colleague's commit give for making nested partial paths use attribute names?",
     ["s16.log"], "the way only= and exclude= do"),
    # verified: only in raw raw-toolu_01YfJnuYhUUn7lccrjFdpWLq of s16.log (ep 155)
    ("line", "natural", "how did the commit that removed the minus-sign handling justify dropping it?",
     ["s16.log"], "already derives the sign from the offset"),
    # verified: only in raw raw-toolu_01avIwwIYOQBPfigQCTqgOVa of s02.contributing (ep 21), raw line 72
    ("line", "natural", "according to the contributor guide, where should work on a fresh feature start from?",
     ["s02.contributing"], "New features should branch off here"),
    # verified: s06.cat_bench = ep 52
    ("line", "natural", "how many objects does the bundled speed script dump unless you tell it otherwise?",
     ["s06.cat_bench"], "default=20"),
    # verified: only in raw raw-toolu_01LmYZn8ZjEzLPI8AoX4nDFW of s07.diff (ep 63), raw line 58
    ("line", "natural", "in the teammate's duration parser, what message does the low-level error carry when the input doesn't match?",
     ["s07.diff"], "Not a valid ISO 8601 duration"),
    # verified: s12.workflow = ep 111
    ("line", "natural", "which branches make the hosted pipeline run when something is pushed to them?",
     ["s12.workflow"], 'branches: ["dev", "*.x-line"]'),
    # verified: s05.suite_fail = ep 39
    ("line", "natural", "in the failing money test, what input string was being loaded when the wrong value came out?",
     ["s05.suite_fail"], "deserialize('12.355')"),
    # lexical (5)
    # verified: s14.suite_fail = ep 127
    ("lexical", "lexical", "test_deserialize_with_attribute_param_error_returns_data_key_not_attribute_name failure",
     ["s14.suite_fail"], "test_deserialize_with_attribute_param_error_returns_data_key_not_attribute_name"),
    # verified: s07.diff = ep 63, s09.suite = only in raw raw-toolu_01OMYtKJE0AYk8eab5DtX7ld
    ("lexical", "lexical", "test_timedelta_field_deserialization_iso_duration", ["s07.diff", "s09.suite"],
     "test_timedelta_field_deserialization_iso_duration"),
    # verified: s11.fail = ep 97
    ("lexical", "lexical", "test_all_errors_on_many_nested_field_with_validates_decorator failed", ["s11.fail"],
     "test_all_errors_on_many_nested_field_with_validates_decorator"),
    # verified: s12.tox = ep 108, s12.grep_layout = ep 114
    ("lexical", "lexical", "sphinx-autobuild --watch src/marshmallow", ["s12.tox", "s12.grep_layout"], "sphinx-autobuild"),
    # verified: s01.read_serialize = ep 6
    ("lexical", "lexical", "what does _CHECK_ATTRIBUTE do in Field.serialize?", ["s01.read_serialize"], "_CHECK_ATTRIBUTE"),
]


# A fifth tuning half, written the same way by a session that ran no recall on it (every evidence string checked in
# the stored episode or its raw output): ids v001-v040, split `tune5`.
FIFTH_TUNING: list[tuple[str, str, str, list[str], str | list[str]]] = [
    # turn (7)
    # verified: s01.a1 = ep 8
    ("turn", "natural", "in that first overview of the package, which part did you say lets one schema point at another just by its name?",
     ["s01.a1"], "name a schema by string"),
    # verified: s05.a2 = ep 50
    ("turn", "natural", "besides duplicating the decimal context, what harm did you see in a process-wide switch for how money gets rounded?",
     ["s05.a2"], "leak between unrelated schemas"),
    # verified: s06.a1 = ep 56
    ("turn", "natural", "roughly how much of the nightly export's runtime did you estimate goes to turning the rows into plain data?",
     ["s06.a1"], "about 0.5 s of serialization"),
    # verified: s07.a2 = ep 67
    ("turn", "natural", "if a caller really does mean a month of thirty days, what did you say they should send instead?",
     ["s07.a2"], "can send P30D"),
    # verified: s11.a1 = ep 104
    ("turn", "natural", "in which situation is the shortcut for combining two sets of validation messages actually harmless?",
     ["s11.a1"], "fine while the two dicts have different keys"),
    # verified: s12.a3 = ep 115
    ("turn", "natural", "what concrete change to my hobby project's build pipeline did you recommend so the package can be imported there?",
     ["s12.a3"], "`pip install -e .` to the CI job"),
    # verified: s16.a2 = ep 159
    ("turn", "natural", "how would I switch on git's memory of conflict resolutions for just this checkout?",
     ["s16.a2"], "git config rerere.enabled true"),
    # action (7)
    # verified: s03.fix = ep 28
    ("action", "natural", "when we fixed the accounts team's signup name limit, what did the edited upper bound check end up looking like?",
     ["s03.fix"], "length > self.max"),
    # verified: s10.fix = ep 92
    ("action", "natural", "which line did we delete so the linter would stop complaining before the merge was pushed?",
     ["s10.fix"], "-import math"),
    # verified: s14.commit = ep 140, s16.log = ep 155
    ("action", "natural", "how big was the commit that bumped us to the feature release, in files and lines?",
     ["s14.commit", "s16.log"], "2 files changed, 8 insertions(+), 2 deletions(-)"),
    # verified: s11.commit = ep 103, s16.log = ep 155 (raw)
    ("action", "natural", "what explanation did we write into the commit body when we fixed the phone number losing one of its messages?",
     ["s11.commit", "s16.log"], "A shallow dict merge dropped the first message"),
    # verified: s05.fix = ep 43
    ("action", "natural", "what exactly did the edit that cured the cent-off invoices put back into the code?",
     ["s05.fix"], "num.quantize(self.places, rounding=self.rounding)"),
    # verified: s11.fix = ep 101
    ("action", "natural", "after our repair, what happens when both sets of validation messages carry an entry for the same field?",
     ["s11.fix"], "errors[key] = merge_errors(errors[key], val)"),
    # verified: s11.log = ep 98
    ("action", "natural", "when we looked up who last touched the module that collects validation messages, what older cleanup showed up beneath the speed-up?",
     ["s11.log"], "Remove dead code in error_store.py"),
    # topic (7)
    # verified: s07.diff = ep 63, s09.read_conflict = ep 83, s14.read_changelog = ep 136
    ("topic", "natural", "which units of time may the new textual period format contain?",
     ["s07.diff", "s09.read_conflict", "s14.read_changelog"], "weeks, days, hours, minutes and seconds"),
    # verified: s07.diff = ep 63, s07.a1 = ep 65
    ("topic", "natural", "how does the time span field tell a period string apart from a plain number before it tries to parse it?",
     ["s07.diff", "s07.a1"], ['value.startswith("P")', 'starts with "P"']),
    # verified: s05.grep = ep 49, s05.a2 = ep 50
    ("topic", "natural", "if a money field is declared without saying how to round, what ends up deciding how its amounts get rounded?",
     ["s05.grep", "s05.a2"], ["uses the rounding value from", "falls back to the current thread's decimal context"]),
    # verified: s15.add_test = ep 150
    ("topic", "natural", "when loading only part of a nested record, should the dotted paths refer to the incoming keys or to the attribute names, as we settled it?",
     ["s15.add_test"], "Partial paths name the keys of the input"),
    # verified: s01.a1 = ep 8, s01.read_dump = ep 5
    ("topic", "natural", "when an object is dumped, what name does a value get in the output if its field declares a different external name?",
     ["s01.a1", "s01.read_dump"], ["keyed by the field's `data_key` when it has one",
                                   "key = field_obj.data_key if field_obj.data_key is not None else attr_name"]),
    # verified: s01.read_init = ep 3
    ("topic", "natural", "now that the old module-level attribute is on its way out, how are users supposed to find out which release they have installed?",
     ["s01.read_init"], "Use feature detection or"),
    # verified: s02.contributing = ep 21, s12.tox = ep 108
    ("topic", "natural", "is there a way to have the documentation rebuild by itself every time I edit it?",
     ["s02.contributing", "s12.tox"], "watch-docs"),
    # time (7)
    # verified: s02.ruff = ep 18
    ("time", "natural", "the very first time we ran the linter over this repository, did it complain about anything?",
     ["s02.ruff"], "All checks passed!"),
    # verified: s08.changelog = ep 71
    ("time", "natural", "a week ago, which date did we write next to the bug-fix release in the release notes?",
     ["s08.changelog"], "3.23.1 (2026-11-27)"),
    # verified: s02.pip_list = ep 17
    ("time", "natural", "on the afternoon of my first day, which version of our own library did the environment have installed?",
     ["s02.pip_list"], "marshmallow 3.23.0"),
    # verified: s15.pickaxe = ep 147, s14.log = ep 128
    ("time", "natural", "on what date did the colleague land the change that broke partial loading of renamed nested fields, and was that before or after our first patch release?",
     ["s15.pickaxe", "s14.log"], "Marco Bianchi 2026-11-30"),
    # verified: s09.a1 = ep 88
    ("time", "natural", "four days ago, when we finished combining the branches, did we write our own message for the merge?",
     ["s09.a1"], "concluded with the default merge message"),
    # verified: s08.read_pyproject = ep 72, s08.version = ep 73
    ("time", "natural", "before the first time we bumped the version, what did the project metadata still say?",
     ["s08.read_pyproject", "s08.version"], 'version = "3.23.0"'),
    # verified: s14.changelog = ep 137
    ("time", "natural", "the most recent time we edited the release notes, how did we word the entry about the validation messages?",
     ["s14.changelog"], "merged instead of overwritten"),
    # line (7)
    # verified: s06.cat_bench = ep 52
    ("line", "natural", "unless told otherwise, how many rounds does the speed script repeat its timing before keeping the best one?",
     ["s06.cat_bench"], "default=5"),
    # verified: s01.grep_fields = ep 4 (raw)
    ("line", "natural", "when we listed the classes and methods of the module that defines all the value types, on which line did the duration class begin?",
     ["s01.grep_fields"], "1437:class TimeDelta(Field)"),
    # verified: s12.tox = ep 108
    ("line", "natural", "which version range of the commit-hook tool does the local lint environment install?",
     ["s12.tox"], "pre-commit~=3.5"),
    # verified: s11.fail = ep 97
    ("line", "natural", "in the failing run where messages overwrote each other, which error was the only one left for the second item of a many-load?",
     ["s11.fail"], "{'email': ['Not a valid email address.']}"),
    # verified: s13.fail = ep 118
    ("line", "natural", "in the failing date-parsing test, which named time zone was the expected value built with?",
     ["s13.fail"], "ZoneInfo(key='America/Chicago')"),
    # verified: s01.log = ep 13
    ("line", "natural", "the docs plugin that links to issue numbers got a major bump upstream; from which version to which?",
     ["s01.log"], "4.1.0 to 5.0.0"),
    # verified: s08.read_changelog = ep 70, s09.read_conflict = ep 83
    ("line", "natural", "what typing change did the last upstream release list as its feature?",
     ["s08.read_changelog", "s09.read_conflict"], 'replace "type" with specific metaclass'),
    # lexical (5)
    # verified: s13.read = ep 120, s13.fix = ep 121
    ("lexical", "lexical", "how is offset_mins computed in from_iso_datetime?",
     ["s13.read", "s13.fix"], "offset_mins = int(tzinfo[-2:])"),
    # verified: s15.read = ep 146, s15.fix = ep 148
    ("lexical", "lexical", "partial_is_collection branch in Schema._deserialize",
     ["s15.read", "s15.fix"], "if partial_is_collection:"),
    # verified: s01.grep_fields = ep 4 (raw)
    ("lexical", "lexical", "where is Nested._nested_normalized_option defined in fields.py?",
     ["s01.grep_fields"], "_nested_normalized_option"),
    # verified: s14.suite_fail = ep 127
    ("lexical", "lexical", "test_validates_with_data_key failing with an extra 'Unknown field.'",
     ["s14.suite_fail"], "test_validates_with_data_key"),
    # verified: s14.read = ep 130
    ("lexical", "lexical", "error_store.store_error call for unknown keys when unknown == RAISE",
     ["s14.read"], "error_store.store_error("),
]


# A sixth tuning half, written the same way by a session that ran no recall, search or ranking on this set (from
# the session scripts and the stored episodes; every evidence string checked in the stored episode or its raw
# output): ids u001-u040, split `tune6`. Days as `sessions.json` counts them back from the day of preparing: today
# = s15, s16; 1 = s13 (morning), s14 (afternoon); 2 = s12; 3 = s10 (morning), s11 (afternoon); 4 = s09; 7 = s08;
# 8 = s07; 9 = s05, s06; 10 = s03 (morning), s04 (afternoon); 11 = s01, s02.
SIXTH_TUNING: list[tuple[str, str, str, list[str], str | list[str]]] = [
    # turn (7)
    # verified: s01.a3 = ep 14
    ("turn", "natural", "when I asked what had been going on in the repository before I took over, what did you say my predecessor's only recent commit changed?",
     ["s01.a3"], "touches only the CI workflow"),
    # verified: s02.a1 = ep 19
    ("turn", "natural", "when you checked my setup on the first day, why did you keep the linter from changing files by itself?",
     ["s02.a1"], "turn automatic fixing on"),
    # verified: s06.a2 = ep 60
    ("turn", "natural", "in the comparison for the nightly report, which part of each row did you say costs the most to turn into plain data?",
     ["s06.a2"], "The nested schema is the expensive part"),
    # verified: s07.a1 = ep 65
    ("turn", "natural", "what minor weaknesses did you flag when we went over the predecessor's branch for textual time spans?",
     ["s07.a1"], ["sub-second values pick up float rounding", "a leading sign"]),
    # verified: s11.a1 = ep 104
    ("turn", "natural", "was the colleague's faster shortcut for combining validation messages worth keeping for performance, in your view?",
     ["s11.a1"], "there is little to win there anyway"),
    # verified: s13.a1 = ep 125
    ("turn", "natural", "why was the colleague wrong to think the helper that builds the fixed-offset zone would take care of a minus sign?",
     ["s13.a1"], "it never sees the string"),
    # verified: s15.a1 = ep 153
    ("turn", "natural", "after we repaired loading only some of a nested record's fields under a renamed key, did you say another version would have to go out?",
     ["s15.a1"], "It needs a 3.24.1"),
    # action (7)
    # verified: s05.pickaxe = ep 40
    ("action", "natural", "when we searched the history for the cent-off invoices, what was the oldest commit the search turned up?",
     ["s05.pickaxe"], "08b0707b Add Decimal field"),
    # verified: s03.log = ep 25
    ("action", "natural", "when we asked git who last touched the validators module for the signup complaint, whose change was on top and from what date?",
     ["s03.log"], "Priya Nair 2026-11-23 Tighten Length bounds check"),
    # verified: s10.ruff = ep 90, s10.a1 = ep 95
    ("action", "natural", "what exactly did the linter object to before the merge went out?",
     ["s10.ruff", "s10.a1"], ["imported but unused", "that nothing uses (F401)"]),
    # verified: s09.merge = ep 82, s09.a1 = ep 88
    ("action", "natural", "where did git stop with a clash when we brought the predecessor's feature branch into the main line?",
     ["s09.merge", "s09.a1"], ["Merge conflict in CHANGELOG.rst", "a single conflict, in CHANGELOG.rst"]),
    # verified: s15.write_repro = ep 144
    ("action", "natural", "what data did the throwaway reproduction script for the overnight ticket try to load?",
     ["s15.write_repro"], 'payload = {"name": "Ada", "billingAddress": {"street": "1 Main St"}}'),
    # verified: s16.a2 = ep 159, s16.config = ep 158
    ("action", "natural", "did we look whether git's memory of conflict resolutions was already switched on in this clone, and what did we find?",
     ["s16.a2", "s16.config"], ["It's off in this clone", "Exit code 1"]),
    # verified: s14.fix = ep 131, s14.a1 = ep 134
    ("action", "natural", "what did we put back so that keys arriving under the name a field declares for its input stop being flagged as strays?",
     ["s14.fix", "s14.a1"], ["field_obj.data_key if field_obj.data_key is not None else field_name", "I put back the set of data keys"]),
    # topic (7)
    # verified: s04.read_docs = ep 36, s04.a1 = ep 37
    ("topic", "natural", "if a schema's class says one thing about extra input keys and a single load call says another, which one wins?",
     ["s04.read_docs", "s04.a1"], ["will override the value applied at instantiation time", "overrides whatever the class says"]),
    # verified: s13.pickaxe = ep 119
    ("topic", "natural", "where did the code that parses date strings originally come from?",
     ["s13.pickaxe"], "Copy ISO8601 deserialization functions from Django"),
    # verified: s01.read_serialize = ep 6, s01.a1 = ep 8
    ("topic", "natural", "when an object lacks the attribute a field wants while dumping, what value gets used instead?",
     ["s01.read_serialize", "s01.a1"], ["default = self.dump_default", "substitutes `dump_default` when it is missing"]),
    # verified: s14.show = ep 129, s16.log = ep 155 (raw)
    ("topic", "natural", "what was the colleague's reasoning for his simplification of how stray input keys get detected?",
     ["s14.show", "s16.log"], "there is no need to rebuild a set"),
    # verified: s03.show = ep 26, s07.log = ep 62 (raw), s08.log = ep 69 (raw), s16.log = ep 155 (raw)
    ("topic", "natural", "what reason did the predecessor give for changing how the upper limit on a string's size is compared?",
     ["s03.show", "s07.log", "s08.log", "s16.log"], "reads the same way as the other"),
    # verified: s12.workflow = ep 111
    ("topic", "natural", "why does the hosted pipeline only lint the code when a release is tagged?",
     ["s12.workflow"], "this duplicates pre-commit.ci, so only run it on tags"),
    # verified: s01.a2 = ep 11, s12.grep_layout = ep 114
    ("topic", "natural", "why does every test show up on its own line when we run the suite?",
     ["s01.a2", "s12.grep_layout"], 'addopts = "-v --tb=short"'),
    # time (7)
    # verified: s08.suite = ep 74
    ("time", "natural", "a week ago, right before we tagged the bug-fix release, how long did the full test run take?",
     ["s08.suite"], "1231 passed in 7.59s"),
    # verified: s13.commit = ep 124, s16.log = ep 155
    ("time", "natural", "what did we commit yesterday morning?",
     ["s13.commit", "s16.log"], "Keep the sign of negative UTC offsets"),
    # verified: s10.commit = ep 94, s16.log = ep 155
    ("time", "natural", "the day after we merged the branch, what was the first thing we committed?",
     ["s10.commit", "s16.log"], "Remove unused import from the duration tests"),
    # verified: s14.a2 = ep 142, s14.changelog = ep 137
    ("time", "natural", "the last time we tagged a release, how many bug fixes did its notes list next to the new feature?",
     ["s14.a2", "s14.changelog"], ["the three fixes since 3.23.1", "Unknown-field detection honours ``data_key`` again."]),
    # verified: s07.branch_tests = ep 64
    ("time", "natural", "in the session right before we cut the patch release, did the branch's own tests pass when we ran them?",
     ["s07.branch_tests"], "20 passed, 397 deselected"),
    # verified: s04.a1 = ep 37
    ("time", "natural", "ten days ago in the afternoon, which setting did you suggest for payloads from an outside service that keep gaining new keys?",
     ["s04.a1"], "EXCLUDE in Meta is the usual choice"),
    # verified: s12.a2 = ep 112, s12.workflow = ep 111
    ("time", "natural", "two days ago, which interpreter version did you say the packaging job builds with?",
     ["s12.a2", "s12.workflow"], ["the package build 3.11", 'python-version: "3.11"']),
    # line (7)
    # verified: s01.log = ep 13 (raw), s07.log = ep 62 (raw), s08.log = ep 69 (raw), s16.log = ep 155 (raw)
    ("line", "natural", "why did the predecessor pin the hosted test jobs to an older operating system image, according to her commit message?",
     ["s01.log", "s07.log", "s08.log", "s16.log"], "setup-python has no 3.9 build"),
    # verified: s02.contributing = ep 21 (raw)
    ("line", "natural", "according to the contributor guide, which branch should a bug fix target?",
     ["s02.contributing"], "Bug fixes should be sent to the most recent release branch"),
    # verified: s07.log = ep 62 (raw), s08.log = ep 69 (raw), s16.log = ep 155 (raw)
    ("line", "natural", "how much faster did the predecessor claim her simplification of the money rounding made things?",
     ["s07.log", "s08.log", "s16.log"], "41.3 usec/dump before, 39.8 after"),
    # verified: s06.cat_bench = ep 52 (raw)
    ("line", "natural", "the bundled speed script can record where the time goes; which file does it save those statistics to?",
     ["s06.cat_bench"], 'profile.dump_stats("marshmallow.pprof")'),
    # verified: s09.read_conflict = ep 83
    ("line", "natural", "in the older release notes we looked at during the merge, which option for expecting a list of items by default did the upstream release before the last one add?",
     ["s09.read_conflict"], "so it expects a collection by default"),
    # verified: s11.fail = ep 97
    ("line", "natural", "in the red run where messages replaced each other, what was the only whole-schema message left when two schema checks should both have reported?",
     ["s11.fail"], "Must be greater than 3"),
    # verified: s08.read_changelog = ep 70, s09.read_conflict = ep 83
    ("line", "natural", "in the notes of the last upstream release, which pull request dropped the oldest supported interpreter?",
     ["s08.read_changelog", "s09.read_conflict"], "Drop support for Python 3.8 (:pr:`2318`)"),
    # lexical (5)
    # verified: s07.diff = ep 63
    ("lexical", "lexical", "_iso8601_duration_re regex in utils.py",
     ["s07.diff"], "_iso8601_duration_re = re.compile("),
    # verified: s01.read_dump = ep 5
    ("lexical", "lexical", "Schema._serialize building ret with self.dict_class()",
     ["s01.read_dump"], "ret = self.dict_class()"),
    # verified: s13.fail = ep 118
    ("lexical", "lexical", "test_naive_datetime_with_timezone failing on the -03:00 case",
     ["s13.fail"], "test_naive_datetime_with_timezone"),
    # verified: s04.grep = ep 35
    ("lexical", "lexical", 'grep -rn "Unknown field" src docs',
     ["s04.grep"], "schema.py:313"),
    # verified: s15.commit = ep 152, s16.log = ep 155
    ("lexical", "lexical", "what is commit b6e86bc7?",
     ["s15.commit", "s16.log"], "Use data keys for nested partial paths again"),
]


def main() -> None:
    seen: dict[tuple[str, str], int] = {}
    rows = []
    for number, (kind, style, question, answers, evidence) in enumerate(QUESTIONS, 1):
        order = seen.get((kind, style), 0)
        seen[(kind, style)] = order + 1
        rows.append({"id": f"w{number:03d}", "class": kind, "style": style, "question": question, "answers": answers,
                     "evidence": evidence, "split": "tune" if order % 2 == 0 else "heldout"})
    for prefix, split, half in (("x", "tune2", SECOND_TUNING), ("y", "tune3", THIRD_TUNING),
                                ("z", "tune4", FOURTH_TUNING), ("v", "tune5", FIFTH_TUNING),
                                ("u", "tune6", SIXTH_TUNING)):
        for number, (kind, style, question, answers, evidence) in enumerate(half, 1):
            rows.append({"id": f"{prefix}{number:03d}", "class": kind, "style": style, "question": question,
                         "answers": answers, "evidence": evidence, "split": split,
                         **({"weekday": WEEKDAY_BOUND[question]} if question in WEEKDAY_BOUND else {})})
    with open(HERE / "questions.jsonl", "w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    print(f"{len(rows)} questions")


if __name__ == "__main__":
    main()
