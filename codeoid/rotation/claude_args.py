"""The command line of each backing `claude`: the user's own arguments, plus what the supervisor must add.

The first window gets the user's arguments as typed (their prompt, their `--resume`). A rotated window gets their
options without the ones that pick a conversation (`--resume`, `--continue`, `--session-id`, ...) and without their
prompt, since it starts a new conversation whose first message, if any, is the seed and the handed-over prompt.
Every window gets the supervisor's settings layer (`--settings`, merged with one the user passed) and, where the
user did not pick a conversation, a `--session-id` chosen by the supervisor, so it knows the backing id up front.

Claude Code's option table (2.1.332 `--help`) is needed to tell an option's value from the prompt.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Options that would take codeoid's hooks away, or that are not an interactive session to supervise.
REFUSED = {
    "--bare": "it skips hooks, so nothing would be stored and rotation could not work",
    "--safe-mode": "it disables hooks, so nothing would be stored and rotation could not work",
    "--restricted": "it ignores the settings that register codeoid's hooks",
    "-p": "codeoid run supervises interactive sessions; run `claude -p` directly",
    "--print": "codeoid run supervises interactive sessions; run `claude -p` directly",
    "--bg": "a background session has no terminal to supervise",
    "--background": "a background session has no terminal to supervise",
}
REQUIRED_VALUE = {
    "--agent", "--agents", "--append-system-prompt", "--append-system-prompt-file", "--autocompact", "--debug-file",
    "--effort", "--environment", "--fallback-model", "--input-format", "--json-schema", "--max-budget-usd",
    "--model", "-n", "--name", "--output-format", "--permission-mode", "--permission-prompts", "--plugin-dir",
    "--plugin-url", "--remote-control-session-name-prefix", "--session-id", "--setting-sources", "--settings",
    "--system-prompt", "--system-prompt-file", "--system-prompt-snapshot", "--permission-prompt-tool",
}
OPTIONAL_VALUE = {"--cloud", "-d", "--debug", "--from-pr", "--prompt-suggestions", "--remote-control", "-r",
                  "--resume", "--teleport", "-w", "--worktree"}
VARIADIC = {"--add-dir", "--allowedTools", "--allowed-tools", "--betas", "--disallowedTools", "--disallowed-tools",
            "--file", "--mcp-config", "--tools"}
# Options that choose which conversation the process holds: only the first window may carry them.
CONVERSATION = {"-r", "--resume", "-c", "--continue", "--session-id", "--fork-session", "--from-pr", "--teleport"}


class ArgsError(ValueError):
    """The user's claude arguments cannot be supervised; the message says why."""


@dataclass
class ClaudeArgs:
    """The user's arguments, split into options (each with its values) and the positional prompt."""

    options: list[list[str]] = field(default_factory=list)
    prompt: list[str] = field(default_factory=list)

    def has(self, *names: str) -> bool:
        return any(_name(option[0]) in names for option in self.options)

    def value(self, name: str) -> str | None:
        """The last value given to `name` (`--name value` or `--name=value`)."""
        found = None
        for option in self.options:
            if _name(option[0]) == name:
                found = option[0].partition("=")[2] if "=" in option[0] else (option[1] if len(option) > 1 else None)
        return found


def parse(args: list[str]) -> ClaudeArgs:
    """Split claude arguments the way Claude Code's parser would; refuse the ones that defeat supervision."""
    parsed = ClaudeArgs()
    index = 0
    while index < len(args):
        word = args[index]
        name = _name(word)
        if word == "--":
            parsed.prompt.extend(args[index + 1:])
            break
        if not word.startswith("-") or word == "-":
            parsed.prompt.append(word)
            index += 1
            continue
        if name in REFUSED:
            raise ArgsError(f"codeoid run does not pass {name} to claude: {REFUSED[name]}.")
        option = [word]
        index += 1
        if "=" not in word:
            takes_next = index < len(args) and (
                name in REQUIRED_VALUE or (name in OPTIONAL_VALUE and not args[index].startswith("-")))
            if takes_next:
                option.append(args[index])
                index += 1
            elif name in VARIADIC:
                while index < len(args) and not args[index].startswith("-"):
                    option.append(args[index])
                    index += 1
        parsed.options.append(option)
    return parsed


def backing_argv(claude_bin: str, user: ClaudeArgs, *, first: bool, session_id: str, settings: dict[str, Any],
                 prompt: str | None, extra: tuple[str, ...] = ()) -> list[str]:
    """The argv of one backing `claude`.

    `settings` is the supervisor's layer, merged over the user's own `--settings`; `extra` are further options
    (an `--mcp-config` wiring codeoid in); `prompt`, when given, is the first message (for a rotated window:
    the seed and the handed-over prompt).
    """
    argv = [claude_bin]
    for option in user.options:
        name = _name(option[0])
        if name == "--settings" or (not first and name in CONVERSATION):
            continue
        argv.extend(option)
    argv += ["--settings", json.dumps(merge_settings(user_settings_layer(user), settings)), *extra]
    if not (first and user.has(*CONVERSATION)):
        argv += ["--session-id", session_id]
    if prompt is not None:
        argv += ["--", prompt]
    elif first and user.prompt:
        argv += ["--", *user.prompt]
    return argv


def picks_conversation(user: ClaudeArgs) -> bool:
    """Whether the user chose the first window's conversation (so its backing id is not the supervisor's)."""
    return user.has(*CONVERSATION)


def user_settings_layer(user: ClaudeArgs) -> dict[str, Any]:
    """The JSON the user passed with `--settings` (inline or a file), or {} when they passed none."""
    value = user.value("--settings")
    if value is None:
        return {}
    text = value
    if not value.lstrip().startswith("{"):
        try:
            with open(os.path.expanduser(value), encoding="utf-8") as file:
                text = file.read()
        except OSError as error:
            raise ArgsError(f"cannot read the --settings file {value}: {error}") from error
    try:
        layer = json.loads(text)
    except ValueError as error:
        raise ArgsError(f"--settings {value[:80]!r} is not valid JSON: {error}") from error
    if not isinstance(layer, dict):
        raise ArgsError("--settings must hold a JSON object")
    return layer


def merge_settings(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` over `base`: objects merge key by key, lists are joined, anything else is replaced."""
    merged = dict(base)
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            merged[key] = merge_settings(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            merged[key] = current + [item for item in value if item not in current]
        else:
            merged[key] = value
    return merged


def _name(word: str) -> str:
    return word.partition("=")[0]
