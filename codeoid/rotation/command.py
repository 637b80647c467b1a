"""The `/rotate` slash command, as a Claude Code command file.

The plugin route ships it as `commands/rotate.md` (a test keeps that file equal to `ROTATE_COMMAND`); the settings
route's `codeoid install` writes it into the user's (or project's) `commands/` folder, where Claude Code turns it
into `/rotate`, unless a `rotate.md` of the user's own is already there. The UserPromptSubmit hook acts on `/rotate`
and blocks it, so the body below reaches the model only when codeoid's hooks are not running at all.
"""

from __future__ import annotations

from pathlib import Path

COMMAND_FILE = "rotate.md"
ROTATE_COMMAND = """\
---
description: Rotate this codeoid session into a fresh context window now (under `codeoid run`)
---
The user asked codeoid to rotate this session into a fresh context window, but codeoid's hooks did not take the
request, so codeoid is not running for this session. Tell the user, in one or two sentences, that rotation works
only when Claude Code is started as `codeoid run [claude options]` with codeoid installed (`codeoid install`), and
that `codeoid doctor` shows what is missing. Do nothing else.
"""


def install_command(commands_dir: Path) -> Path | None:
    """Write `/rotate` into `commands_dir` unless a `rotate.md` is there already; the path written, or None."""
    path = commands_dir / COMMAND_FILE
    if path.exists():
        return None
    commands_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(ROTATE_COMMAND, encoding="utf-8")
    return path


def remove_command(commands_dir: Path) -> Path | None:
    """Remove codeoid's `/rotate` (only if it is still exactly codeoid's text); the path removed, or None."""
    path = commands_dir / COMMAND_FILE
    try:
        if path.read_text(encoding="utf-8") != ROTATE_COMMAND:
            return None
    except (OSError, UnicodeDecodeError):
        return None
    path.unlink()
    return path
