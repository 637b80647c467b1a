"""`codeoid fork`: canonical turns from a store filled through the real hooks, the Claude Code translator, the
window, lineage, and the errors that must leave nothing behind."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import executable
from test_capture import Session, assistant_line, text
from test_mcp_server import Memory, serve

from codeoid.cli import cli
from codeoid.compressors import bash_wrapper
from codeoid.fork import claude
from codeoid.fork.canonical import session_turns
from codeoid.fork.fork import ForkRequest, create_fork
from codeoid.fork.seed import Lineage, WindowTooSmall, first_message, newest_that_fit, notice
from codeoid.fork.turns import ToolCall, Turn, UserMessage
from codeoid.rotation.seed import split_seeded
from codeoid.store import db, queries

SEED = "<rotation_context>\nThis session continues in a fresh context window.\n</rotation_context>"


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME for Claude Code's files, and a claude binary to find (create_fork never runs it)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CODEOID_CLAUDE_BIN", str(fake))
    return home


def two_window_session(project: Path) -> None:
    """Turn 1 in a first window (a compressed Bash call, a failure, a subagent's call, a recall); a rotation;
    turn 2 in the second window, opened by a seed."""
    first = Session(project, "cc-1")
    first.env["CODEOID_SESSION_ID"] = "durable-1"
    first.fire("SessionStart", source="startup")
    first.fire("UserPromptSubmit", prompt="count the words", prompt_id="p1")
    first.write(assistant_line("msg_1", text("Counting."), uuid="a1"))
    wrapped = bash_wrapper.wrap("wc -w notes.txt", tool_use_id="toolu_wc", compressor=executable("codeoid-compress"),
                                project_dir=str(project))
    first.fire("PostToolUse", tool_name="Bash", tool_use_id="toolu_wc", tool_input={"command": wrapped},
               tool_response={"stdout": "42 notes.txt", "stderr": "", "interrupted": False})
    first.fire("PostToolUseFailure", tool_name="Bash", tool_use_id="toolu_bad", tool_input={"command": "cat nope"},
               error="Exit code 1\ncat: nope: No such file")
    first.fire("PostToolUse", tool_name="Grep", tool_use_id="toolu_sub", agent_id="agent-7",
               tool_input={"pattern": "x"}, tool_response={"filenames": ["x.py"]})
    first.fire("PostToolUse", tool_name="mcp__codeoid__recall", tool_use_id="toolu_recall",
               tool_input={"query": "words"}, tool_response=[{"type": "text", "text": "=== episode 1"}])
    first.fire("Stop", last_assistant_message="42 words.", stop_hook_active=False)
    second = Session(project, "cc-2")
    second.env["CODEOID_SESSION_ID"] = "durable-1"
    second.fire("SessionStart", source="startup")
    second.fire("UserPromptSubmit", prompt=f"{SEED}\n\nnow the lines", prompt_id="p2")
    second.fire("Stop", last_assistant_message="Seven lines.", stop_hook_active=False)


def test_canonical_turns_are_what_the_main_conversation_saw_across_windows(codeoid_home: Path, project: Path) -> None:
    two_window_session(project)
    connection = db.connect()
    try:
        turns = session_turns(connection, "durable-1")
        first_only = session_turns(connection, "durable-1", upto_turn=1)
    finally:
        connection.close()

    assert turns == [
        Turn(1, "count the words", (
            "Counting.",
            ToolCall("toolu_wc", "Bash", {"command": "wc -w notes.txt"}, "42 notes.txt"),
            ToolCall("toolu_bad", "Bash", {"command": "cat nope"}, "Exit code 1\ncat: nope: No such file", True),
            ToolCall("toolu_recall", "mcp__codeoid__recall", {"query": "words"}, "=== episode 1"),
            "42 words.",
        )),
        Turn(2, "now the lines", ("Seven lines.",)),
    ]
    assert first_only == turns[:1]


def test_a_retracted_prompt_takes_its_turn_out_of_the_fork(codeoid_home: Path, project: Path) -> None:
    two_window_session(project)
    connection = db.connect()
    try:
        connection.execute("UPDATE episodes SET state = 'retracted' WHERE kind = 'user' AND prompt_id = 'p1'")
        turns = session_turns(connection, "durable-1")
    finally:
        connection.close()
    assert [turn.number for turn in turns] == [2]


def test_a_prompt_typed_mid_turn_is_a_step_where_the_model_read_it(codeoid_home: Path, project: Path) -> None:
    """Claude Code fires UserPromptSubmit when the prompt is typed, under the running turn's prompt_id, and hands
    the text to the model with the next tool result: the step comes after the call that was running."""
    session = Session(project)
    session.fire("SessionStart", source="startup")
    session.fire("UserPromptSubmit", prompt="run the slow tests", prompt_id="p1")
    session.write(assistant_line("msg_1", text("Running them."), uuid="a1"))
    session.fire("UserPromptSubmit", prompt="and skip the network ones", prompt_id="p1")  # while the call runs
    session.fire("PostToolUse", tool_name="Bash", tool_use_id="toolu_slow", tool_input={"command": "make slow"},
                 tool_response={"stdout": "12 passed", "stderr": "", "interrupted": False})
    session.write(assistant_line("msg_2", text("Skipped them."), uuid="a2", parent="a1"))
    session.fire("UserPromptSubmit", prompt="p.s. thanks", prompt_id="p1")  # no call left to carry it
    session.fire("Stop", last_assistant_message="Skipped them.", stop_hook_active=False)
    session.fire("UserPromptSubmit", prompt="now the fast ones", prompt_id="p2")

    connection = db.connect()
    try:
        session_id = connection.execute("SELECT session_id FROM episodes LIMIT 1").fetchone()[0]
        turns = session_turns(connection, session_id)
        connection.execute("UPDATE episodes SET state = 'retracted' WHERE text = 'and skip the network ones'")
        retracted = session_turns(connection, session_id)
    finally:
        connection.close()

    slow = ToolCall("toolu_slow", "Bash", {"command": "make slow"}, "12 passed")
    assert turns == [
        Turn(1, "run the slow tests", (
            "Running them.", slow, UserMessage("and skip the network ones"), "Skipped them.",
            UserMessage("p.s. thanks"),
        )),
        Turn(2, "now the fast ones", ()),
    ]
    assert retracted[0].steps == ("Running them.", slow, "Skipped them.", UserMessage("p.s. thanks"))


def messages_of(records: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(record["message"]["role"], record["message"]["content"]) for record in records]


def test_the_transcript_holds_each_turn_as_message_blocks_in_one_chain() -> None:
    call = ToolCall("toolu_1", "Bash", {"command": "false"}, "Exit code 1", True)
    turns = [Turn(3, "try it", ("Trying.", call, "It failed.")), Turn(4, "again", ())]
    records = claude.transcript_records(turns, "NOTICE", session_id="sid-1", cwd="/p", model="m")

    assert messages_of(records) == [
        ("user", [{"type": "text", "text": "NOTICE"}, {"type": "text", "text": "try it"}]),
        ("assistant", [{"type": "text", "text": "Trying."}]),
        ("assistant", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "false"}}]),
        ("user", [{"tool_use_id": "toolu_1", "type": "tool_result", "content": "Exit code 1", "is_error": True}]),
        ("assistant", [{"type": "text", "text": "It failed."}]),
        ("user", "again"),
    ]
    assert [record["parentUuid"] for record in records] == [None] + [record["uuid"] for record in records[:-1]]
    assert {(record["sessionId"], record["cwd"], record["isSidechain"]) for record in records} == {
        ("sid-1", "/p", False)}
    ids = [record["message"]["id"] for record in records if record["type"] == "assistant"]
    assert ids[0] == ids[1] != ids[2], "text and its tool call are one message; the answer after it another"


def test_words_typed_mid_turn_join_the_tool_results_or_start_a_user_message_so_roles_alternate() -> None:
    call = ToolCall("toolu_1", "Bash", {"command": "make"}, "ok")
    turns = [Turn(1, "build it", (UserMessage("early note"), "Building.", call, UserMessage("skip docs"),
                                  UserMessage("and lint"), "Built.", UserMessage("thanks"))),
             Turn(2, "next", ())]
    records = claude.transcript_records(turns, "NOTICE", session_id="sid-1", cwd="/p", model="m")

    assert messages_of(records) == [
        ("user", [{"type": "text", "text": "NOTICE"}, {"type": "text", "text": "build it"},
                  {"type": "text", "text": "early note"}]),
        ("assistant", [{"type": "text", "text": "Building."}]),
        ("assistant", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make"}}]),
        ("user", [{"tool_use_id": "toolu_1", "type": "tool_result", "content": "ok", "is_error": False},
                  {"type": "text", "text": "skip docs"}, {"type": "text", "text": "and lint"}]),
        ("assistant", [{"type": "text", "text": "Built."}]),
        ("user", [{"type": "text", "text": "thanks"}]),
        ("user", "next"),
    ]
    # Consecutive lines of one assistant message are one message. The next turn's prompt after a user message is
    # what a turn ending on a tool result gives too; the Messages API joins consecutive user messages.
    ids = [record["message"].get("id") for record in records]
    assert ids[1] == ids[2] and ids[4] != ids[1]
    assert [record["parentUuid"] for record in records] == [None] + [record["uuid"] for record in records[:-1]]


def test_the_first_message_shows_words_typed_mid_turn_where_they_were_read() -> None:
    call = ToolCall("toolu_1", "Bash", {"command": "make"}, "ok")
    message = first_message("<fork_context>\nNOTICE\n</fork_context>",
                            [Turn(1, "build it", (call, UserMessage("skip docs"), "Built."))])

    assert ('<tool_result id="toolu_1">\nok\n</tool_result>\n<user>\nskip docs\n</user>\n'
            "<assistant>\nBuilt.\n</assistant>") in message


def sized(number: int, chars: int) -> Turn:
    return Turn(number, "x" * chars, ())


def test_the_newest_turns_are_kept_and_the_notice_points_to_recall_for_the_rest() -> None:
    turns = [sized(1, 3000), sized(2, 3000), sized(3, 3000)]
    kept = newest_that_fit(turns, window_tokens=5000)  # half the window: room for two turns of ~1,000 tokens
    assert [turn.number for turn in kept] == [2, 3]
    said = notice(Lineage("parent-1", "named", 3, "/ws"), kept, len(turns), "mcp__codeoid__")
    assert "turns 2-3 follow; the 1 earlier turns are stored verbatim" in said
    assert "mcp__codeoid__recall(query)" in said and "named (parent-1) at turn 3" in said
    message = first_message(said, kept)
    assert split_seeded(message + "\n\nnext") == (message, "next"), "the whole message is one seed"
    assert message.startswith(said.removesuffix("</fork_context>")) and message.count('<turn number="') == 2


def test_a_window_too_small_for_the_newest_turn_is_an_error() -> None:
    with pytest.raises(WindowTooSmall, match="turn 2 alone needs about"):
        newest_that_fit([sized(1, 10), sized(2, 30_000)], window_tokens=10_000)


def store_rows(path: Path) -> list[Any]:
    connection = sqlite3.connect(path)
    try:
        return [connection.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
                for table in ("sessions", "backing_sessions", "episodes", "turns")]
    finally:
        connection.close()


@pytest.mark.parametrize(("args", "env", "message"), [
    (["nope"], {}, "No codeoid session 'nope'"),
    (["durable-1", "--at", "3"], {}, "has turns 1-2; there is no turn 3"),
    (["durable-1", "--backend", "codex"], {"CODEOID_CODEX_BIN": "", "PATH": "/nonexistent"},
     "npm install -g @openai/codex"),
    (["durable-1", "--backend", "gemini"], {"CODEOID_GEMINI_BIN": "", "PATH": "/nonexistent"},
     "npm install -g @google/gemini-cli"),
    (["durable-1", "--backend", "codex", "--", "--model", "o3"], {}, "Arguments after -- go to claude"),
    (["durable-1"], {"CODEOID_CLAUDE_BIN": "", "PATH": "/nonexistent"}, "npm install -g @anthropic-ai/claude-code"),
    (["durable-1", "--window", "1000"], {}, "does not fit: turn 2 alone needs"),
])
def test_a_fork_that_cannot_be_made_says_why_and_writes_nothing(
        codeoid_home: Path, project: Path, claude_home: Path, monkeypatch: pytest.MonkeyPatch,
        args: list[str], env: dict[str, str], message: str) -> None:
    two_window_session(project)
    connection = db.connect()
    connection.execute("UPDATE episodes SET text = text || ? WHERE prompt_id = 'p2'", ("y" * 3000,))
    connection.close()
    before = store_rows(codeoid_home / "store.db")
    monkeypatch.chdir(project)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    result = CliRunner().invoke(cli, ["fork", *args, "--no-start"])

    # An unknown session is a usage error (2), like every other session argument; the rest are refusals (1).
    assert result.exit_code == (2 if message.startswith("No codeoid session") else 1), result.output
    assert message in result.output, result.output
    assert store_rows(codeoid_home / "store.db") == before
    assert [path.name for path in claude_home.iterdir()] == [], "nothing for claude, codex or gemini"


def test_a_fork_records_its_lineage_and_a_fork_of_it_inherits_both(
        codeoid_home: Path, project: Path, claude_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    two_window_session(project)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(cli, ["fork", "durable", "--at", "1", "--name", "try-b", "--no-start"])
    assert result.exit_code == 0, result.output
    connection = db.connect()
    try:
        fork_id = connection.execute("SELECT id FROM sessions WHERE name = 'try-b'").fetchone()[0]
        resume_id = connection.execute("SELECT id FROM backing_sessions WHERE session_id = ?",
                                       (fork_id,)).fetchone()[0]
    finally:
        connection.close()
    assert f"codeoid run --resume {resume_id}" in result.output
    written = next((claude_home / ".claude" / "projects").glob(f"*/{resume_id}.jsonl"))
    assert written.parent.name == str(project).replace("/", "-").replace("_", "-").replace(".", "-")
    prompts = [json.loads(line)["message"]["content"] for line in written.read_text().splitlines()][:1]
    assert prompts[0][1] == {"type": "text", "text": "count the words"}

    own = Session(project, resume_id)  # the fork's own turn, captured under the backing id the fork resumes
    own.transcript = written
    own.fire("SessionStart", source="resume")
    own.fire("UserPromptSubmit", prompt="fork turn", prompt_id="pf")
    own.fire("Stop", last_assistant_message="Forked answer.", stop_hook_active=False)

    connection = db.connect()
    try:
        grandchild = create_fork(connection, ForkRequest(session=fork_id, project_dir=str(project)), now=0.0)
        fork_turns = session_turns(connection, fork_id)
        assert [(turn.number, turn.user, turn.steps) for turn in fork_turns] == [
            (1, "count the words", session_turns(connection, "durable-1", 1)[0].steps),
            (2, "fork turn", ("Forked answer.",))]
        assert session_turns(connection, grandchild.session_id) == fork_turns
        history = queries.timeline(connection, session_id=grandchild.session_id, limit=100)
        fork_history = queries.timeline(connection, session_id=fork_id, limit=100)
    finally:
        connection.close()
    assert grandchild.at_turn == 2 and grandchild.kept_turns == 2
    assert {(row["session_id"], row["turn"]) for row in fork_history} == {("durable-1", 1), (fork_id, 2)}
    assert "Seven lines." not in {row["text"] for row in fork_history}, "the parent's turn after the fork point"
    assert "Forked answer." not in {row["text"] for row in history if row["session_id"] == grandchild.session_id}
    parent_text = CliRunner().invoke(cli, ["sessions"]).output
    assert f"{fork_id} (try-b) " in parent_text and "forked from durable-1 at turn 1" in parent_text
    assert f"forked from {fork_id} at turn 2" in parent_text


def test_fork_refuses_arguments_that_pick_another_conversation(codeoid_home: Path) -> None:
    result = CliRunner().invoke(cli, ["fork", "any", "--no-start", "--", "--resume", "other"])
    assert result.exit_code == 1 and "leave out --resume" in result.output
    assert not os.path.exists(codeoid_home / "store.db")


def test_the_timeline_of_a_fork_marks_what_it_inherited(
        codeoid_home: Path, project: Path, claude_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    two_window_session(project)
    monkeypatch.chdir(project)
    assert CliRunner().invoke(cli, ["fork", "durable-1", "--at", "1", "--no-start"]).exit_code == 0
    connection = db.connect()
    fork_id = connection.execute("SELECT id FROM sessions WHERE forked_from = 'durable-1'").fetchone()[0]
    connection.close()

    lines = CliRunner().invoke(cli, ["timeline", "--session", fork_id]).output.splitlines()

    assert lines[0] == (f"session {fork_id} is forked from durable-1 at turn 1; its history starts with what it "
                        "inherited:")
    assert lines[1] == "  turns up to 1 of durable-1, marked [from durable-]"
    assert any("[from durable-] user: count the words" in line for line in lines)
    assert not any("now the lines" in line or "Seven lines" in line for line in lines)


def test_a_project_dir_claude_code_would_shorten_gets_the_history_as_a_first_message_stored_as_a_seed(
        codeoid_home: Path, tmp_path: Path, claude_home: Path) -> None:
    deep = tmp_path / ("a-long-directory-name-" * 10) / "project"
    deep.mkdir(parents=True)
    call = ToolCall("toolu_9", "Read", {"file_path": "/p/x"}, "file body")
    start = claude.prepare([Turn(1, "read x", (call, "Read it."))], "<fork_context>\nNOTICE\n</fork_context>",
                           config_dir=claude_home / ".claude", project_dir=str(deep), model=None)

    assert start.transcript_path is None and start.first_message is not None
    assert start.claude_args() == ["--session-id", start.claude_session_id]
    assert not (claude_home / ".claude").exists()
    assert '<tool_result id="toolu_9">\nfile body\n</tool_result>' in start.first_message

    session = Session(deep, start.claude_session_id)
    session.fire("SessionStart", source="startup")
    session.fire("UserPromptSubmit", prompt=f"{start.first_message}\n\nwhat now?", prompt_id="pq")
    stored = [(row["origin"], row["text"]) for row in episodes_of(start.claude_session_id)]
    assert stored == [("user", "what now?"), ("seed", start.first_message)]


def episodes_of(backing_session_id: str) -> list[dict[str, Any]]:
    connection = db.connect()
    try:
        return [row for row in queries.timeline(connection, limit=1000) if row["backing_session_id"]
                == backing_session_id]
    finally:
        connection.close()


def test_recall_in_a_fork_tells_inherited_history_from_the_parents_later_turns(
        codeoid_home: Path, project: Path, claude_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    two_window_session(project)
    monkeypatch.chdir(project)
    assert CliRunner().invoke(cli, ["fork", "durable-1", "--at", "1", "--no-start"]).exit_code == 0
    connection = db.connect()
    (resume_id,) = connection.execute("SELECT b.id FROM backing_sessions b JOIN sessions s ON s.id = b.session_id"
                                      " WHERE s.forked_from = 'durable-1'").fetchone()
    connection.close()

    found = serve(Memory(codeoid_home, project),
                  ("recall", {"query": "words lines", "limit": 10}), env={"CLAUDE_CODE_SESSION_ID": resume_id})[0]

    assert not found.is_error
    blocks = found.text.split("=== episode ")[1:]
    counted = next(block for block in blocks if "42 words." in block)
    later = next(block for block in blocks if "Seven lines." in block)
    assert "lineage: inherited: turn 1 of session durable-1" in counted
    assert "lineage: session durable-1 after the fork point: not part of this session's history" in later


@pytest.fixture
def agent_bins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Codex and Gemini binaries to find (these tests only prepare forks; the e2e tests run the real ones)."""
    for name in ("codex", "gemini"):
        fake = tmp_path / "bin" / name
        fake.parent.mkdir(exist_ok=True)
        fake.write_text("#!/bin/sh\nexit 0\n")
        fake.chmod(0o755)
        monkeypatch.setenv(f"CODEOID_{name.upper()}_BIN", str(fake))
    return tmp_path / "bin"


def forked_session(connection: sqlite3.Connection, name: str) -> tuple[Any, ...]:
    return connection.execute("SELECT id, forked_from, at_turn, turn_count FROM sessions WHERE name = ?",
                              (name,)).fetchone()


@pytest.mark.parametrize(("backend", "pattern", "recall"), [
    ("codex", ".codex/sessions/*/*/*/rollout-*.jsonl", "mcp__codeoid.recall(query)"),
    ("gemini", ".gemini/codeoid-forks/*/conversation.jsonl", "mcp_codeoid_recall(query)"),
])
def test_a_codex_or_gemini_fork_opens_with_the_notice_records_its_lineage_and_prints_how_to_start_it(
        codeoid_home: Path, project: Path, claude_home: Path, agent_bins: Path, monkeypatch: pytest.MonkeyPatch,
        backend: str, pattern: str, recall: str) -> None:
    two_window_session(project)
    monkeypatch.chdir(project)

    result = CliRunner().invoke(cli, ["fork", "durable-1", "--at", "1", "--backend", backend, "--name", "other",
                                      "--no-start"])

    assert result.exit_code == 0, result.output
    (written,) = claude_home.glob(pattern)
    history = written.read_text()
    first_prompt = history.index("<fork_context>")
    assert "fork of codeoid session durable-1 at turn 1" in history and recall in history
    assert history.index("count the words", first_prompt) > first_prompt, "the notice opens the first prompt"
    assert "now the lines" not in history, "a turn after the fork point"
    assert "codeoid has no hooks in " + backend in result.output
    command = result.output.split("Start it with: ", 1)[1]
    assert command.startswith(f"cd {project} && ") and str(agent_bins / backend) in command
    connection = db.connect()
    try:
        fork_id, parent, at_turn, turn_count = forked_session(connection, "other")
        backing = connection.execute("SELECT source, transcript_path, transcript_offset FROM backing_sessions"
                                     " WHERE session_id = ?", (fork_id,)).fetchall()
    finally:
        connection.close()
    assert (parent, at_turn, turn_count) == ("durable-1", 1, 1)
    assert backing == [(backend, str(written), len(written.read_bytes()))], "the run whose record is read back"
    assert f"codeoid fork-capture {fork_id}" in result.output
    assert "forked from durable-1 at turn 1" in CliRunner().invoke(cli, ["sessions"]).output


@pytest.mark.parametrize("backend", ["claude", "codex", "gemini"])
def test_a_fork_the_store_refuses_to_record_leaves_no_history_behind(
        codeoid_home: Path, project: Path, claude_home: Path, agent_bins: Path, monkeypatch: pytest.MonkeyPatch,
        backend: str) -> None:
    two_window_session(project)
    connection = db.connect()
    connection.execute("CREATE TRIGGER refuse BEFORE INSERT ON sessions BEGIN SELECT RAISE(ABORT, 'disk says no');"
                       " END")
    connection.close()
    before = store_rows(codeoid_home / "store.db")
    monkeypatch.chdir(project)

    result = CliRunner().invoke(cli, ["fork", "durable-1", "--backend", backend, "--no-start"])

    assert result.exit_code != 0 and "disk says no" in str(result.exception)
    assert store_rows(codeoid_home / "store.db") == before
    left = [path for path in claude_home.rglob("*") if path.is_file() and path.name != "settings.json"]
    assert left == [], "the translator's history must go when the session is not recorded"
