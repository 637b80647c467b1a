"""Whether the Bash tool's shell can run the wrapper: it must be bash, 4.4 or later.

Claude Code runs Bash commands with `CLAUDE_CODE_SHELL` when set, else `$SHELL` when that is bash or zsh (falling
back to a bash it finds). The rewrite only trusts what it can name: the shell those variables point to must be
bash. The wrapper needs bash 4.4 (`{var}` descriptors, `wait` on a process substitution); macOS still ships 3.2,
so the version is asked once per bash binary and remembered in the cache directory, keyed by the binary's
path, size and mtime.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping

MINIMUM = (4, 4)


def wrappable_bash(env: Mapping[str, str], cache_dir: str) -> bool:
    """Whether the shell the Bash tool will use is a bash that runs the wrapper."""
    shell = env.get("CLAUDE_CODE_SHELL") or env.get("SHELL") or ""
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
        os.makedirs(cache_dir, mode=0o700, exist_ok=True)
        temporary = f"{marker}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="ascii") as file:
            file.write(verdict)
        os.replace(temporary, marker)
    except OSError:
        pass
    return verdict == "ok"


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
