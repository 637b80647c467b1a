"""The `/rotate` slash command, as a Claude Code command file.

Both routes install it with codeoid's other commands (`codeoid.setup.slash_commands`). The UserPromptSubmit hook
acts on `/rotate` and blocks it, so the body below reaches the model only when codeoid's hooks are not running at
all.
"""

from __future__ import annotations

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

