"""`codeoid uninstall` as a user runs it: it stops every process codeoid started for the data dir (the memory
service, the Chroma watchdog and `chroma run`, real ones here), checks none is left, takes codeoid's links off
PATH, leaves the user's files as they were, and says what stays (the data dir, its size, how to delete it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from conftest import executable

from codeoid.setup import bin_links
from codeoid.setup.json_config import BACKUP_MARK


@pytest.fixture
def world(tmp_path: Path) -> dict[str, str]:
    """A private HOME with another tool's settings in it, and a data dir of its own."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["Bash(git status:*)"]},
         "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}, indent=2))
    (home / ".claude.json").write_text(json.dumps(
        {"hasCompletedOnboarding": True, "mcpServers": {"github": {"command": "gh-mcp", "args": ["serve"]}}}))
    (home / ".bashrc").write_text("# the user's own\n")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("CLAUDE", "CODEOID_", "XDG_"))}
    env.update(HOME=str(home), CODEOID_HOME=str(tmp_path / "codeoid data"), PATH="/usr/bin:/bin")
    return env


def _codeoid(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([executable("codeoid"), *args], env=env, cwd=cwd or env["HOME"], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def _user_files(home: Path) -> dict[str, object]:
    """Every file, folder and link under HOME but codeoid's backups (uninstall names each), with its contents: a
    JSON file's as data (codeoid writes them indented, as Claude Code does), any other file's as bytes."""
    found: dict[str, object] = {}
    for path in sorted(home.rglob("*")):
        if BACKUP_MARK in path.name:
            continue
        if path.is_symlink():
            found[str(path.relative_to(home))] = os.readlink(path)
        elif path.is_file():
            found[str(path.relative_to(home))] = (json.loads(path.read_text()) if path.suffix == ".json"
                                                  else path.read_bytes())
        else:
            found[str(path.relative_to(home))] = "<dir>"
    return found


def _start_background(env: dict[str, str]) -> list[int]:
    """The memory service and the local Chroma server, started the way a session starts them."""
    started = subprocess.run(
        [sys.executable, "-c", "from codeoid.service import lifecycle\nfrom codeoid.memory import chroma_server\n"
         "service = lifecycle.ensure_service()\nserver = chroma_server.ensure_server()\n"
         "print(service.pid, server.watchdog_pid, server.chroma_pid)"],
        env=env, capture_output=True, text=True, timeout=120, check=True)
    return [int(pid) for pid in started.stdout.split()]


def _alive(pids: list[int]) -> list[int]:
    def running(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    return [pid for pid in pids if running(pid)]


@pytest.mark.slow
def test_uninstall_stops_the_memory_service_chroma_and_its_watchdog_and_none_is_left(world: dict[str, str]) -> None:
    assert _codeoid(world, "install").returncode == 0
    pids = _start_background(world)
    assert len(_alive(pids)) == 3

    done = _codeoid(world, "uninstall")

    assert done.returncode == 0, done.stdout + done.stderr
    assert _alive(pids) == []
    service, watchdog, chroma = pids
    assert (f"Stopped the memory service (pid {service}), Chroma watchdog (pid {watchdog}), Chroma server (pid "
            f"{chroma}); no codeoid background process is left.") in done.stdout


@pytest.mark.slow
def test_uninstall_finds_background_processes_whose_state_files_are_gone(world: dict[str, str]) -> None:
    pids = _start_background(world)
    data = Path(world["CODEOID_HOME"])
    (data / "service" / "service.json").unlink()
    (data / "chroma-server" / "server.json").unlink()

    done = _codeoid(world, "uninstall")

    assert done.returncode == 0, done.stdout + done.stderr
    assert _alive(pids) == []
    assert "no codeoid background process is left" in done.stdout


def test_install_then_uninstall_leaves_the_users_files_as_they_were_and_says_what_stays(
        world: dict[str, str]) -> None:
    home = Path(world["HOME"])
    before = _user_files(home)

    installed = _codeoid(world, "install")
    assert installed.returncode == 0, installed.stderr
    assert (home / ".local" / "bin" / "codeoid").is_symlink()
    done = _codeoid(world, "uninstall")

    assert done.returncode == 0, done.stderr
    assert _user_files(home) == before
    backups = sorted(path for path in home.rglob(f"*{BACKUP_MARK}*"))
    assert backups and all(f"backup {path}" in installed.stdout + done.stdout for path in backups)
    data = world["CODEOID_HOME"]
    assert f"Still here: the data dir {data} (" in done.stdout
    assert f"Delete it with `codeoid uninstall --purge`, or `rm -rf {data}`." in done.stdout
    assert f"The codeoid package stays installed in {sys.prefix}" in done.stdout


def test_uninstall_purge_deletes_the_data_dir_only_when_asked(world: dict[str, str]) -> None:
    _codeoid(world, "install")
    data = Path(world["CODEOID_HOME"])
    assert data.is_dir()

    refused = subprocess.run([executable("codeoid"), "uninstall", "--purge"], env=world, input="n\n",
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and data.is_dir()
    assert f"Delete {data} (" in refused.stdout

    done = _codeoid(world, "uninstall", "--purge", "--yes")
    assert done.returncode == 0, done.stderr
    assert not data.exists()
    assert f"Deleted the data dir {data} (" in done.stdout


# the links on PATH


def _console_script(directory: Path, name: str, module: str = "codeoid.cli") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / name
    script.write_text(f"#!/usr/bin/env python3\nimport sys\nfrom {module} import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def venv_bin(tmp_path: Path) -> Path:
    directory = tmp_path / "venv" / "bin"
    for name in bin_links.COMMANDS:
        _console_script(directory, name)
    return directory


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    for name in ("CODEOID_BIN_DIR", "XDG_BIN_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEOID_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return home


def test_commands_are_linked_into_local_bin_once_and_unlinked_with_the_folder_codeoid_made(
        user_home: Path, venv_bin: Path) -> None:
    first = bin_links.link_commands(venv_bin, user_home)
    again = bin_links.link_commands(venv_bin, user_home)

    local_bin = user_home / ".local" / "bin"
    assert first.linked == [local_bin / name for name in bin_links.COMMANDS]
    assert all(os.readlink(local_bin / name) == str(venv_bin / name) for name in bin_links.COMMANDS)
    assert again.linked == [] and again.left_alone == []
    assert any(f"{local_bin} is not on your PATH" in note for note in first.notes())

    removed = bin_links.unlink_commands(user_home)
    assert removed.removed == first.linked
    assert not (user_home / ".local").exists()  # codeoid made ~/.local/bin and ~/.local: both go again


def test_no_path_note_when_the_bin_dir_is_on_path(user_home: Path, venv_bin: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{user_home}/.local/bin:/usr/bin")
    assert bin_links.link_commands(venv_bin, user_home).notes() == []


def test_a_users_own_codeoid_in_the_bin_dir_is_left_alone_by_link_and_unlink(user_home: Path, venv_bin: Path,
                                                                             tmp_path: Path) -> None:
    local_bin = user_home / ".local" / "bin"
    own = _console_script(local_bin, "codeoid", module="my_tools")
    elsewhere = _console_script(tmp_path / "other", "codeoid-compress", module="my_tools")
    (local_bin / "codeoid-compress").symlink_to(elsewhere)

    linked = bin_links.link_commands(venv_bin, user_home)
    assert linked.left_alone == [own, local_bin / "codeoid-compress"]
    assert any("is not codeoid's: left alone" in note for note in linked.notes())
    bin_links.unlink_commands(user_home)

    assert own.read_text().endswith("from my_tools import main\nsys.exit(main())\n")
    assert os.readlink(local_bin / "codeoid-compress") == str(elsewhere)
    assert sorted(path.name for path in local_bin.iterdir()) == ["codeoid", "codeoid-compress"]


def test_a_link_to_a_deleted_or_moved_codeoid_is_pointed_at_this_one(user_home: Path, venv_bin: Path,
                                                                     tmp_path: Path) -> None:
    local_bin = user_home / ".local" / "bin"
    local_bin.mkdir(parents=True)
    (local_bin / "codeoid").symlink_to(tmp_path / "deleted-venv" / "bin" / "codeoid")
    _console_script(tmp_path / "old-venv" / "bin", "codeoid-mcp", module="codeoid.mcp_server.main")
    (local_bin / "codeoid-mcp").symlink_to(tmp_path / "old-venv" / "bin" / "codeoid-mcp")

    outcome = bin_links.link_commands(venv_bin, user_home)

    assert outcome.left_alone == []
    assert os.readlink(local_bin / "codeoid") == str(venv_bin / "codeoid")
    assert os.readlink(local_bin / "codeoid-mcp") == str(venv_bin / "codeoid-mcp")
    bin_links.unlink_commands(user_home)
    assert list(local_bin.iterdir()) == []  # the folder was the user's: it stays


@pytest.mark.parametrize("variable", ["CODEOID_BIN_DIR", "XDG_BIN_HOME"])
def test_the_bin_dir_follows_codeoid_bin_dir_then_xdg_bin_home(user_home: Path, venv_bin: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch, variable: str
                                                               ) -> None:
    monkeypatch.setenv(variable, str(tmp_path / "my-bin"))
    assert bin_links.link_commands(venv_bin, user_home).bin_dir == tmp_path / "my-bin"
    assert (tmp_path / "my-bin" / "codeoid").is_symlink() and not (user_home / ".local").exists()


def test_codeoid_version_runs_from_any_folder_through_the_link(world: dict[str, str], tmp_path: Path) -> None:
    assert _codeoid(world, "install").returncode == 0
    linked = Path(world["HOME"]) / ".local" / "bin" / "codeoid"
    from importlib.metadata import version

    for folder in (tmp_path, Path(__file__).resolve().parent.parent, Path("/")):
        shown = subprocess.run([str(linked), "--version"], cwd=folder, env=world, capture_output=True, text=True,
                               timeout=60)
        assert shown.returncode == 0 and shown.stdout.strip().endswith(version("codeoid")), shown.stderr
