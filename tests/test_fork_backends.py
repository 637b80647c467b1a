"""The Codex and Gemini fork translators' output, read back the way each CLI reads it (no CLI needed here; the
e2e tests run the real ones)."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from codeoid.fork import codex, gemini
from codeoid.fork.launch import McpServer, mcp_tool
from codeoid.fork.turns import ToolCall, Turn, UserMessage
from codeoid.setup.json_config import BACKUP_MARK, InstallError

NOW = datetime(2026, 11, 30, 9, 8, 7, 654000, tzinfo=UTC)
MCP = McpServer("/opt/codeoid venv/bin/codeoid-mcp", env={"CODEOID_HOME": '/data/"codeoid" ünï'})
TURNS = [
    Turn(1, "first prompt", ("thinking aloud", ToolCall("toolu_1", "Bash", {"command": "ls"}, "a\nb"), "done")),
    Turn(2, "second prompt", (
        ToolCall("toolu_2", "Read", {"file_path": "/nope"}, "File does not exist.", is_error=True),
        ToolCall("toolu_3", "Bash", {"command": "pwd"}, "/p"),
        "after both",
    )),
]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("name", "expected"), [
    ("mcp__codeoid__recall", ("codeoid", "recall")),
    ("mcp__plugin_tools_srv__get_page", ("plugin_tools_srv", "get_page")),
    ("Bash", None),
    ("mcp__codeoid", None),
    ("mcp_codeoid_recall", None),
])
def test_mcp_tool_splits_claude_code_mcp_names_only(name: str, expected: tuple[str, str] | None) -> None:
    assert mcp_tool(name) == expected


# A turn in which the user typed twice while it ran: during the call (read with its result) and after the answer.
MID_TURN = Turn(1, "run the slow tests", (
    "Running them.", ToolCall("toolu_1", "Bash", {"command": "make slow"}, "12 passed"),
    UserMessage("and skip the network ones"), "Skipped them.", UserMessage("p.s. thanks"),
))
RECALL_TURN = Turn(1, "what did we decide", (ToolCall("toolu_9", "mcp__codeoid__recall", {"query": "db"}, "SQLite"),))


# -- Codex -------------------------------------------------------------------------------------------------------


def test_codex_rollout_is_filed_where_codex_looks_up_a_session_by_id(tmp_path: Path) -> None:
    launch = codex.prepare(TURNS, cwd=tmp_path / "proj", mcp=MCP, home=tmp_path, session_id="sid-1", now=NOW)

    assert launch.files == (tmp_path / "sessions/2026/11/30/rollout-2026-11-30T09-08-07-sid-1.jsonl",)
    meta = read_jsonl(launch.files[0])[0]
    assert meta["type"] == "session_meta"
    assert meta["payload"] == {
        "id": "sid-1", "timestamp": "2026-11-30T09:08:07.654Z", "cwd": str(tmp_path / "proj"),
        "originator": codex.ORIGINATOR, "cli_version": codex.ROLLOUT_FORMAT_VERSION, "source": "cli",
    }
    assert launch.env == {"CODEX_HOME": str(tmp_path)}
    assert launch.session_id == "sid-1"


def test_codex_history_keeps_each_call_beside_its_result_and_marks_failures(tmp_path: Path) -> None:
    launch = codex.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path, now=NOW)

    items = [r["payload"] for r in read_jsonl(launch.files[0]) if r["type"] == "response_item"]
    assert [(i["type"], i.get("role") or i.get("call_id")) for i in items] == [
        ("message", "user"), ("message", "assistant"), ("function_call", "toolu_1"),
        ("function_call_output", "toolu_1"), ("message", "assistant"),
        ("message", "user"), ("function_call", "toolu_2"), ("function_call_output", "toolu_2"),
        ("function_call", "toolu_3"), ("function_call_output", "toolu_3"), ("message", "assistant"),
    ]
    assert json.loads(items[2]["arguments"]) == {"command": "ls"}
    assert items[7]["output"] == "Tool call failed:\nFile does not exist."
    assert items[9]["output"] == "/p"


def test_codex_rollout_shows_each_message_in_the_tui_right_after_the_item_the_model_reads(tmp_path: Path) -> None:
    launch = codex.prepare(TURNS[:1], cwd=tmp_path, mcp=MCP, home=tmp_path, now=NOW)

    records = read_jsonl(launch.files[0])[1:]
    assert [(r["type"], r["payload"]["type"]) for r in records] == [
        ("response_item", "message"), ("event_msg", "user_message"),
        ("response_item", "message"), ("event_msg", "agent_message"),
        ("response_item", "function_call"), ("response_item", "function_call_output"),
        ("response_item", "message"), ("event_msg", "agent_message"),
    ]
    assert [r["payload"]["message"] for r in records if r["type"] == "event_msg"] == [
        "first prompt", "thinking aloud", "done"]


def test_codex_gets_words_typed_mid_turn_as_user_messages_in_place_and_shows_them(tmp_path: Path) -> None:
    launch = codex.prepare([MID_TURN], cwd=tmp_path, mcp=MCP, home=tmp_path, now=NOW)

    records = read_jsonl(launch.files[0])[1:]
    items = [r["payload"] for r in records if r["type"] == "response_item"]
    assert [(i["type"], i.get("role"), i["content"][0]["text"] if "content" in i else i["call_id"]) for i in items] == [
        ("message", "user", "run the slow tests"), ("message", "assistant", "Running them."),
        ("function_call", None, "toolu_1"), ("function_call_output", None, "toolu_1"),
        ("message", "user", "and skip the network ones"), ("message", "assistant", "Skipped them."),
        ("message", "user", "p.s. thanks"),
    ]
    assert items[4]["content"] == [{"type": "input_text", "text": "and skip the network ones"}]
    shown = [(r["payload"]["type"], r["payload"]["message"]) for r in records if r["type"] == "event_msg"]
    assert shown == [("user_message", "run the slow tests"), ("agent_message", "Running them."),
                     ("user_message", "and skip the network ones"), ("agent_message", "Skipped them."),
                     ("user_message", "p.s. thanks")]


def test_codex_names_an_mcp_call_by_namespace_and_tool_as_codex_calls_it(tmp_path: Path) -> None:
    launch = codex.prepare([RECALL_TURN], cwd=tmp_path, mcp=MCP, home=tmp_path, now=NOW)

    (call,) = [r["payload"] for r in read_jsonl(launch.files[0]) if r["payload"].get("type") == "function_call"]
    assert (call["namespace"], call["name"], call["call_id"]) == ("mcp__codeoid", "recall", "toolu_9")


def test_codex_never_overwrites_an_existing_session(tmp_path: Path) -> None:
    codex.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path, session_id="same", now=NOW)

    with pytest.raises(FileExistsError):
        codex.prepare(TURNS[:1], cwd=tmp_path, mcp=MCP, home=tmp_path, session_id="same", now=NOW)


def test_codex_argv_resumes_interactively_or_answers_one_prompt(tmp_path: Path) -> None:
    interactive = codex.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path, session_id="s1", binary="/x/codex")
    headless = codex.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path, session_id="s2", prompt="go on")

    assert interactive.argv[:2] == ["/x/codex", "resume"] and interactive.argv[-1] == "s1"
    assert headless.argv[:4] == ["codex", "exec", "--skip-git-repo-check", "resume"]
    assert headless.argv[-3:] == ["--", "s2", "go on"]


def test_codex_mcp_overrides_parse_as_toml_to_the_exact_server(tmp_path: Path) -> None:
    """Codex parses each `-c key=value` value as TOML; quotes, spaces and non-ASCII must survive it."""
    options = codex.mcp_overrides(MCP, tmp_path / "my proj")

    assert options[::2] == ["-c"] * (len(options) // 2)
    parsed: dict[str, object] = {}
    for option in options[1::2]:
        key, _, value = option.partition("=")
        parsed[key] = tomllib.loads(f"v = {value}")["v"]
    assert parsed == {
        "mcp_servers.codeoid.command": "/opt/codeoid venv/bin/codeoid-mcp",
        "mcp_servers.codeoid.args": [],
        "mcp_servers.codeoid.env": {"CLAUDE_PROJECT_DIR": str(tmp_path / "my proj"),
                                    "CODEOID_HOME": '/data/"codeoid" ünï'},
        "mcp_servers.codeoid.required": True,
    }


# -- Gemini ------------------------------------------------------------------------------------------------------


def test_gemini_records_group_calls_with_the_text_before_them_and_keep_later_text_after(tmp_path: Path) -> None:
    launch = gemini.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path, now=NOW)

    metadata, *records = read_jsonl(launch.files[0])
    assert metadata["projectHash"] and metadata["sessionId"]
    shape = [(r["type"], [p["text"] for p in r["content"]], [c["id"] for c in r.get("toolCalls", [])])
             for r in records]
    assert shape == [
        ("user", ["first prompt"], []),
        ("gemini", ["thinking aloud"], ["toolu_1"]),
        ("gemini", ["done"], []),
        ("user", ["second prompt"], []),
        ("gemini", [], ["toolu_2", "toolu_3"]),
        ("gemini", ["after both"], []),
    ]
    assert len({r["id"] for r in records}) == len(records)


def test_gemini_failed_call_answers_with_an_error_response_and_success_with_output(tmp_path: Path) -> None:
    launch = gemini.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path, now=NOW)

    calls = {c["id"]: c for r in read_jsonl(launch.files[0])[1:] for c in r.get("toolCalls", [])}
    assert calls["toolu_1"]["result"] == "a\nb" and calls["toolu_1"]["status"] == "success"
    assert calls["toolu_2"]["status"] == "error"
    assert calls["toolu_2"]["result"] == [{"functionResponse": {
        "id": "toolu_2", "name": "Read", "response": {"error": "File does not exist."}}}]
    assert calls["toolu_3"]["args"] == {"command": "pwd"}


def gemini_contents(records: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    """The contents Gemini CLI 0.61.0 sends for imported records (docs/backends/gemini.md section 4): a `user`
    record is a user content; a `gemini` record a model content (text, then a call per tool call), then a user
    content of the calls' responses; consecutive contents of one role joined into one before each request."""
    contents: list[tuple[str, list[Any]]] = []
    for record in records:
        calls = record.get("toolCalls", [])
        if record["type"] == "user":
            contents.append(("user", [p["text"] for p in record["content"]]))
            continue
        contents.append(("model", [p["text"] for p in record["content"]] + [f"call {c['id']}" for c in calls]))
        if calls:
            contents.append(("user", [f"response {c['id']}" for c in calls]))
    joined: list[tuple[str, list[Any]]] = []
    for role, parts in contents:
        if joined and joined[-1][0] == role:
            joined[-1] = (role, joined[-1][1] + parts)
        else:
            joined.append((role, parts))
    return joined


def test_gemini_sends_words_typed_mid_turn_after_the_results_they_came_with(tmp_path: Path) -> None:
    launch = gemini.prepare([MID_TURN], cwd=tmp_path, mcp=MCP, home=tmp_path, now=NOW)

    records = read_jsonl(launch.files[0])[1:]
    assert [(r["type"], [p["text"] for p in r["content"]]) for r in records] == [
        ("user", ["run the slow tests"]), ("gemini", ["Running them."]), ("user", ["and skip the network ones"]),
        ("gemini", ["Skipped them."]), ("user", ["p.s. thanks"]),
    ]
    assert len({r["id"] for r in records}) == len(records)
    assert gemini_contents(records) == [
        ("user", ["run the slow tests"]),
        ("model", ["Running them.", "call toolu_1"]),
        ("user", ["response toolu_1", "and skip the network ones"]),
        ("model", ["Skipped them."]),
        ("user", ["p.s. thanks"]),
    ]


def test_gemini_names_an_mcp_call_as_gemini_names_the_tool(tmp_path: Path) -> None:
    launch = gemini.prepare([RECALL_TURN], cwd=tmp_path, mcp=MCP, home=tmp_path, now=NOW)

    (call,) = [c for r in read_jsonl(launch.files[0])[1:] for c in r.get("toolCalls", [])]
    assert (call["name"], call["id"], call["result"]) == ("mcp_codeoid_recall", "toolu_9", "SQLite")


def test_gemini_argv_imports_the_conversation_file(tmp_path: Path) -> None:
    interactive = gemini.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path, binary="/x/gemini")
    headless = gemini.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path, prompt="go on")

    assert interactive.argv == ["/x/gemini", "--session-file", str(interactive.files[0])]
    assert headless.argv == ["gemini", "--session-file", str(headless.files[0]), "--prompt=go on"]
    assert headless.env == {"GEMINI_CLI_HOME": str(tmp_path)} and headless.session_id is None


def test_gemini_registers_codeoid_beside_the_users_servers_once_with_a_backup(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    user = {"theme": "Dracula", "mcpServers": {"github": {"command": "gh-mcp"}}}
    settings.write_text(json.dumps(user))

    first = gemini.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path)
    second = gemini.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path)

    assert first.edited == (settings,) and second.edited == ()
    assert settings not in first.files, "the user's settings are not the fork's to remove"
    written = json.loads(settings.read_text())
    assert written["theme"] == "Dracula"
    assert written["mcpServers"] == {
        "github": {"command": "gh-mcp"},
        "codeoid": {"command": MCP.command, "args": [], "env": dict(MCP.env), "trust": True},
    }
    backups = list(settings.parent.glob(f"settings.json{BACKUP_MARK}*"))
    assert [json.loads(b.read_text()) for b in backups] == [user]


def test_gemini_refuses_to_replace_someone_elses_codeoid_server(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"mcpServers": {"codeoid": {"command": "/usr/bin/other-tool"}}}))

    with pytest.raises(InstallError, match="does not run codeoid-mcp"):
        gemini.prepare(TURNS, cwd=tmp_path, mcp=MCP, home=tmp_path)
    assert json.loads(settings.read_text())["mcpServers"]["codeoid"]["command"] == "/usr/bin/other-tool"
    assert not (tmp_path / ".gemini" / gemini.FORKS_DIR).exists()


def test_gemini_creates_its_settings_file_when_there_is_none(tmp_path: Path) -> None:
    launch = gemini.prepare(TURNS, cwd=tmp_path, mcp=McpServer("/v/bin/codeoid-mcp"), home=tmp_path / "fresh")

    settings = tmp_path / "fresh" / ".gemini" / "settings.json"
    assert launch.edited == (settings,)
    assert json.loads(settings.read_text()) == {
        "mcpServers": {"codeoid": {"command": "/v/bin/codeoid-mcp", "args": [], "env": {}, "trust": True}}
    }
