# ruff: noqa: E501
"""The held-out coding set's questions, written from the session scripts before any recall was run, and never
edited after. `evidence` is text (or any of a list) the answer must show for a hit to count (in its lines or its command line);
`class` is what the question tests (turn, action, topic, time, line, lexical); `style` is `natural` when the
question shares no rare token with its answer. Halves alternate within each class (tune, heldout, ...).

    python benchmarks/retrieval/coding/write_questions.py   # writes questions.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (class, style, question, evidence keys, evidence text)
QUESTIONS = [
    # turn: the question reads like the prompt; the answer is the explanation or the result that closed its turn
    ("turn", "natural", "why were the lines of a multi-line script coming back glued together?",
     ["s02.explain"], "continue"),
    ("turn", "natural", "what was the reason statements beginning with a common table expression had no type?",
     ["s03.explain"], "T.Keyword.DDL"),
    ("turn", "natural", "why did our optimizer hints disappear after the upgrade?", ["s07.explain"], "is_sql_hint"),
    ("turn", "natural", "why did the generated python code call the second variable differently?",
     ["s09.explain"], "underscore"),
    ("turn", "natural", "what was the explanation for reindent failing with the default wrap setting?",
     ["s10.explain"], "defaults to 0"),
    ("turn", "natural", "where does the time go when formatting our big migration file?", ["s11.explain", "s11.measure"],
     "reindent"),
    ("turn", "natural", "how does a format call travel from the entry point to the filters?", ["s01.explain"],
     "build_filter_stack"),
    ("turn", "natural", "what did you find when I asked whether my environment was ready?", ["s13.answer"],
     "ready"),
    ("turn", "natural", "could you reproduce the overnight CI failure of the keyword tests?", ["s15.answer"],
     "cannot reproduce"),
    ("turn", "natural", "which leftover notes in the code did we look at and which one is out of date?",
     ["s14.answer"], "stale"),
    # action: named the way people name it (broke, crash, commit, check, review, decide, ran, failed, passed)
    ("action", "natural", "what broke when we tried to format a huge insert?", ["s05.crash"], "Maximum number of tokens"),
    ("action", "natural", "show me the crash from formatting with reindent and no wrap setting", ["s10.crash"],
     "wrap_after requires a positive integer"),
    ("action", "natural", "did we commit the fix for statements that start with WITH?", ["s04.commit"],
     "Report the DML type"),
    ("action", "natural", "how did we check that a tiny right margin is refused?", ["s08.check"],
     "right_margin requires an integer > 10"),
    ("action", "natural", "what did the review of the uncommitted change conclude?", ["s04.review"], "ready to commit"),
    ("action", "natural", "what did we decide about making the token limit configurable?", ["s05.decision"],
     "restore 10000"),
    ("action", "natural", "which tests failed when the glued lines bug was present?", ["s02.fail"], "failed"),
    ("action", "natural", "did the whole suite pass before we cut the release?", ["s06.suite"], "506 passed"),
    ("action", "natural", "what changed in the code to bring the hints back?", ["s07.edit"], "is_sql_hint = True"),
    ("action", "natural", "did we tag the release?", ["s06.tag"], "git tag"),
    ("action", "natural", "what did we decide about lenient handling of DDL after WITH?", ["s04.decision"],
     "keep DML only"),
    ("action", "natural", "what did we run to measure formatting speed?", ["s11.measure"], "perf_counter"),
    ("action", "natural", "which test failed when the python output names changed?", ["s09.fail"],
     "test_python_multiple_statements"),
    ("action", "natural", "what was the edit that made mismatched quotes stay untouched?", ["s12.edit"],
     "val[0] == val[-1]"),
    # topic: common words ("bug", "came from", "test") must not pull in another session's root cause
    ("topic", "natural", "where did the bug with the quotes come from?", ["s12.explain"], "Faster quote removal"),
    ("topic", "natural", "which commit introduced the problem with the token limit?", ["s05.explain", "s05.show"],
     "Tighten grouping limits"),
    ("topic", "natural", "what test did we add for the quotes problem?", ["s12.edit_test"], "foo"),
    ("topic", "natural", "where did the bug with the comment filter come from?", ["s07.explain"],
     "Simplify comment stripping"),
    ("topic", "natural", "what was the root cause of the variable naming bug?", ["s09.explain"], "underscore"),
    ("topic", "natural", "what did the right margin check show beyond the validation?", ["s08.answer", "s08.check_ok"],
     "NotImplementedError"),
    ("topic", "natural", "what did the docs say about the margin option?", ["s08.docs_answer"], "minimum"),
    ("topic", "natural", "what values does the case option for keywords accept?", ["s16.answer"], "capitalize"),
    # time and order
    ("time", "natural", "what did we do yesterday afternoon?", ["s12.prompt", "s12.done", "s12.explain"], "quote"),
    ("time", "natural", "what was the first thing we fixed?", ["s02.explain", "s02.edit", "s02.commit"],
     "split_unquoted_newlines"),
    ("time", "natural", "what was the last commit we made?", ["s12.commit"], "Strip quotes only when they match"),
    ("time", "natural", "what did we fix right after the release?", ["s07.explain", "s07.edit", "s07.commit"], "hint"),
    ("time", "natural", "what did we fix just before the merge?", ["s10.explain", "s10.edit", "s10.commit"],
     "wrap_after"),
    ("time", "natural", "what was the earliest session about?", ["s13.prompt", "s13.answer"], "environment"),
    ("time", "natural", "what did we commit in the previous session?", ["s12.commit"], "Strip quotes"),
    ("time", "natural", "what did we work on three days ago?", ["s09.prompt", "s09.explain", "s16.prompt", "s16.answer"],
     "sql"),
    ("time", "natural", "what did we fix eight days ago?",
     ["s04.commit", "s05.commit", "s05.explain", "s05.edit", "s04.review"], ["CTE", "10000"]),
    ("time", "natural", "what was the first test run that failed?", ["s02.fail"], "failed"),
    ("time", "natural", "what did we look at two days ago before the merge?", ["s10.explain", "s10.crash", "s10.fail"],
     "wrap_after"),
    ("time", "natural", "what did we do in session 8?", ["s07.prompt", "s07.explain", "s07.done"], "hint"),
    # line: the line that answers sits in a long output
    ("line", "natural", "how many tests failed in the run with the glued lines?", ["s02.fail"], "47 failed"),
    ("line", "natural", "how long did reindenting the big file take compared with plain formatting?",
     ["s11.measure"], "reindent: "),
    ("line", "natural", "how many tests passed in the full run before the release?", ["s06.suite"], "506 passed"),
    ("line", "natural", "what was the final error line when the big insert was formatted?", ["s05.crash"],
     "Maximum number of tokens exceeded (100)"),
    ("line", "natural", "which line of the grouping engine raises the error for too many tokens?", ["s05.crash"],
     "line 37"),
    ("line", "natural", "what did the failing quote test assert?", ["s12.fail"], "assert 'foo' =="),
    ("line", "natural", "what python version does the project require?", ["s13.read"], "requires-python"),
    # lexical: shares a rare identifier with the answer
    ("lexical", "lexical", "test_issue227_gettype_cte failure", ["s03.fail"], "test_issue227_gettype_cte"),
    ("lexical", "lexical", "MAX_GROUPING_TOKENS edit in grouping.py", ["s05.edit"], "MAX_GROUPING_TOKENS = 10000"),
    ("lexical", "lexical", "git merge --no-ff docs-typos", ["s10.merge"], "docs-typos"),
    ("lexical", "lexical", "test_strip_comments_preserves_hint failure output", ["s07.fail"],
     "test_strip_comments_preserves_hint"),
    ("lexical", "lexical", "git log -S MAX_GROUPING_TOKENS pickaxe", ["s05.pickaxe"], "MAX_GROUPING_TOKENS"),
    ("lexical", "lexical", "NotImplementedError from right_margin.py", ["s08.check_ok"], "NotImplementedError"),
    ("lexical", "lexical", "cProfile no such option -c", ["s11.profile"], "no such option"),
    ("lexical", "lexical", "Release 0.6.1 changelog edit", ["s06.changelog"], "Release 0.6.1"),
    ("lexical", "lexical", "KeywordCaseFilter keyword_case upper", ["s16.answer", "s16.run"], "SELECT id FROM users"),
]


def main() -> None:
    seen: dict[str, int] = {}
    with open(HERE / "questions.jsonl", "w") as out:
        for number, (kind, style, question, answers, evidence) in enumerate(QUESTIONS, 1):
            seen[kind] = seen.get(kind, 0) + 1
            out.write(json.dumps({"id": f"c{number:03d}", "class": kind, "style": style, "question": question,
                                  "answers": answers, "evidence": evidence,
                                  "split": "tune" if seen[kind] % 2 else "heldout"}) + "\n")


if __name__ == "__main__":
    main()
