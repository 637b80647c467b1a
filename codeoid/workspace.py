"""Which workspace a directory belongs to.

All worktrees of one repository share memory, so the key is the real path of the git *common* dir. It is
found by reading `.git` files directly (spawning `git` would cost a hook several milliseconds) with
`os.path` rather than `pathlib`, which is slow to import.
"""

from __future__ import annotations

import os
import re


class WorkspaceId:
    """A workspace as found from a directory, before it has a row in the store."""

    __slots__ = ("key", "root", "portable_id")

    def __init__(self, key: str, root: str, portable_id: str | None) -> None:
        self.key = key  # real path of the git common dir, else of the directory itself
        self.root = root  # the top-level directory it was found from
        self.portable_id = portable_id  # normalized remote URL: the same on every clone


def identify(directory: str) -> WorkspaceId:
    start = os.path.realpath(directory)
    candidate = start
    while True:
        dot_git = os.path.join(candidate, ".git")
        if os.path.isdir(dot_git):
            return _from_common_dir(dot_git, candidate)
        if os.path.isfile(dot_git):
            common = _common_dir_of_worktree(dot_git)
            if common is not None:
                return _from_common_dir(common, candidate)
            # Git itself stops at a `.git` file it cannot follow; a forged one must not borrow another
            # repository's memory, nor may it send us on to a repository further up.
            return WorkspaceId(key=candidate, root=candidate, portable_id=None)
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return WorkspaceId(key=start, root=start, portable_id=None)
        candidate = parent


def _from_common_dir(common: str, top: str) -> WorkspaceId:
    common = os.path.realpath(common)
    return WorkspaceId(key=common, root=top, portable_id=_remote_of(common))


def _common_dir_of_worktree(dot_git_file: str) -> str | None:
    """The common dir of the repository whose worktree this `.git` file is, or None when it is not one.

    A worktree's `.git` file says `gitdir: <repo>/.git/worktrees/<name>`. Anyone can write such a file, so it
    counts only when the repository names it back, as `git worktree add` leaves it: that directory holds a
    `gitdir` file pointing at this very `.git` file and a `commondir` file, and it sits in the common dir's
    `worktrees/`. Anything else (a forged pointer, a submodule's or `--separate-git-dir`'s private git dir)
    is not a worktree of a shared repository.
    """
    text = _read_small(dot_git_file)
    if text is None or not text.startswith("gitdir:"):
        return None
    git_dir = os.path.join(os.path.dirname(dot_git_file), text[len("gitdir:"):].strip())
    back = _read_small(os.path.join(git_dir, "gitdir"))
    common = _read_small(os.path.join(git_dir, "commondir"))
    if not back or not common:
        return None
    if os.path.realpath(os.path.join(git_dir, back)) != os.path.realpath(dot_git_file):
        return None
    common_dir = os.path.realpath(os.path.join(git_dir, common))
    if os.path.dirname(os.path.realpath(git_dir)) != os.path.join(common_dir, "worktrees"):
        return None
    return common_dir if os.path.isfile(os.path.join(common_dir, "HEAD")) else None


def _read_small(path: str) -> str | None:
    """A git pointer file's text, stripped; None when it cannot be read (only the first 4 KB are looked at)."""
    try:
        with open(path, errors="replace") as file:
            return file.read(4096).strip()
    except OSError:
        return None


_REMOTE_SECTION = re.compile(r'^\s*\[remote "(?P<name>[^"]+)"\]|^\s*url\s*=\s*(?P<url>\S+)', re.MULTILINE)


def _remote_of(common: str) -> str | None:
    """The `origin` remote (else the first one), normalized so ssh and https clones agree."""
    try:
        with open(os.path.join(common, "config"), errors="replace") as file:
            config = file.read()
    except OSError:
        return None
    remotes: dict[str, str] = {}
    current = None
    for match in _REMOTE_SECTION.finditer(config):
        if match.group("name"):
            current = match.group("name")
        elif current and current not in remotes:
            remotes[current] = match.group("url")
    url = remotes.get("origin") or next(iter(remotes.values()), None)
    return normalize_remote(url) if url else None


def normalize_remote(url: str) -> str:
    """`git@github.com:a/b.git`, `https://github.com/a/b`, `ssh://git@github.com/a/b.git`: all `github.com/a/b`."""
    url = url.strip()
    url = re.sub(r"^[a-z+]+://", "", url)
    url = re.sub(r"^[^@/]+@", "", url)
    url = re.sub(r"^([^/:]+):(?!\d+/)", r"\1/", url)
    url = re.sub(r":\d+/", "/", url)
    url = re.sub(r"\.git/?$", "", url).rstrip("/")
    return url.lower()
