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

import marshal
import os
import re
import zlib
from collections.abc import Iterable
from typing import Any, NamedTuple

from codeoid.compressors.command import Invocation, resolve
from codeoid.compressors.rules import Rule, RuleError, rule_from_table

BUILTIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules")
# Bump when the plain form of a rule changes, so old caches are not read.
CACHE_FORMAT = 2


class RuleSet(NamedTuple):
    """The rules in force, in priority order, and the files that could not be used."""

    rules: tuple[Rule, ...]
    errors: tuple[RuleError, ...] = ()

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


def default_user_dir() -> str:
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "codeoid", "rules")


def load_rules(*, project_dir: str | os.PathLike[str] | None = None,
               user_dir: str | os.PathLike[str] | None = None,
               cache_dir: str | os.PathLike[str] | None = None) -> RuleSet:
    """The rules for a command run in `project_dir`; never raises for a bad rule file (see `RuleSet.errors`).

    `user_dir` defaults to `default_user_dir()`; pass a directory that does not exist to load no user rules.
    Without `cache_dir` every call parses the TOML files (about a millisecond per file).
    """
    layers = [_toml_files(BUILTIN_DIR), _toml_files(os.fspath(user_dir) if user_dir else default_user_dir())]
    if project_dir is not None:
        layers.append(_toml_files(os.path.join(project_dir, ".codeoid", "rules")))
    signature = [[(str(path), stat.st_mtime_ns, stat.st_size) for path, stat in layer] for layer in layers]
    cache_path = _cache_path(os.fspath(cache_dir), signature) if cache_dir is not None else None
    plain = _read_cache(cache_path, signature) if cache_path is not None else None
    if plain is None:
        plain = _build(layers)
        if cache_path is not None:
            _write_cache(cache_path, signature, plain)
    rules_plain, errors_plain = plain
    return RuleSet(
        rules=tuple(Rule.from_plain(rule) for rule in rules_plain),
        errors=tuple(RuleError(path, line, message) for path, line, message in errors_plain),
    )


def _toml_files(directory: str) -> list[tuple[str, os.stat_result]]:
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError:
        return []
    return [(entry.path, entry.stat()) for entry in entries
            if entry.name.endswith(".toml") and entry.is_file()]


_Plain = tuple[list[dict[str, Any]], list[tuple[str, int | None, str]]]


def _build(layers: Iterable[list[tuple[str, os.stat_result]]]) -> _Plain:
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
    found = re.search(r"at line (\d+)", message)
    return int(found.group(1)) if found else None


def _line_of_problem(text: str, start: int, message: str) -> int | None:
    """The line of the key a complaint names (`item.head must be...`), searched from the rule's own table."""
    found = re.match(r"(?:unknown key )?'?([a-z_]+(?:\.[a-z_]+)?)", message)
    if not found:
        return None
    return _line_of_key(text, found.group(1).split(".")[-1], start)


def _line_of_key(text: str, key: str, start: int) -> int | None:
    found = re.compile(rf"(?m)^[ \t]*{re.escape(key)}[ \t]*=|[{{,][ \t]*{re.escape(key)}[ \t]*=").search(text, start)
    return text.count("\n", 0, found.start()) + 1 if found else None


def _cache_path(cache_dir: str, signature: list[list[tuple[str, int, int]]]) -> str:
    # One cache file per set of rule directories, so two projects do not keep rebuilding each other's cache.
    directories = "\0".join(sorted({os.path.dirname(path) for layer in signature for path, _, _ in layer}))
    return os.path.join(cache_dir, f"rules-{zlib.crc32(directories.encode('utf-8', 'surrogateescape')):08x}.marshal")


def _read_cache(path: str, signature: list[list[tuple[str, int, int]]]) -> _Plain | None:
    try:
        with open(path, "rb") as handle:
            stored = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(stored, tuple) or len(stored) != 3 or stored[0] != CACHE_FORMAT:
        return None
    if stored[1] != _marshalable_signature(signature):
        return None
    rules, errors = stored[2]
    return rules, errors


def _write_cache(path: str, signature: list[list[tuple[str, int, int]]], plain: _Plain) -> None:
    """Write atomically; a cache that cannot be written only costs the next call a rebuild."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "wb") as handle:
            marshal.dump((CACHE_FORMAT, _marshalable_signature(signature), plain), handle)
        os.replace(temporary, path)
    except OSError:
        pass


def _marshalable_signature(signature: list[list[tuple[str, int, int]]]) -> tuple[Any, ...]:
    return tuple(tuple(layer) for layer in signature)
