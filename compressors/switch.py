"""The user's switch for compression by the hooks: `CODEOID_COMPRESS`, read from the environment each call.

Claude Code hands its own environment (and the `env` of its settings files) to every hook, so the switch can
live in a shell profile or in `settings.json`. Two hooks compress: the PreToolUse rewrite (the command runs
through `codeoid-compress`, where it was already allowed) and PostToolUse (the output of a command the rewrite
left alone is compressed after the fact, `codeoid.hooks.post_tool_use`).

    unset, `on`, `1`, `true`, `yes`, `all`   both
    `rewrite`                                only the rewrite
    `after`                                  only the after-the-fact compression
    `off`, `0`, `false`, `no`, `none`        neither

Any other value turns both off: a switch the user reached for but misspelt should not leave compression on.
`codeoid-compress` run by hand is not a hook and ignores the switch. Only `os` is needed, for every Bash call.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

ENV = "CODEOID_COMPRESS"
REWRITE = "rewrite"
AFTER = "after"
_BOTH = frozenset({"", "on", "1", "true", "yes", "all"})


def enabled(env: Mapping[str, str], hook: str) -> bool:
    """Whether `hook` (`REWRITE` or `AFTER`) may compress under the user's setting."""
    value = env.get(ENV, "").strip().lower()
    return value in _BOTH or value == hook
