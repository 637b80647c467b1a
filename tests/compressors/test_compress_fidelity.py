"""The fidelity contract (DESIGN §5) over every fixture and every rule, checked by the independent detectors.

Fixtures are real outputs of real tools (tests/fixtures/compress, made by benchmarks/compression/
make_fixtures.py). Each goes through the rule its command resolves to and must break nothing its kind of output
promises; and every built-in rule, applied to every fixture whatever its command, must still only drop lines
and mark what it adds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from detectors import (
    STRUCTURAL,
    diff_files_named_with_counts,
    error_heads_survive,
    failing_tests_named,
    search_files_named_with_counts,
    violations,
)

from codeoid.compressors import Rule, compress_bytes, load_rules

FIXTURES = Path(__file__).parents[1] / "fixtures" / "compress"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]
RULES = load_rules(user_dir="/nonexistent/codeoid-user-rules")


def raw_of(name: str) -> bytes:
    return (FIXTURES / f"{name}.out").read_bytes()


@pytest.mark.parametrize("fixture", MANIFEST, ids=[fixture["name"] for fixture in MANIFEST])
def test_every_fixture_keeps_the_fidelity_contract(fixture: dict[str, str]) -> None:
    raw = raw_of(fixture["name"])
    rule = RULES.for_command(fixture["command"])
    compressed = compress_bytes(rule, raw)[0] if rule is not None else raw
    assert violations(fixture["kind"], raw, compressed) == []


@pytest.mark.parametrize("rule", RULES.rules, ids=[rule.name for rule in RULES.rules])
def test_every_rule_only_drops_lines_and_marks_what_it_adds_on_every_fixture(rule: Rule) -> None:
    for fixture in MANIFEST:
        raw = raw_of(fixture["name"])
        compressed, _ = compress_bytes(rule, raw)
        problems = [problem for detector in STRUCTURAL for problem in detector(raw, compressed)]
        assert problems == [], fixture["name"]


def test_every_builtin_rule_has_a_fixture_of_its_own() -> None:
    covered = {rule.name for fixture in MANIFEST if (rule := RULES.for_command(fixture["command"])) is not None}
    assert covered == {rule.name for rule in RULES.rules}


def test_the_corpus_is_compressed_by_at_least_90_percent() -> None:
    """Issue 12's floor under the whole corpus (the fidelity contract is checked above, fixture by fixture): at
    least 90% of the bytes out with the default budget. What is left is mostly what the contract keeps: every
    failing test named, every distinct error line, every changed file and file with hits with its counts."""
    raw_total = compressed_total = 0
    for fixture in MANIFEST:
        raw = raw_of(fixture["name"])
        rule = RULES.for_command(fixture["command"])
        raw_total += len(raw)
        compressed_total += len(compress_bytes(rule, raw)[0]) if rule is not None else len(raw)
    assert compressed_total <= raw_total * 0.10


# The detectors must catch what they are for: each is shown a compression that breaks its clause.

PYTEST_RAW = b"\n".join([
    b"tests/test_a.py::test_one PASSED",
    b"tests/test_a.py::test_two FAILED",
    b"________ test_two ________",
    b"E       ValueError: bad",
    b"FAILED tests/test_a.py::test_two - ValueError: bad",
    b"==== 1 failed, 1 passed in 0.1s ====",
]) + b"\n"


def test_detectors_catch_a_lost_failing_test_id_and_error_head() -> None:
    lossy = b"[codeoid] something happened\n==== 1 failed, 1 passed in 0.1s ====\n"
    assert failing_tests_named(PYTEST_RAW, lossy)
    assert error_heads_survive(PYTEST_RAW, lossy)
    assert violations("tests", PYTEST_RAW, PYTEST_RAW) == []


def test_detectors_catch_an_altered_or_unmarked_line_and_a_lost_closing_line() -> None:
    altered = PYTEST_RAW.replace(b"E       ValueError", b"E ValueError")
    assert any("altered" in problem for problem in violations("tests", PYTEST_RAW, altered))
    assert any("closing line" in problem for problem in violations("listing", PYTEST_RAW,
                                                                   PYTEST_RAW.rsplit(b"====", 2)[0]))


def test_detectors_catch_a_search_file_without_its_count() -> None:
    raw = b"".join(b"src/a.py:%d:hit\n" % n for n in range(1, 20)) + b"src/b.py:3:hit\n"
    shown = b"src/a.py:1:hit\n[codeoid] 18 lines omitted\nsrc/b.py:3:hit\n"
    assert search_files_named_with_counts(raw, shown)
    stated = b"src/a.py:1:hit\n[codeoid] src/a.py: 19 hits in all, 18 lines not shown\nsrc/b.py:3:hit\n"
    assert search_files_named_with_counts(raw, stated) == []


DIFF_RAW = b"\n".join([
    b"diff --git a/src/a.py b/src/a.py",
    b"index 1111111..2222222 100644",
    b"--- a/src/a.py",
    b"+++ b/src/a.py",
    b"@@ -1,3 +1,3 @@",
    b" context",
    b"-old line",
    b"+new line",
    b"+another new line",
]) + b"\n"


def test_detectors_catch_a_changed_file_whose_counts_are_lost() -> None:
    cut = b"diff --git a/src/a.py b/src/a.py\n@@ -1,3 +1,3 @@\n[codeoid] 4 lines cut, raw lines 6-9\n"
    assert diff_files_named_with_counts(DIFF_RAW, cut)
    stated = b"[codeoid] src/a.py +2 -1 (raw lines 1-9)\n" + cut
    assert diff_files_named_with_counts(DIFF_RAW, stated) == []
    assert diff_files_named_with_counts(DIFF_RAW, DIFF_RAW) == []  # every changed line shown counts too
