"""Acceptance: `codeoid fork` onto Claude Code, with the real `claude` CLI against the scripted API.

The parent is a real captured session of three turns (a compressed Bash listing, a failing command, a call after
the fork point). The fork's first request must carry the parent's first two turns as real message blocks, in
order, with each tool result exactly as the parent's model saw it (from the parent's own transcript); a recall
in the fork finds a parent episode; the parent's rows and transcript are unchanged.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .fake_anthropic import RecordedRequest, Reply, Text, ToolUse, bash
from .rig import DEFAULT_MODEL, MID_TURN_ANSWER, MID_TURN_PROMPT, ClaudeRig, type_a_prompt_mid_turn
from .tui import Terminal, wait_until

CODEOID = str(Path(sys.executable).parent / "codeoid")


def codeoid(rig: ClaudeRig, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CODEOID, *args], cwd=rig.project, env={**rig.env, "CODEOID_CLAUDE_BIN": rig.claude_bin},
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def rows(rig: ClaudeRig, sql: str, *params: Any) -> list[dict[str, Any]]:
    connection = sqlite3.connect(rig.codeoid_home / "store.db")
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute(sql, params)]
    finally:
        connection.close()


def conversation(request: RecordedRequest) -> list[tuple[str, str, Any]]:
    """The request's messages block by block, without Claude Code's own reminders and system entries."""
    items: list[tuple[str, str, Any]] = []
    for message in request.messages:
        if message["role"] not in ("user", "assistant"):
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            if block["type"] == "text" and not block["text"].startswith("<system-reminder>"):
                items.append((message["role"], "text", block["text"]))
            elif block["type"] == "tool_use":
                items.append((message["role"], "tool_use", (block["id"], block["name"], block["input"])))
            elif block["type"] == "tool_result":
                items.append((message["role"], "tool_result", (block["tool_use_id"], block["content"],
                                                               bool(block.get("is_error")))))
    return items


def transcript_results(rig: ClaudeRig, session_id: str) -> dict[str, tuple[str, bool]]:
    """Each tool result as the parent's model saw it, read from the parent's own transcript."""
    found = {}
    for record in rig.transcript(session_id):
        content = (record.get("message") or {}).get("content") if record.get("type") == "user" else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                text = block["content"] if isinstance(block["content"], str) else block["content"][0]["text"]
                found[block["tool_use_id"]] = (text, bool(block.get("is_error")))
    return found


@pytest.mark.e2e
def test_fork_carries_the_parents_turns_as_messages_and_recalls_its_episodes(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    many = rig.project / "many"
    many.mkdir()
    for index in range(150):
        (many / f"file-{index:03}.txt").write_text("x\n")

    listing = bash("find many -type f", "list the files")
    rig.api.add(Reply([Text("Listing the alpha files."), listing]), "Alpha: 150 files, zebra-quartz-7731.")
    first = rig.run("turn one: list the alpha files")
    assert first.exit_code == 0, first.describe()
    parent_claude_id = first.session_id

    failing = bash("echo partial-out; echo boom-on-stderr >&2; exit 3", "a failing command")
    rig.api.add(Reply([failing]), "Beta failed with exit 3.")
    second = rig.run("turn two: run the beta check", "--resume", parent_claude_id)
    assert second.exit_code == 0, second.describe()

    after = bash("echo gamma-after-the-fork-point", "after the fork point")
    rig.api.add(Reply([after]), "Gamma printed.")
    third = rig.run("turn three: the gamma step", "--resume", parent_claude_id)
    assert third.exit_code == 0, third.describe()

    parent = rows(rig, "SELECT * FROM sessions")
    assert len(parent) == 1 and parent[0]["turn_count"] == 3
    parent_id = parent[0]["id"]
    parent_episodes = rows(rig, "SELECT * FROM episodes ORDER BY id")
    parent_transcript = next((rig.home / ".claude" / "projects").glob(f"*/{parent_claude_id}.jsonl")).read_bytes()
    seen = transcript_results(rig, parent_claude_id)
    assert "[codeoid]" in seen[listing.id][0], (f"the listing was meant to be compressed; PreToolUse answered "
                                                f"{first.hook_responses('PreToolUse')}\n{rig.codeoid_log()}")

    recall = ToolUse(name="mcp__codeoid__recall", input={"query": "zebra quartz alpha files"})
    rig.api.add(Reply([Text("Checking memory."), recall]), "The fork knows about alpha.")
    requests_before = len(rig.api.requests)
    forked = codeoid(rig, "fork", parent_id[:10], "--at", "2", "--name", "beta-retry", "--print",
                     "turn three of the fork: what next?", "--", "--output-format", "stream-json", "--verbose",
                     "--model", DEFAULT_MODEL, "--dangerously-skip-permissions")
    assert forked.returncode == 0, forked.stdout[-3000:] + forked.stderr[-3000:]
    rig.api.assert_script_consumed()

    main = [r for r in rig.api.requests[requests_before:] if r.kind == "main"]
    said = conversation(main[0])
    assert said[0][0:2] == ("user", "text") and f"fork of codeoid session {parent_id}" in said[0][2]
    assert "mcp__codeoid__recall" in said[0][2]
    expected = [
        ("user", "text", "turn one: list the alpha files"),
        ("assistant", "text", "Listing the alpha files."),
        ("assistant", "tool_use", (listing.id, "Bash", listing.input)),
        ("user", "tool_result", (listing.id, *seen[listing.id])),
        ("assistant", "text", "Alpha: 150 files, zebra-quartz-7731."),
        ("user", "text", "turn two: run the beta check"),
        ("assistant", "tool_use", (failing.id, "Bash", failing.input)),
        ("user", "tool_result", (failing.id, *seen[failing.id])),
        ("assistant", "text", "Beta failed with exit 3."),
        ("user", "text", "turn three of the fork: what next?"),
    ]
    assert said[1:] == expected
    assert seen[failing.id][1] is True and "boom-on-stderr" in seen[failing.id][0]
    assert "gamma" not in json.dumps(main[0].messages)

    recalled = rig.api.tool_results()[recall.id]
    assert not recalled.is_error and "zebra-quartz-7731" in recalled.text

    assert rows(rig, "SELECT * FROM episodes WHERE session_id = ? ORDER BY id", parent_id) == parent_episodes
    assert rows(rig, "SELECT turn_count, name, forked_from FROM sessions WHERE id = ?", parent_id) == [
        {"turn_count": 3, "name": None, "forked_from": None}]
    assert next((rig.home / ".claude" / "projects").glob(f"*/{parent_claude_id}.jsonl")).read_bytes() \
        == parent_transcript

    listed = json.loads(codeoid(rig, "sessions", "--json").stdout)
    fork_row = next(row for row in listed if row["id"] != parent_id)
    assert (fork_row["forked_from"], fork_row["at_turn"], fork_row["name"]) == (parent_id, 2, "beta-retry")
    text = codeoid(rig, "sessions").stdout
    assert f"forked from {parent_id} at turn 2" in text

    history = json.loads(codeoid(rig, "timeline", "--session", fork_row["id"], "--json").stdout)
    own = [row for row in history if row["session_id"] == fork_row["id"]]
    inherited = [row for row in history if row["session_id"] == parent_id]
    assert {row["turn"] for row in inherited} == {1, 2}
    assert not any("gamma" in row["text"] for row in history)
    assert [row["text"] for row in own if row["kind"] == "user"] == ["turn three of the fork: what next?"]
    assert {row["turn"] for row in own} == {3}
    assert not any(row["text"] == "Beta failed with exit 3." for row in own), "the parent's answer stored twice"


@pytest.mark.e2e
def test_fork_starts_interactively_under_the_supervisor_by_default(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    rig.api.add("The parent's first answer: osprey-delta-58.")
    first = rig.run("parent prompt one")
    assert first.exit_code == 0, first.describe()
    rig.api.add("The parent's second answer.")
    assert rig.run("parent prompt two", "--resume", first.session_id).exit_code == 0
    (parent_id,) = [row["id"] for row in rows(rig, "SELECT id FROM sessions")]

    term = Terminal([CODEOID, "fork", parent_id, "--at", "1", "--", "--model", DEFAULT_MODEL],
                    env={**rig.env, "CODEOID_CLAUDE_BIN": rig.claude_bin}, cwd=str(rig.project))
    try:
        term.wait_for("codeoid ctx", timeout=60)
        requests_before = len(rig.api.requests)
        rig.api.add("The fork's own answer.")
        term.type_line("fork prompt")
        term.wait_for("The fork's own answer.", timeout=60)
        state = rig.supervisor_state()
    finally:
        term.close()

    fork_id = next(row["id"] for row in rows(rig, "SELECT id FROM sessions") if row["id"] != parent_id)
    assert state is not None and state["session_id"] == fork_id
    first_request = next(r for r in rig.api.requests[requests_before:] if r.kind == "main")
    said = [item for item in conversation(first_request) if item[1] == "text"]
    assert said[1:] == [("user", "text", "parent prompt one"),
                        ("assistant", "text", "The parent's first answer: osprey-delta-58."),
                        ("user", "text", "fork prompt")]
    assert rows(rig, "SELECT session_id, turn FROM episodes WHERE text = 'fork prompt'") == [
        {"session_id": fork_id, "turn": 2}]


@pytest.mark.e2e
def test_fork_carries_a_prompt_typed_mid_turn_after_the_result_it_came_with(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    type_a_prompt_mid_turn(rig, rig.supervise())
    wait_until(lambda: rows(rig, "SELECT 1 FROM episodes WHERE kind = 'assistant'"), timeout=60,
               message="the turn's answer in the store")
    parent_id = rows(rig, "SELECT id FROM sessions")[0]["id"]

    rig.api.add("Noted.")
    requests_before = len(rig.api.requests)
    forked = codeoid(rig, "fork", parent_id[:10], "--print", "what next?", "--", "--model", DEFAULT_MODEL,
                     "--dangerously-skip-permissions")
    assert forked.returncode == 0, forked.stdout[-3000:] + forked.stderr[-3000:]

    main = [r for r in rig.api.requests[requests_before:] if r.kind == "main"]
    said = conversation(main[0])[1:]
    assert [(role, kind) for role, kind, _ in said] == [
        ("user", "text"), ("assistant", "tool_use"), ("user", "tool_result"), ("user", "text"),
        ("assistant", "text"), ("user", "text")]
    assert [value for _, kind, value in said if kind == "text"] == [
        "run the slow step", MID_TURN_PROMPT, MID_TURN_ANSWER, "what next?"]
