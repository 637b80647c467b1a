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
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return WorkspaceId(key=start, root=start, portable_id=None)
        candidate = parent


def _from_common_dir(common: str, top: str) -> WorkspaceId:
    common = os.path.realpath(common)
    return WorkspaceId(key=common, root=top, portable_id=_remote_of(common))


def _common_dir_of_worktree(dot_git_file: str) -> str | None:
    """A worktree's `.git` file says `gitdir: <repo>/.git/worktrees/<name>`; that dir names the common dir."""
    try:
        with open(dot_git_file, errors="replace") as file:
            text = file.read().strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = os.path.join(os.path.dirname(dot_git_file), text[len("gitdir:"):].strip())
    try:
        with open(os.path.join(git_dir, "commondir")) as file:
            common = file.read().strip()
    except OSError:
        return git_dir
    return os.path.join(git_dir, common)


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
