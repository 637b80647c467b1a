"""The per-line machinery of one rule: decide each raw line's fate with bounded state, emit in raw order.

Every line becomes an entry in a short lookbehind buffer. Most entries are decided on arrival (kept, dropped,
omitted); a tail candidate stays undecided until enough later lines push it out of its tail or the output ends.
An entry is written only when it leaves the front of the buffer, so kept lines leave in raw order and the
buffer never holds more than the longest tail (plus the newest entry and the last non-blank line, which the
engine always keeps because it is the output's closing summary).

Kept lines are written byte for byte; everything the pipeline adds is a marker line (`MARKER` prefix).
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterator

from codeoid.compressors import failure_groups
from codeoid.compressors.diagnostics import DIAGNOSTIC_HINTS, DIAGNOSTIC_PATTERNS
from codeoid.compressors.rules import Rule

MARKER = b"[codeoid] "
# Patterns look at most this much of a line: a 1 MB line costs no more to classify than a short one.
MATCH_CHARS = 4096
# Distinct groups tracked before the rest count as one, to keep a listing of a million directories bounded.
MAX_GROUPS = 4096
# Entries pinned behind the last non-blank line (runs of differing blank-ish lines) before we give up pinning.
MAX_PINNED = 4096

# HELD: in a failure report not yet decided (see failure_groups); CUT: removed, a note counts it and its lines.
KEEP, OMIT, PENDING, DROP, NOTE, HELD, CUT = range(7)
# Removal reasons that a gap marker does not spell out (the marker's count says enough).
_PLAIN_REASONS = frozenset({"head/tail", "item budget", "group budget", "traceback lines"})


class MarkerCollision(Exception):
    """A raw line starts with MARKER: compressing further would make our lines ambiguous."""


class _Entry:
    __slots__ = ("line", "lineno", "state", "reason", "repeats", "item", "group", "blank", "counted")

    def __init__(self, line: bytes, lineno: int) -> None:
        self.line = line
        self.lineno = lineno
        self.state = KEEP
        self.reason = ""
        self.repeats = 0
        self.item: _ItemState | None = None
        self.group: str | None = None
        self.blank = not line.strip()
        self.counted = False  # counts toward its item's summary (a search hit rather than a context line)


class _ItemState:
    __slots__ = ("name", "total", "counted", "seen", "omitted", "tail")

    def __init__(self, name: str) -> None:
        self.name = name
        self.total = 0
        self.counted = 0
        self.seen = 0
        self.omitted = 0
        self.tail: deque[_Entry] = deque()


class _Patterns:
    """Many patterns searched as two alternations: those anchored at `^` (which the regex engine tries at the
    line's start only, so they cost almost nothing) and the rest. A leading `(?i)` becomes a scoped flag group."""

    def __init__(self, patterns: tuple[str, ...] | list[str]) -> None:
        anchored: list[str] = []
        floating: list[str] = []
        for pattern in patterns:
            flags = re.match(r"\(\?([aiLmsux]+)\)", pattern)
            body = pattern[flags.end():] if flags else pattern
            group = f"(?{flags.group(1)}:{body})" if flags else f"(?:{body})"
            (anchored if body.startswith("^") and not _has_top_level_bar(body) else floating).append(group)
        self._anchored = re.compile("|".join(anchored)) if anchored else None
        self._floating = re.compile("|".join(floating)) if floating else None

    def search(self, text: str) -> bool:
        return bool((self._anchored is not None and self._anchored.search(text))
                    or (self._floating is not None and self._floating.search(text)))


def _has_top_level_bar(pattern: str) -> bool:
    """Whether `^a|b` style alternation would leave part of the pattern unanchored."""
    depth = 0
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern[index + 1:index + 2] == "]":
                index += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
        index += 1
    return False


def _union(patterns: tuple[str, ...] | list[str]) -> _Patterns | None:
    return _Patterns(patterns) if patterns else None


class Pipeline:
    """Feed lines (without their newline) with `push`, then `close`; read what is ready with `take`."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self._keep = _union(rule.keep)
        self._diagnostics = _union(DIAGNOSTIC_PATTERNS) if rule.diagnostics else None
        self._diagnostic_hints = re.compile(DIAGNOSTIC_HINTS)
        self._drop = _union(rule.drop)
        self._collapse = [(group.label, _union(group.patterns), group.keep) for group in rule.collapse]
        item = rule.item
        self._item_start = re.compile(item.start) if item and item.start else None
        self._item_key = re.compile(item.key) if item and item.key else None
        self._item_end = re.compile(item.end) if item and item.end else None
        self._item_drop = _union(item.drop) if item else None
        self._item_count = re.compile(item.count_pattern) if item and item.count_pattern else None
        group = rule.group
        self._group_path = re.compile(group.path) if group and group.path else None
        self._window = max(rule.tail, item.tail if item else 0) + 1
        self._failures = failure_groups.FailureGroups(
            rule.failures, keep=self._keeps, diagnostic=self._is_diagnostic, drop=self._drops,
            apply=self._apply_verdict, note=self._failure_note) if rule.failures else None

        self.out = bytearray()
        self.removed: dict[str, int] = {}
        self.lineno = 0
        self._buffer: deque[_Entry] = deque()
        self._tail: deque[_Entry] = deque()
        self._last_nonblank: _Entry | None = None
        self._previous: _Entry | None = None
        self._head_used = 0
        self._run_label: str | None = None
        self._run_length = 0
        self._item: _ItemState | None = None
        self._groups: dict[str, list[int]] = {}
        self._group_root: int | None = None  # components in the first listed path's parent
        self._gap: dict[str, int] = {}
        self._gap_first = 0
        self._gap_last = 0
        self._last_written = 0  # raw line number of the last line written, 0 after a marker

    def take(self) -> bytes:
        data = bytes(self.out)
        self.out.clear()
        return data

    # -- deciding ------------------------------------------------------------------------------------------------

    def push(self, line: bytes) -> None:
        self.lineno += 1
        previous = self._previous
        if previous is not None and self.rule.dedupe and line == previous.line:
            self._repeat(previous)
            return
        if line.startswith(MARKER):
            raise MarkerCollision
        entry = _Entry(line, self.lineno)
        text = line[:MATCH_CHARS].decode("utf-8", "surrogateescape")
        if self._failures is not None:
            entry.state = HELD  # before `feed`, which may decide it at once (a report too long to hold)
            if self._failures.feed(entry, text):
                self._append(entry)
                return
            entry.state = KEEP
        if self._item_start is not None or self._item_key is not None:
            self._track_item(text)
        self._decide(entry, text)
        self._append(entry)

    def _repeat(self, entry: _Entry) -> None:
        entry.repeats += 1
        if entry.state == DROP:
            return
        if entry.item is not None:
            entry.item.total += 1
            entry.item.counted += entry.counted
            if entry.state == OMIT:
                entry.item.omitted += 1
        if entry.group is not None and entry.state == OMIT:
            self._groups[entry.group][1] += 1

    def _decide(self, entry: _Entry, text: str) -> None:
        """The rule's own patterns come first (its author knows a passing line that mentions `Error:`), then the
        engine's diagnostics, then the budgets."""
        if self._keep is not None and self._keep.search(text):
            self._run_label = None
            self._count_in_item(entry, text)
            return
        if (self._drop is not None and self._drop.search(text)) or (
                self._item is not None and self._item_drop is not None and self._item_drop.search(text)):
            entry.state = DROP
            entry.reason = "dropped"
            return
        self._count_in_item(entry, text)
        for label, pattern, keep in self._collapse:
            if pattern is not None and pattern.search(text):
                if self._run_label != label:
                    self._run_label, self._run_length = label, 0
                self._run_length += 1
                if self._run_length > keep:
                    self._omit(entry, label)
                    return
                break
        else:
            self._run_label = None
            if self._is_diagnostic(text):
                return
        long_line = self.rule.long_line
        if long_line is not None and len(entry.line) > long_line:
            self._omit(entry, "long lines")
            return
        self._budget(entry, text)

    def _keeps(self, text: str) -> bool:
        return self._keep is not None and self._keep.search(text)

    def _drops(self, text: str) -> bool:
        return self._drop is not None and self._drop.search(text)

    def _apply_verdict(self, entry: _Entry, verdict: int, text: str) -> None:
        """A failure report's line decided (failure_groups): kept, trimmed with a gap marker, cut under a note, or
        given back to the rule's other operations."""
        if verdict == failure_groups.RELEASE:
            entry.state = KEEP
            self._decide(entry, text)
        elif verdict == failure_groups.KEEP:
            entry.state = KEEP
        elif verdict == failure_groups.DROP:
            entry.state, entry.reason = DROP, "dropped"
        elif verdict == failure_groups.OMIT:
            entry.state, entry.reason = OMIT, "traceback lines"
        else:
            entry.state, entry.reason = CUT, "similar-failure lines"

    def _failure_note(self, text: str, before: _Entry | None) -> None:
        if before is None:
            self._note(text)
            return
        note = _Entry(text.encode("utf-8", "surrogateescape"), before.lineno)
        note.state = NOTE
        note.blank = True
        for index in range(len(self._buffer) - 1, -1, -1):
            if self._buffer[index] is before:
                self._buffer.insert(index, note)
                return
        self._note(text)

    def _is_diagnostic(self, text: str) -> bool:
        return (self._diagnostics is not None and self._diagnostic_hints.search(text.lower()) is not None
                and self._diagnostics.search(text))

    def _count_in_item(self, entry: _Entry, text: str) -> None:
        item = self._item
        if item is not None:
            entry.item = item
            item.total += 1
            entry.counted = self._item_count is None or self._item_count.search(text) is not None
            item.counted += entry.counted

    def _budget(self, entry: _Entry, text: str) -> None:
        item = self._item
        rule_item = self.rule.item
        if item is not None and rule_item is not None:
            item.seen += 1
            if item.seen > rule_item.head:
                if rule_item.tail:
                    entry.state = PENDING
                    entry.reason = "item budget"
                    item.tail.append(entry)
                    if len(item.tail) > rule_item.tail:
                        self._evict(item.tail.popleft(), "item budget")
                else:
                    self._omit(entry, "item budget")
                return
        if self.rule.group is not None and self._over_group_budget(entry, text):
            return
        head = self.rule.head
        if head is None:
            return
        if self._head_used < head:
            self._head_used += 1
        elif self.rule.tail:
            entry.state = PENDING
            entry.reason = "head/tail"
            self._tail.append(entry)
            if len(self._tail) > self.rule.tail:
                self._evict(self._tail.popleft(), "head/tail")
        else:
            self._omit(entry, "head/tail")

    def _over_group_budget(self, entry: _Entry, text: str) -> bool:
        group = self.rule.group
        assert group is not None
        if self._group_path is not None:
            found = self._group_path.search(text)
            if found is None:
                return False
            path = found.group(1) if found.groups() else found.group(0)
        else:
            path = text.strip()
        if self._group_root is None:
            self._group_root = len(_components(os.path.dirname(path.rstrip("/"))))
        key = _group_key(path, group.by, self._group_root + group.depth)
        counts = self._groups.get(key)
        if counts is None:
            if len(self._groups) >= MAX_GROUPS:
                key = "(other)"
                counts = self._groups.setdefault(key, [0, 0])
            else:
                counts = self._groups[key] = [0, 0]
        counts[0] += 1
        if counts[0] <= group.keep:
            return False
        entry.group = key
        self._omit(entry, "group budget")
        return True

    def _omit(self, entry: _Entry, reason: str) -> None:
        entry.state = OMIT
        entry.reason = reason
        if entry.item is not None:
            entry.item.omitted += 1 + entry.repeats
        if entry.group is not None:
            self._groups[entry.group][1] += 1 + entry.repeats

    def _evict(self, entry: _Entry, reason: str) -> None:
        """A tail candidate pushed out of its tail: omitted, unless it already left the buffer (then it was kept)."""
        if entry.state == PENDING:
            self._omit(entry, reason)

    def _track_item(self, text: str) -> None:
        if self._item_end is not None and self._item_end.search(text):
            self._close_item()
            return
        if self._item_start is not None:
            found = self._item_start.search(text)
            if found is None:
                return
            name = found.group(1) if found.groups() and found.group(1) is not None else text.strip()
        else:
            assert self._item_key is not None
            found = self._item_key.search(text)
            if found is None:
                return  # a separator or a stray line belongs to no item and does not end the current one
            name = found.group(1) if found.groups() else found.group(0)
            if self._item is not None and self._item.name == name:
                return
        self._close_item()
        self._item = _ItemState(name)

    def _close_item(self) -> None:
        item = self._item
        if item is None:
            return
        for entry in item.tail:
            if entry.state == PENDING:
                entry.state = KEEP
        item.tail.clear()
        rule_item = self.rule.item
        if item.omitted and rule_item is not None and rule_item.summary:
            self._note(f"{item.name}: {item.counted} {rule_item.label} in all, {item.omitted} line"
                       f"{'s' if item.omitted > 1 else ''} not shown", absorbs=True)
        self._item = None

    def _note(self, text: str, *, absorbs: bool = False) -> None:
        """Queue a marker line in raw order; `absorbs` means it states the preceding item gap itself."""
        entry = _Entry(text.encode("utf-8", "surrogateescape"), self.lineno)
        entry.state = NOTE
        entry.reason = "absorbs" if absorbs else ""
        entry.blank = True  # never the closing line
        self._append(entry)

    # -- writing -------------------------------------------------------------------------------------------------

    def _append(self, entry: _Entry) -> None:
        buffer = self._buffer
        buffer.append(entry)
        self._previous = entry if entry.state != NOTE else None
        if not entry.blank:
            self._last_nonblank = entry
        while len(buffer) > self._window and buffer[0].state != HELD and (
                buffer[0] is not self._last_nonblank or len(buffer) > MAX_PINNED):
            self._write(buffer.popleft())

    def _write(self, entry: _Entry) -> None:
        state = entry.state
        count = 1 + entry.repeats
        if state == DROP:
            self.removed["dropped"] = self.removed.get("dropped", 0) + count
            return
        if state == CUT:
            self.removed[entry.reason] = self.removed.get(entry.reason, 0) + count
            return
        if state == OMIT:
            if not self._gap:
                self._gap_first = entry.lineno
            self._gap_last = entry.lineno + entry.repeats
            self._gap[entry.reason] = self._gap.get(entry.reason, 0) + count
            self.removed[entry.reason] = self.removed.get(entry.reason, 0) + count
            return
        if state == NOTE:
            self._flush_gap(absorbed=entry.reason == "absorbs")
            self.out += MARKER + entry.line + b"\n"
            self._last_written = 0
            return
        self._flush_gap(absorbed=False)
        self.out += entry.line
        self.out += b"\n"
        self._last_written = entry.lineno
        if entry.repeats:
            self.removed["repeats"] = self.removed.get("repeats", 0) + entry.repeats
            if not entry.blank:
                self._marker(f"previous line repeated {entry.repeats} more time{'s' if entry.repeats > 1 else ''}")

    def _flush_gap(self, *, absorbed: bool) -> None:
        gap = self._gap
        if not gap:
            return
        if absorbed:
            gap.pop("item budget", None)
            gap.pop("long lines", None)
        total = sum(gap.values())
        if total:
            details = [f"{count} {reason}" for reason, count in gap.items() if reason not in _PLAIN_REASONS]
            why = f": {', '.join(details)}" if details and (len(details) > 1 or len(gap) > 1) else (
                f" ({details[0].split(' ', 1)[1]})" if details else "")
            span = (f"line {self._gap_first}" if self._gap_first == self._gap_last
                    else f"lines {self._gap_first}-{self._gap_last}")
            self._marker(f"… {total} line{'s' if total > 1 else ''} omitted{why} (raw {span}) …")
        self._gap = {}

    def _marker(self, text: str) -> None:
        self.out += MARKER + text.encode("utf-8", "surrogateescape") + b"\n"
        self._last_written = 0

    # -- ending --------------------------------------------------------------------------------------------------

    def close(self, *, complete: bool, newline_at_end: bool = True) -> None:
        """Write everything still buffered. `complete`: this is the whole output, so keep its closing line."""
        closing = self._last_nonblank
        if self._failures is not None:
            self._failures.finish(closing if complete else None)
        if complete and closing is not None and closing.state != KEEP:
            self._restore(closing)
        self._close_item()
        self._close_groups()
        while self._buffer:
            entry = self._buffer.popleft()
            if entry.state == PENDING:
                entry.state = KEEP
            self._write(entry)
        self._flush_gap(absorbed=False)
        if complete and not newline_at_end and self._last_written == self.lineno and self.out.endswith(b"\n"):
            del self.out[-1]

    def _restore(self, entry: _Entry) -> None:
        """Keep an entry that was to be removed (the output's closing line), undoing what its removal counted."""
        if entry.state == OMIT:
            if entry.item is not None:
                entry.item.omitted -= 1 + entry.repeats
            if entry.group is not None:
                self._groups[entry.group][1] -= 1 + entry.repeats
        if entry.state == DROP and self._item is not None:
            entry.item = self._item
            self._item.total += 1 + entry.repeats
            self._item.counted += (1 + entry.repeats) * (self._item_count is None)
        entry.state = KEEP

    def _close_groups(self) -> None:
        omitted = [(key, counts[1]) for key, counts in self._groups.items() if counts[1] > 0]
        if not omitted:
            return
        omitted.sort(key=lambda pair: -pair[1])
        shown = ", ".join(f"{count} {key}" for key, count in omitted[:20])
        rest = omitted[20:]
        more = f", and {sum(count for _, count in rest)} in {len(rest)} more groups" if rest else ""
        self._note(f"not shown: {shown}{more}")
        self._groups.clear()

    def raw_buffered(self) -> Iterator[bytes]:
        """The raw lines not yet written, for a caller that gives up and passes the rest through."""
        while self._buffer:
            entry = self._buffer.popleft()
            if entry.state == NOTE:
                continue
            line = entry.line + b"\n"
            remaining = 1 + entry.repeats
            while remaining:
                batch = min(remaining, 1024)
                yield line * batch
                remaining -= batch


def _group_key(path: str, by: str, depth: int) -> str:
    path = path.rstrip("/")
    if by == "extension":
        name = os.path.basename(path)
        stem, dot, extension = name[1:].rpartition(".")
        return f"*.{extension}" if dot and extension and " " not in extension else "(no extension)"
    parts = _components(os.path.dirname(path))[:depth]
    prefix = "/" if path.startswith("/") else ""
    return prefix + "/".join(parts) + "/" if parts else "./"


def _components(directory: str) -> list[str]:
    return [part for part in directory.split("/") if part not in ("", ".")]
