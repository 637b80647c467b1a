"""`codeoid gain` and `codeoid discover` against what the model really received, through the real `claude` CLI:
the same commands run once without codeoid (what Claude Code alone put in the window) and once with it, on both
routes (the rewrite runs a failing suite of fifty failures and a 229 KB success through `codeoid-compress`; the
after-the-fact compression answers for a 28,892-character output), and the ledger's window columns must be the
sizes of the `tool_result` texts the scripted API received.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .fake_anthropic import Reply, Text, bash
from .rig import ClaudeRig
from .test_compression_e2e import CODEOID, model_text, results_by_id, write_rules

SEQ_RULES = """
[[rule]]
name = "e2e-seq"
match = { program = ["seq"] }
head = 5
tail = 3
"""
_SUITE = importlib.util.spec_from_file_location("fifty_failures",
                                                Path(__file__).parents[1] / "compressors" / "fifty_failures.py")
assert _SUITE is not None and _SUITE.loader is not None
_MODULE = importlib.util.module_from_spec(_SUITE)
_SUITE.loader.exec_module(_MODULE)
FIFTY: str = _MODULE.FIFTY
# A persisted preview names its file: Claude Code's path here and the model's typical one differ by this much.
PATH_SLACK = 120


def run_calls(rig: ClaudeRig, commands: list[str], env: dict[str, str] | None = None) -> dict[str, str]:
    """Each command's `tool_result` text as the model first read it."""
    calls = [bash(command) for command in commands]
    rig.api.add(*(Reply([call]) for call in calls), Reply([Text("done")]))
    run = rig.run("run them", timeout=300, env={**rig.env, **(env or {})})
    assert run.exit_code == 0, run.describe()
    rig.api.assert_script_consumed()
    results = results_by_id(run)
    return {call.input["command"]: model_text(results[call.id]) for call in calls}


def codeoid_json(rig: ClaudeRig, *args: str) -> dict[str, Any]:
    done = subprocess.run([CODEOID, *args, "--json"], capture_output=True, text=True, env=rig.env, cwd=rig.project,
                          check=True)
    return json.loads(done.stdout)


@pytest.mark.e2e
def test_gain_and_discover_count_the_window_the_model_received_on_both_routes(rig: ClaudeRig) -> None:
    rig.env["SHELL"] = "/bin/bash"
    (rig.project / "test_fifty.py").write_text(FIFTY)
    write_rules(rig, SEQ_RULES)
    suite = f"{sys.executable} -m pytest -p no:cacheprovider test_fifty.py"
    rewritten = [suite, "seq 1 40000"]
    after = ["seq 1 6000"]
    alone = run_calls(rig, rewritten + after)
    assert alone[suite].startswith("Exit code 1") and "characters truncated" in alone[suite]
    assert alone["seq 1 40000"].startswith("<persisted-output>")
    assert len(alone["seq 1 6000"]) == 28_892  # its last newline dropped

    rig.install_codeoid()
    with_codeoid = run_calls(rig, rewritten)
    with_codeoid |= run_calls(rig, after, env={"CODEOID_COMPRESS": "after"})
    assert "[codeoid] 50 failing tests" in with_codeoid[suite] and len(with_codeoid[suite]) <= 8000 + 12
    assert all("[codeoid]" in text for text in with_codeoid.values())

    rules = {row["key"]: row for row in codeoid_json(rig, "gain", "--all-workspaces")["by_rule"]}
    pytest_row, seq_row = rules["pytest"], rules["e2e-seq"]
    # The failure: Claude Code alone showed `Exit code 1` and its first and last 5,000 characters; codeoid's text
    # arrived whole. Each within a character (the output's last newline, which Claude Code drops).
    assert abs(pytest_row["alone_chars"] - len(alone[suite])) <= 1
    assert abs(pytest_row["window_chars"] - len(with_codeoid[suite])) <= 1
    assert abs(pytest_row["saved_chars"] - (len(alone[suite]) - len(with_codeoid[suite]))) <= 2
    assert pytest_row["raw_bytes"] > 3 * pytest_row["alone_chars"]  # raw bytes: a second account, not the saving
    # The 229 KB success was a 2 KB preview without codeoid; the after-the-fact one was shown whole.
    seq_alone = len(alone["seq 1 40000"]) + len(alone["seq 1 6000"])
    seq_window = len(with_codeoid["seq 1 40000"]) + len(with_codeoid["seq 1 6000"])
    assert abs(seq_row["alone_chars"] - seq_alone) <= PATH_SLACK
    assert abs(seq_row["window_chars"] - seq_window) <= 2
    assert seq_row["raw_bytes"] > 200_000 and seq_row["saved_chars"] < seq_alone

    report = codeoid_json(rig, "discover", "--all-workspaces")
    received = with_codeoid[suite] + with_codeoid["seq 1 40000"] + with_codeoid["seq 1 6000"]
    assert report["compressed_calls"] == 3
    assert abs(report["compressed_window_chars"] - len(received)) <= 3
