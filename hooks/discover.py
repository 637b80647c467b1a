"""What compression missed: every stored Bash call that reached the window whole, with the reason it did.

The store keeps each Bash call with the command the model asked for and the text Claude Code showed, so the
rewrite's decision can be replayed over history (`pre_tool_use.decide`, with today's rules and permission
settings) and every byte that went in uncompressed can be put down to one reason:

- no rule: no built-in or user rule compresses that program (a rule file could);
- not allowed: a rule applies, but the user's permission rules would not have let the command run unasked,
  and codeoid never widens permissions; the allow rule that would let it is named;
- a construct: the command has a shape the rewrite steps aside from (a redirect, `exec`, a watch mode...);
- under the size floor: the output was too small to be worth compressing (or no rule could shrink it), whether
  it went through `codeoid-compress` or was offered to the after-the-fact compression;
- other: a background run, an excluded project, codeoid-compress or bash missing.

Where the rewrite steps aside (not allowed, a construct, switched off, codeoid-compress missing), PostToolUse
compresses the output after the fact (`post_tool_use`), so those calls cost the window nothing to speak of any
more, with two exceptions that only the rewrite can reach, and that the reason then names: a command that failed
(Claude Code takes no replacement for a failure's output) and an output at Claude Code's 30,000-character cap.
A call still missed for which the after-the-fact compression would work today ran before it existed or while
it was switched off: it is reported as such.

Every call counts what it put in the window as Claude Code showed it (`codeoid.claude_window`): a success
Claude Code persisted to a file counts as its preview note and is not missed (Claude Code kept it out of the
window itself; it is reported on a line of its own), a failure as Claude Code's cut of it. Sizes are characters.

Replayed decisions use the settings of today, not of the day the call ran, and the default permission mode
(the mode a call ran under is not stored); `codeoid discover` says so.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from codeoid.claude_window import stored_persisted, stored_window_size
from codeoid.compressors import switch
from codeoid.compressors.command import resolve
from codeoid.compressors.engine import Thresholds
from codeoid.hooks import post_tool_use, pre_tool_use

UNDER_FLOOR = "under the size floor"
WOULD_NOT_SHRINK = "passed through, would not shrink"
FLOOR = Thresholds()  # codeoid-compress's own defaults
OTHER = "other"
FAILED = "failed: no replacement after the fact"
OVER_CAP = f"at Claude Code's {post_tool_use.CAP_CHARS:,}-character cap"
AFTER_THE_FACT_NOW = "compressed after the fact under today's settings"
# How the replayed reasons are reported: the hook's finer ones folded into the few the user acts on.
REASONS = {
    pre_tool_use.NO_RULE: pre_tool_use.NO_RULE,
    pre_tool_use.NOT_ALLOWED: pre_tool_use.NOT_ALLOWED,
    f"{pre_tool_use.NOT_ALLOWED}; {FAILED}": f"{pre_tool_use.NOT_ALLOWED}; {FAILED}",
    f"{pre_tool_use.NOT_ALLOWED}; {OVER_CAP}": f"{pre_tool_use.NOT_ALLOWED}; {OVER_CAP}",
    pre_tool_use.CONSTRUCT: pre_tool_use.CONSTRUCT,
    f"{pre_tool_use.CONSTRUCT}; {FAILED}": f"{pre_tool_use.CONSTRUCT}; {FAILED}",
    f"{pre_tool_use.CONSTRUCT}; {OVER_CAP}": f"{pre_tool_use.CONSTRUCT}; {OVER_CAP}",
    pre_tool_use.SWITCHED_OFF: pre_tool_use.SWITCHED_OFF,
    UNDER_FLOOR: UNDER_FLOOR,
    WOULD_NOT_SHRINK: WOULD_NOT_SHRINK,
    pre_tool_use.WRAPPED: "compressed under today's rules",  # rules or permissions changed since the call ran
    AFTER_THE_FACT_NOW: AFTER_THE_FACT_NOW,  # ran before the after-the-fact compression, or while it was off
}
# Where the rewrite steps aside but PostToolUse may still compress the output.
_LEFT_TO_AFTER = frozenset({pre_tool_use.NOT_ALLOWED, pre_tool_use.CONSTRUCT, pre_tool_use.SWITCHED_OFF,
                            pre_tool_use.SETUP})
# Programs whose first argument names what they do: an allow rule for `git diff` should not allow `git push`.
SUBCOMMAND_PROGRAMS = frozenset({
    "git", "cargo", "go", "npm", "pnpm", "yarn", "bun", "docker", "kubectl", "uv", "poetry", "pip", "pip3",
    "gh", "make", "dotnet", "mvn", "gradle", "terraform", "helm", "brew", "apt", "conda", "deno",
})


@dataclass
class Shape:
    """One command shape under one reason: how often it ran and what it put into the window."""

    reason: str
    shape: str
    calls: int = 0
    bytes: int = 0
    example: str = ""
    allow_rule: str | None = None
    largest: int = 0

    def as_dict(self, total: int) -> dict[str, Any]:
        return {"reason": self.reason, "shape": self.shape, "calls": self.calls, "bytes": self.bytes,
                "share": round(self.bytes / total, 4) if total else 0.0, "example": self.example,
                "allow_rule": self.allow_rule}


@dataclass
class Report:
    """Every Bash call in scope: the bytes the window received, how many were compressed, and the missed shapes."""

    calls: int = 0
    window_bytes: int = 0  # characters, as the window counts them
    compressed_calls: int = 0
    compressed_bytes: int = 0
    persisted_calls: int = 0  # successes Claude Code saved to a file and previewed: not missed
    persisted_bytes: int = 0
    shapes: dict[tuple[str, str], Shape] = field(default_factory=dict)

    @property
    def missed_bytes(self) -> int:
        return sum(shape.bytes for shape in self.shapes.values())

    @property
    def missed_share(self) -> float:
        return self.missed_bytes / self.window_bytes if self.window_bytes else 0.0

    def by_reason(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for shape in self.shapes.values():
            totals[shape.reason] = totals.get(shape.reason, 0) + shape.bytes
        return dict(sorted(totals.items(), key=lambda item: -item[1]))

    def by_allow_rule(self) -> list[tuple[str, int, int, int]]:
        """Each allow rule that would let codeoid compress calls it had to leave whole: (rule, bytes those calls put
        into the window, calls, of which failed), most bytes first. A failure's output only the rewrite reaches."""
        totals: dict[str, list[int]] = {}
        for shape in self.shapes.values():
            if shape.allow_rule is not None:
                entry = totals.setdefault(shape.allow_rule, [0, 0, 0])
                entry[0] += shape.bytes
                entry[1] += shape.calls
                entry[2] += shape.calls if FAILED in shape.reason else 0
        return sorted(((rule, *counts) for rule, counts in totals.items()),  # type: ignore[misc]
                      key=lambda item: (-item[1], item[0]))

    def top(self, limit: int) -> list[Shape]:
        return sorted(self.shapes.values(), key=lambda shape: (-shape.bytes, shape.shape))[:limit]

    def as_dict(self, limit: int) -> dict[str, Any]:
        return {"calls": self.calls, "window_chars": self.window_bytes, "compressed_calls": self.compressed_calls,
                "compressed_window_chars": self.compressed_bytes, "persisted_calls": self.persisted_calls,
                "persisted_window_chars": self.persisted_bytes, "missed_chars": self.missed_bytes,
                "missed_share": round(self.missed_share, 4), "by_reason": self.by_reason(),
                "allow_rules": [{"rule": rule, "bytes": size, "calls": calls, "failed_calls": failed,
                                 "share": round(size / self.window_bytes, 4) if self.window_bytes else 0.0}
                                for rule, size, calls, failed in self.by_allow_rule()],
                "shapes": [shape.as_dict(self.window_bytes) for shape in self.top(limit)]}


_CALLS = """
    SELECT e.original_command, coalesce(e.wrapper, e.command), e.text, e.raw_output_id, w.root, r.rule,
           r.stdout_size, e.input,
           e.is_error
    FROM episodes e
    JOIN workspaces w ON w.id = e.workspace_id
    LEFT JOIN raw_outputs r ON r.id = e.raw_output_id
    WHERE e.kind = 'tool' AND e.tool_name = 'Bash' AND e.state != 'retracted'
      AND (:workspace_id IS NULL OR e.workspace_id = :workspace_id)
      AND (:session_id IS NULL OR e.session_id = :session_id)
      AND e.created_at >= :since
    ORDER BY e.id
"""


def discover(db: sqlite3.Connection, *, workspace_id: int | None, session_id: str | None = None,
             since: float = 0.0, env: Mapping[str, str] | None = None,
             thresholds: Thresholds = FLOOR) -> Report:
    """Replay the rewrite over the stored Bash calls in scope and account for every byte the window got."""
    env = dict(os.environ if env is None else env)
    report = Report()
    rows = db.execute(_CALLS, {"workspace_id": workspace_id, "session_id": session_id, "since": since})
    for original, ran, text, raw_id, root, rule, stdout_size, tool_input, is_error in rows:
        command = original or ran or ""
        shown = stored_window_size(len(text), bool(is_error))
        report.calls += 1
        report.window_bytes += shown
        if raw_id is not None and rule is not None:
            report.compressed_calls += 1
            report.compressed_bytes += shown
            continue
        if stored_persisted(len(text), bool(is_error)):
            report.persisted_calls += 1
            report.persisted_bytes += shown
            continue
        if raw_id is not None or (ran and original and ran != original):  # went through codeoid-compress
            small = (stdout_size or shown) < thresholds.min_bytes or _lines(text) < thresholds.min_lines
            reason, allow_rule = (UNDER_FLOOR if small else WOULD_NOT_SHRINK), None
        else:
            reason, allow_rule = replay(command, root=root, env=env, background=_in_background(tool_input))
            if reason in _LEFT_TO_AFTER:
                reason, allow_rule = _after_the_fact(reason, allow_rule, command, text, root=root, env=env,
                                                     failed=bool(is_error))
        _count(report, REASONS.get(reason, OTHER), command, shown, allow_rule)
    return report


def replay(command: str, *, root: str, env: Mapping[str, str], background: bool = False) -> tuple[str, str | None]:
    """Why the rewrite would leave `command` alone in `root` today, and for "not allowed" the allow rule that
    would let it through (checked against the rule matcher Claude Code's own rules are read with)."""
    payload = {"tool_name": "Bash", "tool_use_id": "codeoid-discover", "cwd": root, "permission_mode": "default",
               "tool_input": {"command": command, "run_in_background": background}}
    replay_env = {**env, "CLAUDE_PROJECT_DIR": root}
    _, why = pre_tool_use.decide(payload, replay_env)
    if why != pre_tool_use.NOT_ALLOWED:
        return why, None
    _, unrestricted = pre_tool_use.decide({**payload, "permission_mode": "bypassPermissions"}, replay_env)
    if unrestricted != pre_tool_use.WRAPPED:
        return unrestricted, None  # no rule or a construct: permissions were not what stood in the way
    return pre_tool_use.NOT_ALLOWED, allow_rule_for(command)


def _after_the_fact(reason: str, allow_rule: str | None, command: str, text: str, *, root: str,
                    env: Mapping[str, str], failed: bool) -> tuple[str, str | None]:
    """Why PostToolUse left whole an output the rewrite stepped aside from, replayed on the text the window got;
    the rewrite's own reason where only the rewrite could have compressed it (the user's remedy is the same)."""
    if not switch.enabled(env, switch.AFTER):
        return reason, allow_rule
    if failed:
        return f"{reason}; {FAILED}", allow_rule
    if len(text) >= post_tool_use.CAP_CHARS:
        return f"{reason}; {OVER_CAP}", allow_rule
    _, why = post_tool_use.compress(command, text, tool_use_id="codeoid-discover", project_dir=root, env=env)
    if why == post_tool_use.COMPRESSED:
        return AFTER_THE_FACT_NOW, None
    if why in (post_tool_use.UNDER_FLOOR, post_tool_use.WOULD_NOT_SHRINK):
        return (UNDER_FLOOR if why == post_tool_use.UNDER_FLOOR else WOULD_NOT_SHRINK), None
    if why == post_tool_use.NO_RULE:
        return pre_tool_use.NO_RULE, None  # the rewrite stepped aside before it asked: no rule applies anyway
    return reason, allow_rule


def allow_rule_for(command: str) -> str | None:
    """The narrowest prefix rule that lets the compressed stage of `command` run unasked, spelled as the command
    spells it (`Bash(python3 -m pytest:*)`, `Bash(git diff:*)`), and checked with the matcher the rewrite reads
    Claude Code's own rules with; None when no such rule can be named (a computed command word, a redirect)."""
    from codeoid.hooks import permissions, shell_facts

    invocation = resolve(command)
    facts = shell_facts.read(command)
    if invocation is None or not facts.simple_commands:
        return None
    for simple in reversed(facts.simple_commands):
        words = simple.text.split()
        at = next((index for index, word in enumerate(words) if os.path.basename(word) == invocation.program), None)
        if at is None:
            continue
        end = at + 1
        if invocation.program in SUBCOMMAND_PROGRAMS and end < len(words) and not words[end].startswith("-"):
            end += 1
        start = next((index for index, word in enumerate(words[:at]) if "=" not in word), at)
        prefix = " ".join(words[start:end])
        if permissions.allow_rule_matches(f"{prefix}:*", simple.text.strip()):
            return f"Bash({prefix}:*)"
    return None


def shape_of(command: str) -> str:
    """A command's shape: its last program, with the subcommand for programs that have them."""
    invocation = resolve(command)
    if invocation is None:
        first = command.strip().split(maxsplit=1)
        return f"{os.path.basename(first[0])} (compound)" if first else "(empty)"
    if invocation.program in SUBCOMMAND_PROGRAMS and invocation.args and not invocation.args[0].startswith("-"):
        return f"{invocation.program} {invocation.args[0]}"
    return invocation.program


def _count(report: Report, reason: str, command: str, shown: int, allow_rule: str | None) -> None:
    shape = shape_of(command)
    entry = report.shapes.setdefault((reason, shape), Shape(reason, shape, allow_rule=allow_rule))
    entry.calls += 1
    entry.bytes += shown
    if shown >= entry.largest:  # the biggest call of the shape is the most telling example
        entry.largest = shown
        entry.example = command if len(command) <= 160 else command[:159] + "…"


def _lines(text: str) -> int:
    return text.count("\n") + (not text.endswith("\n") and bool(text))


def _in_background(tool_input: str | None) -> bool:
    try:
        value = json.loads(tool_input or "{}")
    except ValueError:
        return False
    return isinstance(value, dict) and bool(value.get("run_in_background"))
