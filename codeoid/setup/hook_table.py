"""The one table of hook registrations codeoid makes, and the commands that run them.

`codeoid install` writes these into Claude Code's settings, `codeoid doctor` checks them, and the plugin route's
`hooks/hooks.json` repeats them (a test keeps the two equal). Timeouts are short and explicit because Claude Code's
default for a command hook is ten minutes: a stuck hook must cost the user seconds, not a session. This module
stays stdlib-only and avoids `pathlib` and `dataclasses` (each costs milliseconds to import), so anything, however
hot its path, can import it.
"""

from __future__ import annotations

import os
import sys

HOOK_EXECUTABLE = "codeoid-hook"
MCP_EXECUTABLE = "codeoid-mcp"
MCP_SERVER_NAME = "codeoid"
# A bare server name pre-allows every tool of that server; `mcp__*` patterns are ignored by Claude Code.
ALLOW_RULE = f"mcp__{MCP_SERVER_NAME}"
# Every program codeoid ships: a command whose program is one of these is codeoid's own (a statusLine, say).
CODEOID_PROGRAMS = frozenset({"codeoid", HOOK_EXECUTABLE, MCP_EXECUTABLE, "codeoid-compress"})


class HookRegistration:
    """One Claude Code event codeoid listens to: `matcher` None means the group carries no matcher key."""

    __slots__ = ("event", "matcher", "timeout")

    def __init__(self, event: str, matcher: str | None, timeout: int) -> None:
        self.event = event
        self.matcher = matcher
        self.timeout = timeout


HOOK_TABLE: tuple[HookRegistration, ...] = (
    HookRegistration("SessionStart", None, 10),
    HookRegistration("UserPromptSubmit", None, 10),
    # The Bash rewrite never touches the store; past a few seconds something is wrong, and on a timeout
    # Claude Code runs the command as it was.
    HookRegistration("PreToolUse", "Bash", 5),
    HookRegistration("PostToolUse", "*", 10),
    HookRegistration("PostToolUseFailure", "*", 10),
    HookRegistration("Stop", None, 10),
    HookRegistration("StopFailure", None, 10),
    HookRegistration("SubagentStop", None, 10),
    HookRegistration("PreCompact", None, 10),
    # Claude Code is shutting down; it caps SessionEnd hooks on its own as well.
    HookRegistration("SessionEnd", None, 5),
)


def installed_executable(name: str) -> str:
    """The absolute path of one of codeoid's console scripts in the running interpreter's environment.

    Looked up beside `sys.executable` (the venv's `bin`), never through PATH, where a pyenv or asdf shim could
    stand in and later run a different Python. The interpreter path is made absolute but not resolved, since a
    venv's `python` is a symlink to the base interpreter whose `bin` lacks codeoid's scripts.
    """
    return os.path.join(os.path.dirname(os.path.abspath(sys.executable)), name)


def hook_command(executable: str, event: str, codeoid_home: str | None) -> str:
    """The shell command a settings file runs for `event`.

    `CODEOID_HOME` is pinned into the command only when the installer had it set, so hooks write to the same
    data dir as the installer rather than to whatever the environment of `claude` says.
    """
    import shlex  # not at import: the rewrite hook reads `installed_executable` and must not pay for shlex and re

    prefix = f"CODEOID_HOME={shlex.quote(codeoid_home)} " if codeoid_home else ""
    return f"{prefix}{shlex.quote(executable)} {event}"


def hook_handler(executable: str, registration: HookRegistration, codeoid_home: str | None) -> dict[str, object]:
    """The settings handler object for one registration."""
    return {
        "type": "command",
        "command": hook_command(executable, registration.event, codeoid_home),
        "timeout": registration.timeout,
    }


def hook_group(handler: dict[str, object], registration: HookRegistration) -> dict[str, object]:
    """A matcher group holding one handler, in the shape `hooks.<Event>` lists take."""
    group: dict[str, object] = {}
    if registration.matcher is not None:
        group["matcher"] = registration.matcher
    group["hooks"] = [handler]
    return group


class ParsedCommand:
    """A shell command split into its leading `VAR=value` assignments and the program word that follows."""

    __slots__ = ("environment", "executable")

    def __init__(self, environment: dict[str, str], executable: str | None) -> None:
        self.environment = environment
        self.executable = executable

    @property
    def program(self) -> str | None:
        """The program's file name: matching on it rather than the whole path is what lets install and
        uninstall recognise codeoid's entries written from a venv that has since moved."""
        return os.path.basename(self.executable) if self.executable else None


def parse_command(command: str) -> ParsedCommand:
    """Split `command` as the shell would; a command that does not parse as shell words has no program."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return ParsedCommand({}, None)
    environment: dict[str, str] = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not (equals and name.isidentifier()):
            return ParsedCommand(environment, word)
        environment[name] = value
    return ParsedCommand(environment, None)


def is_codeoid_handler(handler: object) -> bool:
    """Whether a settings hook handler is codeoid's: a command whose program is codeoid-hook, wherever it lives."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and parse_command(command).program == HOOK_EXECUTABLE


def is_codeoid_server(entry: object) -> bool:
    """Whether an MCP server entry is codeoid's: its command (a path, not a shell line) is codeoid-mcp."""
    command = entry.get("command") if isinstance(entry, dict) else None
    return isinstance(command, str) and os.path.basename(command) == MCP_EXECUTABLE
