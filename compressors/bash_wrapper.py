"""The command the PreToolUse rewrite runs in place of a Bash command, and reading the original back out of it.

Claude Code runs each Bash call as `eval '<command>' < /dev/null && pwd -P >| <cwd file>` in a fresh bash whose
stdout and stderr are the same output file, so it shows the two streams merged, in the order they were written.
The wrapper keeps the original command in that same shell, so `cd`, `exit`, functions, `set -e` and the exit
status behave exactly as without it, and sends both streams, merged exactly as Claude Code would merge them,
through `codeoid-compress` (protocol notes §9):

1. `__codeoid_last=$_` keeps the shell's `$_` for the command (restored by `: "$__codeoid_last"` just before it);
2. `exec > >(codeoid-compress ...) 2>&1` sends stdout into the compressor and stderr into the same pipe, so the
   compressor reads the bytes in the order a plain run writes them to the output file (two pipes cannot keep
   that order: the compressor starts after the command has often written both). The compressor's own stdout is
   the original output file, its own stderr is discarded; if it cannot even start, `cat` passes the bytes on;
3. an EXIT trap puts both streams on /dev/null, which closes the compressor's input, waits for the compressor to
   finish printing and exits with the command's status, whether the command ended, called `exit` or failed;
4. the original command comes last, on the wrapper's first line, and the wrapper adds no line of its own: bash
   counts `$LINENO` and the `line N` of its messages from the lines of the whole eval'd text, so the command
   must have every line where it has them alone. The copy the compressor is given (`--command`) is therefore
   quoted on one line (`$'...'` when the command spans lines). No descriptor is kept open besides 0, 1 and 2.

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

_OPEN = "__codeoid_last=$_; \\exec > >("
_AFTER_FILTER = (
    " 2>/dev/null || \\command cat) 2>&1; __codeoid_filter=$!; "
    "\\builtin trap '__codeoid_status=$?; \\builtin trap - EXIT; \\exec >/dev/null 2>&1; "
    "\\builtin wait \"$__codeoid_filter\"; \\builtin exit \"$__codeoid_status\"' EXIT; "
    "\\builtin : \"$__codeoid_last\"; "
)

# A word as `quote` or `quote_line` writes it: bare when every character is safe, single-quoted with `'"'"'` for
# `'`, or `$'...'` with backslash escapes.
_QUOTED = r"(?:\$'(?:[^'\\]|\\.)*'|'[^']*'(?:\"'\"'[^']*')*|[\w@%+=:,./-]+)"
# The characters `shlex.quote` leaves bare (`[\w@%+=:,./-]` with re.ASCII).
_SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-"


def quote(word: str) -> str:
    """`shlex.quote(word)`, character for character, without importing `shlex` (and `re`) in the rewrite hook."""
    if not word:
        return "''"
    if not word.strip(_SAFE):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def quote_line(word: str) -> str:
    """`quote(word)` when it has no newline, else bash's `$'...'` form, which says the same on one line."""
    if "\n" not in word:
        return quote(word)
    return "$'" + word.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _wrapped_pattern() -> str:
    import re

    return (
        re.escape(_OPEN)
        + rf"(?:CODEOID_HOME=(?P<home>{_QUOTED}) )?(?P<exe>{_QUOTED}) --tool-use-id (?P<id>{_QUOTED})"
        + rf" --project-dir (?P<project>{_QUOTED}) --command (?P<command>{_QUOTED})"
        + re.escape(_AFTER_FILTER)
        + r"(?P<body>.*)\Z"
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
    home = f"CODEOID_HOME={quote_line(codeoid_home)} " if codeoid_home else ""
    filter_command = (f"{home}{quote_line(compressor)} --tool-use-id {quote_line(tool_use_id)}"
                      f" --project-dir {quote_line(project_dir)} --command {quote_line(command)}")
    return _OPEN + filter_command + _AFTER_FILTER + command


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
    if word.startswith("$'"):
        import re

        escapes = {"\\": "\\", "'": "'", "n": "\n"}
        return re.sub(r"\\(.)", lambda found: escapes.get(found.group(1), "\\" + found.group(1)), word[2:-1],
                      flags=re.DOTALL)
    if not word.startswith("'"):
        return word
    return word[1:-1].replace("'\"'\"'", "'")
