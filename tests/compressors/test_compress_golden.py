"""Golden outputs for a few key fixtures: a change to a rule or the engine shows up here as a readable diff.

After an intended change, regenerate with CODEOID_UPDATE_GOLDEN=1 and read the diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codeoid.compressors import compress_bytes, load_rules

FIXTURES = Path(__file__).parents[1] / "fixtures" / "compress"
GOLDEN = FIXTURES / "golden"
KEY_FIXTURES = ["pytest_click_verbose", "unittest_more_itertools_verbose", "go_test_verbose", "vitest_verbose",
                "git_diff_toolz_worktree", "git_status_click_untracked", "rg_self_click", "ls_r_stdlib",
                "git_diff_toolz_releases", "git_log_codeoid", "ls_l_site_packages", "find_chromadb_py",
                "pytest_regression_quiet", "unittest_handful", "jest_regression", "mypy_strict_sqlparse",
                "ruff_sqlparse", "eslint_ky", "make_cjson_cmake", "cargo_build_semver_rename"]
COMMANDS = {entry["name"]: entry["command"]
            for entry in json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]}


@pytest.mark.parametrize("name", KEY_FIXTURES)
def test_key_fixture_compresses_to_its_golden_output(name: str) -> None:
    rule = load_rules(user_dir="/nonexistent/codeoid-user-rules").for_command(COMMANDS[name])
    assert rule is not None
    compressed, _ = compress_bytes(rule, (FIXTURES / f"{name}.out").read_bytes())
    golden = GOLDEN / f"{name}.out"
    if os.environ.get("CODEOID_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        golden.write_bytes(compressed)
    assert compressed.decode("utf-8", "surrogateescape") == golden.read_bytes().decode("utf-8", "surrogateescape")
