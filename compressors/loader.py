"""Find, layer and cache rule files so that choosing a rule costs a few `stat` calls per Bash call.

Layers, lowest first: the built-in packs (`rules/*.toml` in this package), the user's
(`$XDG_CONFIG_HOME/codeoid/rules` or `~/.config/codeoid/rules`), the project's (`<project>/.codeoid/rules`). A rule
whose name exists in a lower layer replaces it in place (so it keeps that rule's priority); a new rule goes ahead
of every rule of the lower layers, so a user's or project's own rule wins over a built-in for the same command.
A file that cannot be read or checked is skipped whole and reported, with its line, in `RuleSet.errors`; the
rest load as usual.

The checked rules of one set of files are cached with `marshal` under the caller's cache directory, keyed by
every file's path, mtime and size, so a change to any file (or a new one) rebuilds the cache on the next call.
"""

from __future__ import annotations

import os

from codeoid.compressors.command import resolve
from codeoid.compressors.rule_files import (
    BUILTIN_DIR,
    cache_path,
    default_user_dir,
    layers_signature,
    read_cache,
    rule_layers,
    write_cache,
)
from codeoid.compressors.rules import Rule, RuleError, rule_from_table
from codeoid.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from codeoid.compressors.command import Invocation
    from codeoid.compressors.rule_files import Layer, Plain

__all__ = ["BUILTIN_DIR", "RuleSet", "default_user_dir", "load_rules", "read_rule_file", "report_errors", "rule_for",
           "rule_set"]


class RuleSet(NamedTuple):
    """The rules in force, in priority order, and the files that could not be used."""

    rules: tuple[Rule, ...]
    errors: tuple[RuleError, ...] = ()
    # The files were read now, not taken from the cache: a caller that logs `errors` does so once per change.
    rebuilt: bool = False

    def match(self, invocation: Invocation) -> Rule | None:
        """The first enabled rule that applies to `invocation`."""
        for rule in self.rules:
            if rule.applies_to(invocation):
                return rule
        return None

    def for_command(self, command: str) -> Rule | None:
        """The rule for a shell command line, or None when it resolves to no single program or no rule applies."""
        invocation = resolve(command)
        return None if invocation is None else self.match(invocation)

    def named(self, name: str) -> Rule | None:
        return next((rule for rule in self.rules if rule.name == name), None)


def load_rules(*, project_dir: str | os.PathLike[str] | None = None,
               user_dir: str | os.PathLike[str] | None = None,
               cache_dir: str | os.PathLike[str] | None = None) -> RuleSet:
    """The rules for a command run in `project_dir`; never raises for a bad rule file (see `RuleSet.errors`).

    `user_dir` defaults to `default_user_dir()`; pass a directory that does not exist to load no user rules.
    Without `cache_dir` every call parses the TOML files (about a millisecond per file).
    """
    layers = rule_layers(project_dir=project_dir, user_dir=user_dir)
    signature = layers_signature(layers)
    path = cache_path(os.fspath(cache_dir), signature) if cache_dir is not None else None
    plain = read_cache(path, signature) if path is not None else None
    if plain is not None:
        return rule_set(plain)
    plain = _build(layers)
    if path is not None:
        write_cache(path, signature, plain)
    return rule_set(plain)._replace(rebuilt=True)


def report_errors(rules: RuleSet, *, to_stderr: bool) -> None:
    """Say which rule files are broken (they are skipped; every other rule applies): a log line when the files
    were just read (so once per change), and with `to_stderr` one line each on stderr, for a person running
    `codeoid-compress` by hand. Never on stderr under the rewrite: there stderr is the command's own."""
    if not rules.errors:
        return
    if rules.rebuilt:
        from codeoid.log import log

        for error in rules.errors:
            log("rules", f"{error}; this file is skipped, the other rules apply")
    if to_stderr:
        import sys

        for error in rules.errors:
            print(f"codeoid-compress: {error} (this rule file is skipped; the other rules apply)", file=sys.stderr)


def rule_for(invocation: Invocation, cached: Plain | None, *, project_dir: str, cache_dir: str) -> Rule | None:
    """The rule a hook compresses `invocation`'s output with: from the cache `rule_files.current_cache` gave (or
    the files, rebuilding it), broken files reported to the log only (a hook never prints on stderr). Both
    compressing hooks, the rewrite and the after-the-fact PostToolUse, choose through this one function."""
    rules = rule_set(cached) if cached is not None else load_rules(project_dir=project_dir, cache_dir=cache_dir)
    report_errors(rules, to_stderr=False)
    return rules.match(invocation)


def rule_set(plain: Plain) -> RuleSet:
    """The rules of a plain (cached) form, as `load_rules` returns them."""
    rules_plain, errors_plain = plain
    return RuleSet(
        rules=tuple(Rule.from_plain(rule) for rule in rules_plain),
        errors=tuple(RuleError(path, line, message) for path, line, message in errors_plain),
    )


def _build(layers: Iterable[Layer]) -> Plain:
    ordered: list[dict[str, Any]] = []
    errors: list[tuple[str, int | None, str]] = []
    for layer in layers:
        fresh: list[dict[str, Any]] = []
        for path, _stat in layer:
            try:
                file_rules = read_rule_file(path)
            except RuleError as error:
                errors.append((error.path, error.line, error.message))
                continue
            for rule in file_rules:
                position = next((i for i, old in enumerate(ordered) if old["name"] == rule["name"]), None)
                if position is not None:
                    ordered[position] = rule
                else:
                    fresh = [old for old in fresh if old["name"] != rule["name"]] + [rule]
        ordered = fresh + ordered
    return ordered, errors


def read_rule_file(path: str) -> list[dict[str, Any]]:
    """The checked rules of one file, in plain form; raises RuleError naming the file and line."""
    import re  # only when a cache is rebuilt, as tomllib: the cached path needs neither
    import tomllib  # only when a cache is rebuilt: it costs more to import than the cache costs to read

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise RuleError(str(path), None, f"cannot read: {error}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line = _line_of_decode_error(str(error))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        raise RuleError(str(path), line, f"invalid TOML: {message}") from None
    unknown = sorted(set(document) - {"rule"})
    if unknown:
        raise RuleError(str(path), _line_of_key(text, unknown[0], 0), f"unknown top-level key {unknown[0]!r}; "
                        "rules are [[rule]] tables")
    tables = document.get("rule", [])
    if not isinstance(tables, list):
        raise RuleError(str(path), _line_of_key(text, "rule", 0), "rules must be [[rule]] tables")
    starts = [match.start() for match in re.finditer(r"(?m)^[ \t]*\[\[[ \t]*rule[ \t]*\]\]", text)]
    rules: list[dict[str, Any]] = []
    for index, table in enumerate(tables):
        start = starts[index] if index < len(starts) else 0
        line = text.count("\n", 0, start) + 1
        try:
            rule = rule_from_table(table)
        except ValueError as error:
            raise RuleError(str(path), _line_of_problem(text, start, str(error)) or line, str(error)) from None
        rule["source"] = f"{path}:{line}"
        rules.append(rule)
    return rules


def _line_of_decode_error(message: str) -> int | None:
    import re

    found = re.search(r"at line (\d+)", message)
    return int(found.group(1)) if found else None


def _line_of_problem(text: str, start: int, message: str) -> int | None:
    """The line of the key a complaint names (`item.head must be...`), searched from the rule's own table."""
    import re

    found = re.match(r"(?:unknown key )?'?([a-z_]+(?:\.[a-z_]+)?)", message)
    if not found:
        return None
    return _line_of_key(text, found.group(1).split(".")[-1], start)


def _line_of_key(text: str, key: str, start: int) -> int | None:
    import re

    found = re.compile(rf"(?m)^[ \t]*{re.escape(key)}[ \t]*=|[{{,][ \t]*{re.escape(key)}[ \t]*=").search(text, start)
    return text.count("\n", 0, found.start()) + 1 if found else None
