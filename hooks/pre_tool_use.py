"""PreToolUse on Bash: run the command through `codeoid-compress` where a rule applies and it is safe.

The answer is either nothing (Claude Code runs the command untouched, judged by its own rules) or `allow` with
`updatedInput` holding the wrapper (`codeoid.compressors.bash_wrapper`) and every other input field echoed.
It is `allow` or nothing because a rewrite without a decision would make Claude Code judge, and show the user,
the wrapper text instead of the command; `allow` is given only where the original was already allowed
(`permissions`): by the user's allow rules, by the mode, or as a read-only command Claude Code runs unasked
(`read_only`).

This runs before every Bash call, so it is kept light: no store, no rule files (the rule loader reads its
precompiled cache), no subprocess (but one `bash -c` per new bash binary, remembered). The permission rules are
read first: when they cannot allow anything (no Bash allow rule, an unsupported mode), the hook answers before
importing the parser and the rule engine, which are most of its cost.

The wrapper sends stdout and stderr through the compressor in one pipe, in the order the command writes them, so
what the rule compresses is what Claude Code would show (a `>&2` keeps its output in that pipe; a redirection to a
file takes it away, so such a command is left alone).

Stepping aside is always safe (the output is then compressed after the fact by PostToolUse, `post_tool_use`,
unless the command fails or its output reaches Claude Code's cap), so every doubt is a reason to: a background
run, a command the parser does not fully understand, stdout sent to a file, a command already wrapped,
builtins that change the shell around the wrapper (`exec`, `trap`, `wait`, `eval`, `source`, `alias`, `shopt`,
`set -x`...), interactive or long-running programs, and commands no rule would compress anyway.
"""

from __future__ import annotations

import json
import os

from codeoid import paths
from codeoid.compressors import switch
from codeoid.rotation.notice import finish_turn_notice

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from codeoid.hooks.shell_facts import ShellFacts

# Why `decide` wrapped a call or stepped aside.
WRAPPED = "wrapped"
NOT_BASH = "not a Bash call"
BACKGROUND = "run in the background"
NO_RULE = "no rule"
EXCLUDED = "excluded project"
SETUP = "codeoid-compress or bash missing"
NOT_ALLOWED = "not allowed by the permission rules"
CONSTRUCT = "stepped aside for a construct"
SWITCHED_OFF = "switched off by CODEOID_COMPRESS"
# Past this the wrapper (which carries the command twice) nears the kernel's limit on one argument.
MAX_COMMAND_CHARS = 32_000
# Builtins that act on the shell around the wrapper: its descriptors, traps, jobs, or how the rest is parsed.
STEP_ASIDE_BUILTINS = frozenset({
    "exec", "trap", "wait", "eval", "source", ".", "alias", "unalias", "shopt", "enable", "coproc", "disown",
    "jobs", "fg", "bg", "suspend", "logout", "kill",
})
# Words the wrapper itself runs: a function of that name in the command would replace them.
WRAPPER_WORDS = frozenset({"builtin", "command", "cat", "exec", "trap", "wait", "return"})
# `set` options that keep the shell's output and parsing as they are (`-x` and `-v` would trace the wrapper).
QUIET_SET_OPTIONS = frozenset({"errexit", "nounset", "pipefail", "noclobber", "noglob"})
INTERACTIVE = frozenset({
    "less", "more", "most", "vi", "vim", "nvim", "view", "nano", "pico", "emacs", "top", "htop", "btop", "watch",
    "ssh", "telnet", "ftp", "sftp", "nc", "ncat", "socat", "tmux", "screen", "man", "yes",
})
# Options that keep a program running (watch modes, servers, `--follow`), alone or as `--option=value`.
FOLLOW_OPTIONS = frozenset({"--watch", "--watchAll", "--watch-all", "--follow", "--looponfail", "--serve"})
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def run(raw: bytes, agent: str | None = None) -> str | None:
    """The hook's stdout for one PreToolUse payload: a JSON answer, or None to let the command run as it is.
    `agent` "codex": the payload is Codex's, judged by Codex's permission rule (`codex_may_allow`)."""
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(payload, dict):
        return None
    if agent is not None:  # another CLI: no rotation notice there, and `codex_may_allow` decides
        answer, _ = decide(payload, os.environ, agent=agent)
        return json.dumps(answer) if answer is not None else None
    answer = rewrite(payload, os.environ)
    note = finish_turn_notice(payload, os.environ)
    if note is not None:
        answer = answer or {"hookSpecificOutput": {"hookEventName": "PreToolUse"}}
        specific = answer["hookSpecificOutput"]
        specific["additionalContext"] = "\n\n".join(filter(None, [specific.get("additionalContext"), note]))
    return json.dumps(answer) if answer is not None else None


def rewrite(payload: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any] | None:
    """The hook answer that wraps this Bash call, or None to step aside."""
    return decide(payload, env)[0]


def decide(payload: dict[str, Any], env: Mapping[str, str],
           agent: str | None = None) -> tuple[dict[str, Any] | None, str]:
    """The hook answer (or None) and why: `WRAPPED` or the reason it stepped aside (`codeoid discover` replays
    this over stored calls to say what compression missed, so every way out names its reason).

    For Codex (`agent="codex"`) Claude Code's permission rules do not apply: a rewrite must answer `allow`, which
    would skip an approval Codex was going to ask for, so Codex's calls are wrapped only where Codex asks nothing
    (`codex_may_allow`); its sandbox still confines the wrapped command (docs/agent-protocols.md)."""
    tool_input = payload.get("tool_input")
    tool_use_id = payload.get("tool_use_id")
    if payload.get("tool_name") != "Bash" or not isinstance(tool_input, dict) or not isinstance(tool_use_id, str):
        return None, NOT_BASH
    command = tool_input.get("command")
    if not isinstance(command, str) or not tool_use_id or tool_input.get("run_in_background"):
        return None, BACKGROUND
    if not command.strip() or len(command) > MAX_COMMAND_CHARS or "\0" in command:
        return None, CONSTRUCT
    project_dir = env.get("CLAUDE_PROJECT_DIR") or _str(payload.get("cwd")) or os.getcwd()
    cache_dir = paths.cache_dir()
    if not switch.enabled(env, switch.REWRITE):
        return None, SWITCHED_OFF
    from codeoid.compressors.rule_files import current_cache, may_apply

    cached = current_cache(project_dir=project_dir, cache_dir=cache_dir)
    if not may_apply(command, cached):
        return None, NO_RULE  # decided with `os` and `marshal` alone: most commands stop here
    from codeoid.exclusions import excluded_by

    if excluded_by(project_dir):
        return None, EXCLUDED  # compressing would archive the output in a project the user keeps out of codeoid
    from codeoid.compressors import bash_wrapper
    from codeoid.hooks import bash_shell, permissions
    from codeoid.log import log
    from codeoid.setup.hook_table import installed_executable

    if bash_wrapper.is_wrapped(command):
        return None, CONSTRUCT
    compressor = installed_executable(bash_wrapper.COMPRESSOR)
    if not os.path.exists(compressor) or not bash_shell.wrappable_bash(env, cache_dir):
        return None, SETUP
    mode = payload.get("permission_mode")
    if agent is not None:
        if not codex_may_allow(agent, mode):
            return None, NOT_ALLOWED
        rules = None
    else:
        try:
            rules = permissions.load_rules(project_dir, env)
        except permissions.Unsure as reason:
            log("rewrite", f"{tool_use_id}: not rewritten, permissions unclear: {reason}")
            return None, NOT_ALLOWED
        if not permissions.could_allow(mode, rules):
            return None, NOT_ALLOWED  # decided before the parser and the rules are imported: the common case is cheap
    from codeoid.compressors import command as shell_command
    from codeoid.compressors.loader import rule_for
    from codeoid.hooks import shell_facts

    parsed = shell_command.parse(command)
    if not parsed.understood or parsed.background or parsed.stdout_leaves or parsed.invocation is None:
        return None, CONSTRUCT
    facts = shell_facts.read(command)
    if not facts.understood or _unsafe_to_wrap(command, facts):
        return None, CONSTRUCT
    rule = rule_for(parsed.invocation, cached, project_dir=project_dir, cache_dir=cache_dir)
    if rule is None:
        return None, NO_RULE
    if rules is not None and not permissions.may_allow(command, facts, mode, rules, cwd=_str(payload.get("cwd")),
                                                       project_dir=project_dir):
        return None, NOT_ALLOWED
    home = paths.data_dir_location() if env.get("CODEOID_HOME") else None
    wrapped = bash_wrapper.wrap(command, tool_use_id=tool_use_id, compressor=compressor, project_dir=project_dir,
                                codeoid_home=home)
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": f"codeoid: output through rule {rule.name!r}; " + (
                "the command was already allowed by your permission rules or mode, or as a read-only command"
                if agent is None else f"{agent} asks about no command in this mode"),
            "updatedInput": {**tool_input, "command": wrapped},
        }
    }, WRAPPED


def codex_may_allow(agent: str, mode: object) -> bool:
    """Whether answering `allow` to this agent CLI skips no approval: only Codex in `bypassPermissions`, the mode
    its hooks report when its approval policy is `never` (it asks about nothing)."""
    return agent == "codex" and mode == "bypassPermissions"


def _unsafe_to_wrap(command: str, facts: ShellFacts) -> bool:
    names = {os.path.basename(name) for name in facts.command_names}
    if names & (STEP_ASIDE_BUILTINS | INTERACTIVE) or set(facts.functions) & WRAPPER_WORDS:
        return True
    words = command.split()
    if "$!" in command or any(_follows(word) for word in words):
        return True
    if "tail" in names and any(_tail_follows(word) for word in words):
        return True
    return not all(_quiet_set_argument(argument) for argument in facts.set_arguments)


def _follows(word: str) -> bool:
    """A whitespace-separated word that is one of `FOLLOW_OPTIONS`, alone or with `=value`. Equal to searching
    the command for `(?<!\\S)(?:--watch(?:All|-all)?|--follow|--looponfail|--serve)(?:=\\S*)?(?!\\S)`: what
    that finds is always one whole word of `str.split()` (`\\s` and `str.split` agree on whitespace)."""
    return word.partition("=")[0] in FOLLOW_OPTIONS


def _tail_follows(word: str) -> bool:
    """`tail -f`, `-F`, any cluster of ASCII letters holding f or F (`-n5f` is not one), or `--follow[=...]`:
    the word-for-word form of `(?<!\\S)(?:-[a-zA-Z]*[fF][a-zA-Z]*|--follow(?:=\\S*)?)(?!\\S)`."""
    if word.partition("=")[0] == "--follow":
        return True
    letters = word[1:]
    return (word[:1] == "-" and bool(letters) and all(letter in _ASCII_LETTERS for letter in letters)
            and ("f" in letters or "F" in letters))


def _quiet_set_argument(argument: str) -> bool:
    if argument in QUIET_SET_OPTIONS:
        return True
    return len(argument) > 1 and argument[0] in "-+" and all(flag in "euofC" for flag in argument[1:])


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
