"""A tool result Claude Code saved to a file: read the whole of it back, so the store keeps what the call returned.

Claude Code 2.1.332 saves a successful Bash output of 30,000 characters or more whole to
`~/.claude/projects/<slug>/<session>/tool-results/<id>.txt` and shows the model a `<persisted-output>` note with a
2 KB preview (docs/claude-code-tool-output.md). The PostToolUse payload then carries only the output's first 30,000
characters in `tool_response.stdout`, with `persistedOutputPath` and `persistedOutputSize` naming the file. Stored
as received, a 200 KB log keeps its first 30,000 characters and a line in its middle is never found.

`load` reads that file in the hook's own process, before the store is opened, and puts the whole text in the
payload's `tool_response.stdout`, so everything after it (the after-the-fact compression, the episode, the spool
if the store is busy) sees the whole result. What happened is written beside it, under `FACTS_KEY`: the file, its
size, and, when the whole could not be read, why and what is stored instead (the episode then says it was cut).

Only a regular file inside the session's own `tool-results/` folder is read: the folder is derived from the
payload's `transcript_path` (`<slug>/<session>.jsonl` keeps its results in `<slug>/<session>/tool-results/`),
both paths are resolved (symlinks included) before the containment check, the file is opened with `O_NOFOLLOW`
and `O_NONBLOCK` (a FIFO planted there cannot block the hook) and checked with `fstat` to be a regular file. At
most `CODEOID_PERSISTED_MAX_BYTES` bytes are read (64 MiB by default); past that the episode says where it was
cut. Stdlib only: this runs in every hook that sees a persisted result.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# The payload key codeoid adds beside Claude Code's own: what `load` found (a dict, see `load`).
FACTS_KEY = "codeoid_persisted"
PATH_KEY = "persistedOutputPath"
SIZE_KEY = "persistedOutputSize"
PERSISTED_KEYS = (PATH_KEY, SIZE_KEY)
MAX_BYTES_ENV = "CODEOID_PERSISTED_MAX_BYTES"
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_READ_BYTES = 1 << 20


def max_bytes(env: Mapping[str, str]) -> int:
    """The most bytes of a persisted file codeoid reads (`CODEOID_PERSISTED_MAX_BYTES`; a bad value: the default)."""
    try:
        value = int(env.get(MAX_BYTES_ENV) or DEFAULT_MAX_BYTES)
    except ValueError:
        return DEFAULT_MAX_BYTES
    return value if value > 0 else DEFAULT_MAX_BYTES


def allowed_root(transcript_path: str) -> str | None:
    """The session's `tool-results/` folder, resolved: `<slug>/<session>.jsonl` -> `<slug>/<session>/tool-results`."""
    base, extension = os.path.splitext(transcript_path)
    if extension != ".jsonl" or not os.path.isabs(transcript_path):
        return None
    return os.path.realpath(os.path.join(base, "tool-results"))


def load(payload: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any] | None:
    """When `payload`'s tool result names a persisted file, read it into `tool_response.stdout` (Bash) or the
    response string, and record under `FACTS_KEY`: `path`, `size` (Claude Code's), `read` (bytes read), `whole`
    (the whole file is now in the payload), `cut` (a sentence when it is not, saying what is stored), `cap`.
    Returns those facts, or None when the result names no file. Never raises."""
    response = payload.get("tool_response")
    if not isinstance(response, dict) or not isinstance(response.get(PATH_KEY), str):
        return None
    path = response[PATH_KEY]
    size = response.get(SIZE_KEY)
    preview = response.get("stdout")
    cap = max_bytes(env)
    facts: dict[str, Any] = {"path": path, "size": size if isinstance(size, int) else None, "read": 0,
                             "whole": False, "cut": None, "cap": cap}
    shown = len(preview) if isinstance(preview, str) else 0
    transcript = payload.get("transcript_path")
    root = allowed_root(transcript) if isinstance(transcript, str) else None
    try:
        if root is None:
            raise PersistedRefused("no session folder to check it against (transcript_path)")
        data, complete = _read(path, root, cap)
    except (OSError, PersistedRefused) as error:
        reason = error.reason if isinstance(error, PersistedRefused) else (error.strerror or type(error).__name__)
        facts["cut"] = (f"Claude Code saved the whole output ({_bytes(size)}) to {path}, which codeoid could not "
                        f"read ({reason}); stored: the first {shown:,} characters it handed the hook")
        payload[FACTS_KEY] = facts
        return facts
    text = data.decode("utf-8", "replace")
    if not complete and text.endswith("\ufffd"):
        text = text.rstrip("\ufffd")  # a character cut in two at the cap
    facts["read"] = len(data)
    if complete:
        facts["whole"] = True
    else:
        facts["cut"] = (f"stored the first {len(data):,} bytes of the output ({_bytes(size)}) Claude Code saved to "
                        f"{path}: codeoid reads at most {cap:,} bytes of one ({MAX_BYTES_ENV})")
    if isinstance(preview, str) or "stdout" in response:
        response["stdout"] = text
    payload[FACTS_KEY] = facts
    return facts


class PersistedRefused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _read(path: str, root: str, cap: int) -> tuple[bytes, bool]:
    """At most `cap` bytes of `path`, and whether that is all of it; refuses anything but a regular file in `root`."""
    if not os.path.isabs(path):
        raise PersistedRefused("not an absolute path")
    resolved = os.path.realpath(path)
    if os.path.commonpath([resolved, root]) != root or resolved == root:
        raise PersistedRefused("outside the session's tool-results folder")
    fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PersistedRefused("not a regular file")
        parts: list[bytes] = []
        taken = 0
        while taken <= cap:
            block = os.read(fd, min(_READ_BYTES, cap + 1 - taken))
            if not block:
                break
            parts.append(block)
            taken += len(block)
    finally:
        os.close(fd)
    data = b"".join(parts)
    return (data, True) if len(data) <= cap else (data[:cap], False)


def _bytes(size: object) -> str:
    return f"{size:,} bytes" if isinstance(size, int) else "size not given"


def without_persisted_keys(response: dict[str, Any]) -> dict[str, Any]:
    """A replacement Claude Code takes: one still carrying the persisted keys is ignored (protocol notes 9b)."""
    return {key: value for key, value in response.items() if key not in PERSISTED_KEYS}
