"""What a new user hits first in the CLI: session arguments by prefix or name everywhere (and a clear error for
an unknown one), retract telling "not stored" from "already retracted", exclude refusing a missing directory,
`show` printing the command the model wrote, headers and plurals, `doctor --json` and its health checks, help
texts that are not cut, and the slash commands on both routes. The real CLI over a real store."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import executable
from test_mcp_server import Memory, git_project

from codeoid.cli import cli
from codeoid.store import capture, raw
from codeoid.store import db as store_db

REPO = Path(__file__).resolve().parent.parent


def codeoid(memory: Memory, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"CODEOID_HOME": str(memory.home)})


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    monkeypatch.setenv("CODEOID_HOME", str(tmp_path / "codeoid-home"))
    found = Memory(tmp_path / "codeoid-home", git_project(tmp_path / "project"))
    monkeypatch.chdir(found.project)
    try:
        yield found
    finally:
        found.db.close()


def two_sessions(memory: Memory) -> tuple[str, str]:
    """Two sessions whose ids share no prefix beyond what the test chooses, one of them named."""
    first = memory.backing("cc-first")
    memory.user(first, "the walrus migration plan")
    second = memory.backing("cc-second")
    memory.user(second, "the narwhal deploy checklist")
    memory.db.execute("PRAGMA foreign_keys = OFF")  # renaming a session id by hand, children along
    with store_db.write_transaction(memory.db):
        memory.db.execute("UPDATE sessions SET id = 'aaaa1111-x' WHERE id = ?", (first.session_id,))
        memory.db.execute("UPDATE episodes SET session_id = 'aaaa1111-x' WHERE session_id = ?", (first.session_id,))
        memory.db.execute("UPDATE backing_sessions SET session_id = 'aaaa1111-x' WHERE session_id = ?",
                          (first.session_id,))
        memory.db.execute("UPDATE sessions SET id = 'aaaa2222-y', name = 'narwhal' WHERE id = ?",
                          (second.session_id,))
        memory.db.execute("UPDATE episodes SET session_id = 'aaaa2222-y' WHERE session_id = ?", (second.session_id,))
        memory.db.execute("UPDATE backing_sessions SET session_id = 'aaaa2222-y' WHERE session_id = ?",
                          (second.session_id,))
    memory.db.execute("PRAGMA foreign_keys = ON")
    return "aaaa1111-x", "aaaa2222-y"


@pytest.mark.parametrize("ref", ["aaaa1", "aaaa1111-x", "cc-first"])
def test_timeline_takes_a_session_by_prefix_id_or_backing_id(memory: Memory, ref: str) -> None:
    two_sessions(memory)
    done = codeoid(memory, "timeline", "--session", ref)
    assert done.exit_code == 0, done.output
    assert "walrus" in done.output and "narwhal" not in done.output


def test_timeline_takes_a_session_by_name(memory: Memory) -> None:
    two_sessions(memory)
    done = codeoid(memory, "timeline", "--session", "narwhal")
    assert done.exit_code == 0 and "narwhal deploy" in done.output and "walrus" not in done.output


@pytest.mark.parametrize("command", [["timeline", "--session"], ["gain", "--session"], ["rotate", "--session"],
                                     ["discover", "--session"],
                                     ["fork-capture"], ["fork", "--no-start"]])
def test_an_unknown_or_ambiguous_session_is_a_usage_error_everywhere(memory: Memory, command: list[str]) -> None:
    two_sessions(memory)
    for ref, words in (("zzz", "No codeoid session 'zzz'"), ("aaaa", "'aaaa' names 2 sessions")):
        args = [*command[:1], ref, *command[1:]] if command[0] == "fork" else [*command, ref]
        done = codeoid(memory, *args)
        assert done.exit_code == 2, done.output
        assert words in done.output and "codeoid sessions" in done.output or "give more" in done.output


def test_retract_tells_not_stored_from_already_retracted_and_fails_when_nothing_matched(memory: Memory) -> None:
    owner = memory.backing("cc-1")
    kept = memory.user(owner, "first prompt")
    gone = memory.user(owner, "second prompt")
    assert codeoid(memory, "retract", str(gone)).exit_code == 0

    mixed = codeoid(memory, "retract", str(kept), str(gone), "9998-9999")
    assert mixed.exit_code == 0
    assert f"retracted {kept} (was live)" in mixed.output
    assert f"left as they were (already retracted): {gone}" in mixed.output
    assert "not stored: 9998-9999" in mixed.output

    nothing = codeoid(memory, "retract", "9999")
    assert nothing.exit_code == 1
    assert "not stored: 9999" in nothing.output and "None of those episodes is stored" in nothing.output
    assert "already retracted" not in nothing.output
    assert codeoid(memory, "restore", "9999").exit_code == 1


def test_exclude_refuses_a_directory_that_does_not_exist(memory: Memory, tmp_path: Path) -> None:
    done = codeoid(memory, "exclude", str(tmp_path / "no-such-dir"))
    assert done.exit_code == 2 and "is not a directory" in done.output
    assert codeoid(memory, "exclude", "--list").output == ""
    assert codeoid(memory, "exclude", str(memory.project)).exit_code == 0
    assert codeoid(memory, "exclude", "--list").output.strip() == str(memory.project.resolve())


def test_show_prints_the_command_the_model_wrote_not_the_wrapper(memory: Memory) -> None:
    owner = memory.backing("cc-1")
    wrapper = "set -o pipefail; { git status ; } | '/venv/bin/codeoid-compress' --raw-id raw-toolu_1 " + "x" * 400
    with store_db.write_transaction(memory.db):  # as the PostToolUse hook stores a rewritten call
        episode = capture.add_tool_call(
            memory.db, owner, tool_name="Bash", tool_use_id="toolu_1", tool_input={"command": wrapper},
            response={"stdout": "clean", "stderr": "", "interrupted": False}, error=None, agent_id=None,
            now=time.time(), original_command="git status")
    assert episode is not None
    done = codeoid(memory, "show", str(episode))
    assert done.exit_code == 0
    assert "command: git status\n" in done.output and "--raw-id" not in done.output
    assert "compressed: yes" in done.output
    assert json.loads(codeoid(memory, "show", str(episode), "--json").output)["wrapper"] == wrapper


def test_sessions_and_timeline_have_headers_plurals_and_name_the_workspace(memory: Memory, tmp_path: Path) -> None:
    owner = memory.backing("cc-1")
    memory.user(owner, "one prompt")
    other = git_project(tmp_path / "other-project")
    memory.user(memory.backing("cc-2", project=other), "elsewhere")

    listed = codeoid(memory, "sessions").output.splitlines()
    assert listed[0].split() == ["session", "agent", "last", "activity", "turns", "episodes", "rotations", "title"]
    assert " 1 turn " in listed[1] and " 1 episode " in listed[1] and "0 rotations  one prompt" in listed[1]
    assert listed[1].split()[1] == "claude"
    everywhere = codeoid(memory, "sessions", "--all-workspaces").output.splitlines()
    assert everywhere[0].rstrip().endswith("workspace  title")
    assert sorted(line.endswith((f"{memory.project.resolve()}  one prompt", f"{other.resolve()}  elsewhere"))
                  for line in everywhere[1:]) == [True, True]

    lines = codeoid(memory, "timeline").output.splitlines()
    assert lines[0].split() == ["id", "time", "kind", "summary"] and "one prompt" in lines[1]
    every = codeoid(memory, "timeline", "--all-workspaces").output.splitlines()
    assert every[0].split() == ["id", "time", "kind", "workspace", "summary"]
    assert any(str(other.resolve()) in line and "elsewhere" in line for line in every[1:])
    found = codeoid(memory, "search", "elsewhere", "--all-workspaces").stdout.splitlines()
    assert found[0].startswith("1 hit, best first") and found[2].startswith("=== episode ")
    assert found[3] == f"workspace: {other.resolve()}" and "1: elsewhere" in found


def test_doctor_json_carries_the_health_checks(memory: Memory) -> None:
    owner = memory.backing("cc-1")
    memory.user(owner, "a prompt")
    writer = raw.RawOutputWriter(memory.db, "raw-toolu_killed", command="make test", cwd=str(memory.project),
                                 tool_use_id="toolu_killed", session_id=owner.session_id, workspace_id=None)
    writer.write(b"half of it\n")
    writer.flush()
    with store_db.write_transaction(memory.db):
        memory.db.execute("UPDATE raw_outputs SET created_at = ? WHERE id = 'raw-toolu_killed'",
                          (time.time() - 2 * 3600,))
    rules = memory.project / ".codeoid" / "rules"
    rules.mkdir(parents=True)
    (rules / "broken.toml").write_text("[[rule]\nname = 'x'\n")

    done = subprocess.run([executable("codeoid"), "doctor", "--json"], capture_output=True, text=True,
                          cwd=memory.project, env={**os.environ, "CODEOID_HOME": str(memory.home),
                                                   "CODEOID_VECTOR": "on"}, timeout=120)
    findings = json.loads(done.stdout)
    assert all(set(finding) == {"status", "sentence"} for finding in findings)
    sentences = {finding["sentence"]: finding["status"] for finding in findings}

    def status_of(words: str) -> str:
        found = [status for sentence, status in sentences.items() if words in sentence]
        assert len(found) == 1, (words, sentences)
        return found[0]

    assert status_of("matches its pinned sha256") == "ok"
    assert status_of("Chroma server") in ("ok", "info")
    assert status_of("Indexing backlog") == "ok"
    assert status_of(f"{rules / 'broken.toml'}") == "fail"  # named once (setup.doctor's check), not twice
    assert status_of("Quarantine is empty") == "ok"
    assert status_of("raw output(s) never finished (raw-toolu_killed)") == "warn"
    assert done.returncode == 1  # codeoid is not installed in this HOME: the install check fails


def test_no_help_text_is_cut_and_the_examples_keep_their_lines() -> None:
    listing = subprocess.run([executable("codeoid"), "--help"], capture_output=True, text=True,
                             env={**os.environ, "COLUMNS": "80"}, check=True).stdout
    commands = listing.split("Commands:", 1)[1].splitlines()
    assert len([line for line in commands if line.strip()]) >= 15
    assert not [line for line in commands if line.rstrip().endswith("...")]
    gain_help = subprocess.run([executable("codeoid"), "gain", "--help"], capture_output=True, text=True,
                               env={**os.environ, "COLUMNS": "80"}, check=True).stdout
    assert "  codeoid gain --daily --since 14d    one line and a bar per day of the last two weeks\n" in gain_help


def test_the_plugins_command_files_are_the_ones_install_writes() -> None:
    from codeoid.setup.slash_commands import PLUGIN_CODEOID, command_texts

    shipped = {path.name: path.read_text() for path in (REPO / "plugin" / "commands").glob("*.md")}
    assert shipped == command_texts(PLUGIN_CODEOID)


def test_install_writes_recall_and_gain_for_this_venv_and_uninstall_takes_only_its_own(tmp_path: Path) -> None:
    from codeoid.setup.install import install, uninstall

    home = tmp_path / "home"
    home.mkdir()
    bin_dir = Path(executable("codeoid")).parent
    commands = home / ".claude" / "commands"
    install(home=home, bin_dir=bin_dir)
    gain = (commands / "gain.md").read_text()
    assert f"!`{bin_dir / 'codeoid'} gain --daily --since 30d`" in gain
    assert f"allowed-tools: Bash({bin_dir / 'codeoid'} gain:*)" in gain
    assert "mcp__codeoid__recall" in (commands / "recall.md").read_text()
    (commands / "recall.md").write_text("my own recall\n")
    uninstall(home=home)
    assert sorted(path.name for path in commands.iterdir()) == ["recall.md"]
    assert (commands / "recall.md").read_text() == "my own recall\n"
