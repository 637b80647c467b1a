"""Would Claude Code run this command without asking, as a read-only command, with no allow rule at all?

In the `default` and `acceptEdits` modes Claude Code 2.1.332 runs read-only commands unasked (`git diff`, `ls`,
`grep -rn x .`...) when each option is one it knows to be safe and every path stays inside the project; it asks
about anything else (`git diff -U1`, `git status -uno`, `find -delete`, `ls /etc`, `ls src/../x`, `ls "$PWD"`).
Those are the commands whose output most needs compressing, so the rewrite may say `allow` for them too, but only
for a subset of what Claude Code allows, never more: each program, subcommand and option below was seen running
unasked under the real CLI with no allow rules (`tests/e2e/test_compression_e2e.py` replays them, with and without
codeoid), and the checks on words and paths are stricter than Claude Code's:

- every word is a plain literal (`shell_facts.SimpleCommand.words`): no expansion, glob, brace or leading tilde;
- an option not listed for its program means no;
- every path operand, taken from the shell's current directory (the payload's `cwd`), stays inside the project
  directory both as written and with symlinks resolved, and has no `..` component at all;
- the current directory itself is inside the project.

`cd` is left out (a later command's paths would be judged from a directory that may not be the one it runs in),
and so are programs with no rule to compress them.

Claude Code checks paths under an allow rule too: with `Bash(ls:*)` it still blocks `ls /etc`, `cat /etc/x`,
`ls ../` and `ls src/../x`, and `Bash(find:*)` never allows `find -delete` or `-exec` (only a bare `Bash` rule
lets them through). `allowed_under_prefix_rule` is that check for a command a prefix rule allows, made for every
program rather than the ones Claude Code knows to read files.
"""

from __future__ import annotations

import os

from codeoid.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


class Options(NamedTuple):
    """What one program or git subcommand accepts, as far as the rewrite trusts it."""

    # Single letters that take no value and may be clustered (`-la`).
    letters: str = ""
    # Whole words that take no value (`--stat`, `-sb`).
    flags: frozenset[str] = frozenset()
    # Options whose value is the next word or follows `=` (`-A 2`, `--max-count=2`); the value is not a path.
    valued: frozenset[str] = frozenset()
    # Short options whose value may also be attached, digits only (`-C2`).
    attached_counts: str = ""
    # `-5` as a count (git log).
    dash_count: bool = False
    # How many leading operands are not paths (grep's and rg's pattern).
    pattern_operands: int = 0
    # Operands are allowed at all (`git branch NAME` creates a branch).
    operands: bool = True


_GIT = {
    "status": Options(flags=frozenset({"-s", "-b", "-sb", "--short", "--branch", "--porcelain",
                                       "--untracked-files=all"})),
    "diff": Options(flags=frozenset({"--cached", "--staged", "--stat", "--name-only", "--name-status", "--numstat",
                                     "--shortstat", "--no-color", "--word-diff", "--check"}),
                    valued=frozenset({"--diff-filter"})),
    "log": Options(flags=frozenset({"--oneline", "--stat", "--graph", "--all", "--name-only", "--decorate",
                                    "--no-merges", "--reverse", "--first-parent", "--abbrev-commit", "-p"}),
                   valued=frozenset({"-n", "--max-count", "--since", "--author", "--grep"}), dash_count=True),
    "show": Options(flags=frozenset({"--stat", "--name-only", "--name-status", "-s", "--oneline", "--no-patch"})),
    "branch": Options(flags=frozenset({"-a", "-v", "-vv", "-r", "--show-current", "--list", "--merged"}),
                      operands=False),
}
_PROGRAMS = {
    "ls": Options(letters="1lahtRdAFSr", flags=frozenset({"--color=never"})),
    "grep": Options(letters="rRnilcEFwvohLsH", valued=frozenset({"-A", "-B", "-C", "--include", "--exclude-dir"}),
                    attached_counts="ABC", pattern_operands=1),
    "rg": Options(letters="nilcwFS", flags=frozenset({"--hidden", "--no-ignore"}),
                  valued=frozenset({"-t", "--type", "-g", "-C"}), pattern_operands=1),
    "tree": Options(letters="adf", valued=frozenset({"-L", "-I"})),
    "du": Options(letters="shack", valued=frozenset({"-d", "--max-depth"})),
}
# find: what may follow its paths, and which of those take a value (a path for `-newer`).
_FIND_PRIMARIES = frozenset({"-prune", "-o", "-not", "-print", "-empty"})
_FIND_VALUED = frozenset({"-maxdepth", "-mindepth", "-type", "-name", "-iname", "-path", "-size", "-mtime",
                          "-regex"})
_FIND_PATH_VALUED = frozenset({"-newer"})
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-rm", "-fprint", "-fprint0", "-fprintf",
                           "-fls", "-files0-from"})


def runs_unasked(commands: Sequence[tuple[str, ...] | None], cwd: str | None, project_dir: str) -> bool:
    """Whether every command (its literal words, or None) is one Claude Code runs unasked from `cwd`."""
    if not cwd or not commands or not _inside(cwd, project_dir, cwd=cwd):
        return False
    for words in commands:
        paths = _path_operands(words) if words else None
        if paths is None or not all(_inside(path, project_dir, cwd=cwd) for path in paths):
            return False
    return True


def allowed_under_prefix_rule(words: tuple[str, ...] | None, cwd: str | None, project_dir: str) -> bool:
    """Whether Claude Code lets a prefix allow rule allow this command: no find action that runs or writes
    (`-exec`, `-delete`, `-fprint`...), and every argument that could be a path outside the project (one with a
    `/`, a leading `~`, or `..`, also after `=`) stays inside it, taken from `cwd` (the project when unknown).
    None words (an expansion, glob or `VAR=` prefix) cannot be judged."""
    if words is None:
        return False
    if os.path.basename(words[0]) == "find" and any(_find_action(word) for word in words[1:]):
        return False
    where = cwd or project_dir
    for word in words[1:]:
        for candidate in (word, word.partition("=")[2]):
            if ("/" in candidate or candidate.startswith("~") or candidate == "..") and not _inside(
                    candidate, project_dir, cwd=where):
                return False
    return True


def _find_action(word: str) -> bool:
    """A find primary Claude Code never auto-allows: one that runs or writes, or `-[dsx]+f`, which versions of
    find read differently (it could hide a following action)."""
    if word in _FIND_ACTIONS:
        return True
    return len(word) > 2 and word[0] == "-" and word[-1] == "f" and all(flag in "dsx" for flag in word[1:-1])


def _path_operands(words: tuple[str, ...]) -> list[str] | None:
    """The words of one read-only command that name paths, or None when it is not one this module trusts."""
    program, arguments = words[0], list(words[1:])
    if program == "git":
        options = _GIT.get(arguments[0]) if arguments else None
        operands = _operands(arguments[1:], options) if options is not None else None
        # `REV:path` names a blob, not a file; whether Claude Code checks the path in it is not known.
        return None if operands is None or any(":" in operand for operand in operands) else operands
    if program == "find":
        return _find_paths(arguments)
    options = _PROGRAMS.get(program)
    return _operands(arguments, options) if options is not None else None


def _operands(arguments: list[str], options: Options) -> list[str] | None:
    operands: list[str] = []
    index = 0
    while index < len(arguments):
        word = arguments[index]
        index += 1
        if word == "--":
            operands.extend(arguments[index:])
            break
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        name, equals, _ = word.partition("=")
        if name in options.valued:
            if not equals:
                if index == len(arguments):
                    return None
                index += 1
            continue
        if word in options.flags or _is_count(word, options) or _is_cluster(word, options.letters):
            continue
        return None
    if not options.operands and operands:
        return None
    return operands[options.pattern_operands:]


def _is_count(word: str, options: Options) -> bool:
    if options.dash_count and word[1:].isdigit():
        return True
    return len(word) > 2 and word[1] in options.attached_counts and word[2:].isdigit()


def _is_cluster(word: str, letters: str) -> bool:
    return len(word) > 1 and word[1] != "-" and all(letter in letters for letter in word[1:])


def _find_paths(arguments: list[str]) -> list[str] | None:
    paths: list[str] = []
    index = 0
    while index < len(arguments) and not arguments[index].startswith(("-", "(", "!")):
        paths.append(arguments[index])
        index += 1
    while index < len(arguments):
        word = arguments[index]
        index += 1
        if word in _FIND_PRIMARIES:
            continue
        if word in _FIND_VALUED or word in _FIND_PATH_VALUED:
            if index == len(arguments):
                return None
            if word in _FIND_PATH_VALUED:
                paths.append(arguments[index])
            index += 1
            continue
        return None
    return paths


def _inside(path: str, project_dir: str, *, cwd: str) -> bool:
    """Whether `path`, from `cwd`, stays inside the project as written and with symlinks resolved."""
    if not path or path.startswith("~") or ".." in path.split("/"):
        return False
    project = os.path.normpath(project_dir)
    written = os.path.normpath(os.path.join(cwd, path))
    if not is_under(written, project):
        return False
    return is_under(os.path.realpath(written), os.path.realpath(project))


def is_under(path: str, directory: str) -> bool:
    """Whether a normalized absolute `path` is `directory` or inside it."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")
