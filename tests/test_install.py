"""The install route (`codeoid install` / `uninstall` / `doctor`) and the plugin route's files.

Every test runs against a temporary HOME and CODEOID_HOME, with fake codeoid-hook and codeoid-mcp executables in a
temporary venv `bin`, so nothing here can touch the real Claude Code configuration.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from codeoid.setup.doctor import Finding, doctor_report
from codeoid.setup.hook_table import (
    ALLOW_RULE,
    HOOK_TABLE,
    hook_command,
    installed_executable,
    is_codeoid_handler,
    parse_command,
)
from codeoid.setup.install import InstallError, install, uninstall
from codeoid.setup.json_config import BACKUP_MARK

REPO = Path(__file__).resolve().parent.parent
TABLE_EVENTS = [registration.event for registration in HOOK_TABLE]

OTHER_TOOL_SETTINGS: dict[str, Any] = {
    "model": "sonnet",
    "env": {"FOO": "bar"},
    "permissions": {"allow": ["Bash(git status:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "other-tool start", "timeout": 3}]}],
        "PostToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": "/opt/other/bin/log-tool"}]},
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]},
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
    },
    "enabledPlugins": {"other@market": True},
    "statusLine": {"type": "command", "command": "~/bin/my-status"},
}

OTHER_TOOL_STATE: dict[str, Any] = {
    "numStartups": 12,
    "hasCompletedOnboarding": True,
    "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": ["serve"], "env": {}}},
    "projects": {"/some/project": {"hasTrustDialogAccepted": True, "mcpServers": {}}},
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME; CODEOID_HOME set (as a test or second installation would) and no CLAUDE_CONFIG_DIR."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEOID_HOME", str(tmp_path / "codeoid data"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    return _fake_venv_bin(tmp_path / "venv")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project.resolve()


def _fake_venv_bin(venv: Path) -> Path:
    """A venv `bin` holding stand-ins for codeoid's executables."""
    directory = venv / "bin"
    directory.mkdir(parents=True)
    for name in ("codeoid-hook", "codeoid-mcp"):
        script = directory / name
        script.write_text("#!/bin/sh\nexit 0\n")
        script.chmod(0o755)
    return directory


def _read(path: Path) -> Any:
    return json.loads(path.read_text())


def _write(path: Path, data: Any, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    path.chmod(mode)


def _codeoid_commands(settings: dict[str, Any], event: str) -> list[str]:
    return [
        handler["command"]
        for group in settings["hooks"].get(event, [])
        for handler in group["hooks"]
        if is_codeoid_handler(handler)
    ]


def _backups(directory: Path) -> list[Path]:
    return sorted(path for path in directory.iterdir() if BACKUP_MARK in path.name)


def _statuses(findings: list[Finding], status: str) -> str:
    return "\n".join(finding.sentence for finding in findings if finding.status == status)


# install + uninstall round trips


def test_install_twice_then_uninstall_leaves_other_tools_settings_json_equal(home: Path, bin_dir: Path) -> None:
    settings_path, state_path = home / ".claude" / "settings.json", home / ".claude.json"
    _write(settings_path, OTHER_TOOL_SETTINGS)
    _write(state_path, OTHER_TOOL_STATE)

    install(home=home, bin_dir=bin_dir)
    once = (_read(settings_path), _read(state_path))
    install(home=home, bin_dir=bin_dir)
    assert (_read(settings_path), _read(state_path)) == once

    settings = once[0]
    for registration in HOOK_TABLE:
        commands = _codeoid_commands(settings, registration.event)
        assert commands == [hook_command(str(bin_dir / "codeoid-hook"), registration.event, os.environ["CODEOID_HOME"])]
    assert settings["hooks"]["Stop"][0] == OTHER_TOOL_SETTINGS["hooks"]["Stop"][0]
    assert settings["permissions"]["allow"] == ["Bash(git status:*)", ALLOW_RULE]
    assert once[1]["mcpServers"]["github"] == OTHER_TOOL_STATE["mcpServers"]["github"]
    assert once[1]["mcpServers"]["codeoid"] == {
        "type": "stdio",
        "command": str(bin_dir / "codeoid-mcp"),
        "args": [],
        "env": {"CODEOID_HOME": os.environ["CODEOID_HOME"]},
        "alwaysLoad": True,
    }

    uninstall(home=home)
    assert _read(settings_path) == OTHER_TOOL_SETTINGS
    assert _read(state_path) == OTHER_TOOL_STATE


def test_files_absent_before_install_are_absent_after_uninstall(home: Path, bin_dir: Path) -> None:
    install(home=home, bin_dir=bin_dir)
    install(home=home, bin_dir=bin_dir)
    assert (home / ".claude" / "settings.json").exists() and (home / ".claude.json").exists()

    outcome = uninstall(home=home)

    assert list(home.iterdir()) == []
    commands = home / ".claude" / "commands"
    assert set(outcome.removed) == {home / ".claude" / "settings.json", home / ".claude.json", home / ".claude",
                                    commands / "rotate.md", commands / "recall.md", commands / "gain.md", commands}
    assert outcome.backups == []


def test_file_created_by_install_keeps_what_claude_code_wrote_to_it_since(home: Path, bin_dir: Path) -> None:
    install(home=home, bin_dir=bin_dir)
    state = _read(home / ".claude.json")
    _write(home / ".claude.json", {"numStartups": 1, **state})

    uninstall(home=home)

    assert _read(home / ".claude.json") == {"numStartups": 1}
    assert not (home / ".claude" / "settings.json").exists()


def test_containers_codeoid_created_inside_existing_files_are_dropped_again(home: Path, bin_dir: Path) -> None:
    before = {"permissions": {"deny": ["Read(./.env)"]}, "hooks": {"Stop": []}}
    _write(home / ".claude" / "settings.json", before)
    _write(home / ".claude.json", {"projects": {}})

    install(home=home, bin_dir=bin_dir)
    uninstall(home=home)

    assert _read(home / ".claude" / "settings.json") == before
    assert _read(home / ".claude.json") == {"projects": {}}


def test_allow_rule_the_user_already_had_stays_after_uninstall(home: Path, bin_dir: Path) -> None:
    before = {"permissions": {"allow": [ALLOW_RULE, "Read"]}}
    _write(home / ".claude" / "settings.json", before)

    install(home=home, bin_dir=bin_dir)
    assert _read(home / ".claude" / "settings.json")["permissions"]["allow"] == [ALLOW_RULE, "Read"]
    install(home=home, bin_dir=bin_dir)
    uninstall(home=home)

    assert _read(home / ".claude" / "settings.json") == before


def test_uninstall_twice_changes_nothing_the_second_time(home: Path, bin_dir: Path) -> None:
    _write(home / ".claude" / "settings.json", OTHER_TOOL_SETTINGS)
    install(home=home, bin_dir=bin_dir)
    uninstall(home=home)
    backups = _backups(home / ".claude")

    outcome = uninstall(home=home)

    assert (outcome.written, outcome.removed, outcome.backups, outcome.notes) == ([], [], [], [])
    assert _backups(home / ".claude") == backups
    assert _read(home / ".claude" / "settings.json") == OTHER_TOOL_SETTINGS


def test_uninstall_without_a_record_removes_codeoid_entries_but_keeps_the_allow_rule(home: Path, bin_dir: Path) -> None:
    install(home=home, bin_dir=bin_dir)
    (Path(os.environ["CODEOID_HOME"]) / "install.json").unlink()

    outcome = uninstall(home=home)

    settings = _read(home / ".claude" / "settings.json")
    assert all(groups == [] for groups in settings["hooks"].values())
    assert settings["permissions"]["allow"] == [ALLOW_RULE]
    assert "codeoid" not in _read(home / ".claude.json")["mcpServers"]
    assert "left any `mcp__codeoid` allow rule in place" in outcome.notes[0]


# refreshing stale entries


def test_reinstall_from_a_moved_venv_refreshes_every_codeoid_entry(home: Path, tmp_path: Path) -> None:
    _write(home / ".claude" / "settings.json", OTHER_TOOL_SETTINGS)
    old_bin = _fake_venv_bin(tmp_path / "old-venv")
    new_bin = _fake_venv_bin(tmp_path / "new venv")
    install(home=home, bin_dir=old_bin)
    shutil.rmtree(old_bin.parent)

    install(home=home, bin_dir=new_bin)

    settings = _read(home / ".claude" / "settings.json")
    for event in TABLE_EVENTS:
        (command,) = _codeoid_commands(settings, event)
        assert parse_command(command).executable == str(new_bin / "codeoid-hook")
    assert _read(home / ".claude.json")["mcpServers"]["codeoid"]["command"] == str(new_bin / "codeoid-mcp")
    uninstall(home=home)
    assert _read(home / ".claude" / "settings.json") == OTHER_TOOL_SETTINGS


def test_install_drops_codeoid_handlers_on_events_it_no_longer_uses_and_fixes_their_settings(
    home: Path, bin_dir: Path
) -> None:
    stale = "/gone/venv/bin/codeoid-hook"
    _write(
        home / ".claude" / "settings.json",
        {
            "hooks": {
                "Notification": [{"hooks": [{"type": "command", "command": f"{stale} Notification"}]}],
                "Stop": [
                    {
                        "hooks": [
                            {"type": "command", "command": "notify-send done"},
                            {"type": "command", "command": f"{stale} Stop", "timeout": 600},
                        ]
                    }
                ],
            }
        },
    )

    install(home=home, bin_dir=bin_dir)

    hooks = _read(home / ".claude" / "settings.json")["hooks"]
    assert hooks["Notification"] == []
    assert hooks["Stop"][0] == {"hooks": [{"type": "command", "command": "notify-send done"}]}
    assert hooks["Stop"][1]["hooks"][0]["timeout"] == 10
    assert len(_codeoid_commands({"hooks": hooks}, "Stop")) == 1


def test_install_puts_a_refreshed_group_back_where_it_stood(home: Path, bin_dir: Path) -> None:
    install(home=home, bin_dir=bin_dir)
    path = home / ".claude" / "settings.json"
    settings = _read(path)
    settings["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "added-later"}]})
    _write(path, settings)

    install(home=home, bin_dir=bin_dir)

    assert _read(path) == settings


def test_codeoid_home_is_pinned_only_when_set_at_install(
    home: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CODEOID_HOME")

    install(home=home, bin_dir=bin_dir)

    command = _codeoid_commands(_read(home / ".claude" / "settings.json"), "Stop")[0]
    assert command == f"{bin_dir / 'codeoid-hook'} Stop"
    assert _read(home / ".claude.json")["mcpServers"]["codeoid"]["env"] == {}
    assert (tmp_path / "xdg" / "codeoid" / "install.json").exists()


def test_hook_command_survives_spaces_in_paths() -> None:
    command = hook_command("/my venv/bin/codeoid-hook", "Stop", "/data dir/codeoid")

    parsed = parse_command(command)
    assert (parsed.environment, parsed.executable, parsed.program) == (
        {"CODEOID_HOME": "/data dir/codeoid"},
        "/my venv/bin/codeoid-hook",
        "codeoid-hook",
    )


def test_executables_are_found_beside_the_running_interpreter_not_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("sys.executable", str(tmp_path / "venv" / "bin" / "python"))
    assert installed_executable("codeoid-hook") == str(tmp_path / "venv" / "bin" / "codeoid-hook")


def test_install_refuses_when_an_executable_is_missing(home: Path, bin_dir: Path) -> None:
    (bin_dir / "codeoid-mcp").unlink()
    with pytest.raises(InstallError, match="codeoid-mcp is missing or not executable"):
        install(home=home, bin_dir=bin_dir)
    assert list(home.iterdir()) == []


def test_install_refuses_to_replace_someone_elses_codeoid_server(home: Path, bin_dir: Path) -> None:
    _write(home / ".claude.json", {"mcpServers": {"codeoid": {"command": "npx", "args": ["codeoid-clone"]}}})
    with pytest.raises(InstallError, match="does not run codeoid-mcp"):
        install(home=home, bin_dir=bin_dir)
    assert not (home / ".claude" / "settings.json").exists()


def test_invalid_settings_json_stops_install_with_a_clear_message(home: Path, bin_dir: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {')
    with pytest.raises(InstallError, match="is not valid JSON .*fix it by hand"):
        install(home=home, bin_dir=bin_dir)
    assert path.read_text() == '{"hooks": {'


def test_uninstall_removes_only_a_codeoid_status_line(home: Path, bin_dir: Path) -> None:
    path = home / ".claude" / "settings.json"
    _write(path, {"statusLine": {"type": "command", "command": "/venv/bin/codeoid statusline"}})
    install(home=home, bin_dir=bin_dir)
    uninstall(home=home)
    assert "statusLine" not in _read(path)

    _write(path, OTHER_TOOL_SETTINGS)
    install(home=home, bin_dir=bin_dir)
    uninstall(home=home)
    assert _read(path) == OTHER_TOOL_SETTINGS


# plugin route


def test_enabled_plugin_blocks_install_unless_forced(home: Path, bin_dir: Path) -> None:
    _write(home / ".claude" / "settings.json", {"enabledPlugins": {"codeoid@codeoid-market": True}})

    with pytest.raises(InstallError, match="already active as a Claude Code plugin.*codeoid@codeoid-market"):
        install(home=home, bin_dir=bin_dir)
    assert not (home / ".claude.json").exists()

    outcome = install(home=home, bin_dir=bin_dir, force=True)
    assert "stored twice" in outcome.notes[0]


def test_plugin_listed_in_installed_plugins_blocks_install(home: Path, bin_dir: Path, project: Path) -> None:
    _write(
        home / ".claude" / "plugins" / "installed_plugins.json",
        {"version": 2, "plugins": {"codeoid@m": [{"scope": "project", "projectPath": str(project)}]}},
    )
    with pytest.raises(InstallError, match="installed in"):
        install("project", home=home, project_dir=project, bin_dir=bin_dir)
    # The same plugin installed for another project does not concern a user-scope install elsewhere.
    install("user", home=home, project_dir=home, bin_dir=bin_dir)


def test_disabled_plugin_does_not_block_install(home: Path, bin_dir: Path, project: Path) -> None:
    _write(
        home / ".claude" / "plugins" / "installed_plugins.json",
        {"version": 2, "plugins": {"codeoid@m": [{"scope": "user"}]}},
    )
    _write(home / ".claude" / "settings.json", {"enabledPlugins": {"codeoid@m": True}})
    _write(project / ".claude" / "settings.local.json", {"enabledPlugins": {"codeoid@m": False}})

    install("project", home=home, project_dir=project, bin_dir=bin_dir)


def test_plugin_enabled_in_project_settings_blocks_project_install(home: Path, bin_dir: Path, project: Path) -> None:
    _write(project / ".claude" / "settings.json", {"enabledPlugins": {"codeoid@team": True}})
    with pytest.raises(InstallError, match="codeoid@team"):
        install("project", home=home, project_dir=project, bin_dir=bin_dir)


# project scope


def test_project_scope_writes_local_settings_and_project_server_and_uninstalls_cleanly(
    home: Path, bin_dir: Path, project: Path
) -> None:
    _write(home / ".claude.json", OTHER_TOOL_STATE)
    _write(home / ".claude" / "settings.json", OTHER_TOOL_SETTINGS)

    install("project", home=home, project_dir=project, bin_dir=bin_dir)
    install("project", home=home, project_dir=project, bin_dir=bin_dir)

    local = _read(project / ".claude" / "settings.local.json")
    assert set(local["hooks"]) == set(TABLE_EVENTS)
    assert local["permissions"]["allow"] == [ALLOW_RULE]
    state = _read(home / ".claude.json")
    assert state["projects"][str(project)]["mcpServers"]["codeoid"]["alwaysLoad"] is True
    assert "codeoid" not in state["mcpServers"]
    assert _read(home / ".claude" / "settings.json") == OTHER_TOOL_SETTINGS

    uninstall("project", home=home, project_dir=project)

    assert not (project / ".claude").exists()
    assert _read(home / ".claude.json") == OTHER_TOOL_STATE


def test_user_and_project_installs_are_recorded_and_removed_separately(
    home: Path, bin_dir: Path, project: Path
) -> None:
    install("user", home=home, bin_dir=bin_dir)
    install("project", home=home, project_dir=project, bin_dir=bin_dir)

    uninstall("project", home=home, project_dir=project)

    assert "codeoid" in _read(home / ".claude.json")["mcpServers"]
    assert "projects" not in _read(home / ".claude.json")
    uninstall("user", home=home)
    assert not (home / ".claude.json").exists() and not (home / ".claude").exists()
    # Only the backups taken before the project install and uninstall changed the file the user install made.
    assert all(BACKUP_MARK in path.name for path in home.iterdir())


def test_claude_config_dir_moves_both_files(
    home: Path, bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))

    install(home=home, bin_dir=bin_dir)

    assert set(_read(config / "settings.json")["hooks"]) == set(TABLE_EVENTS)
    assert "codeoid" in _read(config / ".claude.json")["mcpServers"]
    assert list(home.iterdir()) == []


# backups and modes


def test_each_changed_file_is_backed_up_before_the_change_and_only_then(home: Path, bin_dir: Path) -> None:
    _write(home / ".claude" / "settings.json", OTHER_TOOL_SETTINGS)
    _write(home / ".claude.json", OTHER_TOOL_STATE)

    first = install(home=home, bin_dir=bin_dir)
    second = install(home=home, bin_dir=bin_dir)
    removal = uninstall(home=home)

    assert second.backups == [] and second.written == []
    assert len(first.backups) == 2 and len(removal.backups) == 2
    settings_backup, state_backup = first.backups
    assert _read(settings_backup) == OTHER_TOOL_SETTINGS and _read(state_backup) == OTHER_TOOL_STATE
    assert settings_backup.name.startswith("settings.json.codeoid-backup-")
    assert stat.S_IMODE(settings_backup.stat().st_mode) == 0o600
    assert _backups(home / ".claude") == sorted([settings_backup, removal.backups[0]])


def test_new_files_are_private_and_existing_files_keep_their_mode(home: Path, bin_dir: Path) -> None:
    _write(home / ".claude" / "settings.json", {"model": "opus"}, mode=0o644)

    install(home=home, bin_dir=bin_dir)

    assert stat.S_IMODE((home / ".claude" / "settings.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((Path(os.environ["CODEOID_HOME"]) / "install.json").stat().st_mode) == 0o600


def test_a_symlinked_settings_file_is_edited_through_its_link(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "settings.json"
    _write(dotfiles, {"model": "opus"})
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").symlink_to(dotfiles)

    install(home=home, bin_dir=bin_dir)

    assert (home / ".claude" / "settings.json").is_symlink()
    assert ALLOW_RULE in _read(dotfiles)["permissions"]["allow"]
    uninstall(home=home)
    assert _read(dotfiles) == {"model": "opus"}


def test_install_record_says_what_codeoid_added(home: Path, bin_dir: Path) -> None:
    _write(home / ".claude" / "settings.json", {"hooks": {}})
    install(home=home, bin_dir=bin_dir)

    (record,) = _read(Path(os.environ["CODEOID_HOME"]) / "install.json")["installs"]

    assert record["scope"] == "user" and record["project"] is None
    assert record["allow_rule_added"] is True
    assert record["settings_file"] == str(home / ".claude" / "settings.json")
    created = record["created"][record["settings_file"]]
    assert ["hooks"] not in created and ["hooks", "Stop"] in created and ["permissions"] in created
    assert [] in record["created"][str(home / ".claude.json")]


# doctor


def test_doctor_reports_a_missing_hook_and_wrong_permissions_in_words(home: Path, bin_dir: Path) -> None:
    install(home=home, bin_dir=bin_dir)
    path = home / ".claude" / "settings.json"
    settings = _read(path)
    del settings["hooks"]["Stop"]
    _write(path, settings)
    data = Path(os.environ["CODEOID_HOME"])
    data.chmod(0o755)
    (data / "install.json").chmod(0o644)

    failures = _statuses(doctor_report(home=home), "fail")

    assert f"No codeoid hook is registered for Stop in {path}" in failures
    assert f"{data} (0755, should be 0700)" in failures
    assert f"{data / 'install.json'} (0644, should be 0600)" in failures
    assert f"chmod -R go-rwx {data}" in failures


def test_doctor_is_content_with_a_fresh_install(home: Path, bin_dir: Path) -> None:
    install(home=home, bin_dir=bin_dir)

    report = doctor_report(home=home)

    assert _statuses(report, "fail") == ""
    oks = _statuses(report, "ok")
    assert f"All {len(HOOK_TABLE)} hooks are registered" in oks
    assert "The MCP server codeoid is registered" in oks
    assert "No events wait in the spool." in oks
    assert any(finding.sentence.startswith("codeoid ") for finding in report)


def test_doctor_fails_on_a_broken_rule_file_naming_its_file_and_line(home: Path, bin_dir: Path,
                                                                     project: Path) -> None:
    install(home=home, bin_dir=bin_dir)
    rules = project / ".codeoid" / "rules"
    rules.mkdir(parents=True)
    (rules / "bad.toml").write_text('[[rule]]\nname = "unterminated\n')

    failures = _statuses(doctor_report(home=home, project_dir=project), "fail")

    assert f"Rule file {rules / 'bad.toml'}:2: invalid TOML" in failures
    assert "the built-in rules and your other rules still apply" in failures


def test_doctor_names_hooks_whose_executable_is_gone(home: Path, bin_dir: Path) -> None:
    install(home=home, bin_dir=bin_dir)
    (bin_dir / "codeoid-hook").unlink()

    failures = _statuses(doctor_report(home=home), "fail")

    assert f"runs {bin_dir / 'codeoid-hook'}, which does not exist" in failures


def test_doctor_reports_two_routes_at_once(home: Path, bin_dir: Path) -> None:
    install(home=home, bin_dir=bin_dir)
    settings = _read(home / ".claude" / "settings.json")
    _write(home / ".claude" / "settings.json", {**settings, "enabledPlugins": {"codeoid@m": True}})

    assert "Two install routes are active at once" in _statuses(doctor_report(home=home), "fail")


def test_doctor_reports_spool_backlog_and_quarantined_databases(home: Path) -> None:
    data = Path(os.environ["CODEOID_HOME"])
    (data / "spool").mkdir(parents=True)
    (data / "quarantine").mkdir()
    (data / "spool" / "1-2-ab.event.json").write_text("{}")
    (data / "quarantine" / "store-20260101T000000-7.db").write_bytes(b"junk")
    (data / "quarantine" / "store-20260101T000000-7.db.reason").write_text("malformed")

    warnings = _statuses(doctor_report(home=home), "warn")

    assert "1 event(s) wait in the spool" in warnings
    assert "1 corrupt database(s) were moved aside" in warnings
    assert "store-20260101T000000-7.db" in warnings


def test_doctor_says_when_nothing_is_installed(home: Path) -> None:
    assert "codeoid is not installed" in _statuses(doctor_report(home=home), "fail")


# servers that hide codeoid's in one folder (what Claude Code 2.1.332 was seen to load: local, then any
# .mcp.json from the folder up, then user; a .mcp.json server named in disabledMcpjsonServers does not load)

OLD_CHECKOUT_SERVER = {"type": "stdio", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/launch-mcp", "args": []}


def _git_project(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path


def test_doctor_fails_where_a_project_mcp_json_hides_codeoids_server(home: Path, bin_dir: Path, tmp_path: Path
                                                                      ) -> None:
    checkout = _git_project(tmp_path / "checkout")
    _write(checkout / ".mcp.json", {"mcpServers": {"codeoid": OLD_CHECKOUT_SERVER}})
    install(home=home, project_dir=checkout, bin_dir=bin_dir)

    for folder in (checkout, checkout / "codeoid" / "memory"):
        folder.mkdir(parents=True, exist_ok=True)
        failed = _statuses(doctor_report(home=home, project_dir=folder), "fail")
        assert f"{checkout / '.mcp.json'} declares a project-scope MCP server named 'codeoid'" in failed
        assert "${CLAUDE_PLUGIN_ROOT}/hooks/launch-mcp" in failed and "no memory tools" in failed
        assert f'"disabledMcpjsonServers": ["codeoid"] in {checkout}/.claude/settings.local.json' in failed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    report = doctor_report(home=home, project_dir=elsewhere)
    assert not _statuses(report, "fail")
    assert f"No project or local MCP server named 'codeoid' hides codeoid's in {elsewhere}" in _statuses(report, "ok")


def test_install_says_when_the_folder_it_runs_in_hides_the_server(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    checkout = _git_project(tmp_path / "checkout")
    _write(checkout / ".mcp.json", {"mcpServers": {"codeoid": OLD_CHECKOUT_SERVER}})
    notes = " ".join(install(home=home, project_dir=checkout, bin_dir=bin_dir).notes)
    assert "declares a project-scope MCP server named 'codeoid'" in notes


def test_a_disabled_project_server_hides_nothing(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    checkout = _git_project(tmp_path / "checkout")
    _write(checkout / ".mcp.json", {"mcpServers": {"codeoid": OLD_CHECKOUT_SERVER}})
    _write(checkout / ".claude" / "settings.local.json", {"disabledMcpjsonServers": ["codeoid"]})
    install(home=home, project_dir=checkout, bin_dir=bin_dir)
    assert not _statuses(doctor_report(home=home, project_dir=checkout), "fail")


def test_a_project_server_of_codeoids_own_or_of_another_name_hides_nothing(home: Path, bin_dir: Path,
                                                                           tmp_path: Path) -> None:
    checkout = _git_project(tmp_path / "checkout")
    own = {"type": "stdio", "command": str(bin_dir / "codeoid-mcp"), "args": []}
    _write(checkout / ".mcp.json", {"mcpServers": {"codeoid": own, "github": OLD_CHECKOUT_SERVER}})
    install(home=home, project_dir=checkout, bin_dir=bin_dir)
    assert not _statuses(doctor_report(home=home, project_dir=checkout), "fail")


def test_doctor_fails_where_a_local_scope_server_hides_codeoids(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    checkout = _git_project(tmp_path / "checkout")
    install(home=home, project_dir=checkout, bin_dir=bin_dir)
    state = _read(home / ".claude.json")
    # Claude Code keys a local-scope server by the git root, and it then applies in every folder below.
    state["projects"] = {str(checkout): {"mcpServers": {"codeoid": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}}
    _write(home / ".claude.json", state)

    failed = _statuses(doctor_report(home=home, project_dir=checkout / "src"), "fail")
    assert f"has a local-scope MCP server named 'codeoid' for {checkout} (it runs http://127.0.0.1:9/mcp)" in failed
    assert f"`claude mcp remove -s local codeoid` run in {checkout}" in failed


# the plugin route's files


PLUGIN = REPO / "plugin"


def test_plugin_hooks_json_registers_the_same_events_matchers_and_timeouts_as_the_table() -> None:
    hooks = _read(PLUGIN / "hooks" / "hooks.json")["hooks"]

    assert list(hooks) == TABLE_EVENTS
    for registration in HOOK_TABLE:
        (group,) = hooks[registration.event]
        assert group.get("matcher") == registration.matcher
        assert group["hooks"] == [
            {
                "type": "command",
                "command": f'"${{CLAUDE_PLUGIN_ROOT}}"/hooks/launch codeoid-hook {registration.event}',
                "timeout": registration.timeout,
            }
        ]


def test_the_plugin_declares_its_server_in_its_manifest_and_the_checkout_has_no_project_server() -> None:
    """A `.mcp.json` at the checkout's root would be a project-scope server there, and a server named codeoid in
    it hides the user-scope one in every folder of the checkout (measured with the real CLI)."""
    assert _read(PLUGIN / ".claude-plugin" / "plugin.json")["mcpServers"] == {
        "codeoid": {
            "type": "stdio",
            "command": "${CLAUDE_PLUGIN_ROOT}/hooks/launch",
            "args": ["codeoid-mcp"],
            "alwaysLoad": True,
        }
    }
    tracked = subprocess.run(["git", "ls-files", "*.mcp.json", ".mcp.json"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout
    assert tracked == ""


def test_the_marketplace_offers_only_the_plugin_folder() -> None:
    marketplace = _read(REPO / ".claude-plugin" / "marketplace.json")
    assert [(plugin["name"], plugin["source"]) for plugin in marketplace["plugins"]] == [("codeoid", "./plugin")]
    assert not (REPO / ".claude-plugin" / "plugin.json").exists()  # the checkout itself is no plugin
    shipped = subprocess.run(["git", "ls-files", "plugin"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    assert sorted(shipped) == ["plugin/.claude-plugin/plugin.json", "plugin/commands/gain.md",
                               "plugin/commands/recall.md", "plugin/commands/rotate.md", "plugin/hooks/hooks.json",
                               "plugin/hooks/launch"]


def test_plugin_manifest_names_the_plugin_codeoid_at_the_package_version() -> None:
    from importlib.metadata import version

    manifest = _read(PLUGIN / ".claude-plugin" / "plugin.json")
    marketplace = _read(REPO / ".claude-plugin" / "marketplace.json")
    assert (manifest["name"], manifest["version"]) == ("codeoid", version("codeoid"))
    assert marketplace["plugins"][0]["version"] == version("codeoid")


def _launch(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PLUGIN / "hooks" / "launch"), *args],
        input='{"session_id": "s"}',
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(root / "home"), "CLAUDE_PLUGIN_ROOT": str(root / "plugin"),
             **(env or {})},
    )


def _fake_commands(bin_dir: Path) -> None:
    bin_dir.mkdir(parents=True)
    for name in ("codeoid-hook", "codeoid-mcp", "codeoid"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{bin_dir.name}/{name} $*"; cat\n')
        (bin_dir / name).chmod(0o755)


def test_hook_launcher_exits_quietly_when_codeoid_is_not_installed(tmp_path: Path) -> None:
    result = _launch(tmp_path, "codeoid-hook", "Stop")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_launcher_prefers_the_checkouts_venv(tmp_path: Path) -> None:
    _fake_commands(tmp_path / ".venv" / "bin")
    _fake_commands(tmp_path / "home" / ".local" / "bin")

    hook = _launch(tmp_path, "codeoid-hook", "Stop")
    server = _launch(tmp_path, "codeoid-mcp")

    assert (hook.returncode, hook.stdout) == (0, 'bin/codeoid-hook Stop\n{"session_id": "s"}')
    assert (server.returncode, server.stdout) == (0, 'bin/codeoid-mcp \n{"session_id": "s"}')


def test_a_plugin_copy_without_a_venv_finds_the_commands_linked_in_the_users_bin_dir(tmp_path: Path) -> None:
    """A marketplace's cache copy holds no venv, and Claude Code's PATH may lack ~/.local/bin."""
    _fake_commands(tmp_path / "home" / ".local" / "bin")
    _fake_commands(tmp_path / "xdg-bin")

    default = _launch(tmp_path, "codeoid", "gain", "--daily")
    xdg = _launch(tmp_path, "codeoid-hook", "Stop", env={"XDG_BIN_HOME": str(tmp_path / "xdg-bin")})

    assert (default.returncode, default.stdout) == (0, 'bin/codeoid gain --daily\n{"session_id": "s"}')
    assert (xdg.returncode, xdg.stdout) == (0, 'xdg-bin/codeoid-hook Stop\n{"session_id": "s"}')


def test_launcher_says_why_the_server_cannot_start(tmp_path: Path) -> None:
    result = _launch(tmp_path, "codeoid-mcp")
    assert result.returncode == 1
    assert "codeoid-mcp was found neither" in result.stderr and "./install.sh --plugin" in result.stderr


@pytest.mark.skipif(shutil.which("claude") is None and not os.environ.get("CODEOID_CLAUDE_BIN"),
                    reason="no claude binary: set CODEOID_CLAUDE_BIN (./test.sh does)")
@pytest.mark.parametrize("folder", ["plugin", "."], ids=["the plugin", "the marketplace"])
def test_claude_validates_the_plugin_and_the_marketplace(tmp_path: Path, folder: str) -> None:
    claude = os.environ.get("CODEOID_CLAUDE_BIN") or shutil.which("claude")
    result = subprocess.run(
        [str(claude), "plugin", "validate", str(REPO / folder)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path), "DISABLE_UPDATES": "1", "DISABLE_INSTALLATION_CHECKS": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
