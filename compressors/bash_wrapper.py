"""The command the PreToolUse rewrite runs in place of a Bash command, and reading the original back out of it.

Claude Code runs each Bash call as `eval '<command>' < /dev/null && pwd -P >| <cwd file>` in a fresh bash whose
stdout and stderr are the same output file. The wrapper keeps the original command in that same shell, in a brace
group, so `cd`, `exit`, functions, `set -e` and the exit status behave exactly as without it; only the shell's
stdout goes through `codeoid-compress` (protocol notes §9):

1. `__codeoid_finish` closes the compressor's input by putting the original stdout back, waits for the compressor
   to finish printing, and returns the command's exit status;
2. `exec {spare}>&1 > >(codeoid-compress ...)` saves the original stdout on a spare descriptor and sends stdout into
   the compressor, whose own stdout is the original and whose stderr is discarded (stderr is the command's alone);
   if the compressor cannot even start, `cat` passes stdout through unchanged;
3. an EXIT trap runs `__codeoid_finish`, so a command that calls `exit` does not lose its stdout;
4. `{ <original>` starts on the first line and `}` closes it on a line of its own (a trailing comment or heredoc
   in the original cannot swallow it), then `__codeoid_finish` runs on the normal path.

Words the wrapper runs are written `\\builtin trap`, `\\exec`, `\\command cat`: Claude Code's shell snapshot turns
alias expansion on, and a user's alias must not change the wrapper.

`unwrap` is exact: it accepts only text that `wrap` would produce for the original it finds, so PostToolUse can
recover the original command and the raw output's tool_use_id from the command that ran, without any state kept
between the two hooks.
"""

from __future__ import annotations

from codeoid.records import NamedTuple

# Every name the wrapper adds to the user's shell starts with this; a command holding it is never wrapped again.
NAME_PREFIX = "__codeoid_"
COMPRESSOR = "codeoid-compress"

_FINISH = (
    '__codeoid_finish() { __codeoid_status=$?; \\builtin trap - EXIT; '
    '\\exec >&"$__codeoid_stdout" {__codeoid_stdout}>&-; '
    '\\builtin wait "$__codeoid_filter" 2>/dev/null; \\builtin return "$__codeoid_status"; }; '
)
_OPEN = "\\exec {__codeoid_stdout}>&1 > >("
_AFTER_FILTER = " 2>/dev/null || \\command cat); __codeoid_filter=$!; \\builtin trap __codeoid_finish EXIT; { "
_CLOSE = "\n}; __codeoid_finish"

# A word as `quote` writes it: bare when every character is safe, else single-quoted with `'"'"'` for `'`.
_QUOTED = r"(?:'[^']*'(?:\"'\"'[^']*')*|[\w@%+=:,./-]+)"
# The characters `shlex.quote` leaves bare (`[\w@%+=:,./-]` with re.ASCII).
_SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-"


def quote(word: str) -> str:
    """`shlex.quote(word)`, character for character, without importing `shlex` (and `re`) in the rewrite hook."""
    if not word:
        return "''"
    if not word.strip(_SAFE):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _wrapped_pattern() -> str:
    import re

    return (
        re.escape(_FINISH + _OPEN)
        + rf"(?:CODEOID_HOME=(?P<home>{_QUOTED}) )?(?P<exe>{_QUOTED}) --tool-use-id (?P<id>{_QUOTED})"
        + rf" --project-dir (?P<project>{_QUOTED}) --command (?P<command>{_QUOTED})"
        + re.escape(_AFTER_FILTER)
        + r"(?P<body>.*)"
        + re.escape(_CLOSE)
        + r"\Z"
    )


class Unwrapped(NamedTuple):
    """What a wrapper says about the call it wraps."""

    command: str
    tool_use_id: str


def wrap(command: str, *, tool_use_id: str, compressor: str, project_dir: str,
         codeoid_home: str | None = None) -> str:
    """The wrapper text for `command`; `compressor` is the absolute path of `codeoid-compress`.

    The compressor is told what the hook knew and the Bash tool's environment lacks: the project whose rule files
    chose the rule (`CLAUDE_PROJECT_DIR` is set for hooks only), and the data dir when the hook's own command
    line pinned `CODEOID_HOME`.
    """
    home = f"CODEOID_HOME={quote(codeoid_home)} " if codeoid_home else ""
    filter_command = (f"{home}{quote(compressor)} --tool-use-id {quote(tool_use_id)}"
                      f" --project-dir {quote(project_dir)} --command {quote(command)}")
    return _FINISH + _OPEN + filter_command + _AFTER_FILTER + command + _CLOSE


def unwrap(text: str) -> Unwrapped | None:
    """The original command and tool_use_id inside a wrapper, or None when `text` is not exactly one of ours."""
    if NAME_PREFIX not in text:
        return None
    import re  # here, not at import: the PreToolUse hook, which only wraps, starts once per Bash call

    found = re.match(_wrapped_pattern(), text, re.DOTALL | re.ASCII)
    if found is None:
        return None
    command = _unquote(found.group("command"))
    if command != found.group("body"):
        return None
    home = found.group("home")
    unwrapped = Unwrapped(command, _unquote(found.group("id")))
    expected = wrap(command, tool_use_id=unwrapped.tool_use_id, compressor=_unquote(found.group("exe")),
                    project_dir=_unquote(found.group("project")), codeoid_home=_unquote(home) if home else None)
    return unwrapped if expected == text else None


def is_wrapped(command: str) -> bool:
    """Whether `command` already runs through codeoid (our wrapper, or `codeoid-compress` typed by hand)."""
    return NAME_PREFIX in command or COMPRESSOR in command


def _unquote(word: str) -> str:
    if not word.startswith("'"):
        return word
    return word[1:-1].replace("'\"'\"'", "'")
