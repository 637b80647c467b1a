"""Lines every rule keeps unless it says `diagnostics = false`: errors, failures, tracebacks, warnings.

They are the engine's, not a pack's, so a user's own rule gets the fidelity contract's safety net without
copying it. Rules over data rather than diagnostics (a diff, search hits, a listing) switch it off: there a line
saying `error:` is content, and keeping every one would defeat the per-file budgets.
"""

from __future__ import annotations

# Error lines as programs print them on stderr, which the rewrite sends through the rule with stdout (merged, as
# Claude Code shows them). Every rule keeps them, `diagnostics = false` or not: a line-numbered search hit or a
# diff line never has this shape (a path, a hash or a `+` comes first), and an error a command printed is never
# the part of its output to leave out.
STREAM_ERROR_PATTERNS: tuple[str, ...] = (
    # The shell's own messages: `bash: line 3: foo: command not found`, `/bin/sh: 1: x: not found`.
    r"^(?:/\S*/)?(?:bash|sh|dash|zsh): ",
    # A program naming itself before what went wrong: `ls: cannot access 'x': No such file or directory`.
    r"^[\w.+-]+: .*(?:No such file or directory|command not found|[Pp]ermission denied|Is a directory"
    r"|Not a directory|Operation not permitted|[Cc]annot |[Cc]an't |[Ii]nvalid |[Uu]nrecognized |[Uu]nknown "
    r"|[Mm]issing |[Nn]ot found|[Ff]ailed)",
    # git's and many tools' verdicts at the start of a line, and usage messages.
    r"^(?:fatal|error|[Uu]sage): ",
)

DIAGNOSTIC_PATTERNS: tuple[str, ...] = (
    # Python tracebacks and chained exceptions.
    r"^\s*Traceback \(most recent call last\)",
    r"^\s*(?:During handling of the above exception|The above exception was the direct cause)",
    # An exception or warning named at the start of a line: `ValueError: x`, `pkg.errors.Bad: x`.
    r"^\s*(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Failure|Exit|Interrupt)\b",
    # `x.py:3: DeprecationWarning: y` and `tests/t.py:12: AssertionError` (pytest's failure locations).
    r"^\s*\S+:\d+: (?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Failure)\b",
    r"(?:Error|Exception|Warning): ",
    # Compiler and tool diagnostics: `error: x`, `src/a.c:1:2: error: x`, `error[E0308]: x`, `warning: x`.
    r"\b(?:[Ee]rror|ERROR|[Ff]atal|FATAL|[Pp]anic|PANIC|[Ww]arning|WARNING)(?:\[[\w-]+\])?:",
    r"(?i)^\s*(?:warn|warning|error|fatal)\b",
    # Test runners' verdict words, upper case only so that prose and test names do not match.
    r"\b(?:FAIL|FAILED|FAILURE|FAILURES|ERROR|ERRORS|PANIC|FATAL|TIMEOUT)\b",
    r"panicked at|^panic: |^fatal error: |Segmentation fault|core dumped|Killed\b|Aborted\b",
)

# Every pattern above needs one of these in the lower-cased line. Most lines have none, and one scan for them
# costs a tenth of running the patterns.
DIAGNOSTIC_HINTS = (
    r"rror|xception|arn|fail|fatal|panic|traceback|timeout|fault|dumped|killed|aborted|interrupt|exit"
)
