"""A project the user excluded leaves no trace: the real hook executable, `codeoid-compress`, the MCP server
over the `mcp` SDK's stdio client, and the `codeoid exclude` command."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_capture import Session
from test_compress_cli import compress, project, raw_outputs, seq_bytes  # noqa: F401 - `project` is a fixture
from test_mcp_server import Memory, call, git_project

from codeoid.cli import cli


def stored_texts(codeoid_home: Path) -> list[str]:
    if not (codeoid_home / "store.db").exists():
        return []
    connection = sqlite3.connect(codeoid_home / "store.db")
    try:
        return [row[0] for row in connection.execute("SELECT text FROM episodes ORDER BY id")]
    finally:
        connection.close()


def leave_a_turn(where: Path, words: str, **env: str) -> None:
    session = Session(where, session_id=f"cc-{where.name}")
    session.env.update(env)
    session.fire("SessionStart", source="startup")
    session.fire("UserPromptSubmit", prompt=words, prompt_id=f"p-{where.name}")
    session.fire("PostToolUse", tool_name="Bash", tool_use_id=f"toolu-{where.name}",
                 tool_input={"command": "cat notes.txt"}, tool_response={"stdout": words, "stderr": ""})
    session.fire("Stop", last_assistant_message=f"done with {words}")


def test_hooks_in_an_excluded_project_store_and_spool_nothing(codeoid_home: Path, tmp_path: Path) -> None:
    clients, ours = tmp_path / "clients", tmp_path / "ours"
    acme = clients / "acme" / "api"
    for directory in (acme, ours):
        directory.mkdir(parents=True)

    leave_a_turn(acme, "acme merger terms", CODEOID_EXCLUDE_PROJECTS=f"/nowhere{os.pathsep}{clients}/*")
    leave_a_turn(ours, "our parser fix", CODEOID_EXCLUDE_PROJECTS=f"{clients}/*")

    assert stored_texts(codeoid_home) == ["our parser fix", "our parser fix", "done with our parser fix"]
    spooled = [path for path in (codeoid_home / "spool").rglob("*") if path.is_file() and path.name != ".reserve"]
    assert spooled == []
    log = codeoid_home / "logs" / "codeoid.log"
    assert not log.exists() or "acme" not in log.read_text(errors="replace")


def test_codeoid_exclude_lists_adds_and_removes_and_the_hooks_follow_it(codeoid_home: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    monkeypatch.chdir(secret)
    runner = CliRunner()
    assert runner.invoke(cli, ["exclude"]).output == f"codeoid records nothing in {secret.resolve()} from now on.\n"
    assert runner.invoke(cli, ["exclude", str(secret / ".")]).exit_code == 0  # already excluded: listed once
    assert runner.invoke(cli, ["exclude", "--list"]).output == f"{secret.resolve()}\n"
    assert (codeoid_home / "excluded-projects").stat().st_mode & 0o777 == 0o600
    leave_a_turn(secret, "the secret plan")
    assert stored_texts(codeoid_home) == []

    refused = runner.invoke(cli, ["run"])
    assert refused.exit_code == 1 and "is excluded from codeoid" in refused.output

    assert runner.invoke(cli, ["exclude", "--remove"]).output == f"codeoid records {secret.resolve()} again.\n"
    assert runner.invoke(cli, ["exclude", "--remove"]).exit_code == 1
    leave_a_turn(secret, "the open plan")
    assert stored_texts(codeoid_home)[0] == "the open plan"


def test_codeoid_compress_in_an_excluded_project_archives_nothing(project: Path,  # noqa: F811
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEOID_EXCLUDE_PROJECTS", str(project))
    done = compress("--", "seq", "1", "3000")
    assert (done.returncode, done.stdout) == (0, seq_bytes(3000))
    assert raw_outputs() == []


def test_recall_in_an_excluded_project_says_nothing_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    memory = Memory(home, git_project(tmp_path / "project"))
    try:
        memory.user(memory.backing("b1"), "the acme merger terms")
        (home / "excluded-projects").write_text(f"# client work\n{memory.project}\n")
        for answer in (call(memory, "recall", query="acme merger"), call(memory, "get_episode", episode_id="1")):
            assert answer.is_error and "the user excluded it" in answer.text and "merger" not in answer.text
    finally:
        memory.db.close()
