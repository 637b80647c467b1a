"""Failures grouped by cause (`[rule.failures]`): one regression failing many tests reads as one traceback and a
list of test ids, every id and error line kept, every cut named with its raw lines."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from detectors import lines_of, output_lines, violations

from codeoid.compressors import MARKER, Rule, Thresholds, compress_bytes, load_rules
from codeoid.compressors.failure_groups import cause_of
from codeoid.compressors.rules import rule_from_table

FIXTURES = Path(__file__).parents[1] / "fixtures" / "compress"
COMMANDS = {entry["name"]: entry["command"]
            for entry in json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]}
RULES = load_rules(user_dir="/nonexistent/codeoid-user-rules")
# The engine's gap marker form: count, what was cut (the failures partly shown, those cut whole by name), raw lines.
NOTE = re.compile(r"(?P<cut>\d+) lines? cut \(failures with the cause of (?P<first>.+?)(?: \((?P<where>\S+)\))?: "
                  r"(?:the rest of (?P<shown>\d+) more failures?)?(?:; )?"
                  r"(?:(?P<whole>\d+) more failures? whole: (?P<names>.+))?\), "
                  r"raw lines? (?P<start>\d+)(?:-(?P<end>\d+))?$")

PYTEST_LIKE = """
[[rule]]
name = "pytest-like"
drop = ['^\\s*$']
keep = ['^E\\s+\\w*Error\\b']
[rule.failures]
begin = '^=+ FAILURES =+$'
start = '^_{3,} (.+?) _{3,}$'
end = '^=+ .* =+$'
reason = ['^E\\s']
message = '^E\\s+(\\S.*)$'
frame_after = '^(\\S+?):(\\d+): '
pointer = ['^>']
library = ['site-packages/']
budget = %(budget)d
[rule.match]
program = "pytest"
"""


def make_rule(toml: str) -> Rule:
    return Rule.from_plain({**rule_from_table(tomllib.loads(toml)["rule"][0]), "source": "test"})


def failure(name: str, value: int, error: str = "ValueError", where: str = "pkg/core.py:12") -> list[str]:
    """One pytest failure report of the long form: the test's frame, a `_ _ _` separator, the raising frame."""
    return [
        f"{'_' * 20} {name} {'_' * 20}", "", "    def " + name + "():", f"        data = make({value})",
        f">       assert parse(data) == {value}", "", f"tests/test_parse.py:{value}: ", "_ _ _ _ _ _ _ _", "",
        "    def parse(data):", "        for item in data:", "            check(item)",
        f">       raise {error}(f'bad value {{data!r}}')", f"E       {error}: bad value '{value:x}' at 0x{value:08x}",
        "", f"{where}: {error}",
    ]


def pytest_run(*reports: list[str]) -> bytes:
    lines = ["=" * 20 + " test session starts " + "=" * 20, "collected 90 items", "", "tests/test_parse.py " + "F" * 40,
             "=" * 30 + " FAILURES " + "=" * 30]
    for report in reports:
        lines += report
    lines += ["=" * 20 + " short test summary info " + "=" * 20]
    lines += [f"FAILED tests/test_parse.py::{report[0].strip('_ ')} - something" for report in reports]
    lines += ["=" * 20 + f" {len(reports)} failed in 0.12s " + "=" * 20]
    return ("\n".join(lines) + "\n").encode()


def test_the_cause_makes_numbers_hex_quoted_values_and_paths_generic() -> None:
    assert cause_of("ValueError: bad value 'ff' at 0x7f3a, line 12 of /tmp/x/y.py") == \
        cause_of("ValueError: bad value '1a' at 0x0001, line 99 of /srv/other/z.py") == \
        "ValueError: bad value <quoted> at <hex>, line <number> of <path>"
    assert cause_of("TypeError: f() takes 2 positional arguments") != cause_of("KeyError: 2")
    assert cause_of("test_0_1 failed") == "test_0_1 failed"
    # A parametrised test's values vary from test to test: words of the message found in the test's id.
    assert cause_of("ParserError: Unknown string format: Jan 1 1999 11:23", "test_parser[Jan 1 1999 11:23-d48]") == \
        cause_of("ParserError: Unknown string format: 5.6s", "test_rounding[5.6s-dt2]") == \
        "ParserError: Unknown string format: <param>"


def test_forty_failures_of_one_cause_keep_one_traceback_every_id_and_error_line_and_one_note() -> None:
    raw = pytest_run(*(failure(f"test_case_{n}", n) for n in range(1, 41)))
    out, result = compress_bytes(make_rule(PYTEST_LIKE % {"budget": 60}), raw)
    assert violations("tests", raw, out) == []
    text = out.decode()
    assert text.count(">       raise ValueError") == 1  # the first failure's traceback, once
    assert ">       assert parse(data) == 1" in text and "pkg/core.py:12: ValueError" in text
    for n in range(1, 41):
        assert f" test_case_{n} " in text and f"E       ValueError: bad value '{n:x}' at 0x{n:08x}" in text
    notes = [found for line in output_lines(out)[1] if (found := NOTE.search(line))]
    assert len(notes) == 1
    note = notes[0]
    assert (int(note["shown"]), note["whole"], note["first"], note["where"]) == (39, None, "test_case_1",
                                                                                 "pkg/core.py:12")
    # The note's raw range runs from the second failure's first cut line to the last failure's last one.
    raw_lines = lines_of(raw)
    assert raw_lines[int(note["start"]) - 1] == b"    def test_case_2():"
    assert raw_lines[int(note["end"]) - 1] == b"pkg/core.py:12: ValueError"
    assert int(note["cut"]) == result.removed["similar-failure lines"]
    assert len(out) < len(raw) / 2


def test_a_failure_of_another_cause_gets_its_own_traceback_and_ends_the_run() -> None:
    ones = [failure(f"test_a{n}", n) for n in range(1, 6)]
    other = failure("test_other", 7, error="KeyError", where="pkg/store.py:40")
    raw = pytest_run(*ones[:3], other, *ones[3:])
    out, _ = compress_bytes(make_rule(PYTEST_LIKE % {"budget": 60}), raw)
    text = out.decode()
    assert violations("tests", raw, out) == []
    assert text.count(">       raise ValueError") == 1 and text.count(">       raise KeyError") == 1
    lines = text.splitlines()
    notes = [index for index, line in enumerate(lines) if NOTE.search(line)]
    other = lines.index(f"{'_' * 20} test_other {'_' * 20}")
    # test_a2-3 end their run before test_other; test_a4-5 make a new one after it.
    assert [int(NOTE.search(lines[index])["shown"]) for index in notes] == [2, 2]
    assert notes[0] < other < notes[1]


def test_past_the_budget_a_new_cause_keeps_its_id_and_reasons_and_says_what_was_cut() -> None:
    reports = [failure(f"test_{n}", n, error=f"Error{n}", where=f"pkg/m{n}.py:{n}") for n in range(1, 9)]
    raw = pytest_run(*reports)
    out, _ = compress_bytes(make_rule(PYTEST_LIKE % {"budget": 10}), raw)
    assert violations("tests", raw, out) == []
    added = output_lines(out)[1]
    spent = re.compile(r"\[codeoid\] \d+ lines cut \(traceback budget spent\), raw lines \d+-\d+")
    assert any(spent.fullmatch(line) for line in added)
    assert out.decode().count(">       raise") < 8


def test_the_failures_spend_first_and_the_rule_budget_cuts_only_the_rest() -> None:
    """The two budgets compose: what the failures operation keeps (every id and error line, one traceback) is
    never cut by the rule's budget, its traceback lines are at most the budget's lines, and the budget spends what
    is left on the lines outside failure reports, naming its cut with the raw lines."""
    passing = [f"tests/test_ok.py::test_ok_{n} PASSED" for n in range(200)]
    raw = pytest_run(*(failure(f"test_case_{n}", n) for n in range(1, 41)))
    head, _, rest = raw.partition(b"collected 90 items\n")
    raw = head + b"collected 90 items\n" + "\n".join(passing).encode() + b"\n" + rest
    rule = make_rule(PYTEST_LIKE % {"budget": 60})
    out, result = compress_bytes(rule, raw, Thresholds(budget_lines=30, budget_bytes=0))
    assert violations("tests", raw, out) == []
    text = out.decode()
    for n in range(1, 41):
        assert f" test_case_{n} " in text and f"E       ValueError: bad value '{n:x}' at 0x{n:08x}" in text
    assert text.count(">       raise ValueError") == 1
    assert sum(1 for line in text.splitlines() if NOTE.search(line)) == 1
    assert "tests/test_ok.py::test_ok_199 PASSED" not in text and result.removed["budget"] >= 190
    raw_lines = lines_of(raw)
    first_passing = raw_lines.index(passing[0].encode()) + 1
    spans = [tuple(map(int, found.groups())) for line in output_lines(out)[1]
             if (found := re.fullmatch(r"\[codeoid\] \d+ lines cut, raw lines (\d+)-(\d+)", line))]
    assert any(first <= first_passing and first_passing + 199 <= last for first, last in spans)
    # The traceback lines come out of the rule's budget: never more than its lines (5 here, 60 by the rule).
    small, _ = compress_bytes(rule, raw, Thresholds(budget_lines=5, budget_bytes=0))
    first = output_lines(small)[0]
    report = first[first.index(b"____________________ test_case_1 ____________________"):]
    report = report[:next(i for i, line in enumerate(report) if line.startswith(b"____") and i)]
    contract = [line for line in report if line.startswith((b"____", b"E ")) or line.endswith(b": ValueError")]
    assert 0 < len(report) - len(contract) <= 5


def test_a_block_with_no_reason_is_no_failure_and_goes_through_the_other_operations() -> None:
    rule = make_rule("""
[[rule]]
name = "go-like"
keep = ['^\\s*--- FAIL: ', '^(?:ok|FAIL)\\b']
[[rule.collapse]]
label = "passing tests"
patterns = ['^\\s*=== RUN\\s', '^\\s*--- PASS: ']
[rule.failures]
start = '^\\s*(?:=== RUN|--- FAIL:)\\s+(\\S+)'
end = '^(?:FAIL|ok)\\b'
reason = ['^\\s+\\S+\\.go:\\d+: ']
message = '^\\s+\\S+\\.go:\\d+: (.*)$'
frame = '^\\s+(\\S+\\.go):(\\d+): '
[rule.match]
program = "go"
""")
    lines = []
    for n in range(60):
        lines += [f"=== RUN   TestPass{n}", f"--- PASS: TestPass{n} (0.00s)"]
    lines += ["=== RUN   TestBroken", "    x_test.go:12: got 1, want 2", "--- FAIL: TestBroken (0.00s)", "FAIL",
              "FAIL\tcorpus/x\t0.01s"]
    raw = ("\n".join(lines) + "\n").encode()
    out, result = compress_bytes(rule, raw)
    assert violations("tests", raw, out) == []
    assert result.removed == {"passing tests": 120}
    assert b"    x_test.go:12: got 1, want 2\n" in out


def test_the_last_line_of_the_output_survives_inside_a_cut_failure() -> None:
    rule = make_rule("""
[[rule]]
name = "mocha-like"
keep = ['^\\s*\\d+ (?:passing|failing)']
[rule.failures]
begin = '^\\s*\\d+ failing'
start = '^\\s*(\\d+\\) .+)$'
reason = ['^\\s*\\w*Error\\b']
message = '^\\s*(\\w*Error\\b.*)$'
frame = '^\\s+at (?:.*? \\()?(.+?):(\\d+):\\d+\\)?$'
innermost_first = true
[rule.match]
program = "mocha"
""")
    lines = ["  3 passing", "  20 failing"]
    for n in range(1, 21):
        lines += [f"  {n}) suite", "     TypeError: x is not a function",
                  "      at f (lib/a.js:3:24)", "      at g (lib/b.js:9:2)", f"      at Context (test/t.js:{n}:1)",
                  "      at process.processImmediate (node:internal/timers:483:21)"]
    raw = ("\n".join(lines) + "\n").encode()
    out, result = compress_bytes(rule, raw)
    assert violations("tests", raw, out) == []
    assert output_lines(out)[0][-1] == b"      at process.processImmediate (node:internal/timers:483:21)"
    note = next(found for line in output_lines(out)[1] if (found := NOTE.search(line)))
    assert int(note["cut"]) == result.removed["similar-failure lines"]
    # The nineteen later failures say nothing the first does not: each is cut whole and named by the note.
    assert note["whole"] == "19" and note["names"] == ", ".join(f"{n}) suite" for n in range(2, 21))


def test_a_report_too_long_to_hold_is_decided_as_far_as_it_came_and_the_rest_goes_to_the_budget() -> None:
    huge = failure("test_huge", 1) + [f"captured line {n}" for n in range(5000)]
    raw = pytest_run(huge, *(failure(f"test_case_{n}", n) for n in range(2, 12)))
    out, result = compress_bytes(make_rule(PYTEST_LIKE % {"budget": 60}), raw, Thresholds(hold_bytes=0))
    assert violations("tests", raw, out) == []
    assert out.count(b">       raise ValueError") == 1
    # Past MAX_SECTION_LINES the rest of the report is no failure's: the rule's budget cuts it like any other
    # line, and its marker names the raw lines up to the report's last one.
    raw_lines = lines_of(raw)
    last = raw_lines.index(b"captured line 4999") + 1
    cut = [line for line in output_lines(out)[1] if line.endswith(f"-{last}")]
    assert cut and re.fullmatch(r"\[codeoid\] \d+ lines cut, raw lines \d+-\d+", cut[0])
    assert result.removed["budget"] > 0


def test_collection_errors_of_one_cause_are_grouped_and_every_one_is_named() -> None:
    lines = ["=" * 20 + " test session starts " + "=" * 20, "collected 0 items / 12 errors", "",
             "=" * 30 + " ERRORS " + "=" * 30]
    for n in range(12):
        lines += [f"{'_' * 15} ERROR collecting tests/test_mod{n}.py {'_' * 15}",
                  f"ImportError while importing test module '/srv/app/tests/test_mod{n}.py'.",
                  "Hint: make sure your test modules/packages have valid Python names.", "Traceback:",
                  "/usr/lib/python3.11/importlib/__init__.py:126: in import_module",
                  "    return _bootstrap._gcd_import(name[level:], package, level)",
                  f"tests/test_mod{n}.py:3: in <module>", "    from app.core import parse",
                  "app/core.py:7: in <module>", "    from app.missing import thing",
                  "E   ModuleNotFoundError: No module named 'app.missing'"]
    lines += ["=" * 20 + " short test summary info " + "=" * 20]
    lines += [f"ERROR tests/test_mod{n}.py" for n in range(12)]
    lines += ["!" * 20 + " Interrupted: 12 errors during collection " + "!" * 20,
              "=" * 20 + " 12 errors in 0.3s " + "=" * 20]
    raw = ("\n".join(lines) + "\n").encode()
    rule = RULES.for_command("pytest")
    assert rule is not None
    out, _ = compress_bytes(rule, raw)
    assert violations("tests", raw, out) == []
    text = out.decode()
    assert text.count("from app.missing import thing") == 1
    # One error line, word for word the same twelve times, is shown once; every module is named.
    assert text.count("E   ModuleNotFoundError: No module named 'app.missing'") == 1
    assert all(f"ERROR collecting tests/test_mod{n}.py" in text for n in range(12))
    # Each module's own ImportError line (it names the module) stays under its header; the rest is cut.
    assert all(f"ImportError while importing test module '/srv/app/tests/test_mod{n}.py'." in text for n in range(12))
    assert "failures with the cause of ERROR collecting tests/test_mod0.py (app/core.py:7): the rest of 11 more" in text


def test_streamed_and_held_outputs_are_the_same() -> None:
    raw = pytest_run(*(failure(f"test_case_{n}", n) for n in range(1, 41)))
    rule = make_rule(PYTEST_LIKE % {"budget": 60})
    held, _ = compress_bytes(rule, raw)
    streamed, _ = compress_bytes(rule, raw, Thresholds(hold_bytes=0), chunk_size=97)
    assert streamed == held


@pytest.mark.parametrize("name", ["pytest_regression_quiet", "pytest_regression", "unittest_regression",
                                  "jest_regression", "mocha_regression", "go_test_regression"])
def test_one_regression_costs_a_few_kb_beyond_the_lines_the_contract_keeps(name: str) -> None:
    """Each failing test is named and each distinct error line kept (the contract); everything else of ~50
    failures with one cause (the one traceback, what the notes say beside the names) fits in a few KB."""
    raw = (FIXTURES / f"{name}.out").read_bytes()
    rule = RULES.for_command(COMMANDS[name])
    assert rule is not None and rule.failures is not None
    out, _ = compress_bytes(rule, raw)
    kept, added = output_lines(out)
    required = re.compile(r"^(?:_{3,} .+ _{3,}|E\s+\w*Error|FAILED |(?:FAIL|ERROR): |\s*Traceback \(|\w*Error: |"
                          r"\s*● |\s*\d+\) |\s*--- FAIL: |\s+\S+\.go:\d+: |\s+\w*Error\b|\s*✕ )")
    beyond = sum(len(line) + 1 for line in kept if not required.match(line.decode(errors="replace")))
    # A note's list of the tests it cut (after "whole: " or "same reason as X: ") is the ids the contract keeps.
    beyond += sum(len(re.split(r" whole: | the same reason as \S+: ", line)[0]) + 1 for line in added)
    assert beyond < 8000, beyond


def test_a_failures_table_is_checked() -> None:
    base = {"name": "r", "match": {"program": "x"}}
    with pytest.raises(ValueError, match="failures.start is required"):
        rule_from_table({**base, "failures": {"reason": "^E"}})
    with pytest.raises(ValueError, match="two groups"):
        rule_from_table({**base, "failures": {"start": "^_+ (.+) _+$", "frame": "^(\\S+):\\d+"}})
    with pytest.raises(ValueError, match="unknown key failures.tail"):
        rule_from_table({**base, "failures": {"start": "^x", "tail": 3}})
    with pytest.raises(ValueError, match="bad regular expression"):
        rule_from_table({**base, "failures": {"start": "^(x"}})


def test_marker_lines_are_the_only_lines_added() -> None:
    raw = pytest_run(*(failure(f"test_case_{n}", n) for n in range(1, 41)))
    out, _ = compress_bytes(make_rule(PYTEST_LIKE % {"budget": 60}), raw)
    raw_set = set(lines_of(raw))
    assert all(line in raw_set or line.startswith(MARKER) for line in lines_of(out))


def test_later_failures_with_the_same_message_are_cut_whole_and_named_by_the_note() -> None:
    """Fifty tests failing with one message word for word: one traceback, one error line, every test named."""
    raw = pytest_run(*(failure(f"test_case_{n}", 7) for n in range(1, 51)))
    summary = lines_of(raw).index(b"=" * 20 + b" short test summary info " + b"=" * 20) + 1
    rule = RULES.for_command("pytest")
    assert rule is not None
    out, _ = compress_bytes(rule, raw)
    assert violations("tests", raw, out) == []
    text = out.decode()
    assert text.count("E       ValueError: bad value '7' at 0x00000007") == 1
    assert text.count(">       raise ValueError") == 1
    note = next(found for line in output_lines(out)[1] if (found := NOTE.search(line)))
    # The summary below names each of them by its node id, so the note need not say them again.
    assert note["whole"] == "49" and note["names"] == "each named in the list of failing tests below"
    # The short summary keeps its first line for the reason; a note names every other test with it.
    assert text.count("FAILED tests/test_parse.py::test_case_") == 1
    listed = next(line for line in output_lines(out)[1] if "the same reason as" in line)
    assert listed == ("[codeoid] 49 lines cut (the same reason as tests/test_parse.py::test_case_1: "
                      + ", ".join(f"tests/test_parse.py::test_case_{n}" for n in range(2, 51))
                      + f"), raw lines {summary + 2}-{summary + 50}")
    assert len(out) < 5000


def test_a_reason_on_the_line_below_joins_the_listing_and_stacked_headers_are_one_report() -> None:
    """vitest: `× test` over `→ reason` keeps one pair per reason; `FAIL` lines stacked over one error are one
    report whose other tests a note names."""
    listing = []
    for n in range(30):
        listing += [f"   × suite > case {n} {n}ms", "     → numeric.match is not a function"]
    listing += ["   × suite > odd one 1ms", "     → expected false to be true"]
    stacked = [f" FAIL  t.test.js > suite > case {n}" for n in range(30)]
    raw = ("\n".join([" ❯ t.test.js (31 tests | 31 failed) 12ms", *listing, "", "⎯⎯⎯ Failed Tests 31 ⎯⎯⎯", "",
                      *stacked, "TypeError: numeric.match is not a function",
                      " ❯ compareIdentifiers lib/identifiers.js:3:24", " ❯ t.test.js:7:19", "⎯⎯⎯[1/2]⎯",
                      " FAIL  t.test.js > suite > odd one", "AssertionError: expected false to be true",
                      " ❯ t.test.js:9:46", "⎯⎯⎯[2/2]⎯", " Test Files  1 failed (1)",
                      "      Tests  31 failed (31)"]) + "\n").encode()
    rule = RULES.for_command("npx vitest run")
    assert rule is not None
    out, _ = compress_bytes(rule, raw)
    assert violations("tests", raw, out) == []
    text = out.decode()
    assert text.count("→ numeric.match is not a function") == 1 and "→ expected false to be true" in text
    assert "   × suite > case 0 0ms" in text and "   × suite > case 1 1ms" not in text
    assert "(the same reason as suite > case 0: " + ", ".join(f"suite > case {n}" for n in range(1, 30)) in text
    assert " FAIL  t.test.js > suite > case 0" in text and " FAIL  t.test.js > suite > case 1\n" not in text
    assert ("(tests failing with this same report: " + ", ".join(f"t.test.js > suite > case {n}"
                                                                for n in range(1, 30))) in text


def test_failing_lines_among_passing_ones_share_one_marker_over_the_whole_range() -> None:
    """`pytest -v`: the FAILED lines stay, the PASSED ones around them are named by one marker after them."""
    progress = [f"tests/test_a.py::test_{n} {'FAILED' if n % 25 == 3 else 'PASSED'}{' ' * 20}[ {n // 2:2}%]"
                for n in range(200)]
    raw = ("\n".join(["=" * 20 + " test session starts " + "=" * 20, "collected 200 items", "", *progress, "",
                      "=" * 20 + " 8 failed, 192 passed in 1.0s " + "=" * 20]) + "\n").encode()
    rule = RULES.for_command("pytest -v")
    assert rule is not None
    out, _ = compress_bytes(rule, raw)
    assert violations("tests", raw, out) == []
    kept, added = output_lines(out)
    assert [line.split()[0].decode() for line in kept if b"FAILED" in line] == [
        f"tests/test_a.py::test_{n}" for n in range(3, 200, 25)]
    assert added == ["[codeoid] 192 lines cut (passed/skipped tests), raw lines 4-203"]


def test_a_failing_line_whose_report_follows_joins_the_passing_ones_cut_around_it() -> None:
    """`pytest -v`: a FAILED progress line says nothing its report below does not; with the report there, it is
    cut with the PASSED lines around it and the marker counts it. Without a report it stays (test above)."""
    progress = [f"tests/test_parse.py::test_case_{n} FAILED{' ' * 20}[ {n}%]" for n in range(1, 4)]
    passing = [f"tests/test_parse.py::test_ok_{n} PASSED{' ' * 20}[ 50%]" for n in range(40)]
    raw = pytest_run(*(failure(f"test_case_{n}", n) for n in range(1, 4)))
    head, _, rest = raw.partition(b"collected 90 items\n")
    lines = [passing[0], progress[0], *passing[1:20], progress[1], progress[2], *passing[20:]]
    raw = head + b"collected 90 items\n" + "\n".join(lines).encode() + b"\n" + rest
    rule = RULES.for_command("pytest -v")
    assert rule is not None
    out, _ = compress_bytes(rule, raw)
    assert violations("tests", raw, out) == []
    assert b"FAILED " + b" " * 20 not in out and out.count(b"____ test_case_") == 3
    marker = next(line for line in output_lines(out)[1] if "passed/skipped" in line)
    assert marker == "[codeoid] 43 lines cut (40 passed/skipped tests, 3 failing, each reported below), raw lines 3-45"
