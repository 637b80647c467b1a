"""`codeoid-hook --agent=codex|gemini EVENT`, run as the real executable on payloads shaped as each CLI sends
them (docs/agent-protocols.md, copied from probes of the pinned CLIs), into a real store: replays store nothing
twice, every episode names its agent, Codex's shell calls are wrapped only where Codex asks nothing, and
SessionStart hands each CLI the workspace's memory index under its own names for the tools.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import executable
from test_mcp_server import Memory
from test_workspace_index import a_week_of_work, memory, workspace_of  # noqa: F401 - `memory` is a fixture

from codeoid.fork.canonical import session_turns
from codeoid.fork.turns import ToolCall, Turn
from codeoid.memory import workspace_index
from codeoid.store import db as store_db

CODEX_SESSION = "01a23214-d4a7-7052-9fd8-ec4cf3a271b5"
CODEX_TURN = "01a23214-d4d1-7c82-9487-2ffcde80f649"
GEMINI_SESSION = "f4e222a6-4760-4036-94bc-ce55f214fb2a"


def hook(agent: str, event: str, payload: dict[str, Any], cwd: Path) -> bytes:
    done = subprocess.run([executable("codeoid-hook"), f"--agent={agent}", event], input=json.dumps(payload).encode(),
                          capture_output=True, timeout=60, cwd=cwd)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    return done.stdout


def codex(event: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": CODEX_SESSION, "turn_id": CODEX_TURN, "transcript_path": None, "cwd": str(cwd),
            "hook_event_name": event, "model": "gpt-5-codex", "permission_mode": "bypassPermissions", **fields}


def gemini(event: str, cwd: Path, stamp: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": GEMINI_SESSION, "transcript_path": "", "cwd": str(cwd), "hook_event_name": event,
            "timestamp": stamp, **fields}


def episodes() -> list[dict[str, Any]]:
    connection = store_db.connect()
    try:
        cursor = connection.execute("SELECT * FROM episodes ORDER BY id")
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        connection.close()


def test_a_replayed_codex_turn_is_stored_once_under_codexs_ids(codeoid_home: Path, project: Path) -> None:
    turn = [
        ("SessionStart", codex("SessionStart", project, source="startup")),
        ("UserPromptSubmit", codex("UserPromptSubmit", project, prompt="list the files")),
        ("PostToolUse", codex("PostToolUse", project, tool_name="Bash", tool_input={"command": "ls"},
                              tool_response="notes.txt\n", tool_use_id="call_a")),
        ("Stop", codex("Stop", project, last_assistant_message="One file: notes.txt.", stop_hook_active=False)),
        ("SessionEnd", {"session_id": CODEX_SESSION, "cwd": str(project), "hook_event_name": "SessionEnd",
                        "reason": "other", "transcript_path": None}),
    ]
    for _ in range(2):  # the second pass is a replay of every event
        for event, payload in turn:
            assert hook("codex", event, payload, project) in (b"", None)

    stored = [(row["kind"], row["agent"], row["turn"], row["text"]) for row in episodes()]
    assert stored == [("user", "codex", 1, "list the files"), ("tool", "codex", 1, "notes.txt\n"),
                      ("assistant", "codex", 1, "One file: notes.txt.")]
    assert episodes()[1]["tool_use_id"] == "call_a" and episodes()[0]["prompt_id"] == f"codex:{CODEX_TURN}"
    # A fork of this session, onto any CLI, starts from the live-captured turn.
    connection = store_db.connect()
    try:
        turns = session_turns(connection, episodes()[0]["session_id"])
    finally:
        connection.close()
    assert turns == [Turn(1, "list the files", (ToolCall("call_a", "Bash", {"command": "ls"}, "notes.txt\n"),
                                                 "One file: notes.txt."))]


def test_gemini_tool_calls_are_keyed_on_the_events_timestamp_and_input(codeoid_home: Path, project: Path) -> None:
    call = {"tool_name": "run_shell_command", "tool_input": {"command": "echo hi"},
            "tool_response": {"llmContent": "Output: hi", "returnDisplay": "hi"}}
    hook("gemini", "BeforeAgent", gemini("BeforeAgent", project, "2026-12-01T14:51:07.645Z", prompt="say hi"), project)
    for stamp in ("2026-12-01T14:51:08.000Z", "2026-12-01T14:51:08.000Z", "2026-12-01T14:51:09.000Z"):
        hook("gemini", "AfterTool", gemini("AfterTool", project, stamp, **call), project)
    failed = {"tool_name": "read_file", "tool_input": {"file_path": "/nope"},
              "tool_response": {"llmContent": "", "error": {"message": "File not found: /nope"}}}
    hook("gemini", "AfterTool", gemini("AfterTool", project, "2026-12-01T14:51:10.000Z", **failed), project)
    assert hook("gemini", "BeforeModel", gemini("BeforeModel", project, "2026-12-01T14:51:11.000Z"), project) == b""

    tools = [row for row in episodes() if row["kind"] == "tool"]
    assert [(row["text"], row["is_error"], row["agent"]) for row in tools] == [
        ("Output: hi", 0, "gemini"), ("Output: hi", 0, "gemini"), ("File not found: /nope", 1, "gemini")]


def test_codex_shell_calls_are_compressed_only_where_codex_asks_nothing(codeoid_home: Path, project: Path) -> None:
    rules = project / ".codeoid" / "rules"
    rules.mkdir(parents=True)
    (rules / "seq.toml").write_text('[[rule]]\nname = "seq"\nmatch = { program = ["seq"] }\nhead = 5\ntail = 3\n')
    call = {"tool_name": "Bash", "tool_input": {"command": "seq 1 3000"}, "tool_use_id": "call_seq"}

    asked = hook("codex", "PreToolUse", codex("PreToolUse", project, **{**call, "permission_mode": "default"}),
                 project)
    unasked = json.loads(hook("codex", "PreToolUse", codex("PreToolUse", project, **call), project))

    assert asked == b"", "a rewrite answers allow, which would skip the approval Codex was going to ask for"
    decision = unasked["hookSpecificOutput"]
    assert decision["permissionDecision"] == "allow" and "codeoid-compress" in decision["updatedInput"]["command"]
    assert decision["updatedInput"]["command"] != "seq 1 3000"


def test_session_start_gives_each_cli_the_memory_index_under_its_tool_names(memory: Memory) -> None:  # noqa: F811
    a_week_of_work(memory)
    workspace_index.build(memory.db, workspace_of(memory), vectors=None)

    answers = {agent: json.loads(hook(agent, "SessionStart", {"session_id": f"{agent}-1", "cwd": str(memory.project),
                                                               "source": "startup", "timestamp": "t"}, memory.project))
               for agent in ("codex", "gemini")}

    for agent, prefix in (("codex", "mcp__codeoid.recall(query)"), ("gemini", "mcp_codeoid_recall(query)")):
        context = answers[agent]["hookSpecificOutput"]
        assert context["hookEventName"] == "SessionStart" and "src/store/db.py (5)" in context["additionalContext"]
        assert prefix in context["additionalContext"], agent
