"""Acceptance: a real `claude -p` session with codeoid installed the way install.sh installs it.

Another tool's PostToolUse/PostToolUseFailure hook tees the exact payloads Claude Code sends, so every stored
tool result is compared with what Claude Code reported, field by field, not with a copy in the test.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from .fake_anthropic import Reply, Text, ToolUse, bash
from .rig import MID_TURN_PROMPT, ClaudeRig, type_a_prompt_mid_turn
from .tui import wait_until


def tee_hook(log: Path) -> dict[str, Any]:
    command = f"cat >> {shlex.quote(str(log))}; echo >> {shlex.quote(str(log))}"
    return {"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 10}]}


def stored_episodes(rig: ClaudeRig) -> list[dict[str, Any]]:
    connection = sqlite3.connect(rig.codeoid_home / "store.db")
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute("SELECT * FROM episodes ORDER BY created_at, id")]
    finally:
        connection.close()


def response_of(episode: dict[str, Any]) -> Any:
    from codeoid.store.queries import tool_response

    return tool_response(episode)


@pytest.mark.e2e
def test_every_prompt_tool_call_and_message_becomes_exactly_one_episode(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    tee = rig.root / "tee.jsonl"
    settings = json.loads(rig.user_settings_path.read_text())
    for event in ("PostToolUse", "PostToolUseFailure"):
        settings["hooks"][event].append(tee_hook(tee))
    rig.user_settings_path.write_text(json.dumps(settings))
    notes = rig.project / "notes.txt"
    notes.write_text("alpha\nbeta\n")

    ok = bash("echo hello-codeoid; printf 'second line\\n'")
    failing = bash("echo partial-out; echo boom-on-stderr >&2; exit 3")
    read = ToolUse(name="Read", input={"file_path": str(notes)})
    edit = ToolUse(name="Edit", input={"file_path": str(notes), "old_string": "beta", "new_string": "gamma"})
    left, right = bash("echo left-branch"), bash("echo right-branch")
    final_text = "All six calls ran; notes.txt now says gamma."
    rig.api.add(
        Reply([Text("Starting with a shell call."), ok]),
        Reply([failing]),
        Reply([read]),
        Reply([edit]),
        Reply([Text("Two at once."), left, right]),
        Reply([Text(final_text)]),
    )

    run = rig.run("exercise every tool please")

    assert run.exit_code == 0, run.describe()
    rig.api.assert_script_consumed()
    assert notes.read_text() == "alpha\ngamma\n"
    reported = {payload["tool_use_id"]: payload
                for payload in (json.loads(line) for line in tee.read_text().splitlines() if line.strip())}
    episodes = stored_episodes(rig)
    tools = {row["tool_use_id"]: row for row in episodes if row["kind"] == "tool"}
    calls = [ok, failing, read, edit, left, right]

    assert sorted(tools) == sorted(call.id for call in calls)
    assert [row["text"] for row in episodes if row["kind"] == "user"] == ["exercise every tool please"]
    assert [row["text"] for row in episodes if row["kind"] == "assistant"] == [
        "Starting with a shell call.", "Two at once.", final_text,
    ]
    assert len(episodes) == 1 + len(calls) + 3
    for call in calls:
        row, payload = tools[call.id], reported[call.id]
        assert json.loads(row["input"]) == payload["tool_input"], call.name
        if payload["hook_event_name"] == "PostToolUse":
            assert response_of(row) == payload["tool_response"], call.name
        else:
            assert row["text"] == payload["error"]
        if call.name == "Bash":
            assert row["original_command"] == call.input["command"]
    failed = tools[failing.id]
    assert reported[failing.id]["hook_event_name"] == "PostToolUseFailure"
    assert (failed["exit_status"], failed["is_error"]) == (3, 1)
    assert "boom-on-stderr" in failed["text"] and "partial-out" in failed["text"]
    assert json.loads(tools[ok.id]["response"])["stdout"] == "hello-codeoid\nsecond line"
    assert tools[read.id]["text"] == "alpha\nbeta\n"
    assert "+gamma" in tools[edit.id]["text"]
    assert {row["session_id"] for row in episodes} == {episodes[0]["session_id"]}
    assert all(row["state"] == "live" for row in episodes)


@pytest.mark.e2e
def test_a_session_is_registered_with_its_claude_pid_and_closed_at_the_end(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    rig.api.add("hi")

    run = rig.run("hello")

    assert run.exit_code == 0, run.describe()
    connection = sqlite3.connect(rig.codeoid_home / "store.db")
    backing = connection.execute("SELECT id, claude_pid, source, ended_at, end_reason FROM backing_sessions").fetchall()
    connection.close()
    (backing_id, pid, source, ended_at, reason), = backing
    assert backing_id == run.session_id
    assert source == "startup" and pid and pid != os.getpid()
    assert ended_at is not None and reason == "other"


@pytest.mark.e2e
def test_a_prompt_typed_while_claude_works_is_stored_in_the_running_turn(rig: ClaudeRig) -> None:
    """The real TUI hands a prompt typed mid-turn to the model inside that turn, with the turn's own prompt id."""
    rig.install_codeoid()
    type_a_prompt_mid_turn(rig, rig.supervise())

    answered = rig.api.main_requests[-1]
    assert MID_TURN_PROMPT in json.dumps(answered.messages), "the prompt was meant to arrive mid-turn"
    def user_turns() -> list[tuple[int, str, str]]:
        return [(e["turn"], e["origin"], e["text"]) for e in stored_episodes(rig) if e["kind"] == "user"]

    wait_until(lambda: len(user_turns()) >= 2, timeout=60, message="a second prompt in the store")
    users = user_turns()
    assert users == [(1, "user", "run the slow step"), (1, "user", MID_TURN_PROMPT)]
    rig.api.assert_script_consumed()
