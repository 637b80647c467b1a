"""The ceiling: no compressed output over `Thresholds.ceiling` characters (footer included), whatever the raw size,
and past it every critical item still named: each failing test on its own line with its report's raw lines, each
file with hits or changed file in the index (or one line naming the rest by their raw lines), every cut named.

The outputs are real: pytest run on a suite of fifty different failures, grep over a tree of 300 files.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from detectors import _hits_per_file, lines_of, output_lines, violations
from fifty_failures import FIFTY

from codeoid.compressors import MARKER, Thresholds, compress_bytes, load_rules
from codeoid.compressors.engine import footer, thresholds_from

RULES = load_rules(user_dir="/nonexistent/codeoid-user-rules")
RAW_ID = "raw-toolu_01AbCdEfGhIjKlMnOpQrStUv"
HEAVY = Path(__file__).parents[1] / "fixtures" / "compress_heavy"

@pytest.fixture(scope="module")
def fifty_failures(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = tmp_path_factory.mktemp("fifty")
    (folder / "test_fifty.py").write_text(FIFTY)
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_fifty.py"], cwd=folder,
                         capture_output=True, check=False)
    assert run.returncode == 1, run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def big_grep(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """`grep -rn` over 300 files of 40 to 400 hits each: about 1.3 MB."""
    folder = tmp_path_factory.mktemp("tree")
    for index in range(300):
        package = folder / f"package_{index % 12:02d}"
        package.mkdir(exist_ok=True)
        lines = [f"    result = compute(self, item_{line}, {index})  # the value the caller wants\n"
                 for line in range(40 + (index * 37) % 360)]
        (package / f"module_{index:03d}.py").write_text("".join(lines))
    run = subprocess.run(["grep", "-rn", "compute", "."], cwd=folder, capture_output=True, check=True)
    return run.stdout


DEFAULTS = Thresholds()


def shown(raw: bytes, command: str, thresholds: Thresholds = DEFAULTS) -> bytes:
    """What `codeoid-compress` prints for `raw`: the engine's output and its footer."""
    rule = RULES.for_command(command)
    assert rule is not None
    out, result = compress_bytes(rule, raw, thresholds)
    newline = b"" if out.endswith(b"\n") else b"\n"
    return out + newline + MARKER + footer(RAW_ID, result.describe()).encode() + b"\n"


def test_fifty_different_failures_fit_the_ceiling_with_every_failing_test_on_its_own_line(
        fifty_failures: bytes) -> None:
    raw = fifty_failures
    failing = re.findall(rb"^FAILED (\S+)", raw, re.M)
    assert len(failing) == 50 and len(raw) > 30_000
    out = shown(raw, "pytest")
    assert len(out.decode()) <= 8000, len(out)
    text = out.decode()
    assert "[codeoid] 50 failing tests, each with the raw lines of its report:" in text
    for test in failing:  # its own short line, with where its report is
        assert re.search(rf"^\[codeoid\] {re.escape(test.decode())}, raw lines? \d+", text, re.M), test
    kept, _ = output_lines(out)
    assert b"E           ValueError: anchor could not be resolved by the helper" in kept  # the first traceback
    assert lines_of(raw)[-1] in kept  # the runner's summary: `50 failed in 0.12s`
    assert violations("tests", raw, out) == []


def test_a_big_grep_fits_the_ceiling_and_names_every_file_with_hits(big_grep: bytes) -> None:
    raw = big_grep
    assert len(raw) > 1_000_000
    out = shown(raw, "grep -rn compute .")
    assert len(out.decode()) <= 8000, len(out)
    files = dict.fromkeys(line.split(b":", 1)[0] for line in lines_of(raw))
    text = out.decode()
    # One per line does not fit: packed several to a line, `./package_00/module_000.py 40, ./package_01/...`.
    listed = [path for path in files
              if re.search(rf"(?:^\[codeoid\] |, ){re.escape(path.decode())} \d+(?:, |$)", text, re.M)]
    assert len(listed) > 200  # as many as the ceiling has room for, in the index
    rest = re.search(r"^\[codeoid\] … and (\d+) more \(over the ceiling\), raw lines (\d+)-(\d+)$", text, re.M)
    assert rest is not None and int(rest.group(1)) == len(files) - len(listed)
    first_unlisted = next(path for path in files if path not in listed)
    assert int(rest.group(2)) == 1 + next(index for index, line in enumerate(lines_of(raw))
                                          if line.startswith(first_unlisted + b":"))
    assert int(rest.group(3)) == len(lines_of(raw))
    assert violations("search", raw, out) == []


def test_the_ceiling_is_a_setting_and_zero_lifts_it(fifty_failures: bytes) -> None:
    small = shown(fifty_failures, "pytest", thresholds_from({"CODEOID_CEILING": "4000"}))
    assert len(small.decode()) <= 4000
    assert b"[codeoid] 50 failing tests" in small
    unlimited = shown(fifty_failures, "pytest", thresholds_from({"CODEOID_CEILING": "0"}))
    assert len(unlimited) > 8000 and b"failing tests, each with" not in unlimited


def test_outputs_under_the_ceiling_are_not_touched_by_it() -> None:
    """The corpus's outputs that fit are compressed exactly as without a ceiling."""
    fixtures = Path(__file__).parents[1] / "fixtures" / "compress"
    raw = (fixtures / "pytest_regression.out").read_bytes()
    rule = RULES.for_command("pytest")
    assert rule is not None
    with_ceiling, _ = compress_bytes(rule, raw)
    without, _ = compress_bytes(rule, raw, Thresholds(ceiling=0))
    assert with_ceiling == without and len(with_ceiling) < 8000


@pytest.mark.parametrize(("fixture", "command", "kind"), [
    ("grep_import", "grep -rn import .", "search"),
    ("git_diff_tags", "git diff v13.0.0 v14.3.3", "git-diff"),
])
def test_past_the_ceiling_every_file_is_named_in_a_dense_index(fixture: str, command: str, kind: str) -> None:
    """rich's 231 files importing something, its 178 files changed between two tags: one index line per file
    does not fit the ceiling, several to a line do, so each is named as the raw output spells it, without paging."""
    raw = (HEAVY / f"{fixture}.out").read_bytes()
    out = shown(raw, command)
    assert len(out.decode()) <= 8000, len(out)
    text = out.decode()
    if kind == "search":
        files = list(_hits_per_file(lines_of(raw)))  # as the detectors read it
        assert len(files) >= 231
    else:
        files = list(dict.fromkeys(path for pair in re.findall(r"^diff --git a/(\S+) b/(\S+)$", raw.decode(), re.M)
                                   for path in pair))
        assert len(files) >= 178
    assert [path for path in files if path not in text] == []
    assert "more (over the ceiling)" not in text
    assert re.search(r"^\[codeoid\] \S+ \d+, \S+ \d+, ", text, re.M) or \
        re.search(r"^\[codeoid\] \S+ \+\d+ -\d+, \S+ \+\d+ -\d+, ", text, re.M)
    assert all(len(line) <= 240 for line in text.splitlines() if line.startswith("[codeoid] ") and ", " in line
               and "lines cut" not in line and "rule " not in line)
    assert violations(kind, raw, out) == []
