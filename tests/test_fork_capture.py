"""A Codex or Gemini fork's own turns reach the store: after the CLI ran, what it added to its session record
(Codex's rollout, Gemini's chat copy) is stored as episodes of the fork, in order, turns continuing the fork's
count, tool results whole; codeoid's own history in those files is not stored again, nor are the CLI's own
context messages; reading the record again stores nothing twice.

The appended records are copied from real runs of codex-cli 0.171.0 and gemini-cli 0.61.0 (long metadata
fields trimmed); tests/e2e/test_fork_backends_e2e.py checks the same against the real CLIs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_fork import agent_bins, claude_home, forked_session, two_window_session  # noqa: F401 - fixtures

from codeoid.cli import cli
from codeoid.store import db

RECALL_TEXT = "recall 'database': 1 episode\n\n=== episode 1 · user\nWhich database for the store?"


def fork_no_start(project: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(project)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    result = CliRunner().invoke(cli, ["fork", "durable-1", "--backend", backend, "--name", "f", "--no-start"])
    assert result.exit_code == 0, result.output
    connection = db.connect()
    try:
        return str(forked_session(connection, "f")[0])
    finally:
        connection.close()


def capture(session: str) -> str:
    result = CliRunner().invoke(cli, ["fork-capture", session])
    assert result.exit_code == 0, result.output
    return result.output


def episodes(session_id: str) -> list[tuple[Any, ...]]:
    connection = db.connect()
    try:
        return connection.execute(
            "SELECT turn, kind, coalesce(tool_name, ''), text, is_error, origin,"
            " coalesce(prompt_id, tool_use_id, message_id) FROM episodes WHERE session_id = ? ORDER BY id",
            (session_id,)).fetchall()
    finally:
        connection.close()


def jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def created_at(session_id: str) -> set[float]:
    connection = db.connect()
    try:
        return {row[0] for row in connection.execute("SELECT created_at FROM episodes WHERE session_id = ?",
                                                      (session_id,))}
    finally:
        connection.close()


# -- Codex -------------------------------------------------------------------------------------------------------

def codex_turn(prompt: str, call_id: str, query: str, result: dict[str, Any], answer: str) -> list[dict[str, Any]]:
    """One `codex exec resume` turn as 0.171.0 appends it: settings, its own instructions and environment as
    messages, the prompt (as an item and an event), an MCP call, its end event, its output, the answer."""
    stamp = "2026-11-30T19:41:15.385Z"
    output = [{"type": "input_text", "text": "Wall time: 0.0070 seconds\nOutput:"},
              {"type": "input_text", "text": RECALL_TEXT}]

    def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": stamp, "type": kind, "payload": payload}

    return [
        line("event_msg", {"type": "task_started", "turn_id": "t1", "model_context_window": 258400}),
        line("response_item", {"type": "message", "id": "msg_dev", "role": "developer",
                               "content": [{"type": "input_text", "text": "<skills_instructions>\n## Skills"}]}),
        line("response_item", {"type": "message", "id": "msg_env", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/p</cwd>\n</environment_context>"}]}),
        line("turn_context", {"turn_id": "t1", "cwd": "/p", "model": "gpt-5-codex"}),
        line("response_item", {"type": "message", "id": "msg_u", "role": "user",
                               "content": [{"type": "input_text", "text": prompt}],
                               "internal_chat_message_metadata_passthrough": {"turn_id": "t1"}}),
        line("event_msg", {"type": "user_message", "message": prompt, "images": [], "local_images": [],
                           "text_elements": []}),
        line("response_item", {"type": "function_call", "id": "fc_1", "name": "recall", "namespace": "mcp__codeoid",
                               "arguments": json.dumps({"query": query}), "call_id": call_id}),
        line("event_msg", {"type": "mcp_tool_call_end", "call_id": call_id, "turn_id": "t1",
                           "invocation": {"server": "codeoid", "tool": "recall", "arguments": {"query": query}},
                           "result": result}),
        line("response_item", {"type": "function_call_output", "id": "fco_1", "call_id": call_id, "output": output}),
        line("event_msg", {"type": "agent_message", "message": answer, "phase": None}),
        line("response_item", {"type": "message", "id": "msg_fake", "role": "assistant",
                               "content": [{"type": "output_text", "text": answer}]}),
        line("event_msg", {"type": "task_complete", "turn_id": "t1", "last_agent_message": answer}),
    ]


def test_a_codex_forks_own_turns_are_stored_in_order_once(
        codeoid_home: Path, project: Path, claude_home: Path, agent_bins: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    two_window_session(project)
    fork_id = fork_no_start(project, "codex", monkeypatch)
    (rollout,) = claude_home.glob(".codex/sessions/*/*/*/rollout-*.jsonl")
    written = len(rollout.read_text().splitlines())
    ok = {"Ok": {"content": [{"type": "text", "text": RECALL_TEXT}]}}
    with rollout.open("a") as out:
        out.write(jsonl(codex_turn("what did we store?", "call_1", "database", ok, "A database.")))

    assert "Stored 3 new episodes" in capture(fork_id)

    codex_id = rollout.stem[-36:]
    prompt_line = written + 6
    first = [
        (3, "user", "", "what did we store?", 0, "user", f"codex:{codex_id}:{prompt_line}"),
        (3, "tool", "mcp__codeoid__recall", "Wall time: 0.0070 seconds\nOutput:\n" + RECALL_TEXT, 0, "codeoid",
         "call_1"),
        (3, "assistant", "", "A database.", 0, "user", f"codex:{codex_id}:{prompt_line + 5}"),
    ]
    assert episodes(fork_id) == first, "the parent's turns, Codex's instructions and environment are not stored"

    failed = {"Err": "tool call failed: server codeoid is gone"}
    with rollout.open("a") as out:
        out.write(jsonl(codex_turn("and again?", "call_2", "again", failed, "It failed.")))
        out.write('{"timestamp": "2026-11-30T19:41:16.000Z", "type": "event_msg", "payload": {"type": "user_mes')
    assert created_at(fork_id) == {1796067675.385}, "stamped when Codex recorded them, not when read back"
    assert "Stored 3 new episodes" in capture(fork_id), "only what is new, a line still being written left out"
    assert "Stored 0 new episodes" in capture(fork_id)

    stored = episodes(fork_id)
    assert stored[:3] == first
    assert [(turn, kind, is_error) for turn, kind, _, _, is_error, _, _ in stored[3:]] == [
        (4, "user", 0), (4, "tool", 1), (4, "assistant", 0)]
    assert stored[4][3].endswith("Which database for the store?"), "a failed call keeps its text"
    connection = db.connect()
    try:
        assert connection.execute("SELECT turn_count FROM sessions WHERE id = ?", (fork_id,)).fetchone()[0] == 4
        assert connection.execute("SELECT source, end_reason FROM backing_sessions WHERE session_id = ?",
                                  (fork_id,)).fetchall() == [("codex", "exited")]
    finally:
        connection.close()


# -- Gemini ------------------------------------------------------------------------------------------------------

def gemini_chat(conversation: Path, session_id: str, answer_id: str, prompt: str, call: dict[str, Any],
                answer: str) -> list[dict[str, Any]]:
    """The chat gemini 0.61.0 writes for `--session-file conversation --prompt=…`: its metadata, the import note,
    codeoid's records copied, its rewrite of the message list (its session context first), then the run."""
    stamp = "2026-11-30T19:41:21.240Z"
    copied = [json.loads(line) for line in conversation.read_text().splitlines()[1:]]
    context = {"id": "d04923d3", "timestamp": stamp, "type": "user",
               "content": [{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}
    thinking = {"id": answer_id + "-1", "timestamp": stamp, "type": "gemini", "content": "", "thoughts": [],
                "model": "gemini-2.5-pro"}
    return [
        {"sessionId": session_id, "projectHash": "053004c7", "startTime": stamp, "lastUpdated": stamp,
         "messageCount": len(copied)},
        {"id": "import-1796067680135", "type": "info", "content": f"Imported session from {conversation}",
         "timestamp": stamp},
        *copied,
        {"$set": {"sessionId": session_id}},
        {"$set": {"messages": [context, *copied], "lastUpdated": stamp}},
        {"id": answer_id + "-u", "timestamp": stamp, "type": "user", "content": [{"text": prompt}]},
        {"$set": {"lastUpdated": stamp}},
        thinking,
        {**thinking, "toolCalls": [call]},
        {"id": answer_id + "-r", "timestamp": stamp, "type": "user",
         "content": [{"functionResponse": call["result"][0]["functionResponse"]}]},
        {"id": answer_id + "-2", "timestamp": stamp, "type": "gemini", "content": answer, "thoughts": [],
         "model": "gemini-2.5-pro"},
        {"$set": {"lastUpdated": stamp}},
    ]


def gemini_call(call_id: str, response: dict[str, str], status: str) -> dict[str, Any]:
    return {"id": call_id, "name": "mcp_codeoid_recall", "args": {"query": "database"},
            "result": [{"functionResponse": {"id": call_id, "name": "mcp_codeoid_recall", "response": response}}],
            "status": status, "timestamp": "2026-11-30T19:41:21.440Z", "resultDisplay": "…",
            "displayName": "recall (codeoid MCP Server)"}


def test_a_gemini_forks_own_turns_are_stored_from_each_chat_that_imported_it_once(
        codeoid_home: Path, project: Path, claude_home: Path, agent_bins: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    two_window_session(project)
    fork_id = fork_no_start(project, "gemini", monkeypatch)
    (conversation,) = claude_home.glob(".gemini/codeoid-forks/*/conversation.jsonl")
    chats = claude_home / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-11-30T19-41-c56fb5e2.jsonl").write_text(jsonl([  # Gemini's start-up chat: not ours
        {"sessionId": "c56fb5e2", "projectHash": "053004c7", "startTime": "x", "kind": "main"},
        {"id": "other", "type": "user", "content": [{"text": "someone else's prompt"}]}]))
    ok = gemini_call("mcp_codeoid_recall__call_1", {"output": f"<untrusted_context>\n{RECALL_TEXT}"}, "success")
    first = chats / "session-1796067680135-c56fb5e2.jsonl"
    first.write_text(jsonl(gemini_chat(conversation, "c56fb5e2", "a", "what did we store?", ok, "A database.")))

    assert "Stored 3 new episodes" in capture(fork_id)
    assert "Stored 0 new episodes" in capture(fork_id)

    assert episodes(fork_id) == [
        (3, "user", "", "what did we store?", 0, "user", "gemini:c56fb5e2:a-u"),
        (3, "tool", "mcp__codeoid__recall", f"<untrusted_context>\n{RECALL_TEXT}", 0, "codeoid",
         "mcp_codeoid_recall__call_1"),
        (3, "assistant", "", "A database.", 0, "user", "gemini:c56fb5e2:a-2"),
    ], "the parent's turns, Gemini's session context and its repeated results are not stored"
    assert created_at(fork_id) == {1796067681.24}, "stamped when Gemini recorded them"

    failed = gemini_call("mcp_codeoid_recall__call_2", {"error": "MCP error: server gone"}, "error")
    second = chats / "session-1796067690000-d1e2f3a4.jsonl"  # the --no-start fork started a second time
    second.write_text(jsonl(gemini_chat(conversation, "d1e2f3a4", "b", "and again?", failed, "It failed.")))
    assert "Stored 3 new episodes" in capture(fork_id)
    assert [(turn, kind, text, is_error) for turn, kind, _, text, is_error, _, _ in episodes(fork_id)[3:]] == [
        (4, "user", "and again?", 0), (4, "tool", "MCP error: server gone", 1), (4, "assistant", "It failed.", 0)]


def test_fork_capture_refuses_a_session_that_was_not_forked_onto_codex_or_gemini(
        codeoid_home: Path, project: Path) -> None:
    two_window_session(project)

    result = CliRunner().invoke(cli, ["fork-capture", "durable-1"])

    assert result.exit_code != 0
    assert "was not forked onto Codex or Gemini" in result.output


def test_an_unreadable_record_is_reported_not_raised(
        codeoid_home: Path, project: Path, claude_home: Path, agent_bins: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    two_window_session(project)
    fork_id = fork_no_start(project, "codex", monkeypatch)
    for rollout in claude_home.glob(".codex/sessions/*/*/*/rollout-*.jsonl"):
        rollout.unlink()

    result = CliRunner().invoke(cli, ["fork-capture", fork_id])

    assert result.exit_code == 1 and "record cannot be read" in result.output




# -- `codeoid fork` runs the CLI, then stores what it did, and exits with its status ------------------------------

def stand_in_codex(agent_bins: Path, script: str) -> None:  # noqa: F811 - the fixture's value
    """A codex that does what `script` says (it runs where the real one would, with CODEX_HOME set)."""
    codex = agent_bins / "codex"
    codex.write_text(f"#!/bin/sh\n{script}\n")
    codex.chmod(0o755)


def appends(turn: Path) -> str:
    """Shell that appends `turn` to the rollout codeoid wrote, as Codex appends its turn."""
    return f'for r in "$CODEX_HOME"/sessions/*/*/*/rollout-*.jsonl; do cat {turn} >> "$r"; done'


def test_codeoid_fork_stores_what_the_cli_appended_and_exits_with_its_status(
        codeoid_home: Path, project: Path, claude_home: Path, agent_bins: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    two_window_session(project)
    monkeypatch.chdir(project)
    turn = tmp_path / "turn.jsonl"
    ok = {"Ok": {"content": [{"type": "text", "text": RECALL_TEXT}]}}
    turn.write_text(jsonl(codex_turn("what did we store?", "call_1", "database", ok, "A database.")))
    stand_in_codex(agent_bins, f"{appends(turn)}\nexit 5")

    result = CliRunner().invoke(cli, ["fork", "durable-1", "--backend", "codex", "--name", "f", "--print", "go"])

    assert result.exit_code == 5, result.output
    assert "Stored 3 new episodes from codex's record" in result.output
    assert [row[1] for row in episodes(forked_session_id("f"))] == ["user", "tool", "assistant"]


def test_a_record_that_cannot_be_read_costs_the_user_nothing_but_a_message(
        codeoid_home: Path, project: Path, claude_home: Path, agent_bins: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    two_window_session(project)
    monkeypatch.chdir(project)
    stand_in_codex(agent_bins, 'rm "$CODEX_HOME"/sessions/*/*/*/rollout-*.jsonl\nexit 7')

    result = CliRunner().invoke(cli, ["fork", "durable-1", "--backend", "codex", "--name", "f", "--print", "go"])

    assert result.exit_code == 7, result.output
    fork_id = forked_session_id("f")
    assert "codeoid could not store the fork's turns from codex" in result.output
    assert f"run `codeoid fork-capture {fork_id}` to try again" in result.output
    log = (codeoid_home / "logs" / "codeoid.log").read_text()
    assert f"storing the turns of fork {fork_id} from codex failed" in log


def test_a_busy_store_costs_the_user_nothing_but_a_message_and_capturing_later_stores_the_turn(
        codeoid_home: Path, project: Path, claude_home: Path, agent_bins: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    two_window_session(project)
    monkeypatch.chdir(project)
    monkeypatch.setenv("CODEOID_BUSY_TIMEOUT_MS", "100")
    turn = tmp_path / "turn.jsonl"
    ok = {"Ok": {"content": [{"type": "text", "text": RECALL_TEXT}]}}
    turn.write_text(jsonl(codex_turn("what did we store?", "call_1", "database", ok, "A database.")))
    # The lock is held until the test releases it, not for a time a loaded machine could outlast or undercut.
    locked, release, released = tmp_path / "locked", tmp_path / "release", tmp_path / "released"
    hold = "import sqlite3, sys, time, pathlib\n" \
        "db = sqlite3.connect(sys.argv[1], isolation_level=None); db.execute('BEGIN IMMEDIATE')\n" \
        "pathlib.Path(sys.argv[2]).touch()\n" \
        "while not pathlib.Path(sys.argv[3]).exists(): time.sleep(0.05)\n" \
        "db.execute('ROLLBACK'); db.close(); pathlib.Path(sys.argv[4]).touch()\n"
    (tmp_path / "hold.py").write_text(hold)
    # The user's codex run ends while something else (another hook, say) holds the store's write lock.
    stand_in_codex(agent_bins, f"{appends(turn)}\n"
                               f'{sys.executable} {tmp_path / "hold.py"} {codeoid_home / "store.db"} {locked} '
                               f'{release} {released} &\n'
                               f'while [ ! -e {locked} ]; do sleep 0.05; done\nexit 0')

    result = CliRunner().invoke(cli, ["fork", "durable-1", "--backend", "codex", "--name", "f", "--print", "go"])

    assert result.exit_code == 0, result.output
    assert "codeoid could not store the fork's turns from codex" in result.output
    fork_id = forked_session_id("f")
    assert episodes(fork_id) == []
    release.touch()
    deadline = time.monotonic() + 60
    while not released.exists():
        assert time.monotonic() < deadline, "the lock holder never let go"
        time.sleep(0.05)
    assert "Stored 3 new episodes" in capture("f")
    assert [row[1] for row in episodes(fork_id)] == ["user", "tool", "assistant"]


def forked_session_id(name: str) -> str:
    connection = db.connect()
    try:
        return str(forked_session(connection, name)[0])
    finally:
        connection.close()
