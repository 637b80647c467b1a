"""May the rewrite say `allow`? Only where Claude Code would already run the original command without asking.

A PreToolUse `allow` skips Claude Code's own judgement of the rewritten command, so it could run a command the
user never allowed (protocol notes §9a). The rewrite therefore says `allow` only when one of these holds, and
otherwise leaves the command untouched:

- the permission mode is `bypassPermissions` and no deny or ask rule could apply to any part of the command;
- the mode is `default`, `acceptEdits` or `dontAsk`, every simple command is matched by one of the user's own
  allow rules (and, unless that rule is a bare `Bash`, names no path outside the project: Claude Code checks
  those under prefix rules too) or, in `default` and `acceptEdits`, is a read-only command Claude Code runs
  unasked (`read_only`), and no deny or ask rule could apply to any part of the command.

A deny or ask rule of a file tool (`Read(./secrets/**)`, `Edit(...)`...) matters too: Claude Code checks the paths
a Bash command names against them (seen with 2.1.332: `Read(./src/**)` denied `ls src`, `grep -rn x src` and
`find src`, even under an allow rule `Bash` that matched them). How it matches each program's arguments is not
modelled; instead the rewrite steps aside whenever such a rule could concern the command at all: when any literal
run of the rule's pattern (`src`, `.env`) appears in any word of the command or in the real path a word names,
when the pattern has no literal run (`Read(**)`), or when a word is not a plain literal. With a
`permissions.blockReadsOutsideWorkingDirectories` (or `...Writes...`) setting on, every command, in every mode, must
keep its paths inside the project as under a prefix rule.

Each half is judged in the direction that cannot widen: an allow rule counts only when it certainly matches (exact
text, `prefix:*`, a trailing `*` or ` *`; any other wildcard is not trusted), a deny or ask rule counts whenever it
might match (its first word appears anywhere in the command, or a command word is computed). Rules come from every
layer Claude Code reads (managed, user, project, local, and a `--settings` layer read off the `claude` process's
command line). Anything that cannot be read with certainty (a settings file that is not valid JSON, a
`--disallowedTools` flag, a `claude` process whose arguments cannot be seen, the Bash sandbox switched on) means
no rewrite.

What is deliberately not modelled, so those commands are simply not rewritten: read-only commands beyond the
subset `read_only` trusts, `plan` and `auto` modes, permissions granted for the session only, and server-managed
policy.
"""

from __future__ import annotations

import json
import os

from codeoid.hooks import read_only
from codeoid.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from codeoid.hooks.shell_facts import ShellFacts

# Modes in which Claude Code's allow rules decide Bash (acceptEdits widens file edits, not Bash commands).
RULE_MODES = frozenset({"default", "acceptEdits", "dontAsk"})
# Deny and ask rules of these tools say nothing about the files a Bash command reads or writes; any other tool's
# rule may (Read, Edit, Write, Glob, Grep, NotebookEdit and whatever comes next).
NOT_ABOUT_FILES = ("Bash", "mcp__", "WebFetch", "WebSearch", "Agent", "Task", "Skill", "SlashCommand")
# Modes in which Claude Code runs read-only commands unasked, seen with the real CLI.
READ_ONLY_MODES = frozenset({"default", "acceptEdits"})
# Programs never auto-allowed by the rewrite, whatever the rules say: Claude Code may apply checks of its own to
# them (paths outside the project, privilege changes), and none of them is worth compressing. The second group
# are the builtins and programs that Claude Code 2.1.332 refuses to auto-allow under a prefix rule, or checks
# argument by argument (read from its binary: code-running builtins, zsh modules, process wrappers, awk, jq,
# xargs).
NEVER_ALLOWED = frozenset({
    "sudo", "su", "doas", "rm", "rmdir", "dd", "shred", "truncate", "mkfs", "chmod", "chown", "chgrp", "kill",
    "pkill", "killall", "reboot", "shutdown", "cd", "pushd", "popd",
    "eval", "source", ".", "exec", "nocorrect", "fc", "coproc", "trap", "enable", "mapfile", "readarray", "hash",
    "bind", "complete", "compgen", "alias", "let", "watch", "ionice", "chrt", "setsid", "taskset", "strace",
    "ltrace", "script", "flock", "unshare", "nsenter", "sandbox-exec", "awk", "gawk", "mawk", "nawk", "jq",
    "xargs", "zmodload", "emulate", "sysopen", "sysread", "syswrite", "sysseek", "zpty", "ztcp", "zsocket",
    "zf_rm", "zf_mv", "zf_ln", "zf_chmod", "zf_chown", "zf_mkdir", "zf_rmdir", "zf_chgrp", "repeat", "foreach",
    "zcompile", "setopt", "unsetopt", "disable", "shopt", "autoload", "functions", "zformat", "zparseopts",
    "zstyle", "zregexparse", "getln", "vared",
})
_MANAGED_PATHS = ("/etc/claude-code/managed-settings.json",
                  "/Library/Application Support/ClaudeCode/managed-settings.json")
_MANAGED_DROPINS = "/etc/claude-code/managed-settings.d"
_SETTINGS_FLAGS = ("--settings",)
_SOURCES_FLAGS = ("--setting-sources",)
_UNREADABLE_FLAGS = ("--disallowedTools", "--disallowed-tools")


class Rules(NamedTuple):
    """The Bash rules in force: each is the text inside `Bash(...)`, or `*` for a bare `Bash`."""

    allow: tuple[str, ...]
    deny: tuple[str, ...]
    ask: tuple[str, ...]
    # The patterns of deny and ask rules about files (`Read(./.env)` gives `./.env`; a bare `Read` gives `**`):
    # Claude Code also checks the paths of Bash commands against them.
    file_rules: tuple[str, ...] = ()
    # A `permissions.block…OutsideWorkingDirectories` setting is on: Claude Code then checks paths under every
    # rule and mode, a bare `Bash` rule and `bypassPermissions` included.
    contained: bool = False


class Unsure(Exception):
    """Something that decides permissions could not be read; the rewrite must step aside."""


def could_allow(mode: object, rules: Rules) -> bool:
    """Whether any command at all could be allowed: a cheap answer before the command is parsed."""
    return mode == "bypassPermissions" or mode in READ_ONLY_MODES or (mode in RULE_MODES and bool(rules.allow))


def may_allow(command: str, facts: ShellFacts, mode: object, rules: Rules, *, cwd: str | None,
              project_dir: str) -> bool:
    """Whether Claude Code would run `command` unasked under `mode` and `rules` from the shell's current
    directory `cwd` (see the module docstring)."""
    if _deny_or_ask_may_apply(command, facts, rules) or _file_rule_may_apply(rules.file_rules, facts, cwd,
                                                                             project_dir):
        return False
    if rules.contained and not _stays_inside(facts, cwd, project_dir):
        return False
    if mode == "bypassPermissions":
        return True
    if mode not in RULE_MODES or facts.simple_commands is None or not facts.simple_commands:
        return False
    if facts.computed_command or any(os.path.basename(name) in NEVER_ALLOWED for name in facts.command_names):
        return False  # a command word known only when it runs could be any of them
    unruled = []
    for simple in facts.simple_commands:
        matching = [rule for rule in rules.allow if allow_rule_matches(rule, simple.text.strip())]
        if not matching:
            unruled.append(simple)
        elif "*" not in matching and not read_only.allowed_under_prefix_rule(simple.words, cwd, project_dir):
            return False  # Claude Code checks paths and find's actions under any rule but a bare `Bash`
    if not unruled:
        return True
    if mode not in READ_ONLY_MODES:
        return False
    return read_only.runs_unasked([simple.words for simple in unruled], cwd, project_dir)


def allow_rule_matches(rule: str, text: str) -> bool:
    """Whether `Bash(rule)` certainly matches one simple command's text (never more than Claude Code would).

    Trusted forms: `*`; exact text; `prefix:*` (the prefix alone or followed by a space); `prefix *` (followed
    by a space and more); `prefix*` (plain text prefix). A wildcard anywhere else is not trusted, nor any match
    on text that spans lines (whether Claude Code's wildcard crosses a newline is not known).
    """
    if "\n" in text or "\r" in text:
        return False
    if rule == "*":
        return True
    if "*" not in rule:
        return text == rule
    if "*" in rule[:-1]:
        return False
    if rule.endswith(":*"):
        prefix = rule[:-2]
        return text == prefix or text.startswith(prefix + " ")
    prefix = rule[:-1]
    if prefix.endswith(" "):
        return text.startswith(prefix) and len(text) > len(prefix)
    return text.startswith(prefix)


def _deny_or_ask_may_apply(command: str, facts: ShellFacts, rules: Rules) -> bool:
    blocking = rules.deny + rules.ask
    if not blocking:
        return False
    if facts.computed_command or not facts.understood:
        return True
    names = {os.path.basename(name) for name in facts.command_names} | set(facts.command_names)
    for rule in blocking:
        head = rule.split("*", 1)[0].removesuffix(":").split()
        if not head:
            return True
        word = head[0]
        if word in names or os.path.basename(word) in names:
            return True
        if appears_as_word(word, command):
            return True
    return False


def appears_as_word(word: str, text: str) -> bool:
    r"""Whether `word` occurs in `text` with no word character or `-` right before or after it: what
    `re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text)` finds, without `re` (a word character is what
    `\w` is in a str pattern: `str.isalnum()` or `_`). Every occurrence is tried, overlapping ones too."""
    size = len(word)
    start = text.find(word)
    while start != -1:
        end = start + size
        before_ok = start == 0 or not _word_character(text[start - 1])
        if before_ok and (end == len(text) or not _word_character(text[end])):
            return True
        start = text.find(word, start + 1)
    return False


def _word_character(character: str) -> bool:
    return character.isalnum() or character in "_-"


def load_rules(project_dir: str, env: Mapping[str, str]) -> Rules:
    """Every Bash rule of every settings layer Claude Code reads for this session; raises Unsure."""
    flags = claude_flags(env)
    sources = _setting_sources(flags)
    allow: list[str] = []
    deny: list[str] = []
    ask: list[str] = []
    file_rules: list[str] = []
    contained = False
    managed = [path for path in _MANAGED_PATHS if os.path.exists(path)]
    if os.path.isdir(_MANAGED_DROPINS):
        managed += sorted(os.path.join(_MANAGED_DROPINS, name) for name in os.listdir(_MANAGED_DROPINS)
                          if name.endswith(".json"))
    managed_only = False
    layers: list[tuple[str, dict[str, Any]]] = []
    for path in managed:
        settings = _read_settings(path)
        if settings is not None:
            layers.append(("managed", settings))
            permissions = settings.get("permissions")
            managed_only = managed_only or (isinstance(permissions, dict)
                                            and permissions.get("allowManagedPermissionRulesOnly") is True)
            managed_only = managed_only or settings.get("allowManagedPermissionRulesOnly") is True
    config_dir = env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    for source, path in (("user", os.path.join(config_dir, "settings.json")),
                         ("project", os.path.join(project_dir, ".claude", "settings.json")),
                         ("local", os.path.join(project_dir, ".claude", "settings.local.json"))):
        settings = _read_settings(path)
        if settings is not None:
            layers.append((source, settings))
    for value in flags.get("--settings", []):
        layers.append(("flag", _settings_flag(value, env)))
    for source, settings in layers:
        sandbox = settings.get("sandbox")
        if isinstance(sandbox, dict) and sandbox.get("enabled"):
            # Sandbox exclusions are matched against the command text too; the wrapper would not match them.
            raise Unsure(f"{source} settings: the Bash sandbox is on")
        permissions = settings.get("permissions", {})
        if not isinstance(permissions, dict):
            raise Unsure(f"{source} settings: permissions is not an object")
        counts_for_allow = (not managed_only or source == "managed") and (
            sources is None or source in ("managed", "flag") or source in sources)
        if counts_for_allow:
            allow.extend(_bash_rules(permissions.get("allow"), source))
        deny.extend(_bash_rules(permissions.get("deny"), source))
        ask.extend(_bash_rules(permissions.get("ask"), source))
        file_rules.extend(_file_patterns(permissions.get("deny")) + _file_patterns(permissions.get("ask")))
        contained = contained or _contains(permissions) or _contains(settings)
    return Rules(tuple(allow), tuple(deny), tuple(ask), tuple(file_rules), contained)


def _stays_inside(facts: ShellFacts, cwd: str | None, project_dir: str) -> bool:
    return facts.simple_commands is not None and all(
        read_only.allowed_under_prefix_rule(simple.words, cwd, project_dir) for simple in facts.simple_commands)


def _contains(permissions: dict[str, Any]) -> bool:
    """Whether a settings layer turns on one of the settings that block reads or writes outside the working
    directories (`blockReadsOutsideWorkingDirectories`, `blockFileToolReadsOutsideWorkingDirectories`...)."""
    return any(key.startswith("block") and key.endswith("OutsideWorkingDirectories") and value is not False
               for key, value in permissions.items())


def _file_patterns(entries: object) -> list[str]:
    """The path patterns of a (validated) rule list's rules of tools whose rules may concern files."""
    if not isinstance(entries, list):
        return []
    patterns = []
    for entry in entries:
        entry = entry.strip()
        if entry.startswith(NOT_ABOUT_FILES):
            continue
        _, parenthesis, rest = entry.partition("(")
        patterns.append(rest.removesuffix(")").strip() or "**" if parenthesis else "**")
    return patterns


def _file_rule_may_apply(patterns: tuple[str, ...], facts: ShellFacts, cwd: str | None, project_dir: str) -> bool:
    """Whether a file rule's pattern could concern the command (see the module docstring): never too few."""
    if not patterns:
        return False
    if facts.simple_commands is None or any(simple.words is None for simple in facts.simple_commands):
        return True
    words: list[str] = []
    for simple in facts.simple_commands:
        for word in simple.words or ():
            words.extend(_path_forms(word, cwd or project_dir, project_dir))
    for pattern in patterns:
        runs = _literal_runs(pattern)
        if not runs or any(run in word for run in runs for word in words):
            return True
    return False


def _path_forms(word: str, cwd: str, project_dir: str) -> list[str]:
    """A word, and the file it names as written and with symlinks resolved, case folded. A path inside the
    project is given from the project, so that the directories above it (`/home/me/src/app`) match no rule."""
    written = os.path.normpath(os.path.join(cwd, word))
    forms = [] if os.path.isabs(word) else [word]
    for path, project in ((written, os.path.normpath(project_dir)),
                          (os.path.realpath(written), os.path.realpath(project_dir))):
        forms.append(os.path.relpath(path, project) if read_only.is_under(path, project) else path)
    return [form.casefold() for form in forms]


def _literal_runs(pattern: str) -> list[str]:
    """The parts of a glob that any path it matches must contain: what is left between wildcards, classes
    (`[ab]`), alternatives (`{a,b}`) and slashes, without `.`, `..` and `~`."""
    plain: list[str] = []
    depth = 0
    for character in pattern:
        if character in "[{":
            depth += 1
        elif character in "]}":
            depth = max(depth - 1, 0)
            plain.append("/")
        elif depth or character in "*?\\":
            plain.append("/")
        else:
            plain.append(character)
    return [run.casefold() for run in "".join(plain).split("/") if run not in ("", ".", "..", "~")]


def _bash_rules(entries: object, source: str) -> list[str]:
    """The Bash rule bodies in one list; rules of other tools are not about Bash commands and are skipped."""
    if entries is None:
        return []
    if not isinstance(entries, list) or not all(isinstance(entry, str) for entry in entries):
        raise Unsure(f"{source} settings: a permission list is not a list of strings")
    rules = []
    for entry in entries:
        entry = entry.strip()
        if entry == "Bash":
            rules.append("*")
        elif entry.startswith("Bash(") and entry.endswith(")"):
            rules.append(entry[5:-1].strip() or "*")
        elif entry.startswith("Bash"):
            raise Unsure(f"{source} settings: unreadable Bash rule {entry!r}")
    return rules


def _read_settings(path: str) -> dict[str, Any] | None:
    """A settings file's object, None when it does not exist; raises Unsure when it exists but is not JSON."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise Unsure(f"{path}: {error}") from None
    try:
        settings = json.loads(data)
    except ValueError:
        raise Unsure(f"{path}: not valid JSON") from None
    if not isinstance(settings, dict):
        raise Unsure(f"{path}: not a JSON object")
    return settings


def _settings_flag(value: str, env: Mapping[str, str]) -> dict[str, Any]:
    """A `--settings` value: inline JSON, or a file path relative to the `claude` process's directory."""
    if value.lstrip().startswith("{"):
        try:
            settings = json.loads(value)
        except ValueError:
            raise Unsure("--settings: not valid JSON") from None
        if not isinstance(settings, dict):
            raise Unsure("--settings: not a JSON object")
        return settings
    base = _claude_cwd(env)
    path = value if os.path.isabs(value) else os.path.join(base, value)
    settings = _read_settings(path)
    if settings is None:
        raise Unsure(f"--settings {value}: no such file")
    return settings


def _setting_sources(flags: dict[str, list[str]]) -> set[str] | None:
    values = flags.get("--setting-sources")
    if values is None:
        return None
    return {part.strip() for value in values for part in value.split(",") if part.strip()}


def claude_flags(env: Mapping[str, str]) -> dict[str, list[str]]:
    """The permission-relevant flags the `claude` process was started with (only `--settings` and
    `--setting-sources` values are kept); raises Unsure when its arguments cannot be read or cannot be trusted."""
    arguments = _claude_arguments(env)
    flags: dict[str, list[str]] = {}
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        name, equals, inline = argument.partition("=")
        if name in _UNREADABLE_FLAGS:
            raise Unsure(f"claude was started with {name}, whose rules the rewrite does not read")
        if name in _SETTINGS_FLAGS + _SOURCES_FLAGS:
            if equals:
                flags.setdefault(name, []).append(inline)
            elif index + 1 < len(arguments):
                flags.setdefault(name, []).append(arguments[index + 1])
                index += 1
            else:
                raise Unsure(f"{name} without a value")
        index += 1
    return flags


def _claude_arguments(env: Mapping[str, str]) -> list[str]:
    pid = env.get("CLAUDE_PID", "")
    if not pid.isdigit():
        raise Unsure("CLAUDE_PID is not set: the flags claude was started with cannot be seen")
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            raw = file.read()
    except OSError:
        raise Unsure(f"cannot read the arguments of claude (pid {pid})") from None
    if not raw:
        raise Unsure(f"claude (pid {pid}) shows no arguments (exiting, or not yet started)")
    return [part.decode("utf-8", "surrogateescape") for part in raw.split(b"\0")[1:] if part]


def _claude_cwd(env: Mapping[str, str]) -> str:
    try:
        return os.readlink(f"/proc/{env.get('CLAUDE_PID', '')}/cwd")
    except OSError:
        raise Unsure("cannot find the directory claude was started in") from None
