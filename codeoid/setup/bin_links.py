"""codeoid's commands on PATH, the way pipx puts a tool's commands there: a symlink per console script in the
user's bin directory, pointing into the environment codeoid is installed in.

The bin directory is `CODEOID_BIN_DIR` if set, else `XDG_BIN_HOME`, else `~/.local/bin` (pipx's and uv's
default, on PATH in most distributions' default profiles). A link is codeoid's when it is a symlink named like one
of codeoid's commands whose target is that same command of a codeoid install (or of one since deleted); only
those are replaced or removed, so a user's own `codeoid` script there is never touched. A bin directory codeoid
had to create is recorded in the data dir (`links.json`) and removed again with the last link when empty.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from codeoid import paths

COMMANDS = ("codeoid", "codeoid-compress", "codeoid-hook", "codeoid-mcp")
RECORD_NAME = "links.json"
# pip writes console scripts as `from codeoid.cli import main` and so on; a foreign script says nothing of it.
_SCRIPT_MARK = b"from codeoid."


@dataclass
class LinkOutcome:
    """What linking or unlinking did, for the CLI to print."""

    bin_dir: Path
    linked: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    left_alone: list[Path] = field(default_factory=list)
    removed_dirs: list[Path] = field(default_factory=list)

    @property
    def on_path(self) -> bool:
        return is_on_path(self.bin_dir)

    def notes(self) -> list[str]:
        notes = [f"{path} is not codeoid's: left alone (codeoid's own is {path.name} in the environment it is "
                 "installed in)." for path in self.left_alone]
        if self.linked and not self.on_path:
            notes.append(f"{self.bin_dir} is not on your PATH, so your shell does not find `codeoid` yet: add "
                         f"`export PATH=\"{_shell_path(self.bin_dir)}:$PATH\"` to your shell's profile "
                         "(~/.bashrc, ~/.zshrc), then open a new terminal.")
        return notes


def bin_dir(home: Path | None = None) -> Path:
    """The user's bin directory, as pipx and uv choose it."""
    override = os.environ.get("CODEOID_BIN_DIR") or os.environ.get("XDG_BIN_HOME")
    if override:
        return Path(override).expanduser().absolute()
    return (home or Path.home()).absolute() / ".local" / "bin"


def is_on_path(directory: Path) -> bool:
    wanted = os.path.realpath(directory)
    return any(os.path.realpath(entry) == wanted for entry in os.environ.get("PATH", "").split(os.pathsep) if entry)


def link_commands(source_dir: Path, home: Path | None = None) -> LinkOutcome:
    """Link each of codeoid's commands in `source_dir` (the environment's bin) into the user's bin directory;
    running it again changes nothing, and a link to another codeoid install is pointed at this one."""
    target_dir = bin_dir(home)
    outcome = LinkOutcome(target_dir)
    created = _missing_dirs(target_dir)
    target_dir.mkdir(parents=True, exist_ok=True)
    if created:
        _save_created_dirs(sorted({*_load_created_dirs(), *map(str, created)}, key=len, reverse=True))
    for name in COMMANDS:
        source = source_dir / name
        link = target_dir / name
        if not os.access(source, os.X_OK):
            continue
        if os.path.lexists(link):
            if os.path.islink(link) and os.readlink(link) == str(source):
                continue
            if not is_codeoid_link(link):
                outcome.left_alone.append(link)
                continue
        temporary = link.with_name(f".{name}.codeoid-{os.getpid()}")
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(source)
        os.replace(temporary, link)  # a shell looking the command up meanwhile finds the old link or the new one
        outcome.linked.append(link)
    return outcome


def unlink_commands(home: Path | None = None) -> LinkOutcome:
    """Remove codeoid's links from the user's bin directory, and that directory if codeoid created it and nothing
    else lives there."""
    target_dir = bin_dir(home)
    outcome = LinkOutcome(target_dir)
    for name in COMMANDS:
        link = target_dir / name
        if is_codeoid_link(link):
            link.unlink()
            outcome.removed.append(link)
    remaining = []
    for directory in _load_created_dirs():
        try:
            os.rmdir(directory)
            outcome.removed_dirs.append(Path(directory))
        except FileNotFoundError:
            continue
        except OSError:
            remaining.append(directory)  # not empty: something else lives there now
    _save_created_dirs(remaining)
    return outcome


def is_codeoid_link(path: Path) -> bool:
    """Whether `path` is a link codeoid made: a symlink to the same-named command of a codeoid install."""
    if not os.path.islink(path):
        return False
    target = os.readlink(path)
    if os.path.basename(target) != path.name or path.name not in COMMANDS:
        return False
    resolved = path.parent / target
    if not os.path.lexists(resolved):
        return os.path.basename(os.path.dirname(target)) == "bin"  # its venv was deleted: a stale link of ours
    try:
        with open(resolved, "rb") as script:
            return _SCRIPT_MARK in script.read(4096)
    except OSError:
        return False


def _missing_dirs(directory: Path) -> list[Path]:
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    return missing


def _record_path() -> str:
    return os.path.join(paths.data_dir_location(), RECORD_NAME)


def _load_created_dirs() -> list[str]:
    try:
        with open(_record_path(), encoding="utf-8") as file:
            dirs = json.load(file).get("created_dirs", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [entry for entry in dirs if isinstance(entry, str)]


def _save_created_dirs(dirs: list[str]) -> None:
    if not dirs:
        try:
            os.unlink(_record_path())
        except FileNotFoundError:
            pass
        return
    paths.write_private(os.path.join(paths.data_dir(), RECORD_NAME), json.dumps({"created_dirs": dirs}).encode())


def _shell_path(directory: Path) -> str:
    """`directory` as a shell profile would write it: `$HOME/...` under the home directory."""
    home = str(Path.home())
    text = str(directory)
    return "$HOME" + text[len(home):] if text == home or text.startswith(home + os.sep) else text
