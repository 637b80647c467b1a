"""Acceptance for the after-the-fact compression (PostToolUse `updatedToolOutput`), through the real `claude` CLI:
where the rewrite may not wrap a command (no allow rule), the model still reads its output compressed, the store
holds the text Claude Code would have shown byte for byte, and the cut note's lines page exactly those raw lines;
a failed command and an output at Claude Code's cap reach the model exactly as they would without codeoid.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
from typing import Any

import pytest

from codeoid.compressors import bash_wrapper

from .fake_anthropic import Reply, Text, ToolUse, bash
from .rig import ClaudeRig
from .test_compression_e2e import CODEOID, episodes, model_text, results_by_id, write_rules

CUT_NOTE = re.compile(r"\[codeoid\] (\d+) lines cut, raw lines (\d+)-(\d+)")
# `seq` through a project rule, and `python3 -c` printing exactly the cap: both run under a bare Bash permission.
SEQ_RULES = """
[[rule]]
name = "e2e-seq"
match = { program = ["seq", "python3"] }
head = 5
tail = 3
"""


def raw_outputs(rig: ClaudeRig) -> dict[str, dict[str, Any]]:
    connection = sqlite3.connect(rig.codeoid_home / "store.db")
    connection.row_factory = sqlite3.Row
    try:
        return {row["id"]: dict(row) for row in connection.execute("SELECT * FROM raw_outputs")}
    finally:
        connection.close()


def show_raw(rig: ClaudeRig, raw_id: str) -> bytes:
    return subprocess.run([CODEOID, "show", raw_id, "--raw"], capture_output=True, check=True, env=rig.env).stdout
# 3,000 lines, exactly 30,000 characters with no newline at the end (Claude Code drops a final newline).
AT_CAP = """python3 -c 'print("\\n".join("%09d" % i for i in range(3000)) + "x", end="")'"""


@pytest.mark.e2e
def test_with_no_allow_rule_the_model_reads_the_output_compressed_and_pages_the_raw_lines(rig: ClaudeRig) -> None:
    """`cd src && ls -l` runs unasked in the default mode, but the rewrite may not wrap it (it never allows a
    `cd`): the after-the-fact compression is the only way its 300 lines are kept out of the window."""
    rig.env["SHELL"] = "/bin/bash"
    (rig.project / "src").mkdir()
    for index in range(300):
        (rig.project / "src" / f"mod_{index:03d}.py").write_text(f"x = {index}\n")
    command = "cd src && ls -l"
    plain_call = bash(command)
    rig.api.add(Reply([plain_call]), Reply([Text("done")]))
    plain_run = rig.run("list the sources", allow_all=False, timeout=300)
    assert plain_run.exit_code == 0, plain_run.describe()
    without = model_text(results_by_id(plain_run)[plain_call.id])
    assert len(without.splitlines()) == 301

    rig.install_codeoid()
    call = bash(command)
    holder: dict[str, str] = {}

    def page_the_cut_lines(body: dict[str, Any]) -> Reply:
        """As the footer teaches: the raw output's lines the cut note names, through get_episode."""
        text = rig.api.tool_results()[call.id].text
        cut = CUT_NOTE.search(text)
        raw = re.search(r'get_episode\("(raw-[^"]+)"\)', text)
        assert cut is not None and raw is not None, text
        holder.update(raw=raw.group(1), first=cut.group(2), last=cut.group(3))
        return Reply([ToolUse(name="mcp__codeoid__get_episode",
                              input={"episode_id": holder["raw"], "lines": f"{cut.group(2)}-{cut.group(3)}"})])

    rig.api.add(Reply([call]), page_the_cut_lines, Reply([Text("done")]))
    run = rig.run("list the sources", allow_all=False, timeout=300)
    assert run.exit_code == 0, run.describe()
    rig.api.assert_script_consumed()

    result = results_by_id(run)[call.id]
    shown = model_text(result)
    assert not result.is_error
    assert holder["raw"] == f"raw-{call.id}"
    assert shown.splitlines()[0] == without.splitlines()[0]  # `total N`: kept lines are the raw lines
    assert "[codeoid] columns the same on every line" in shown
    assert len(shown.encode()) * 10 < len(without.encode()), shown
    episode = episodes(rig)[call.id]
    assert bash_wrapper.unwrap(episode["command"]) is None  # not rewritten: Claude Code ran the command as typed
    assert episode["raw_output_id"] == holder["raw"]
    assert show_raw(rig, holder["raw"]) == without.encode()  # exactly what the model would have read
    stored = raw_outputs(rig)[holder["raw"]]
    assert (stored["rule"], stored["shown_size"], stored["exit_status"]) == ("ls", len(shown.encode()), 0)

    first, last = int(holder["first"]), int(holder["last"])
    paged = rig.api.tool_results()
    opened = next(found for tool_id, found in paged.items() if tool_id not in (call.id, plain_call.id))
    assert not opened.is_error, opened.text
    wanted = without.splitlines()[first - 1:last]
    assert "\n-----\n" + "\n".join(wanted) + "\n-----" in opened.text


@pytest.mark.e2e
def test_a_failed_command_and_an_output_at_the_cap_reach_the_model_as_without_codeoid(rig: ClaudeRig) -> None:
    """With the rewrite switched off (`CODEOID_COMPRESS=after`) every command runs as typed: one under the cap
    is compressed after the fact; a failed one (Claude Code ignores a failure's replacement) and one of exactly
    Claude Code's 30,000-character cap are left exactly as they were; one over the cap, which Claude Code saved
    to a file, is compressed from the whole file (`persistedOutputPath`) in place of Claude Code's preview."""
    rig.env["SHELL"] = "/bin/bash"
    rig.env["CODEOID_COMPRESS"] = "after"
    write_rules(rig, SEQ_RULES)
    commands = ["seq 1 6000", "seq 1 3000; exit 1", AT_CAP, "seq 1 8000"]
    plain_calls = [bash(command) for command in commands]
    rig.api.add(*(Reply([plain]) for plain in plain_calls), Reply([Text("done")]))
    plain_run = rig.run("run them", timeout=300)
    assert plain_run.exit_code == 0, plain_run.describe()
    rig.install_codeoid()
    calls = [bash(command) for command in commands]
    rig.api.add(*(Reply([call]) for call in calls), Reply([Text("done")]))
    run = rig.run("run them", timeout=300)
    assert run.exit_code == 0, run.describe()
    rig.api.assert_script_consumed()

    plain, through, stored = results_by_id(plain_run), results_by_id(run), episodes(rig)
    compressed, failed, at_cap, over_cap = (through[call.id] for call in calls)
    assert not compressed.is_error and "[codeoid] 5992 lines cut, raw lines 6-5997" in compressed.text
    assert show_raw(rig, f"raw-{calls[0].id}") == model_text(plain[plain_calls[0].id]).encode()
    for call, plain_call in zip(calls[1:3], plain_calls[1:3], strict=True):
        before, after = plain[plain_call.id], through[call.id]
        assert "[codeoid]" not in after.text, call.input
        assert after.is_error == before.is_error
        assert _unpersisted(model_text(after)) == _unpersisted(model_text(before)), call.input
        assert stored[call.id]["raw_output_id"] is None
    assert failed.is_error and model_text(failed).startswith("Exit code 1")
    # Claude Code cut the failure's 13,893 characters to its first and last 5,000: the episode says so.
    assert "characters truncated in the middle" in stored[calls[1].id]["cut"]
    # Exactly 30,000 characters reach the model whole, no file named: left alone (at the cap without a file, the
    # hook cannot tell a whole output from the head of a longer one).
    assert len(model_text(at_cap)) == 30_000 and "<persisted-output>" not in at_cap.text
    assert "<persisted-output>" in plain[plain_calls[3].id].text and "<persisted-output>" not in over_cap.text
    assert not over_cap.is_error and "[codeoid] 7992 lines cut, raw lines 6-7997" in over_cap.text  # all 8,000
    assert show_raw(rig, f"raw-{calls[3].id}") == "".join(f"{n}\n" for n in range(1, 8001)).encode()
    assert set(raw_outputs(rig)) == {f"raw-{calls[0].id}", f"raw-{calls[3].id}"}
    for call in calls:
        assert bash_wrapper.unwrap(stored[call.id]["command"]) is None  # the rewrite was switched off


def _unpersisted(text: str) -> str:
    """A persisted output names its file by session and call: the rest of the text must be the same."""
    return re.sub(r"Full output saved to: \S+", "Full output saved to: FILE", text)
