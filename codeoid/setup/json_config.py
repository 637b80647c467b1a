"""Reading and rewriting the user's JSON config files (Claude Code settings, `~/.claude.json`) without harm.

These files belong to the user and to Claude Code, which rewrites `~/.claude.json` constantly, so every change
is a whole-file atomic replace (a reader never sees half a file), keeps the file's mode (`~/.claude.json` holds
account state and is 0600), writes through a symlink to its target (dotfile managers link settings files), and
is preceded by a backup copy of what was there.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeoid.paths import FILE_MODE, open_private

BACKUP_MARK = ".codeoid-backup-"


class InstallError(Exception):
    """An install-route operation cannot go on; the message says what to do about it."""


def load_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, None when the file does not exist (a blank file counts as `{}`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise InstallError(f"Cannot read {path} ({error}): fix its permissions or contents, then run again.") from error
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InstallError(
            f"{path} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
            "fix it by hand or move it away, then run again."
        ) from error
    if not isinstance(data, dict):
        raise InstallError(f"{path} holds a JSON {type(data).__name__}, not an object; fix it by hand, then run again.")
    return data


def write_atomic(path: Path, data: dict[str, Any], *, mode: int | None = None) -> None:
    """Replace the file's contents with `data` in one rename, with `mode` if given, else keeping the file's
    mode (new files are 0600)."""
    target = Path(os.path.realpath(path))
    if mode is None:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = FILE_MODE
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".codeoid-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fchmod(file.fileno(), mode)
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _fsync_directory(target.parent)


def back_up(path: Path) -> Path:
    """Copy `path` to `<path>.codeoid-backup-<UTC timestamp>` (0600: the file may hold account secrets)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    content = path.read_bytes()
    for attempt in range(1, 100):
        suffix = stamp if attempt == 1 else f"{stamp}-{attempt}"
        backup = path.with_name(f"{path.name}{BACKUP_MARK}{suffix}")
        try:
            fd = open_private(str(backup), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        return backup
    raise InstallError(f"Too many backups of {path} made within one second; wait a moment and run again.")


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable, so a crash cannot bring back the old file."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
