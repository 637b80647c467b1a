"""What `codeoid install` adds for rotation: the status line only where the user has none, and `/rotate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeoid.rotation.command import ROTATE_COMMAND
from codeoid.setup.install import install, uninstall


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEOID_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "venv" / "bin"
    directory.mkdir(parents=True)
    for name in ("codeoid-hook", "codeoid-mcp", "codeoid"):
        (directory / name).write_text("#!/bin/sh\nexit 0\n")
        (directory / name).chmod(0o755)
    return directory


def test_install_adds_the_status_line_where_the_user_has_none(home: Path, bin_dir: Path) -> None:
    install(home=home, bin_dir=bin_dir)
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["statusLine"]["type"] == "command"
    assert settings["statusLine"]["command"].endswith(f"{bin_dir / 'codeoid'} statusline")

    uninstall(home=home)
    assert not (home / ".claude" / "settings.json").exists()


def test_install_never_replaces_the_users_status_line(home: Path, bin_dir: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"statusLine": {"type": "command", "command": "~/bin/mine"}}))

    install(home=home, bin_dir=bin_dir)
    assert json.loads(path.read_text())["statusLine"] == {"type": "command", "command": "~/bin/mine"}
    uninstall(home=home)
    assert json.loads(path.read_text()) == {"statusLine": {"type": "command", "command": "~/bin/mine"}}


def test_install_adds_slash_rotate_unless_the_user_has_one(home: Path, bin_dir: Path) -> None:
    command = home / ".claude" / "commands" / "rotate.md"
    install(home=home, bin_dir=bin_dir)
    assert command.read_text() == ROTATE_COMMAND
    uninstall(home=home)
    assert not command.exists()

    command.parent.mkdir(parents=True)
    command.write_text("my own rotate\n")
    install(home=home, bin_dir=bin_dir)
    uninstall(home=home)
    assert command.read_text() == "my own rotate\n"
