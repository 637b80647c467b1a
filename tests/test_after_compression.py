"""The after-the-fact compression of PostToolUse: which Bash outputs the model reads compressed although the
rewrite left the command alone, and how the raw text is stored before the answer names it.

The decision is tested in the hook's own module; the answer, the store and the ledger through the real
`codeoid-hook PostToolUse` process, as Claude Code runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import executable, run_hook
from test_rewrite import stand_in_claude  # noqa: F401 - the rewrite reads Claude Code's flags through it

from codeoid.compressors import bash_wrapper
from codeoid.hooks import post_tool_use, pre_tool_use

SEQ_RULE = """
[[rule]]
name = "test-seq"
match = { program = ["seq"] }
head = 5
tail = 3
"""
SEQ_3000 = "\n".join(str(number) for number in range(1, 3001))  # as Claude Code hands it: no final newline
SESSION = "cc-after"


@pytest.fixture
def world(tmp_path: Path, codeoid_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CODEOID_COMPRESS", raising=False)
    project = tmp_path / "project"
    (project / ".codeoid" / "rules").mkdir(parents=True)
    (project / ".codeoid" / "rules" / "test.toml").write_text(SEQ_RULE)
    env = {"CLAUDE_PROJECT_DIR": str(project), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "CODEOID_HOME": str(codeoid_home)}
    return {"project": project, "env": env, "home": codeoid_home}


def payload(world: dict[str, Any], command: str, stdout: str, *, tool_use_id: str = "toolu_after1",
            event: str = "PostToolUse", **response: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "cwd": str(world["project"]), "hook_event_name": event,
            "permission_mode": "default", "tool_name": "Bash", "tool_use_id": tool_use_id,
            "tool_input": {"command": command, "description": "d"},
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False,
                              "noOutputExpected": False, **response}}


def plan(world: dict[str, Any], command: str, stdout: str, env: dict[str, str] | None = None,
         **fields: Any) -> tuple[Any, str]:
    return post_tool_use.plan(payload(world, command, stdout, **fields), {**world["env"], **(env or {})})


def hook(world: dict[str, Any], event_payload: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    result = run_hook(event_payload["hook_event_name"], event_payload, env={**world["env"], **(env or {})},
                      cwd=world["project"])
    assert (result.returncode, result.stderr) == (0, b"")
    return json.loads(result.stdout) if result.stdout else None


def query(world: dict[str, Any], sql: str, *args: Any) -> list[tuple[Any, ...]]:
    import sqlite3

    connection = sqlite3.connect(world["home"] / "store.db")
    try:
        return connection.execute(sql, args).fetchall()
    finally:
        connection.close()


def codeoid(world: dict[str, Any], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([executable("codeoid"), *args], capture_output=True, cwd=world["project"],
                          env={**os.environ, **world["env"]}, timeout=120)


# -- the decision ---------------------------------------------------------------------------------------------


def test_a_long_output_is_compressed_with_a_footer_naming_its_raw_output_and_raw_line_numbers(
        world: dict[str, Any]) -> None:
    replacement, why = plan(world, "seq 1 3000", SEQ_3000)

    assert why == post_tool_use.COMPRESSED
    assert replacement.rule == "test-seq" and replacement.raw == SEQ_3000.encode()
    lines = replacement.shown.splitlines()
    assert lines[:5] == ["1", "2", "3", "4", "5"] and lines[6:9] == ["2998", "2999", "3000"]
    assert lines[5] == "[codeoid] 2992 lines cut, raw lines 6-2997"  # lines of the raw text as stored
    assert SEQ_3000.splitlines()[5] == "6" and SEQ_3000.splitlines()[2996] == "2997"
    assert lines[-1] == ('[codeoid] rule test-seq: 2,992 of 3,000 lines removed (2,992 head/tail). Exact output: '
                         'raw-toolu_after1 (get_episode("raw-toolu_after1"), or `codeoid show raw-toolu_after1 --raw`)')


@pytest.mark.parametrize(("command", "stdout", "fields", "why"), [
    ("seq 1 30", "\n".join(map(str, range(1, 31))), {}, post_tool_use.UNDER_FLOOR),
    ("echo hi", SEQ_3000, {}, post_tool_use.NO_RULE),
    ("seq 1 3000 >&2", SEQ_3000, {}, post_tool_use.CONSTRUCT),  # stdout elsewhere: the text is not seq's
    ("seq 1 3000", SEQ_3000, {"event": "PostToolUseFailure"}, post_tool_use.FAILED),
    ("seq 1 3000", SEQ_3000, {"interrupted": True}, post_tool_use.BACKGROUND),
    ("seq 1 3000", "x" * 29_990 + "\n123456789", {}, post_tool_use.OVER_CAP),  # exactly 30,000: at the cap
    (bash_wrapper.NAME_PREFIX + "finish; seq 1 3000", SEQ_3000, {}, post_tool_use.WRAPPED),
    ("codeoid-compress -- seq 1 3000", SEQ_3000, {}, post_tool_use.WRAPPED),
])
def test_outputs_the_after_the_fact_compression_leaves_alone(world: dict[str, Any], command: str, stdout: str,
                                                             fields: dict[str, Any], why: str) -> None:
    assert plan(world, command, stdout, **fields) == (None, why)


def test_the_early_floor_is_the_engines() -> None:
    from codeoid.compressors.engine import Thresholds

    assert (Thresholds().min_lines, Thresholds().min_bytes) == (post_tool_use.FLOOR_LINES, post_tool_use.FLOOR_BYTES)


def test_under_the_cap_is_compressed_and_one_short_of_it_is_not(world: dict[str, Any]) -> None:
    """Claude Code drops a final newline: the first 30,000 characters of a longer output, ending in one, reach the
    hook as 29,999. Without the file named (`persistedOutputPath`), that is as much a preview as 30,000."""
    text = "\n".join(f"{number:09d}" for number in range(2999)) + "\n12345678"  # 29,998 characters
    assert len(text) == post_tool_use.CAP_CHARS - 2
    assert plan(world, "seq 1 3000", text)[1] == post_tool_use.COMPRESSED
    assert plan(world, "seq 1 3000", text + "9")[1] == post_tool_use.OVER_CAP


def test_stderr_counts_toward_the_cap(world: dict[str, Any]) -> None:
    assert plan(world, "seq 1 3000", SEQ_3000, stderr="e" * 20_000)[1] == post_tool_use.OVER_CAP


@pytest.mark.parametrize(("setting", "after", "rewrite"), [
    (None, True, True), ("on", True, True), ("after", True, False), ("rewrite", False, True), ("off", False, False),
    ("0", False, False), ("of", False, False),  # a misspelt switch turns compression off, not on
])
def test_codeoid_compress_switches_each_hook(world: dict[str, Any], stand_in_claude: Any,  # noqa: F811
                                             setting: str | None, after: bool, rewrite: bool) -> None:
    env = {"CODEOID_COMPRESS": setting} if setting is not None else {}
    assert (plan(world, "seq 1 3000", SEQ_3000, env)[1] == post_tool_use.COMPRESSED) is after
    decision = {"session_id": SESSION, "cwd": str(world["project"]), "permission_mode": "bypassPermissions",
                "tool_name": "Bash", "tool_use_id": "toolu_rewrite", "tool_input": {"command": "seq 1 3000"}}
    hook_env = {**os.environ, **world["env"], "SHELL": "/bin/bash", "CLAUDE_PID": stand_in_claude(), **env}
    _, why = pre_tool_use.decide(decision, hook_env)
    assert why == (pre_tool_use.WRAPPED if rewrite else pre_tool_use.SWITCHED_OFF)


def test_any_failure_of_the_engine_leaves_the_output_alone_and_is_logged(
        world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from codeoid.compressors import engine

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine exploded")

    monkeypatch.setattr(engine, "compress_bytes", broken)
    assert plan(world, "seq 1 3000", SEQ_3000) == (None, post_tool_use.ERROR)
    log = (world["home"] / "logs" / "codeoid.log").read_text()
    assert "toolu_after1: not compressed after the fact (RuntimeError('engine exploded'))" in log


def test_a_command_naming_no_rule_program_or_a_small_output_is_decided_without_the_parser_or_the_engine(
        world: dict[str, Any]) -> None:
    """PostToolUse runs after every Bash call: most are turned away on the rule cache or the size alone."""
    env = {**os.environ, **world["env"]}
    run_hook("PostToolUse", payload(world, "seq 1 3000", SEQ_3000, tool_use_id="toolu_cache"), env=world["env"],
             cwd=world["project"])  # writes the rule cache

    def decided(command: str, stdout: str) -> tuple[str, set[str]]:
        probe = ("import json, sys\n"
                 "from codeoid.hooks import post_tool_use\n"
                 "before = set(sys.modules)\n"
                 "import os\n"
                 f"answer, why = post_tool_use.plan({payload(world, command, stdout)!r}, os.environ)\n"
                 "print(json.dumps({'why': why, 'modules': sorted(set(sys.modules) - before)}))\n")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                              cwd=world["project"])
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        return report["why"], set(report["modules"])

    heavy = {"tree_sitter", "tree_sitter_bash", "codeoid.compressors.command", "codeoid.compressors.engine",
             "codeoid.compressors.pipeline"}
    why, loaded = decided("echo hi && mkdir -p b", SEQ_3000)
    assert why == post_tool_use.NO_RULE and not loaded & heavy, loaded
    why, loaded = decided("seq 1 30", "1\n2\n3")  # a rule's program, but an output under the floor
    assert why == post_tool_use.UNDER_FLOOR and not loaded & heavy, loaded
    why, loaded = decided("seq 1 3000", SEQ_3000)
    assert why == post_tool_use.COMPRESSED  # the probe sees what it means to see
    assert {"tree_sitter._binding", "codeoid.compressors.command", "codeoid.compressors.engine"} <= loaded


# -- through the hook -----------------------------------------------------------------------------------------


def test_the_hook_answers_the_compressed_text_after_storing_the_raw_text(world: dict[str, Any]) -> None:
    sent = payload(world, "seq 1 3000", SEQ_3000)
    answer = hook(world, sent)

    specific = answer["hookSpecificOutput"]
    assert specific["hookEventName"] == "PostToolUse"
    replaced = specific["updatedToolOutput"]
    assert replaced == {**sent["tool_response"], "stdout": replaced["stdout"]}  # every other field echoed
    assert replaced["stdout"].splitlines()[5] == "[codeoid] 2992 lines cut, raw lines 6-2997"
    assert codeoid(world, "show", "raw-toolu_after1", "--raw").stdout == SEQ_3000.encode()
    (raw_id, response, text), = query(world, "SELECT raw_output_id, response, text FROM episodes WHERE tool_use_id = ?",
                                      "toolu_after1")
    assert raw_id == "raw-toolu_after1"
    assert text == replaced["stdout"] and json.loads(response)["interrupted"] is False  # what the model read
    (rule, stdout_size, shown_size, exit_status, complete, session), = query(
        world, "SELECT rule, stdout_size, shown_size, exit_status, complete, session_id FROM raw_outputs")
    assert (rule, stdout_size, shown_size, exit_status, complete) == (
        "test-seq", len(SEQ_3000), len(replaced["stdout"].encode()), 0, 1)
    assert session is not None

    gain = json.loads(codeoid(world, "gain", "--json").stdout)
    assert gain["total"]["raw_bytes"] - gain["total"]["shown_bytes"] == len(SEQ_3000) - len(replaced["stdout"])

    assert hook(world, sent) is None  # delivered again: answered once, stored once
    assert query(world, "SELECT count(*) FROM episodes WHERE tool_use_id = 'toolu_after1'") == [(1,)]


def test_the_hook_leaves_alone_what_it_may_not_compress(world: dict[str, Any]) -> None:
    assert hook(world, payload(world, "seq 1 3000", SEQ_3000, tool_use_id="t-off"), {"CODEOID_COMPRESS": "off"}) \
        is None
    failure = {**payload(world, "seq 1 3000; exit 1", "", tool_use_id="t-failed", event="PostToolUseFailure"),
               "error": "Exit code 1\n" + SEQ_3000}
    del failure["tool_response"]
    assert hook(world, failure) is None
    assert query(world, "SELECT tool_use_id, raw_output_id, length(text) FROM episodes ORDER BY id") == [
        ("t-off", None, len(SEQ_3000)), ("t-failed", None, len("Exit code 1\n" + SEQ_3000))]
    assert query(world, "SELECT count(*) FROM raw_outputs") == [(0,)]

    excluded = {"CODEOID_EXCLUDE_PROJECTS": str(world["project"])}
    assert hook(world, payload(world, "seq 1 3000", SEQ_3000, tool_use_id="t-excluded"), excluded) is None
    assert query(world, "SELECT count(*) FROM episodes WHERE tool_use_id = 't-excluded'") == [(0,)]


def test_with_the_store_locked_the_output_passes_whole_and_is_stored_whole_later(world: dict[str, Any]) -> None:
    """An event the hook cannot apply at once waits in the spool: nobody would be there to answer when it is
    replayed, so the model reads the output whole and the store keeps it as Claude Code reported it."""
    import sqlite3

    assert hook(world, payload(world, "echo first", "first", tool_use_id="t-first")) is None  # creates the store
    holder = sqlite3.connect(world["home"] / "store.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        answer = hook(world, payload(world, "seq 1 3000", SEQ_3000, tool_use_id="t-locked"),
                      {"CODEOID_BUSY_TIMEOUT_MS": "100"})
    finally:
        holder.execute("COMMIT")
        holder.close()
    assert answer is None
    assert hook(world, payload(world, "echo later", "later", tool_use_id="t-later")) is None  # replays the spool
    assert query(world, "SELECT raw_output_id, text FROM episodes WHERE tool_use_id = 't-locked'") == [
        (None, SEQ_3000)]
    assert query(world, "SELECT count(*) FROM raw_outputs") == [(0,)]

