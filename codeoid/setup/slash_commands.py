"""codeoid's slash commands, `/rotate`, `/recall` and `/gain`, as Claude Code command files, on both routes.

The plugin route ships them in `plugin/commands/` (a test keeps those files equal to `command_texts(PLUGIN_CODEOID)`);
the settings route's `codeoid install` writes them into the user's (or project's) `commands/` folder, where Claude
Code turns each file into a command, unless a file of the user's own is there already. `uninstall` removes only
files that are still exactly codeoid's text.

`/gain` runs `codeoid gain` through Claude Code's `!` command expansion, by absolute path (the venv is not on
PATH), and permits exactly that command with `allowed-tools`; the plugin's copy runs it through the plugin's
launcher, which finds the installed package.
"""

from __future__ import annotations

import re
from pathlib import Path

from codeoid.rotation.command import COMMAND_FILE as ROTATE_FILE
from codeoid.rotation.command import ROTATE_COMMAND

# The plugin holds no Python: its launcher finds the installed package (plugin/hooks/launch says where it looks).
PLUGIN_CODEOID = "${CLAUDE_PLUGIN_ROOT}/hooks/launch codeoid"
GAIN_ARGS = "gain --daily --since 30d"

RECALL_COMMAND = """\
---
description: Search codeoid's verbatim memory of this workspace
argument-hint: <what to look for>
---
Search the verbatim history of this workspace with codeoid's `recall` tool (named `mcp__codeoid__recall`, or
`mcp__plugin_codeoid_codeoid__recall` when codeoid is installed as a plugin) for: $ARGUMENTS

Quote what you find exactly and name the episode ids and lines; `get_episode(id, lines="a-b")` returns more.
"""

GAIN_TEMPLATE = """\
---
description: Show the tokens codeoid's compression kept out of the context window, per day
allowed-tools: Bash({codeoid} gain:*)
---
codeoid's savings ledger, from `codeoid {args}`:

!`{codeoid} {args}`

Show the user the table above exactly as it is, in a code block, then say in one sentence how many tokens were
saved net in total. Do nothing else.
"""


def gain_command(codeoid: str) -> str:
    return GAIN_TEMPLATE.format(codeoid=codeoid, args=GAIN_ARGS)


def command_texts(codeoid: str) -> dict[str, str]:
    """Every command file by name, for a codeoid executable at `codeoid`."""
    return {ROTATE_FILE: ROTATE_COMMAND, "recall.md": RECALL_COMMAND, "gain.md": gain_command(codeoid)}


def install_commands(commands_dir: Path, codeoid: str) -> list[Path]:
    """Write each command into `commands_dir` unless a file of that name is there already; the paths written."""
    written = []
    for name, text in command_texts(codeoid).items():
        path = commands_dir / name
        if path.exists():
            continue
        commands_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def remove_commands(commands_dir: Path) -> list[Path]:
    """Remove codeoid's commands that are still exactly codeoid's text (`/gain` for any codeoid path); the paths
    removed."""
    removed = []
    for name, pattern in _own_texts().items():
        path = commands_dir / name
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if pattern.fullmatch(text):
            path.unlink()
            removed.append(path)
    return removed


def _own_texts() -> dict[str, re.Pattern[str]]:
    """Each command file's text as a pattern, the codeoid path left open (the venv may have moved since)."""
    marker = "\x00codeoid\x00"
    return {name: re.compile(re.escape(text).replace(re.escape(marker), r"[^`\n]+"), re.DOTALL)
            for name, text in command_texts(marker).items()}
