"""Whether the Bash tool's shell can run the wrapper: it must be bash, 4.4 or later.

The shell is found the way Claude Code 2.1.332 finds it (`claude_code_shell`): `CLAUDE_CODE_SHELL`, then `SHELL`,
each only if its path names bash or zsh and is executable; failing both, zsh before bash (bash before zsh when
`SHELL` is a bash), each looked up on PATH and in /bin, /usr/bin, /usr/local/bin and /opt/homebrew/bin. So a
container or CI job without `SHELL`, where Claude Code settles on /bin/bash, is wrapped too, and a machine where
it would pick zsh is not. The wrapper needs bash 4.4 (`{var}` descriptors, `wait` on a process substitution);
macOS still ships 3.2, so the version is asked once per bash binary and remembered in the cache directory, keyed
by the binary's path, size and mtime.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping

from codeoid import paths

MINIMUM = (4, 4)
SEARCHED_DIRECTORIES = ("/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin")


def claude_code_shell(env: Mapping[str, str]) -> str | None:
    """The shell Claude Code's Bash tool runs commands in, or None where it finds none (it refuses to start)."""
    named = [value for value in (env.get("CLAUDE_CODE_SHELL"), env.get("SHELL"))
             if value and ("bash" in value or "zsh" in value)]
    order = ("bash", "zsh") if os.path.basename(env.get("SHELL") or "") == "bash" else ("zsh", "bash")
    path = env.get("PATH") or ""
    candidates = [*named, _on_path(order[0], path),
                  *(os.path.join(directory, name) for name in order for directory in SEARCHED_DIRECTORIES),
                  _on_path(order[1], path)]
    return next((shell for shell in candidates if shell and _executable(shell)), None)


def wrappable_bash(env: Mapping[str, str], cache_dir: str) -> bool:
    """Whether the shell the Bash tool will use is a bash that runs the wrapper."""
    shell = claude_code_shell(env) or ""
    if os.path.basename(shell) != "bash" or not os.path.isabs(shell):
        return False
    try:
        stat = os.stat(shell)
    except OSError:
        return False
    key = f"{os.path.realpath(shell)}\0{stat.st_size}\0{stat.st_mtime_ns}"
    marker = os.path.join(cache_dir, f"bash-{zlib.crc32(key.encode('utf-8', 'surrogateescape')):08x}")
    try:
        with open(marker, encoding="ascii") as file:
            return file.read() == "ok"
    except OSError:
        pass
    version = _version(shell)
    if version is None:
        return False  # asking failed (a loaded machine, a signal): step aside this once, ask again next time
    verdict = "ok" if version >= MINIMUM else "too old"
    try:
        paths.write_private(marker, verdict.encode("ascii"))
    except OSError:
        pass
    return verdict == "ok"


def _on_path(name: str, path: str) -> str | None:
    for directory in path.split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if _executable(candidate):
            return candidate
    return None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _version(shell: str) -> tuple[int, int] | None:
    """The bash version, or None when the shell did not answer (that is not remembered as "too old")."""
    import subprocess  # only on a cache miss: it costs every other call milliseconds to import

    try:
        completed = subprocess.run([shell, "-c", 'echo "${BASH_VERSINFO[0]} ${BASH_VERSINFO[1]}"'],
                                   capture_output=True, timeout=5, stdin=subprocess.DEVNULL)
        major, minor = completed.stdout.split()
        return int(major), int(minor)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
