"""Where rule files live and their compiled cache: the part of rule loading that needs only `os` and `marshal`.

The rewrite hook runs before every Bash call. Most commands (`echo`, `mkdir`, `python script.py`) name no program
any rule applies to, and `current_cache` with `programs_of` lets the hook see that from the cache alone, before
it imports the shell parser, the rule engine or even `typing`; the same cache then gives it the rules
(`loader.rule_set`) without a second read. Everything here is plain data; `codeoid.compressors.loader` builds and
checks the rules.
"""

from __future__ import annotations

import marshal
import os
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Layer = list[tuple[str, os.stat_result]]
    Signature = list[list[tuple[str, int, int]]]
    Plain = tuple[list[dict[str, Any]], list[tuple[str, int | None, str]]]

# Characters that end or surround a shell word: what is left between them are the words a program name can be.
_SHELL_PUNCTUATION = str.maketrans({character: " " for character in "'\"`$;&|()<>{}=\n\t"})
BUILTIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules")
# Bump when the plain form of a rule changes, so old caches are not read.
CACHE_FORMAT = 5


def default_user_dir() -> str:
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "codeoid", "rules")


def rule_layers(*, project_dir: str | os.PathLike[str] | None,
                user_dir: str | os.PathLike[str] | None = None) -> list[Layer]:
    """The rule files of each layer, lowest first: built-in, user, project."""
    layers = [toml_files(BUILTIN_DIR), toml_files(os.fspath(user_dir) if user_dir else default_user_dir())]
    if project_dir is not None:
        layers.append(toml_files(os.path.join(project_dir, ".codeoid", "rules")))
    return layers


def toml_files(directory: str) -> Layer:
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError:
        return []
    return [(entry.path, entry.stat()) for entry in entries
            if entry.name.endswith(".toml") and entry.is_file()]


def layers_signature(layers: list[Layer]) -> Signature:
    """Every file's path, mtime and size: any change (or a new file) means the cache is stale."""
    return [[(str(path), stat.st_mtime_ns, stat.st_size) for path, stat in layer] for layer in layers]


def cache_path(cache_dir: str, signature: Signature) -> str:
    # One cache file per set of rule directories, so two projects do not keep rebuilding each other's cache.
    directories = "\0".join(sorted({os.path.dirname(path) for layer in signature for path, _, _ in layer}))
    return os.path.join(cache_dir, f"rules-{zlib.crc32(directories.encode('utf-8', 'surrogateescape')):08x}.marshal")


def read_cache(path: str, signature: Signature) -> Plain | None:
    try:
        with open(path, "rb") as handle:
            stored = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(stored, tuple) or len(stored) != 3 or stored[0] != CACHE_FORMAT:
        return None
    if stored[1] != _marshalable(signature):
        return None
    rules, errors = stored[2]
    return rules, errors


def write_cache(path: str, signature: Signature, plain: Plain) -> None:
    """Write atomically; a cache that cannot be written only costs the next call a rebuild."""
    from codeoid.paths import write_private

    try:
        write_private(path, marshal.dumps((CACHE_FORMAT, _marshalable(signature), plain)))
    except OSError:
        pass


def current_cache(*, project_dir: str, cache_dir: str) -> Plain | None:
    """The cached rules for a project when the cache is current; None when there is none yet (the caller then
    loads through `codeoid.compressors.loader`, which writes it)."""
    signature = layers_signature(rule_layers(project_dir=project_dir))
    return read_cache(cache_path(cache_dir, signature), signature)


def programs_of(plain: Plain) -> frozenset[str]:
    """Every program name an enabled rule matches on."""
    return frozenset(program for rule in plain[0] if rule["enabled"]
                     for match in rule["match"] for program in match["program"])


def may_apply(command: str, cached: Plain | None) -> bool:
    """False only when no rule can apply to `command`: no word of it is a program an enabled rule matches on.

    Rules match the resolved program's basename (after `VAR=x` prefixes, launchers, pipelines), and that name
    is always one of the command's words once quotes and shell punctuation are taken away; a backslash could
    spell it some other way, so a command with one is never ruled out. Without a current rule cache (`cached`
    None: the first call, or rule files just edited) nothing is ruled out and the caller's full path rebuilds it.
    Both compressing hooks ask this first, with `os` and `marshal` alone: most commands stop here.
    """
    if cached is None or "\\" in command:
        return True
    programs = programs_of(cached)
    words = command.translate(_SHELL_PUNCTUATION).split()
    return any(os.path.basename(word) in programs for word in words)


def _marshalable(signature: Signature) -> tuple[Any, ...]:
    return tuple(tuple(layer) for layer in signature)
