"""Projects the user excluded: there codeoid records nothing at all.

No hook stores an event, the Bash rewrite steps aside (a compressed call would archive its output), a by-hand
`codeoid-compress` passes output through without archiving it, and the MCP server answers that nothing is kept.
A project is excluded when its directory is, or lies under, a listed directory; an entry with `*`, `?` or `[`
is a glob matched against the directory and each of its parents (`~/clients/*` excludes every client).

The list is `CODEOID_EXCLUDE_PROJECTS` (separated like PATH) plus the file `excluded-projects` in the data
directory (one entry a line, `#` comments), which `codeoid exclude` edits. Hooks read it on every event, so it
costs one small file read and no imports beyond `os`.
"""

from __future__ import annotations

import os

from codeoid import paths

ENV = "CODEOID_EXCLUDE_PROJECTS"
FILE_NAME = "excluded-projects"
_GLOB_CHARACTERS = frozenset("*?[")


def list_file() -> str:
    return os.path.join(paths.data_dir_location(), FILE_NAME)


def entries() -> list[str]:
    """Every configured entry as written (environment first, then the file)."""
    found = [entry for entry in os.environ.get(ENV, "").split(os.pathsep) if entry.strip()]
    try:
        with open(list_file(), encoding="utf-8") as file:
            found += [line.strip() for line in file if line.strip() and not line.lstrip().startswith("#")]
    except (OSError, UnicodeDecodeError):
        pass
    return found


def excluded_by(directory: str | None) -> str | None:
    """The entry that excludes `directory`, or None when codeoid may record there."""
    if not directory:
        return None
    listed = entries()
    if not listed:
        return None
    where = os.path.realpath(os.path.expanduser(directory))
    for entry in listed:
        pattern = os.path.expanduser(entry.strip())
        if _GLOB_CHARACTERS & set(pattern):
            if _glob_matches(pattern, where):
                return entry
        else:
            root = os.path.realpath(pattern)
            if where == root or where.startswith(root.rstrip("/") + "/"):
                return entry
    return None


def _glob_matches(pattern: str, where: str) -> bool:
    import fnmatch  # only with a glob listed: it brings `re` along

    pattern = os.path.abspath(pattern)
    candidate = where
    while True:
        if fnmatch.fnmatchcase(candidate, pattern):
            return True
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return False
        candidate = parent
