"""The rule packs for linters, type checkers, builds, installers and logs, on real outputs of those tools.

Each fixture is what the tool printed on a real project left mid-task (tests/fixtures/compress, listed in its
manifest with the command and how the project was broken). What a user would notice: every diagnostic's location
is still shown or named by the code table, the tool's verdict line stays, the output is much smaller than what
Claude Code would have put in the window, and the command's exit status is the command's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from detectors import diagnostics_located, lines_of, output_lines, summary_lines_survive, violations

from codeoid.compressors import compress_bytes, load_rules

FIXTURES = Path(__file__).parents[1] / "fixtures" / "compress"
MANIFEST = {entry["name"]: entry for entry in json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]}
RULES = load_rules(user_dir="/nonexistent/codeoid-user-rules")
# What Claude Code shows the model of a Bash result (docs/claude-code-tool-output.md): a failed command's first and
# last 5,000 characters of its first 30,000; a successful one of 30,000 or more, a preview of about 2,300.
PACK_FIXTURES = [name for name, entry in MANIFEST.items() if entry["kind"] in ("lint", "install", "build", "logs")]


def window_of(raw: bytes, exit_status: int) -> int:
    size = len(raw.decode("utf-8", "replace"))
    if exit_status != 0:
        return min(size, 10_000)
    return 2_300 if size >= 30_000 else size


def compressed(name: str) -> tuple[bytes, bytes]:
    entry = MANIFEST[name]
    rule = RULES.for_command(entry["command"])
    assert rule is not None, entry["command"]
    raw = (FIXTURES / f"{name}.out").read_bytes()
    return raw, compress_bytes(rule, raw)[0]


@pytest.mark.parametrize("name", PACK_FIXTURES)
def test_every_diagnostic_is_shown_or_named_and_the_verdict_stays(name: str) -> None:
    raw, out = compressed(name)
    assert violations(MANIFEST[name]["kind"], raw, out) == []
    assert diagnostics_located(raw, out) == []
    assert summary_lines_survive(raw, out) == []


@pytest.mark.parametrize("name", PACK_FIXTURES)
def test_the_output_is_at_most_half_of_what_claude_code_would_show(name: str) -> None:
    """A failed run: at most half of Claude Code's 10,000 characters (which lose the middle). A successful one
    over 30,000 characters Claude Code previews in about 2,300 and leaves the rest in a file; codeoid shows more
    than that preview (the verdict and every problem), so it must be a fifth of the raw output at most."""
    raw, out = compressed(name)
    status = MANIFEST[name]["exit_status"]
    assert len(out) < len(raw)
    if status != 0 or len(raw) < 30_000:
        assert len(out.decode("utf-8", "replace")) <= window_of(raw, status) / 2
    else:
        assert len(out) <= len(raw) / 5


def test_the_code_table_names_every_code_with_its_count() -> None:
    raw, out = compressed("mypy_strict_sqlparse")
    _, added = output_lines(out)
    assert added[0].startswith("[codeoid] 480 errors of 10 codes")
    assert any(line.startswith("[codeoid] no-untyped-def ×212: sqlparse/tokens.py:18,21,30 ") for line in added)
    assert any(line.startswith("[codeoid] no-untyped-call ×246 in 16 files: sqlparse/utils.py (1), ")
               for line in added)
    # the first error of each code is shown whole
    kept, _ = output_lines(out)
    assert b"sqlparse/tokens.py:18: error: Function is missing a type annotation  [no-untyped-def]" in kept
    assert len(lines_of(raw)) == 488


def test_ruff_full_output_is_located_by_its_arrow_lines() -> None:
    raw, out = compressed("ruff_sqlparse")
    notes = "\n".join(output_lines(out)[1])
    assert "E731 ×31 in 1 file: tests/test_format.py (31)" in notes
    assert "N812 ×13: sqlparse/engine/grouping.py:9 " in notes


@pytest.mark.parametrize("status", [0, 1, 2, 30])
def test_codeoid_compress_leaves_the_exit_status_alone(tmp_path: Path, status: int) -> None:
    fixture = FIXTURES / "mypy_strict_sqlparse.out"
    script = tmp_path / "mypy"
    script.write_text(f"#!/bin/sh\ncat {fixture}\nexit {status}\n")
    script.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": str(tmp_path), "CODEOID_HOME": str(tmp_path / "home")}
    compress = Path(sys.executable).with_name("codeoid-compress")
    done = subprocess.run([str(compress), "--", "mypy", "--strict", "sqlparse"], capture_output=True, env=env,
                          check=False)
    assert done.returncode == status
    assert b"[codeoid] 480 errors of 10 codes" in done.stdout
    assert len(done.stdout) < fixture.stat().st_size / 5
