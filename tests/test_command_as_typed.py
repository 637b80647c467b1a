"""For a call the rewrite wrapped, the episode stores, indexes and shows the command the model typed; the wrapper
(codeoid's own ~600 characters of plumbing, whose words `filter`, `status`, `exit`, `return` match everyday
questions) is kept apart, as a fact about how the call ran. Through the real `codeoid-hook` and `codeoid-mcp`, and
the migration that moves rows stored before.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import run_hook
from test_mcp_server import Memory, git_project, serve

from codeoid.compressors import bash_wrapper
from codeoid.store import migrations

TYPED = "git status"
OUTPUT = "On branch main\nnothing to commit, working tree clean"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    for name in ("CODEOID_SESSION_ID", "CLAUDE_PID", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID"):
        monkeypatch.delenv(name, raising=False)
    project = git_project(tmp_path / "project")
    return {"home": home, "project": project, "env": {"CODEOID_HOME": str(home), "CLAUDE_PROJECT_DIR": str(project)}}


def wrapped(world: dict[str, Any], tool_use_id: str) -> str:
    return bash_wrapper.wrap(TYPED, tool_use_id=tool_use_id, compressor="/venv/bin/codeoid-compress",
                             project_dir=str(world["project"]))


def post(world: dict[str, Any], command: str, tool_use_id: str) -> None:
    payload = {"session_id": "cc-typed", "cwd": str(world["project"]), "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_use_id": tool_use_id, "tool_input": {"command": command, "description": "d"},
               "tool_response": {"stdout": OUTPUT, "stderr": "", "interrupted": False, "isImage": False}}
    result = run_hook("PostToolUse", payload, env=world["env"], cwd=world["project"])
    assert (result.returncode, result.stderr) == (0, b"")


def row(world: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
    connection = sqlite3.connect(world["home"] / "store.db")
    connection.row_factory = sqlite3.Row
    try:
        return dict(connection.execute("SELECT * FROM episodes WHERE tool_use_id = ?", (tool_use_id,)).fetchone())
    finally:
        connection.close()


def words_found(world: dict[str, Any], query: str) -> str:
    memory = Memory(world["home"], world["project"])
    try:
        (result,) = serve(memory, ("recall", {"query": query}))
    finally:
        memory.db.close()
    return result.text


def test_a_wrapped_call_stores_and_shows_the_command_as_typed_and_keeps_the_wrapper_apart(
        world: dict[str, Any]) -> None:
    wrapper = wrapped(world, "toolu_w1")
    assert len(wrapper) > 300 and "__codeoid_filter" in wrapper
    post(world, wrapper, "toolu_w1")
    stored = row(world, "toolu_w1")
    assert (stored["command"], stored["original_command"], stored["wrapper"]) == (TYPED, TYPED, wrapper)
    assert json.loads(stored["input"]) == {"command": TYPED, "description": "d"}
    assert "codeoid" not in stored["summary"]

    memory = Memory(world["home"], world["project"])
    try:
        recalled, page = serve(memory, ("recall", {"query": "working tree clean"}),
                               ("get_episode", {"episode_id": stored["id"], "lines": "1-2"}))
    finally:
        memory.db.close()
    assert f"=== episode {stored['id']}" in recalled.text and f"command: {TYPED}" in recalled.text
    assert "__codeoid" not in recalled.text and "__codeoid" not in page.text
    assert f"command: {TYPED}\n" in page.text and "ran as: through codeoid-compress" in page.text


def test_the_wrappers_words_match_nothing(world: dict[str, Any]) -> None:
    """`filter`, `status`, `return` are the wrapper's words, not the model's: BM25 must not find the call by them."""
    post(world, wrapped(world, "toolu_w2"), "toolu_w2")
    assert "=== episode" not in words_found(world, "codeoid filter builtin trap")


def test_rows_stored_with_the_wrapper_as_their_command_are_moved(tmp_path: Path) -> None:
    """Stored before: `command` and `input` held the wrapper, `original_command` the typed command."""
    connection = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    migrations.migrate(connection, upto="m013_session_titles")
    connection.execute("INSERT INTO workspaces (id, key, root, created_at) VALUES (1, 'k', '/p', 0)")
    connection.execute("INSERT INTO sessions (id, workspace_id, created_at) VALUES ('s', 1, 0)")
    wrapper = bash_wrapper.wrap(TYPED, tool_use_id="toolu_old", compressor="/venv/bin/codeoid-compress",
                                project_dir="/p")
    for key, command, original in (("toolu_old", wrapper, TYPED), ("toolu_plain", "ls", "ls"),
                                   ("toolu_unknown", wrapper, None)):
        connection.execute(
            "INSERT INTO episodes (workspace_id, session_id, kind, tool_name, tool_use_id, input, command,"
            " original_command, text, summary, token_estimate, created_at) VALUES"
            " (1, 's', 'tool', 'Bash', ?, ?, ?, ?, 'out', 'Bash', 1, 0)",
            (key, json.dumps({"command": command, "description": "d"}), command, original))
    connection.execute("INSERT INTO episodes_fts(rowid, input, text) SELECT id, input, text FROM episodes")
    connection.execute("UPDATE fts_progress SET indexed_upto = (SELECT max(id) FROM episodes)")
    assert connection.execute("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH 'builtin'").fetchone()[0] == 2

    assert "m014_command_as_typed" in migrations.migrate(connection)
    moved = {key: (command, json.loads(tool_input)["command"], wrapper_column) for key, command, tool_input,
             wrapper_column in connection.execute("SELECT tool_use_id, command, input, wrapper FROM episodes")}
    assert moved == {"toolu_old": (TYPED, TYPED, wrapper), "toolu_plain": ("ls", "ls", None),
                     "toolu_unknown": (wrapper, wrapper, None)}  # the typed command is not known: left as it was
    assert [key for (key,) in connection.execute(
        "SELECT e.tool_use_id FROM episodes_fts f JOIN episodes e ON e.id = f.rowid WHERE episodes_fts MATCH 'builtin'"
    )] == ["toolu_unknown"]
    connection.close()
