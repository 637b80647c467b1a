"""Every event of a session becomes the right episodes, through the real hook executable."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import run_hook

from codeoid.store import db, queries, rotations


class Session:
    """A fake Claude Code session: fires hooks for one backing session and writes its transcript."""

    def __init__(self, project: Path, session_id: str = "cc-1", pid: str = "4242") -> None:
        self.project = project
        self.session_id = session_id
        self.transcript = project / f"{session_id}.jsonl"
        self.transcript.touch()
        self.env = {"CLAUDE_PID": pid, "CLAUDE_PROJECT_DIR": str(project)}

    def fire(self, event: str, **fields: Any) -> None:
        payload = {"session_id": self.session_id, "transcript_path": str(self.transcript), "cwd": str(self.project),
                   "hook_event_name": event, **fields}
        result = run_hook(event, payload, env=self.env, cwd=self.project)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")

    def write(self, *records: dict[str, Any]) -> None:
        with self.transcript.open("a") as file:
            for record in records:
                file.write(json.dumps(record) + "\n")


def assistant_line(message_id: str, *blocks: dict[str, Any], uuid: str = "", parent: str | None = None,
                   sidechain: bool = False) -> dict[str, Any]:
    """A transcript line as 2.1.332 writes it, stamped now (Claude Code writes lines as blocks arrive)."""
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"type": "assistant", "uuid": uuid or f"u-{message_id}-{len(blocks)}", "parentUuid": parent,
            "timestamp": stamp,
            "isSidechain": sidechain, "message": {"id": message_id, "role": "assistant", "model": "claude-sonnet-4-5",
                                                  "content": list(blocks)}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def episodes(kind: str | None = None) -> list[dict[str, Any]]:
    connection = db.connect()
    try:
        rows = queries.timeline(connection, limit=10_000, include_retracted=True)
    finally:
        connection.close()
    return [row for row in rows if kind is None or row["kind"] == kind]


def test_a_turn_with_tools_becomes_one_episode_per_prompt_call_and_message(codeoid_home: Path, project: Path) -> None:
    session = Session(project)
    session.fire("SessionStart", source="startup")
    session.fire("UserPromptSubmit", prompt="list the files", prompt_id="p1")
    session.write(assistant_line("msg_1", text("Listing."), uuid="a1"),
                  assistant_line("msg_1", {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}},
                                 uuid="a2", parent="a1"))
    session.fire("PostToolUse", tool_name="Bash", tool_use_id="toolu_1", tool_input={"command": "ls"},
                 tool_response={"stdout": "a.txt\nb.txt", "stderr": "", "interrupted": False})
    session.fire("PostToolUseFailure", tool_name="Bash", tool_use_id="toolu_2",
                 tool_input={"command": "cat missing"}, error="Exit code 1\ncat: missing: No such file")
    session.fire("Stop", last_assistant_message="Two files: a.txt and b.txt.", stop_hook_active=False)

    kinds = [(row["kind"], row["text"]) for row in episodes()]
    assert kinds == [
        ("user", "list the files"),
        ("assistant", "Listing."),
        ("tool", "a.txt\nb.txt"),
        ("tool", "Exit code 1\ncat: missing: No such file"),
        ("assistant", "Two files: a.txt and b.txt."),
    ]
    failed = episodes("tool")[1]
    assert (failed["exit_status"], failed["is_error"], failed["original_command"]) == (1, 1, "cat missing")
    assert {row["turn"] for row in episodes()} == {1}


def test_the_last_message_waits_for_the_lagging_transcript_and_is_never_doubled(
    codeoid_home: Path, project: Path
) -> None:
    session = Session(project)
    session.fire("UserPromptSubmit", prompt="hi", prompt_id="p1")
    session.fire("Stop", last_assistant_message="Hello!")  # the transcript has nothing yet
    assert [row["message_id"] for row in episodes("assistant")] == ["pending:cc-1:1"]
    session.write(assistant_line("msg_9", text("Hello!")))
    session.fire("SessionEnd", reason="other")
    session.fire("Stop", last_assistant_message="Hello!")  # a retried hook
    assert [(row["message_id"], row["text"]) for row in episodes("assistant")] == [("msg_9", "Hello!")]


def test_a_prompt_typed_while_the_turn_runs_is_kept_in_that_turn(codeoid_home: Path, project: Path) -> None:
    session = Session(project)
    session.fire("UserPromptSubmit", prompt="run the slow tests", prompt_id="p1")
    # Claude Code hands a prompt typed mid-turn to the model inside the running turn, under that turn's prompt_id.
    session.fire("UserPromptSubmit", prompt="and skip the network ones", prompt_id="p1")
    session.fire("UserPromptSubmit", prompt="and skip the network ones", prompt_id="p1")  # a retried hook
    session.fire("UserPromptSubmit", prompt="run the slow tests", prompt_id="p1")  # a retried hook
    session.fire("UserPromptSubmit", prompt="now the fast ones", prompt_id="p2")

    users = [(row["turn"], row["text"]) for row in episodes("user")]
    assert users == [(1, "run the slow tests"), (1, "and skip the network ones"), (2, "now the fast ones")]


def test_a_background_agents_notification_is_stored_but_is_not_the_users_turn(
    codeoid_home: Path, project: Path
) -> None:
    session = Session(project)
    session.fire("UserPromptSubmit", prompt="survey the parser", prompt_id="p1")
    notification = "<task-notification>\n<task-id>a91d</task-id>\n<result>3 parsers</result>\n</task-notification>"
    session.fire("UserPromptSubmit", prompt=notification, prompt_id="p2")

    stored = [(row["turn"], row["origin"], row["text"]) for row in episodes("user")]
    assert stored == [(1, "user", "survey the parser"), (2, "task-notification", notification)]
    connection = db.connect()
    try:
        last = rotations.last_user_turn(connection, episodes()[0]["session_id"])
        assert last is not None and last.text == "survey the parser"
    finally:
        connection.close()


def test_text_blocks_of_one_message_make_one_episode(codeoid_home: Path, project: Path) -> None:
    session = Session(project)
    session.fire("UserPromptSubmit", prompt="explain", prompt_id="p1")
    session.write(assistant_line("msg_2", text("First part."), uuid="b1"))
    session.fire("PreCompact", trigger="manual", custom_instructions=None)
    session.write(assistant_line("msg_2", text("Second part."), uuid="b2"))
    session.fire("Stop", last_assistant_message="Second part.")
    assert [row["text"] for row in episodes("assistant")] == ["First part.\n\nSecond part."]


def test_subagent_turns_are_stored_and_marked(codeoid_home: Path, project: Path) -> None:
    session = Session(project)
    session.fire("UserPromptSubmit", prompt="research it", prompt_id="p1")
    session.fire("PostToolUse", tool_name="Grep", tool_use_id="toolu_sub", agent_id="agent-7",
                 tool_input={"pattern": "TODO", "path": str(project)},
                 tool_response={"mode": "files_with_matches", "filenames": ["x.py"], "numFiles": 1})
    agent_transcript = project / "agent-7.jsonl"
    agent_transcript.write_text(json.dumps(assistant_line("msg_sub", text("Found one TODO in x.py."),
                                                          sidechain=True)) + "\n")
    session.fire("SubagentStop", agent_id="agent-7", agent_type="Explore",
                 agent_transcript_path=str(agent_transcript), last_assistant_message="Found one TODO in x.py.")
    tool, = episodes("tool")
    assert (tool["agent_id"], tool["text"]) == ("agent-7", "x.py")
    message, = episodes("assistant")
    assert (message["agent_id"], message["message_id"], message["text"]) == ("agent-7", "msg_sub",
                                                                             "Found one TODO in x.py.")


def test_compaction_archives_what_left_the_window_and_keeps_the_preserved_segment(
    codeoid_home: Path, project: Path
) -> None:
    session = Session(project)
    session.fire("UserPromptSubmit", prompt="old question", prompt_id="p-old")
    session.fire("PostToolUse", tool_name="Read", tool_use_id="toolu_old", tool_input={"file_path": "/x"},
                 tool_response={"type": "text", "file": {"filePath": "/x", "content": "old"}})
    session.fire("UserPromptSubmit", prompt="recent question", prompt_id="p-new")
    session.fire("PostToolUse", tool_name="Read", tool_use_id="toolu_new", tool_input={"file_path": "/y"},
                 tool_response={"type": "text", "file": {"filePath": "/y", "content": "new"}})
    session.write(
        {"type": "user", "uuid": "h1", "parentUuid": "o9", "promptId": "p-new",
         "message": {"role": "user", "content": "recent question"}},
        assistant_line("msg_new", {"type": "tool_use", "id": "toolu_new", "name": "Read", "input": {}},
                       uuid="h2", parent="h1"),
        {"type": "user", "uuid": "h3", "parentUuid": "h2",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_new"}]}},
        {"type": "system", "subtype": "compact_boundary", "parentUuid": None, "uuid": "cb",
         "compactMetadata": {"trigger": "manual", "preservedSegment": {"headUuid": "h1", "anchorUuid": "cb",
                                                                       "tailUuid": "h3"}}},
    )
    session.fire("PreCompact", trigger="manual")
    session.fire("SessionStart", source="compact")
    states = {row["text"]: row["state"] for row in episodes()}
    assert states == {"old question": "archived", "old": "archived", "recent question": "live", "new": "live"}


def test_clear_archives_the_old_window_and_starts_a_new_session(codeoid_home: Path, project: Path) -> None:
    first = Session(project, "cc-1")
    first.fire("SessionStart", source="startup")
    first.fire("UserPromptSubmit", prompt="before clear", prompt_id="p1")
    second = Session(project, "cc-2")
    second.fire("SessionStart", source="clear")
    second.fire("UserPromptSubmit", prompt="after clear", prompt_id="p2")
    rows = {row["text"]: row for row in episodes()}
    assert rows["before clear"]["state"] == "archived" and rows["after clear"]["state"] == "live"
    assert rows["before clear"]["session_id"] != rows["after clear"]["session_id"]


def test_the_supervisor_session_id_survives_new_backing_sessions(codeoid_home: Path, project: Path) -> None:
    for backing in ("cc-a", "cc-b"):
        session = Session(project, backing)
        session.env["CODEOID_SESSION_ID"] = "durable-1"
        session.fire("SessionStart", source="startup")
        session.fire("UserPromptSubmit", prompt=f"prompt in {backing}", prompt_id=f"p-{backing}")
    assert {row["session_id"] for row in episodes()} == {"durable-1"}
    assert [row["turn"] for row in episodes()] == [1, 2]


@pytest.mark.parametrize("response, expected", [
    ([{"type": "text", "text": "MCP-RESULT"}], "MCP-RESULT"),
    ('[{"type": "text", "text": "as a JSON string"}]', "as a JSON string"),
])
def test_mcp_results_are_stored_as_their_text(codeoid_home: Path, project: Path, response: Any, expected: str) -> None:
    session = Session(project)
    session.fire("PostToolUse", tool_name="mcp__other__lookup", tool_use_id="toolu_mcp", tool_input={"q": "x"},
                 tool_response=response)
    tool, = episodes("tool")
    assert tool["text"] == expected
    assert queries.tool_response(tool) == response


def test_codeoid_own_tools_and_system_prompts_are_marked(codeoid_home: Path, project: Path) -> None:
    session = Session(project)
    session.fire("UserPromptSubmit", prompt="wake up", prompt_id="p-sys", source="loop_wakeup")
    session.fire("PostToolUse", tool_name="mcp__codeoid__recall", tool_use_id="toolu_r", tool_input={"query": "x"},
                 tool_response=[{"type": "text", "text": "copy of an old episode"}])
    assert [row["origin"] for row in episodes()] == ["loop_wakeup", "codeoid"]


def test_edit_and_read_results_keep_the_fields_claude_code_reported(codeoid_home: Path, project: Path) -> None:
    session = Session(project)
    edit_response = {"filePath": "/p/a.py", "oldString": "abc", "newString": "xyz", "originalFile": "abc\n",
                     "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                          "lines": ["-abc", "+xyz"]}], "userModified": False, "replaceAll": False}
    session.fire("PostToolUse", tool_name="Edit", tool_use_id="toolu_e",
                 tool_input={"file_path": "/p/a.py", "old_string": "abc", "new_string": "xyz", "replace_all": False},
                 tool_response=edit_response)
    tool, = episodes("tool")
    assert queries.tool_response(tool) == edit_response
    assert tool["text"] == "@@ -1,1 +1,1 @@\n-abc\n+xyz"
    assert json.loads(tool["paths"]) == ["/p/a.py"]


def test_a_large_result_is_kept_whole_in_text_and_response(codeoid_home: Path, project: Path) -> None:
    content = "".join(f"line {i}\n" for i in range(200_000))
    response = {"type": "text", "file": {"filePath": "/p/big.log", "content": content, "numLines": 200_000,
                                         "startLine": 1, "totalLines": 200_000}}
    Session(project).fire("PostToolUse", tool_name="Read", tool_use_id="toolu_big",
                          tool_input={"file_path": "/p/big.log"}, tool_response=response)
    tool, = episodes("tool")
    assert tool["text"] == content
    assert queries.tool_response(tool) == response
    assert len(tool["response"]) < 1000  # the text is stored once, in `text`


def test_events_spots_the_wrapper_by_the_prefix_the_wrapper_uses() -> None:
    from codeoid.capture import events
    from codeoid.compressors import bash_wrapper

    assert events.WRAPPER_NAME_PREFIX == bash_wrapper.NAME_PREFIX
