"""`codeoid install --agent codex|gemini` and `uninstall --agent ...` on real files in a private HOME: idempotent,
the user's entries untouched, and install then uninstall leaves each config byte-equal to what it was (absent
files absent again). Codex's hook trust comes from the real `codex app-server`; it is covered by
tests/e2e/test_agents_e2e.py, so here Codex runs without a binary (its trust entries are left out).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from codeoid.setup import agents
from codeoid.setup.json_config import InstallError

CODEOID = str(Path(sys.executable).parent / "codeoid")

#: A user's Gemini settings with comments-free JSON, its own hook and MCP server, in its own key order and layout.
GEMINI_BEFORE = (
    b'{\n    "privacy": {"usageStatisticsEnabled": false},\n    "hooks": {"AfterTool": [{"matcher": "write_file",'
    b' "hooks": [{"type": "command", "command": "my-linter"}]}]},\n    "mcpServers": {"other": {"command": "x"}}\n}'
)
CODEX_CONFIG_BEFORE = b'model = "o3"  # mine\n\n[mcp_servers.other]\ncommand = "x"\n[hooks.state]\n'
CODEX_HOOKS_BEFORE = b'{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]}}'


@pytest.fixture
def home(tmp_path: Path, codeoid_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return path


def snapshot(paths: list[Path]) -> dict[Path, bytes | None]:
    return {path: path.read_bytes() if path.exists() else None for path in paths}


def test_gemini_install_registers_hooks_and_server_beside_the_users_and_uninstall_restores_the_bytes(
    home: Path,
) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(GEMINI_BEFORE)

    agents.install("gemini", home)

    data = json.loads(settings.read_text())
    assert data["privacy"] == {"usageStatisticsEnabled": False} and data["mcpServers"]["other"] == {"command": "x"}
    assert data["mcpServers"]["codeoid"]["command"].endswith("/codeoid-mcp") and data["mcpServers"]["codeoid"]["trust"]
    assert data["hooks"]["AfterTool"][0]["hooks"][0]["command"] == "my-linter", "the user's hook moved"
    ours = {event: groups[-1]["hooks"][0] for event, groups in data["hooks"].items()}
    assert set(ours) == {"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd"}
    assert "BeforeTool" not in data["hooks"], "codeoid does not rewrite commands in Gemini"
    assert ours["AfterTool"]["command"].endswith("codeoid-hook --agent=gemini AfterTool")
    assert ours["AfterTool"]["timeout"] == 10_000, "Gemini's timeouts are milliseconds"

    installed = settings.read_bytes()
    assert not agents.install("gemini", home).written, "a second install changed something"
    assert settings.read_bytes() == installed

    agents.uninstall("gemini", home)
    assert settings.read_bytes() == GEMINI_BEFORE


def test_install_then_uninstall_removes_files_and_folders_codeoid_created(home: Path) -> None:
    files = agents.config_files("codex", home) + agents.config_files("gemini", home)

    for agent in ("codex", "gemini"):
        agents.install(agent, home)
    assert all(path.exists() for path in files)
    for agent in ("codex", "gemini"):
        agents.uninstall(agent, home)

    assert snapshot(files) == dict.fromkeys(files)
    assert not (home / ".gemini").exists() and not (home / ".codex").exists()


def test_codex_install_writes_hooks_json_and_a_marked_config_block_and_uninstall_restores_both(home: Path) -> None:
    hooks_file, config = agents.config_files("codex", home)
    config.parent.mkdir()
    config.write_bytes(CODEX_CONFIG_BEFORE)
    hooks_file.write_bytes(CODEX_HOOKS_BEFORE)

    outcome = agents.install("codex", home)

    assert any("Codex will ask you to review" in note for note in outcome.notes)
    parsed = tomllib.loads(config.read_text())
    assert parsed["model"] == "o3" and parsed["mcp_servers"]["other"] == {"command": "x"}
    assert parsed["mcp_servers"]["codeoid"]["command"].endswith("/codeoid-mcp")
    hooks = json.loads(hooks_file.read_text())["hooks"]
    assert hooks["Stop"][0]["hooks"][0]["command"] == "notify-me"
    assert hooks["PreToolUse"] == [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": agents.hook_command("codex", "PreToolUse"), "timeout": 5}]}]
    assert hooks["SessionEnd"][-1]["hooks"][0]["timeout"] == 5, "Codex's own default for SessionEnd is 1 s"

    agents.uninstall("codex", home)
    assert (config.read_bytes(), hooks_file.read_bytes()) == (CODEX_CONFIG_BEFORE, CODEX_HOOKS_BEFORE)


def test_uninstall_after_the_user_edited_the_file_takes_out_codeoids_entries_alone(home: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(GEMINI_BEFORE)
    agents.install("gemini", home)
    data = json.loads(settings.read_text())
    data["ui"] = {"theme": "dark"}  # Gemini (or the user) wrote to the file since
    settings.write_text(json.dumps(data))

    agents.uninstall("gemini", home)

    assert json.loads(settings.read_text()) == {**json.loads(GEMINI_BEFORE), "ui": {"theme": "dark"}}


def test_an_mcp_server_named_codeoid_that_is_not_codeoids_stops_the_install_with_nothing_written(home: Path) -> None:
    config = agents.config_files("codex", home)[1]
    config.parent.mkdir()
    config.write_bytes(b'[mcp_servers.codeoid]\ncommand = "someone-else"\n')

    with pytest.raises(InstallError, match="already has an MCP server named 'codeoid'"):
        agents.install("codex", home)
    assert config.read_bytes() == b'[mcp_servers.codeoid]\ncommand = "someone-else"\n'


def test_the_cli_installs_and_uninstalls_for_an_agent(home: Path, codeoid_home: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    env = {**os.environ, "HOME": str(home), "CODEOID_HOME": str(codeoid_home)}

    installed = subprocess.run([CODEOID, "install", "--agent", "gemini"], env=env, capture_output=True, text=True)
    again = subprocess.run([CODEOID, "install", "--agent", "gemini"], env=env, capture_output=True, text=True)
    removed = subprocess.run([CODEOID, "uninstall", "--agent", "gemini"], env=env, capture_output=True, text=True)

    assert installed.returncode == 0 and f"wrote {settings}" in installed.stdout, installed.stderr
    assert "Already installed; nothing changed." in again.stdout
    assert removed.returncode == 0 and f"removed {settings}" in removed.stdout and not settings.exists()


def test_doctor_says_whether_an_agent_install_is_whole(home: Path) -> None:
    from codeoid.setup.doctor import _agent_findings

    assert _agent_findings(home) == []
    agents.install("gemini", home)
    assert [finding.status for finding in _agent_findings(home)] == ["ok"]
    settings = home / ".gemini" / "settings.json"
    data = json.loads(settings.read_text())
    del data["hooks"]["AfterTool"]
    settings.write_text(json.dumps(data))

    (finding,) = _agent_findings(home)
    assert finding.status == "fail" and "the AfterTool hook" in finding.sentence
    assert "codeoid install --agent gemini" in finding.sentence
