"""PostToolUse on Bash: compress, after the fact, the output of a command the rewrite left alone.

The rewrite (`pre_tool_use`) runs a command through `codeoid-compress` only where the command was already
allowed, because its answer is `allow` and codeoid never widens permissions. Everywhere else (the default mode
with no allow rule, a shape the rewrite steps aside from) the command runs as typed. Its output still passes
through PostToolUse before the model reads it, and Claude Code takes `updatedToolOutput` as the tool's result
(protocol notes, PostToolUse), so the same rule applied to the same text gives the model the compressed text
with Claude Code's permission decision untouched.

What Claude Code hands this hook differs from what `codeoid-compress` reads, and the differences decide what is
left alone:

- the text is stdout and stderr merged (Bash's `tool_response.stdout` holds both), as the model would read it;
- at or above `CAP_CHARS` characters Claude Code has already saved the output to a file and shows the model a
  2 KB preview of it; the payload then names the file (`persistedOutputPath`), which the hook reads back whole
  (`codeoid.capture.persisted`) before this runs: the whole output is compressed, and the answer leaves out the
  persisted keys (a replacement still carrying them is ignored). Where the whole file could not be read (refused,
  over `CODEOID_PERSISTED_MAX_BYTES`) the output is left alone: counts are never taken from a preview;
- a command that exits non-zero fires PostToolUseFailure, whose replacement Claude Code ignores: left alone;
- a background run's output is a note that it started: left alone.

`plan` decides, outside the store's write lock (the rule engine runs here, in the hook's own process); the
tool call's handler (`codeoid.capture.events.post_tool_use`) then stores the text as the raw output
`raw-<tool_use_id>` and the episode in one transaction, and only once that is committed answers with the
compressed text, whose footer names the raw output exactly as `codeoid-compress`'s does: its cut notes' line
numbers are lines of that raw output, which `get_episode(id, lines=...)` pages. An event the hook could not
apply at once (a busy store: it waits in the spool) gets no answer, so the model reads the output whole.

Like the rewrite, this is kept light: the rule cache says from `os` and `marshal` alone whether a rule could
apply, and the parser and the engine are imported only when one can. Any failure of ours: no plan, a log line,
and the output passes unchanged.
"""

from __future__ import annotations

import os

from codeoid.capture import persisted
from codeoid.capture.spool import Replacement
from codeoid.compressors import switch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# Claude Code 2.1.332 hands PostToolUse at most this many characters of a Bash output; a longer one it has saved
# to a file already, showing the model `<persisted-output>` with a 2 KB preview.
CAP_CHARS = 30_000

# The engine's floor (`engine.Thresholds` min_lines, min_bytes; a test keeps them equal), checked before the parser
# and the engine are imported: most outputs are smaller, and the engine would pass them through unchanged.
FLOOR_LINES = 40
FLOOR_BYTES = 1024

# Why `plan` compressed an output or left it alone (`codeoid discover` names the same reasons).
COMPRESSED = "compressed after the fact"
NOT_BASH = "not a Bash call"
SWITCHED_OFF = "switched off by CODEOID_COMPRESS"
WRAPPED = "already through codeoid-compress"
BACKGROUND = "run in the background"
FAILED = "failed: Claude Code takes no replacement for a failed command's output"
OVER_CAP = f"over Claude Code's {CAP_CHARS:,}-character cap (it saved the output to a file itself)"
NO_RULE = "no rule"
CONSTRUCT = "output not the invocation's alone (parse unclear, stdout redirected)"
UNDER_FLOOR = "under the size floor"
WOULD_NOT_SHRINK = "would not shrink"
ERROR = "internal error (logged)"


def plan(payload: dict[str, Any], env: Mapping[str, str]) -> tuple[Replacement | None, str]:
    """What the model should read instead of this Bash call's output, and why (or None and why not).

    Never raises: any failure of the parser, the rules or the engine is logged and the output passes unchanged.
    """
    try:
        return _plan(payload, env)
    except Exception as error:  # noqa: BLE001 - a hook never breaks the session: the output passes unchanged
        import traceback

        from codeoid.log import log

        log("compress", f"{payload.get('tool_use_id')}: not compressed after the fact ({error!r})\n"
                        f"{traceback.format_exc()}")
        return None, ERROR


def _plan(payload: dict[str, Any], env: Mapping[str, str]) -> tuple[Replacement | None, str]:
    tool_input, response = payload.get("tool_input"), payload.get("tool_response")
    tool_use_id = payload.get("tool_use_id")
    if (payload.get("tool_name") != "Bash" or not isinstance(tool_input, dict) or not isinstance(response, dict)
            or not isinstance(tool_use_id, str) or not tool_use_id):
        return None, NOT_BASH
    command, stdout = tool_input.get("command"), response.get("stdout")
    if not isinstance(command, str) or not isinstance(stdout, str):
        return None, NOT_BASH
    if not switch.enabled(env, switch.AFTER):
        return None, SWITCHED_OFF
    if payload.get("hook_event_name") == "PostToolUseFailure":
        return None, FAILED
    if tool_input.get("run_in_background") or response.get("backgroundTaskId") or response.get("interrupted"):
        return None, BACKGROUND
    stderr = response.get("stderr")
    if isinstance(response.get(persisted.PATH_KEY), str):
        facts = payload.get(persisted.FACTS_KEY)
        if not isinstance(facts, dict) or not facts.get("whole"):
            return None, OVER_CAP  # only the head of the output is here: never compress a preview
        # `persisted.load` put the whole file in `stdout`: compressed, it replaces Claude Code's note and preview.
    elif len(stdout) + (len(stderr) if isinstance(stderr, str) else 0) >= CAP_CHARS - 1:
        # No file named, yet at the cap: Claude Code drops a final newline, so the first 30,000 characters of a
        # longer output can arrive as 29,999. Counting from them would be counting from a preview.
        return None, OVER_CAP
    return compress(command, stdout, tool_use_id=tool_use_id,
                    project_dir=env.get("CLAUDE_PROJECT_DIR") or _str(payload.get("cwd")) or os.getcwd(), env=env)


def compress(command: str, text: str, *, tool_use_id: str, project_dir: str,
             env: Mapping[str, str]) -> tuple[Replacement | None, str]:
    """`text`, the output `command` printed, through the rule the rewrite would have chosen for it, with the
    footer naming `raw-<tool_use_id>`; None and why when no rule applies or it would not shrink the text."""
    from codeoid import paths
    from codeoid.compressors.bash_wrapper import is_wrapped
    from codeoid.compressors.rule_files import current_cache, may_apply

    if is_wrapped(command):
        return None, WRAPPED  # compressed once already, by `codeoid-compress` as it ran
    cache_dir = paths.cache_dir()
    cached = current_cache(project_dir=project_dir, cache_dir=cache_dir)
    if not may_apply(command, cached):
        return None, NO_RULE  # the common case, decided before the parser and the engine are imported
    if text.count("\n") + 1 < FLOOR_LINES or len(text.encode("utf-8", "surrogatepass")) < FLOOR_BYTES:
        return None, UNDER_FLOOR
    from codeoid.compressors import command as shell_command
    from codeoid.compressors.loader import rule_for

    parsed = shell_command.parse(command)
    if not parsed.understood or parsed.background or parsed.stdout_redirected or parsed.invocation is None:
        return None, CONSTRUCT
    rule = rule_for(parsed.invocation, cached, project_dir=project_dir, cache_dir=cache_dir)
    if rule is None:
        return None, NO_RULE
    from codeoid.compressors.engine import MARKER, compress_bytes, footer, thresholds_from
    from codeoid.store.raw import raw_output_id_for

    raw = text.encode("utf-8", "surrogatepass")
    compressed, result = compress_bytes(rule, raw, thresholds_from(env))
    if not result.lines_removed:
        return None, UNDER_FLOOR if result.passthrough == "below threshold" else WOULD_NOT_SHRINK
    newline = b"" if compressed.endswith(b"\n") or not compressed else b"\n"
    closing = MARKER + footer(raw_output_id_for(tool_use_id), result.describe()).encode("utf-8", "surrogatepass")
    shown = compressed + newline + closing
    if len(shown) >= len(raw):
        return None, WOULD_NOT_SHRINK
    return Replacement(rule=rule.name, raw=raw, shown=shown.decode("utf-8", "surrogatepass")), COMPRESSED


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
