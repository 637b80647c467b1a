"""The per-line machinery of one rule: decide each raw line's fate with bounded state, emit in raw order.

Every line becomes an entry in a short lookbehind buffer. Most entries are decided on arrival (kept, dropped,
omitted); a tail candidate stays undecided until enough later lines push it out of its tail or the output ends.
An entry leaves the front of the buffer in raw order, so the buffer never holds more than the longest tail (plus
the newest entry and the last non-blank line, which the engine always keeps because it is the output's closing
summary).

What leaves the buffer is held as decided (kept lines and notes; a run of left-out lines is one gap record)
until the output ends, or until `BUDGET_WINDOW` bytes of kept lines are held. Then the budget is spent (see
`Budget`): if the kept lines exceed the rule's size, the lines no rule or diagnostic insists on are cut, the
earliest tiers last and fairly between items, and each cut is named by a gap marker with its raw line range.
Only then are the index, the kept lines and the markers written.

Kept lines are written byte for byte; everything the pipeline adds is a marker line (`MARKER` prefix).
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable, Iterator

from codeoid.compressors import failure_groups
from codeoid.compressors.diagnostics import DIAGNOSTIC_HINTS, DIAGNOSTIC_PATTERNS, STREAM_ERROR_PATTERNS
from codeoid.compressors.rules import Rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MARKER = b"[codeoid] "
# Patterns look at most this much of a line: a 1 MB line costs no more to classify than a short one.
MATCH_CHARS = 4096
# Distinct groups tracked before the rest count as one, to keep a listing of a million directories bounded.
MAX_GROUPS = 4096
# Entries pinned behind the last non-blank line (runs of differing blank-ish lines) before we give up pinning.
MAX_PINNED = 4096
# Kept bytes held for the budget before it is spent on what is held so far (bounds memory on endless output).
BUDGET_WINDOW = 2 * 1024 * 1024
# About what a gap marker costs: a cut of fewer bytes between kept lines is not worth making.
MARKER_COST = 96
# Groups the table at the top names one by one; the rest are counted on one line.
MAX_TABLE = 30
# Index lines (one per item) held before the rest are only counted.
MAX_INDEX = 4096
# What a code table calls the raw output's own line numbers, for diagnostics that name no file (log lines).
RAW_LINES = "raw lines"
# Locations a code table holds one by one; past it, each code only counts them.
MAX_LOCATIONS = 20000
_FIELD = re.compile(r"\{(\w+)\}")


def _say_nothing() -> None:
    """The text of a note that has nothing to say (a digest the budget cut)."""
    return None


_TEMPLATE = re.compile(r"\[\[(.*?)\]\]|\{(\w+)\}", re.S)

# HELD: in a failure report not yet decided (see failure_groups); CUT: removed, a note counts it and its lines.
KEEP, OMIT, PENDING, DROP, NOTE, HELD, CUT = range(7)
# What a marker calls `named` lines it cut: their tests' reports (or the list of failing tests) come later.
NAMED_BELOW = "failing, each reported below"
# Removal reasons that a gap marker does not spell out (the marker's count says enough).
_PLAIN_REASONS = frozenset({"head/tail", "item budget", "group budget", "budget", "traceback lines", "noted"})
# What the ceiling's cuts are called; NOTED: lines a note named, which the ceiling cut, now named by a marker.
OVER_CEILING = "over the ceiling"
NOTED = "noted"
# Of the ceiling, what the critical items' list (files with hits, changed files, failing tests) may take.
CRITICAL_SHARE = 0.85
# The index packed several items to a line (`index_dense`): what separates them, and how long a line grows.
DENSE_SEPARATOR = ", "
DENSE_WIDTH = 200
# What a note the ceiling cuts says it named: "N lines cut (...), raw lines A-B".
_NOTE_SPAN = re.compile(r"^(\d+) lines? cut\b.*, raw lines? (\d+)(?:-(\d+))?$", re.S)
# A group note's size, estimated without making it (making it empties the group counts).
GROUP_NOTE_COST = 600


class MarkerCollision(Exception):
    """A raw line starts with MARKER: compressing further would make our lines ambiguous."""


class _Entry:
    __slots__ = ("line", "lineno", "state", "reason", "repeats", "item", "group", "blank", "counted", "must",
                 "note", "first_report")

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
        self.must = False  # kept by the rule's `keep`, the diagnostics or as the closing line: the budget never cuts
        # A NOTE's text, made when it is written (counts may change until then; None: nothing to say after all).
        # Without it, a NOTE's line is its text.
        self.note: Callable[[], str | None] | None = None
        self.first_report = False  # kept from the run's first failure report: the ceiling keeps it before others


class _Gap:
    """Consecutive omitted lines, held as one record: how many for each reason, and their raw span."""

    __slots__ = ("first", "last", "reasons")

    def __init__(self, first: int) -> None:
        self.first = first
        self.last = first
        self.reasons: dict[str, int] = {}


def _fold_into_gap(elements: list[_Entry | _Gap], entry: _Entry) -> None:
    """Count an omitted line (and its repeats) into the gap that ends `elements`, opening one if none does."""
    gap = elements[-1] if elements and isinstance(elements[-1], _Gap) else None
    if gap is None:
        gap = _Gap(entry.lineno)
        elements.append(gap)
    gap.last = entry.lineno + entry.repeats
    gap.reasons[entry.reason] = gap.reasons.get(entry.reason, 0) + 1 + entry.repeats


class _ItemState:
    __slots__ = ("name", "total", "counted", "seen", "omitted", "tail", "tallies", "fields", "first", "last")

    def __init__(self, name: str, first: int) -> None:
        self.name = name
        self.first = first  # its raw line numbers, for the index: where get_episode finds the whole item
        self.last = first
        self.total = 0
        self.counted = 0
        self.seen = 0
        self.omitted = 0
        self.tail: deque[_Entry] = deque()
        self.tallies: dict[str, int] = {}
        self.fields: dict[str, str] = {}


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

    def __init__(self, rule: Rule, *, budget_lines: int = 0, budget_bytes: int = 0, ceiling: int = 0) -> None:
        """`budget_lines`/`budget_bytes`: the size to aim for where the rule's `[rule.budget]` does not say (0: no
        limit). `ceiling`: the bytes the whole output may never exceed, whatever the rule keeps (0: none)."""
        self.rule = rule
        self.ceiling = ceiling
        self._index_limit: int | None = None  # index lines the ceiling leaves room for (None: all)
        self._index_dense: list[str] | None = None  # the index packed several to a line, when one each won't fit
        self._failing_index: list[str] = []  # the ceiling's list of failing tests, written first
        self.budget_lines = rule.budget.lines if rule.budget.lines is not None else budget_lines
        self.budget_bytes = rule.budget.bytes if rule.budget.bytes is not None else budget_bytes
        self._tiers = [(tier.label, _Patterns(tier.patterns)) for tier in rule.budget.tiers]
        self._keep = _union(rule.keep)
        self._diagnostics = _union(DIAGNOSTIC_PATTERNS) if rule.diagnostics else None
        self._diagnostic_hints = re.compile(DIAGNOSTIC_HINTS)
        self._stream_errors = _Patterns(STREAM_ERROR_PATTERNS)
        self._drop = _union(rule.drop)
        self._collapse = [(group.label, _union(group.patterns), group.keep) for group in rule.collapse]
        self._through = _union([pattern for group in rule.collapse for pattern in group.through])
        self._through_labels = {group.label for group in rule.collapse if group.through} | {NAMED_BELOW}
        self._named = [re.compile(group.named) for group in rule.collapse if group.named]
        item = rule.item
        self._item_start = re.compile(item.start) if item and item.start else None
        self._item_key = re.compile(item.key) if item and item.key else None
        self._item_end = re.compile(item.end) if item and item.end else None
        self._item_drop = _union(item.drop) if item else None
        self._item_count = re.compile(item.count_pattern) if item and item.count_pattern else None
        self._tally = [(name, re.compile(pattern)) for name, pattern in item.tally] if item else []
        self._fields = [(name, re.compile(pattern)) for name, pattern in item.fields] if item else []
        self._digest = item.digest if item else None
        group = rule.group
        self._group_path = re.compile(group.path) if group and group.path else None
        self._group_section = re.compile(group.section) if group and group.section else None
        self._section: str | None = None
        self._section_line = False
        columns = rule.columns
        self._row = re.compile(columns.row) if columns else None
        self._row_fields = columns.fields if columns else 0
        self._column_values: list[str] | None = None  # the first row's leading columns
        self._column_same: list[bool] = []  # whether every row so far had the same value there
        self._columns_cut: list[int] | None = None  # decided when first written
        codes = rule.codes
        self._code_line = re.compile(codes.line) if codes else None
        self._code_file = re.compile(codes.file) if codes and codes.file else None
        self._code_context = _union(codes.context) if codes else None
        self._code_at = re.compile(codes.at) if codes and codes.at else None
        self._code_where: list[str] | None = None  # where the diagnostic being read will record its location
        self._code_path = ""  # the file the last header named
        self._code_fate: int | None = None  # the diagnostic being read: KEEP (shown) or CUT (named by the table)
        # Per code, in order of first appearance: [diagnostics, {path: [line numbers]}].
        self._code_table: dict[str, list[Any]] = {}
        self._code_locations = 0
        self._window = max(rule.tail, item.tail if item else 0) + 1
        # The failures operation spends first: its traceback lines come out of the rule's budget (never more
        # than its lines), and what it keeps the budget does not cut (see `_apply_verdict`).
        failures = rule.failures
        if failures is not None and self.budget_lines:
            failures = failures._replace(budget=min(failures.budget, self.budget_lines))
        self._failures = failure_groups.FailureGroups(
            failures, keep=self._keeps, diagnostic=self._is_diagnostic, drop=self._drops,
            apply=self._apply_verdict, note=self._failure_note) if failures else None

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
        # Per group: [entries, entries left out, {extension: entries} when the rule counts extensions].
        self._groups: dict[str, list[Any]] = {}
        self._decided: list[_Entry | _Gap] = []
        self._decided_bytes = 0
        self._index: list[_ItemState] = []
        self._index_more = 0
        self._captured = False  # the current line filled an item field
        self._group_table = False  # the output is complete: write the group table before it
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
            self._captured = bool(self._fields) and self._item is not None and self._capture_fields(self._item, text)
        if self._row is not None and self._row.search(text):
            self._compare_columns(text)
        if self._code_line is not None and self._code(entry, text):
            self._append(entry)
            return
        self._section_line = False
        if self._group_section is not None:
            found = self._group_section.search(text)
            if found is not None:
                self._section = found.group(1) if found.groups() else text
                self._section_line = True  # names a group; is not one of its entries
        self._decide(entry, text)
        self._append(entry)

    def _code(self, entry: _Entry, text: str) -> bool:
        """Diagnostics by code (`[rule.codes]`): count the line's code and location; the first `keep` of a code
        go on to the rule's other operations, the rest (and their context lines) are cut, named by the table.
        Whether the line is decided here."""
        codes = self.rule.codes
        assert codes is not None and self._code_line is not None
        found = self._code_line.search(text)
        if found is None:
            if self._code_file is not None:
                header = self._code_file.search(text)
                if header is not None:
                    self._code_path = header.group(1)
                    self._code_fate = None
                    return False
            at = self._code_at.search(text) if self._code_at is not None and self._code_fate is not None else None
            if at is not None and self._code_where is not None:
                self._locate(self._code_where, at.group("path"), at.group("line"))
                self._code_where = None
            if self._code_fate is not None and (at is not None or (
                    self._code_context is not None and self._code_context.search(text))):
                if self._code_fate == CUT and not self._keeps(text):
                    entry.state, entry.reason = CUT, f"{codes.label} named above"
                    return True
                return False
            self._code_fate = None
            return False
        groups = found.groupdict()
        path = groups.get("path") or self._code_path
        code = groups.get("code") or _generic(groups.get("message") or "")
        counts = self._code_table.get(code)
        if counts is None:
            counts = self._code_table[code] = [0, {}]
        counts[0] += 1
        self._code_where = None
        if self._code_at is not None and not groups.get("line"):
            self._code_where = counts  # the `at` line below will say where
        elif "line" not in found.re.groupindex:
            self._locate(counts, RAW_LINES, str(self.lineno))  # a log: its lines are where to look
        else:
            self._locate(counts, path, groups.get("line") or "?")
        if counts[0] <= codes.keep or self._keeps(text):  # the rule's `keep` wins: a compiler's errors all stay
            self._code_fate = KEEP
            if codes.stay:
                entry.must = True
                return True
            return False
        self._code_fate = CUT
        entry.state, entry.reason = CUT, f"{codes.label} named above"
        return True

    def _locate(self, counts: list[Any], path: str, line: str) -> None:
        if self._code_locations < MAX_LOCATIONS:
            self._code_locations += 1
            counts[1].setdefault(path, []).append(line)

    def _write_code_table(self) -> None:
        """One line per code, with its count and every location (files with their line numbers); the codes
        with most locations name only their files when that would not fit `table_bytes`."""
        for line in self._code_table_lines():
            self._marker(line)
        self._code_table = {}

    def _code_table_lines(self) -> list[str]:
        codes = self.rule.codes
        if codes is None or not self._code_table:
            return []
        table = self._code_table
        total = sum(counts[0] for counts in table.values())
        listed = sum(len(lines) for counts in table.values() for lines in counts[1].values())
        shown = sum(min(counts[0], codes.keep) for counts in table.values())
        lines = {}
        for code, (count, places) in table.items():
            where = " ".join(f"{path}{' ' if path == RAW_LINES else ':'}{','.join(dict.fromkeys(numbers))}"
                             for path, numbers in places.items())
            lines[code] = f"{code} ×{count}: {where}"
        budget = codes.table_bytes
        for code in sorted(table, key=lambda code: -len(lines[code])):
            if sum(len(line) + len(MARKER) + 1 for line in lines.values()) <= budget:
                break
            count, places = table[code]
            files = [f"{path} ({len(numbers)})" if path != RAW_LINES else f"{path} {numbers[0]}-{numbers[-1]}"
                     for path, numbers in places.items()]
            shorter = f"{code} ×{count} in {len(places)} file{'s' if len(places) > 1 else ''}: {', '.join(files)}"
            lines[code] = min(lines[code], shorter, key=len)
        first = ("the first of each is shown below" if codes.keep == 1 else
                 f"the first {codes.keep} of each are shown below")
        more = f"; {total - listed} more not located here" if total > listed else ""
        return [f"{total} {codes.label} of {len(table)} code{'s' if len(table) > 1 else ''} at these "
                f"locations ({first}, {shown} in all; the others are cut{more}):", *lines.values()]

    def _compare_columns(self, text: str) -> None:
        values = text.split(None, self._row_fields)[:self._row_fields]
        if self._column_values is None:
            self._column_values = values
            self._column_same = [True] * len(values)
            return
        same = self._column_same
        for index in range(len(same)):
            same[index] = same[index] and index < len(values) and values[index] == self._column_values[index]

    def _write_row(self, entry: _Entry) -> bool:
        """Write a table row without the columns that are the same on every row, as codeoid's line; False when
        that does not apply (not a row, the closing line, or nothing worth leaving out)."""
        if self._row is None or entry.must or self._column_values is None:
            return False
        text = entry.line.decode("utf-8", "surrogateescape")
        if not self._row.search(text[:MATCH_CHARS]):
            return False
        if self._columns_cut is None:
            cut = [index for index, same in enumerate(self._column_same) if same]
            saved = sum(len(self._column_values[index]) + 1 for index in cut)
            self._columns_cut = cut if saved > len(MARKER) else []
            if self._columns_cut:
                named = ", ".join(f"{index + 1} {self._column_values[index]!r}" for index in cut)
                self._marker(f"columns the same on every line, left out of the marked lines below: {named}")
        if not self._columns_cut:
            return False
        spans = [found.span() for _, found in zip(range(self._row_fields), re.finditer(r"\S+\s*", text),
                                                   strict=False)]
        kept = "".join(text[start:end] for index, (start, end) in enumerate(spans) if index not in self._columns_cut)
        self._marker(kept + text[spans[-1][1]:] if spans else text)
        return True

    def _capture_fields(self, item: _ItemState, text: str) -> bool:
        """Fill the item's fields not yet found from this line; whether it filled any (such a line is not tallied:
        a commit's subject is not one of its body lines)."""
        captured = False
        for name, pattern in self._fields:
            if name not in item.fields:
                found = pattern.search(text)
                if found is not None:
                    item.fields[name] = " ".join(part for part in found.groups() if part) if found.groups() \
                        else found.group(0)
                    captured = True
        return captured

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
            self._count_group_omitted(entry, 1)

    def _decide(self, entry: _Entry, text: str) -> None:
        """The rule's own patterns come first (its author knows a passing line that mentions `Error:`), then the
        engine's diagnostics, then the budgets."""
        if (self._keep is not None and self._keep.search(text)) or self._is_stream_error(text):
            self._run_label = None
            entry.must = True
            self._count_in_item(entry, text)
            return
        if (self._drop is not None and self._drop.search(text)) or (
                self._item is not None and self._item_drop is not None and self._item_drop.search(text)):
            entry.state = DROP
            entry.reason = "dropped"
            return
        self._count_in_item(entry, text)
        if self._digest is not None and self._item is not None:
            self._omit(entry, self.rule.item.label if self.rule.item else "lines")
            return
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
            if self._matches_diagnostics(text):  # a stream error was kept above, before the rule's drops
                entry.must = True
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
            entry.must = True  # the failures operation spends first: the rule's budget does not cut what it kept
            entry.first_report = self._failures is not None and len(self._failures.reports) == 1
        elif verdict == failure_groups.DROP:
            entry.state, entry.reason = DROP, "dropped"
        elif verdict == failure_groups.OMIT:
            entry.state, entry.reason = OMIT, "traceback lines"
        else:
            entry.state, entry.reason = CUT, "similar-failure lines"

    def _failure_note(self, text: str | Callable[[], str], before: _Entry | None) -> None:
        """A marker line from failure_groups, queued before the held line `before` (the next report's first
        line) or, when None, after everything so far."""
        if before is None:
            self._note(text)
            return
        if callable(text):
            note = _Entry(b"", before.lineno)
            note.note = text
        else:
            note = _Entry(text.encode("utf-8", "surrogateescape"), before.lineno)  # a NOTE's line is its text
        note.state = NOTE
        note.blank = True
        for index in range(len(self._buffer) - 1, -1, -1):
            if self._buffer[index] is before:
                self._buffer.insert(index, note)
                return
        self._note(text)

    def _is_stream_error(self, text: str) -> bool:
        """An error line as programs print them on stderr (`diagnostics.STREAM_ERROR_PATTERNS`): never cut. Every
        pattern starts the line with a word and holds `: `, so most lines are turned away before the regex."""
        return bool(text) and not text[0].isspace() and ": " in text and self._stream_errors.search(text)

    def _is_diagnostic(self, text: str) -> bool:
        return self._is_stream_error(text) or self._matches_diagnostics(text)

    def _matches_diagnostics(self, text: str) -> bool:
        return bool(self._diagnostics is not None and self._diagnostic_hints.search(text.lower()) is not None
                    and self._diagnostics.search(text))

    def _count_in_item(self, entry: _Entry, text: str) -> None:
        item = self._item
        if item is not None:
            entry.item = item
            item.total += 1
            entry.counted = self._item_count is None or self._item_count.search(text) is not None
            item.counted += entry.counted
            for name, pattern in self._tally if not self._captured else ():
                if pattern.search(text):
                    item.tallies[name] = item.tallies.get(name, 0) + 1

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
                    # With budget tiers, an item's overflow is named as the budget names its cuts ("hits").
                    self._omit(entry, self._tier_label(text) if self._tiers else "item budget")
                return
        if self.rule.group is not None and not self._section_line and self._over_group_budget(entry, text):
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
        if group.by == "section":
            key = self._section or "./"
        else:
            if self._group_root is None:
                self._group_root = len(_components(os.path.dirname(path.rstrip("/"))))
            key = _group_key(path, group.by, self._group_root + group.depth)
        counts = self._groups.get(key)
        if counts is None:
            if len(self._groups) >= MAX_GROUPS:
                key = "(other)"
                counts = self._groups.setdefault(key, [0, 0, {}])
            else:
                counts = self._groups[key] = [0, 0, {}]
        counts[0] += 1
        if group.extensions:
            extension = _group_key(path, "extension", 0)
            counts[2][extension] = counts[2].get(extension, 0) + 1
        entry.group = key
        if counts[0] <= group.keep:
            return False
        self._omit(entry, "group budget")
        return True

    def _count_group_omitted(self, entry: _Entry, count: int) -> None:
        assert entry.group is not None
        self._groups[entry.group][1] += count

    def _omit(self, entry: _Entry, reason: str) -> None:
        entry.state = OMIT
        entry.reason = reason
        if entry.item is not None:
            entry.item.omitted += 1 + entry.repeats
        if entry.group is not None:
            self._count_group_omitted(entry, 1 + entry.repeats)

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
        self._item = _ItemState(name, self.lineno)

    def _close_item(self, *, at_end: bool = False) -> None:
        """End the current item: before the line just pushed (which starts the next or ends this one), or
        `at_end` of the output, with that line."""
        item = self._item
        if item is None:
            return
        item.last = self.lineno if at_end else max(item.first, self.lineno - 1)
        for entry in item.tail:
            if entry.state == PENDING:
                entry.state = KEEP
        item.tail.clear()
        rule_item = self.rule.item
        if rule_item is not None and rule_item.index_entry is not None:
            if len(self._index) < MAX_INDEX:
                self._index.append(item)
            else:
                self._index_more += 1
        if rule_item is not None and rule_item.digest is not None:
            digest = rule_item.digest
            self._note(lambda: " ".join(_fill(digest, {"name": item.name, "lines": str(item.total), **item.fields,
                                                       **{name: str(count) for name, count in item.tallies.items()}}
                                              ).split()), absorbs=item, budgeted=True)
        elif rule_item is not None and rule_item.summary:
            label = rule_item.label
            self._note(lambda: None if not item.omitted else (
                f"{item.name}: {item.counted} {label} in all, {item.omitted} line"
                f"{'s' if item.omitted > 1 else ''} not shown"), absorbs=item)
        self._item = None

    def _note(self, text: str | Callable[[], str | None], *, absorbs: _ItemState | bool | None = None,
              budgeted: bool = False) -> None:
        """Queue a marker line in raw order. `text` may be made when written (a callable; None: say nothing),
        as counts may change until then. `absorbs`: the item (True: the current one) whose left-out lines the
        note describes, so a gap made of exactly those lines is named by the note rather than a marker of its
        own. `budgeted`: the note stands for its item's lines (a digest), so the budget may cut it like a line."""
        entry = _Entry(b"", self.lineno)
        entry.state = NOTE
        entry.note = text if callable(text) else (lambda: text)
        entry.item = self._item if absorbs is True else absorbs or None
        entry.reason = "budgeted" if budgeted else ""
        entry.blank = True  # never the closing line
        self._append(entry)

    # -- holding what is decided ----------------------------------------------------------------------------------

    def _append(self, entry: _Entry) -> None:
        buffer = self._buffer
        buffer.append(entry)
        self._previous = entry if entry.state != NOTE else None
        if not entry.blank:
            self._last_nonblank = entry
        while len(buffer) > self._window and buffer[0].state != HELD and (
                buffer[0] is not self._last_nonblank or len(buffer) > MAX_PINNED):
            self._hold(buffer.popleft())

    def _hold(self, entry: _Entry) -> None:
        """An entry leaving the lookbehind buffer: dropped lines are only counted, a left-out line joins the gap
        record before it, and kept lines and notes wait for the budget."""
        if entry.state in (DROP, CUT):  # a CUT line is named by failure_groups' note for its run
            self.removed[entry.reason] = self.removed.get(entry.reason, 0) + 1 + entry.repeats
            return
        decided = self._decided
        if entry.state == OMIT:
            _fold_into_gap(decided, entry)
            return
        decided.append(entry)
        self._decided_bytes += len(entry.line) + 1
        if self._decided_bytes > BUDGET_WINDOW:
            self._spend_budget()
            if self.ceiling:  # held, not written: the ceiling is over the whole output
                self._spend_ceiling(complete=False)
                return
            self._render()

    # -- the budget ----------------------------------------------------------------------------------------------

    def _spend_budget(self) -> None:
        """Cut held kept lines until the rest fits the budget: lines that must stay cost first, then each tier in
        turn; within a tier every item gets the same number of its first lines (fewer if it has fewer)."""
        kept = [entry for entry in self._decided if isinstance(entry, _Entry) and (
            entry.state in (KEEP, PENDING) or (entry.state == NOTE and entry.reason == "budgeted"))]
        for entry in kept:
            if entry.state == NOTE:  # costs what it will print; made now, as the counts it shows are final
                text = entry.note() if entry.note is not None else None
                entry.line = b"" if text is None else MARKER + text.encode("utf-8", "surrogateescape")
        max_lines = self.budget_lines or 1 << 62
        max_bytes = self.budget_bytes or 1 << 62
        # The code table comes out of the budget first: it names every location, the lines below are examples.
        table = self._code_table_lines()
        max_lines -= len(table)
        max_bytes -= sum(len(line.encode("utf-8", "surrogateescape")) + len(MARKER) + 1 for line in table)
        if len(kept) <= max_lines and sum(len(entry.line) + 1 for entry in kept) <= max_bytes:
            return
        lines_left, bytes_left = max_lines, max_bytes
        tiers: list[list[_Entry]] = [[] for _ in range(len(self._tiers) + 1)]
        for entry in kept:
            if entry.must:
                lines_left -= 1
                bytes_left -= len(entry.line) + 1
            else:
                tiers[self._tier_of(entry)].append(entry)
        labels = [label for label, _ in self._tiers] + [self.rule.budget.rest]
        cut: set[int] = set()
        for label, candidates in zip(labels, tiers, strict=True):
            by_item: dict[int | str | None, list[_Entry]] = {}
            for entry in candidates:  # an item's lines share, or else a listing group's
                key = (id(entry.item) if entry.item is not None else entry.group) if self.rule.budget.fair else None
                by_item.setdefault(key, []).append(entry)
            groups = list(by_item.values())
            shares = _fair_shares(groups, max(lines_left, 0), max(bytes_left, 0), self.rule.budget.min_share)
            for entries, share in zip(groups, shares, strict=True):
                marker = 0 < share < len(entries)
                lines_cost = share + marker
                bytes_cost = sum(len(entry.line) + 1 for entry in entries[:share]) + MARKER_COST * marker
                lines_left -= lines_cost
                bytes_left -= bytes_cost
                for entry in entries[share:]:
                    if entry.state == NOTE:
                        entry.note = _say_nothing  # its item's lines are left out already; they join the gaps
                        continue
                    self._omit(entry, label)
                    cut.add(id(entry))
        self._keep_cuts_cheaper_than_their_marker(cut)

    def _keep_cuts_cheaper_than_their_marker(self, cut: set[int]) -> None:
        """A cut of a few short lines between kept lines would cost a marker line about as long: keep them.
        (A cut beside lines left out before the budget joins their marker, so it costs nothing and stays.)"""
        run: list[_Entry] = []
        beside_gap = False
        for element in [*self._decided, None]:
            if isinstance(element, _Entry) and id(element) in cut and element.state == OMIT:
                run.append(element)
                continue
            gap_like = isinstance(element, _Gap) or (isinstance(element, _Entry) and element.state == OMIT)
            if run and not beside_gap and not gap_like and len(run) <= 3 and \
                    sum(len(entry.line) + 1 for entry in run) <= MARKER_COST:
                for entry in run:
                    self._restore(entry)
            run = []
            beside_gap = gap_like

    # -- the ceiling ---------------------------------------------------------------------------------------------

    def _spend_ceiling(self, *, complete: bool) -> None:
        """Cut what is held until the whole output fits `ceiling` bytes, whatever the rule keeps. The critical
        items stay named first (the index of files, or for a test run a list of every failing test with its
        report's raw lines, within `CRITICAL_SHARE` of the ceiling, the rest named by one line and its raw
        lines), then the closing line, the first failure report's kept lines, and the other kept lines and notes
        in raw order while they fit. Every cut is named by a marker with its raw lines."""
        if not self.ceiling:
            return
        if not complete:  # what is held so far, within the ceiling by estimate; measured once the output ends
            if self._decided_bytes > self.ceiling:
                self._cut_to(self.ceiling - 2 * MARKER_COST, complete=False)
            self._compact()
            return
        self._compact()
        if self._estimate() <= self.ceiling or self._trial_size() <= self.ceiling:
            return
        self._cut_to(self.ceiling - 2 * MARKER_COST, complete=complete)
        for _ in range(4):  # the costs above are estimates: measure, and cut the excess again if they were short
            excess = self._trial_size() - self.ceiling
            if excess <= 0:
                return
            self._cut_to(self.ceiling - 2 * MARKER_COST - 2 * excess, complete=complete)

    def _trial_size(self) -> int:
        """The bytes rendering what is held would write now, measured by rendering it and undoing that."""
        saved = (len(self.out), dict(self.removed), dict(self._gap), self._gap_first, self._gap_last,
                 self._last_written, list(self._index), self._index_more, self._group_table,
                 list(self._failing_index), self._columns_cut, list(self._decided), self._decided_bytes)
        groups = {key: [counts[0], counts[1], dict(counts[2])] for key, counts in self._groups.items()}
        self._render()
        self._flush_gap()
        size = len(self.out) - saved[0]
        (_, self.removed, self._gap, self._gap_first, self._gap_last, self._last_written, self._index,
         self._index_more, self._group_table, self._failing_index, self._columns_cut, self._decided,
         self._decided_bytes) = saved
        del self.out[saved[0]:]
        self._groups = groups
        return size

    def _cut_to(self, room: int, *, complete: bool) -> None:
        """Keep, in the ceiling's order, what fits `room` bytes; cut the rest (see `_spend_ceiling`)."""
        decided = self._decided
        closing = self._last_nonblank if complete else None
        kept: set[int] = set()
        if closing is not None and closing.state in (KEEP, PENDING):
            kept.add(id(closing))
            room -= len(closing.line) + 1 + MARKER_COST
        if complete:  # a dense index may take all but the closing line and the marker of what is cut
            room -= self._plan_critical(int(self.ceiling * CRITICAL_SHARE), room - MARKER_COST)
        position = {id(element): index for index, element in enumerate(decided)}
        candidates = [element for element in decided if isinstance(element, _Entry) and element is not closing
                      and element.state in (KEEP, PENDING, NOTE)]
        candidates.sort(key=lambda entry: not entry.first_report)  # stable: raw order within each
        for entry in candidates:
            cost = self._shown_size(entry)
            before = position[id(entry)] - 1
            if before < 0 or id(decided[before]) not in kept:
                cost += MARKER_COST  # may open a gap behind it (conservative: it may close one instead)
            if cost <= room:
                kept.add(id(entry))
                room -= cost
        for index, element in enumerate(decided):
            if not isinstance(element, _Entry) or id(element) in kept or element.state not in (KEEP, PENDING, NOTE):
                continue
            if element.state == NOTE:
                decided[index] = self._note_as_gap(element)
            else:
                self._omit(element, OVER_CEILING)

    def _plan_critical(self, share: int, dense_share: int) -> int:
        """Choose the critical items' lines written first (within `share` bytes, or for an index packed several
        to a line because one per line does not fit, within `dense_share`); their cost."""
        marker = len(MARKER) + 1
        lines: list[str] = []
        if self._failures is not None:
            failing = self._failures.failing_tests()
            if failing:
                lines.append(f"{len(failing)} failing test{'s' if len(failing) > 1 else ''}, each with the raw "
                             "lines of its report:")
                used = marker + len(lines[0])
                for index, (test, first, last) in enumerate(failing):
                    line = f"{test}, {_span(first, last)}"
                    if used + marker + len(line) + MARKER_COST > share:
                        rest = failing[index:]
                        lines.append(f"… and {len(rest)} more failing tests, "
                                     f"{_span(min(item[1] for item in rest), max(item[2] for item in rest))}")
                        break
                    lines.append(line)
                    used += marker + len(line)
        self._failing_index = lines
        used = sum(marker + len(line) for line in lines)
        if self._index and self.rule.item is not None and self.rule.item.index_entry is not None:
            used += marker + 80  # the title
            limit = 0
            for item in self._index:
                size = marker + len(self._index_line(item))
                if used + size + MARKER_COST > share:
                    break
                used += size
                limit += 1
            self._index_dense = None
            if limit < len(self._index) and self.rule.item.index_dense is not None:
                used -= sum(marker + len(self._index_line(item)) for item in self._index[:limit])
                self._index_dense, limit, size = self._pack_index(max(share, dense_share) - used)
                used += size
            self._index_limit = limit if limit < len(self._index) else None
            used += MARKER_COST if self._index_limit is not None else 0
        return used

    def _pack_index(self, room: int) -> tuple[list[str], int, int]:
        """The index's items packed several to a line, as many as fit `room` bytes with the marker naming the
        rest; the lines, how many items they name, their bytes."""
        rule_item = self.rule.item
        assert rule_item is not None and rule_item.index_dense is not None
        marker = len(MARKER) + 1
        separator = len(DENSE_SEPARATOR.encode())
        lines: list[list[str]] = []
        width = used = 0
        for count, item in enumerate(self._index):
            entry = _fill(rule_item.index_dense, {"name": item.name, "first": str(item.first),
                                                  "last": str(item.last), **item.fields,
                                                  **{name: str(item.tallies.get(name, 0)) for name, _ in self._tally}})
            size = len(entry.encode("utf-8", "surrogateescape"))
            joins = bool(lines) and width + separator + size <= DENSE_WIDTH
            cost = separator + size if joins else marker + size
            if used + cost + MARKER_COST > room and count < len(self._index) - 1 or used + cost > room:
                return [DENSE_SEPARATOR.join(line) for line in lines], count, used
            if joins:
                lines[-1].append(entry)
                width += separator + size
            else:
                lines.append([entry])
                width = size
            used += cost
        return [DENSE_SEPARATOR.join(line) for line in lines], len(self._index), used

    def _estimate(self) -> int:
        """About how many bytes rendering what is held would write (never fewer)."""
        size = 0
        if self._index and self.rule.item is not None and self.rule.item.index_entry is not None:
            size += len(MARKER) + 81 + sum(len(MARKER) + 1 + len(self._index_line(item)) for item in self._index)
            size += MARKER_COST if self._index_more else 0
        if self._group_table:
            size += (min(len(self._groups), MAX_TABLE) + 2) * 120
        in_gap = False
        for element in self._decided:
            if isinstance(element, _Gap) or element.state in (OMIT, CUT, DROP):
                if not in_gap and (isinstance(element, _Gap) or element.state == OMIT):
                    size += MARKER_COST
                    in_gap = True
                continue
            size += self._shown_size(element)
            in_gap = in_gap and element.state == NOTE
        return size + MARKER_COST

    def _shown_size(self, entry: _Entry) -> int:
        if entry.state != NOTE:
            return len(entry.line) + 1 + (MARKER_COST if entry.repeats and not entry.blank else 0)
        if entry.note is None:
            return len(MARKER) + len(entry.line) + 1
        if getattr(entry.note, "__func__", None) is Pipeline._groups_left_out:
            return GROUP_NOTE_COST
        text = entry.note()
        return 0 if text is None else len(MARKER) + len(text.encode("utf-8", "surrogateescape")) + 1 + 40

    def _note_as_gap(self, entry: _Entry) -> _Entry | _Gap:
        """A note the ceiling cuts: the lines it named, named by a marker instead (or nothing, if it named none)."""
        text = entry.note() if entry.note is not None else entry.line.decode("utf-8", "surrogateescape")
        found = _NOTE_SPAN.match(text or "")
        if found is None:
            entry.note = _say_nothing
            return entry
        gap = _Gap(int(found.group(2)))
        gap.last = int(found.group(3) or found.group(2))
        gap.reasons[NOTED] = int(found.group(1))
        return gap

    def _compact(self) -> None:
        """Fold the lines the ceiling cut into gap records, so what is held stays within it."""
        compacted: list[_Entry | _Gap] = []
        size = 0
        for element in self._decided:
            if isinstance(element, _Entry) and element.state == OMIT:
                _fold_into_gap(compacted, element)
                continue
            compacted.append(element)
            if isinstance(element, _Entry):
                size += len(element.line) + 1
        self._decided, self._decided_bytes = compacted, size

    def _tier_of(self, entry: _Entry) -> int:
        text = entry.line[:MATCH_CHARS].decode("utf-8", "surrogateescape")
        return next((index for index, (_, patterns) in enumerate(self._tiers) if patterns.search(text)),
                    len(self._tiers))

    def _tier_label(self, text: str) -> str:
        return next((label for label, patterns in self._tiers if patterns.search(text)), self.rule.budget.rest)

    # -- writing -------------------------------------------------------------------------------------------------

    def _render(self) -> None:
        """Write the index (or group or code table), then everything held, in raw order."""
        self._write_code_table()
        self._write_index()
        self._write_group_table()
        decided, self._decided, self._decided_bytes = self._decided, [], 0
        for entry in decided:
            if isinstance(entry, _Gap):
                self._add_gap(entry.first, entry.last, entry.reasons)
            else:
                self._write(entry)

    def _write_index(self) -> None:
        for line in self._failing_index:
            self._marker(line)
        self._failing_index = []
        rule_item = self.rule.item
        if not self._index or rule_item is None or rule_item.index_entry is None:
            return
        if rule_item.index_title is not None:
            totals = {"items": str(len(self._index) + self._index_more)}
            for name, _ in self._tally:
                totals[name] = str(sum(item.tallies.get(name, 0) for item in self._index))
            self._marker(_fill(rule_item.index_title, totals))
        shown = self._index if self._index_limit is None else self._index[:self._index_limit]
        if self._index_dense is not None:
            for line in self._index_dense:
                self._marker(line)
        else:
            for item in shown:
                self._marker(self._index_line(item))
        rest = self._index[len(shown):]
        if rest:
            self._marker(f"… and {len(rest) + self._index_more} more (over the ceiling), "
                         f"{_span(rest[0].first, rest[-1].last)}")
        elif self._index_more:
            self._marker(f"… and {self._index_more} more")
        self._index, self._index_more = [], 0

    def _index_line(self, item: _ItemState) -> str:
        rule_item = self.rule.item
        assert rule_item is not None and rule_item.index_entry is not None
        return _fill(rule_item.index_entry, {"name": item.name, "lines": str(item.total), "first": str(item.first),
                                             "last": str(item.last),
                                             **{name: str(item.tallies.get(name, 0)) for name, _ in self._tally}})

    def _write(self, entry: _Entry) -> None:
        state = entry.state
        count = 1 + entry.repeats
        if state == OMIT:
            self._add_gap(entry.lineno, entry.lineno + entry.repeats, {entry.reason: count})
            return
        if state == NOTE:
            # A note made by text alone (an _Entry whose line is the note) is written as it is.
            text = entry.note() if entry.note is not None else entry.line.decode("utf-8", "surrogateescape")
            if text is None:
                return
            item = entry.item
            gap_size = sum(self._gap.values())
            if item is not None and gap_size and gap_size == item.omitted:
                for reason, lines in self._gap.items():
                    self.removed[reason] = self.removed.get(reason, 0) + lines
                text += f", {_span(self._gap_first, self._gap_last)}"
                self._gap = {}
            else:
                self._flush_gap()
            self._marker(text)
            return
        if self._named_elsewhere(entry):
            self._add_gap(entry.lineno, entry.lineno + entry.repeats, {NAMED_BELOW: count})
            return
        if not self._passes_through(entry):
            self._flush_gap()
        if self._write_row(entry):
            self._last_written = entry.lineno
            return
        self.out += entry.line
        self.out += b"\n"
        self._last_written = entry.lineno
        if entry.repeats:
            self.removed["repeats"] = self.removed.get("repeats", 0) + entry.repeats
            if not entry.blank:
                self._marker(f"previous line repeated {entry.repeats} more time{'s' if entry.repeats > 1 else ''}")

    def _named_elsewhere(self, entry: _Entry) -> bool:
        """A collapse group's `named` line whose failing test a report or the runner's list names by now, beside
        lines cut already (alone, its marker would cost more than the line)."""
        if not self._named or self._failures is None or not self._gap or entry.state != KEEP or entry.repeats:
            return False
        text = entry.line[:MATCH_CHARS].decode("utf-8", "surrogateescape")
        for pattern in self._named:
            found = pattern.search(text)
            if found is not None:
                return self._failures.names(found.group(1))
        return False

    def _passes_through(self, entry: _Entry) -> bool:
        """Whether the gap waiting for its marker goes on past this kept line (a collapse group's `through`)."""
        return (self._through is not None and bool(self._gap) and self._gap.keys() <= self._through_labels
                and self._through.search(entry.line[:MATCH_CHARS].decode("utf-8", "surrogateescape")))

    def _add_gap(self, first: int, last: int, reasons: dict[str, int]) -> None:
        if not self._gap:
            self._gap_first = first
        self._gap_last = last
        for reason, count in reasons.items():
            self._gap[reason] = self._gap.get(reason, 0) + count

    def _flush_gap(self) -> None:
        gap = self._gap
        if not gap:
            return
        for reason, count in gap.items():
            if reason != NOTED:  # counted by the operation whose note the ceiling cut
                self.removed[reason] = self.removed.get(reason, 0) + count
        total = sum(gap.values())
        details = [f"{count} {reason}" for reason, count in gap.items() if reason not in _PLAIN_REASONS]
        why = f" ({', '.join(details)})" if details and (len(details) > 1 or len(gap) > 1) else (
            f" ({details[0].split(' ', 1)[1]})" if details else "")
        # As the issue that asked for budgets put it: what was cut, how much, and where to page for it.
        self._marker(f"{total} line{'s' if total > 1 else ''} cut{why}, {_span(self._gap_first, self._gap_last)}")
        self._gap = {}

    def _marker(self, text: str) -> None:
        for line in text.split("\n"):  # every line codeoid adds is marked, however a note was made
            self.out += MARKER + line.encode("utf-8", "surrogateescape") + b"\n"
        self._last_written = 0

    # -- ending --------------------------------------------------------------------------------------------------

    def close(self, *, complete: bool, newline_at_end: bool = True) -> None:
        """Write everything still buffered. `complete`: this is the whole output, so keep its closing line."""
        closing = self._last_nonblank
        if self._failures is not None:
            self._failures.finish(closing if complete else None)
        if complete and closing is not None:
            if closing.state != KEEP:
                self._restore(closing)
            closing.must = True
        self._close_item(at_end=True)
        self._close_groups()
        while self._buffer:
            entry = self._buffer.popleft()
            if entry.state == PENDING:
                entry.state = KEEP
            self._hold(entry)
        if complete:
            self._spend_budget()
            self._spend_ceiling(complete=True)
        self._render()
        self._flush_gap()
        if complete and not newline_at_end and self._last_written == self.lineno and self.out.endswith(b"\n"):
            del self.out[-1]

    def flush_held(self) -> None:
        """Write what is held as it stands, without spending the budget (before handing the rest over raw)."""
        self._render()
        self._flush_gap()

    def _restore(self, entry: _Entry) -> None:
        """Keep an entry that was to be removed (the output's closing line), undoing what its removal counted."""
        if entry.state == OMIT:
            if entry.item is not None:
                entry.item.omitted -= 1 + entry.repeats
            if entry.group is not None:
                self._count_group_omitted(entry, -1 - entry.repeats)
        if entry.state == DROP and self._item is not None:
            entry.item = self._item
            self._item.total += 1 + entry.repeats
            self._item.counted += (1 + entry.repeats) * (self._item_count is None)
        entry.state = KEEP

    def _close_groups(self) -> None:
        """Say what each group left out (made when written: the budget may cut more). With `extensions`, a table
        at the top names every group with its entries by extension; otherwise one note at the end."""
        group = self.rule.group
        if group is not None and group.extensions:
            self._group_table = True
        elif self._groups:
            self._note(self._groups_left_out)

    def _groups_left_out(self) -> str | None:
        omitted = sorted(((key, counts) for key, counts in self._groups.items() if counts[1] > 0),
                         key=lambda pair: -pair[1][1])
        self._groups = {}
        if not omitted:
            return None
        rest = omitted[20:]
        more = f", and {sum(counts[1] for _, counts in rest)} in {len(rest)} more groups" if rest else ""
        return f"not shown: {', '.join(f'{counts[1]} {key}' for key, counts in omitted[:20])}{more}"

    def _write_group_table(self) -> None:
        if not self._group_table or not self._groups:
            return
        groups, self._groups = self._groups, {}
        self._group_table = False
        total = sum(counts[0] for counts in groups.values())
        shown = total - sum(counts[1] for counts in groups.values())
        self._marker(f"{total} entries in {len(groups)} groups, {shown} shown below:")
        for key, counts in list(groups.items())[:MAX_TABLE]:
            kinds = sorted(counts[2].items(), key=lambda pair: -pair[1])
            described = ", ".join(f"{count} {kind}" for kind, count in kinds[:4])
            other = sum(count for _, count in kinds[4:])
            described += f", {other} other" if other else ""
            self._marker(f"{key} {described}" if len(kinds) == 1 else f"{key} {counts[0]}: {described}")
        if len(groups) > MAX_TABLE:
            rest = list(groups.values())[MAX_TABLE:]
            self._marker(f"… and {len(rest)} more groups with {sum(counts[0] for counts in rest)} entries")

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


def _fair_shares(items: list[list[_Entry]], lines: int, size: int, min_share: int = 1) -> list[int]:
    """How many of its first lines each item keeps: the largest number every item may keep (or all it has)
    within `lines` and `size`, then one more for each item in turn while that still fits. An item shown in part
    also costs the marker line that names its cut (an item cut whole joins its neighbours' gap). When that
    number is under `min_share`, items in turn get `min_share` lines while they fit and the rest none: a few
    items worth reading rather than every item's first line."""
    prefixes = []  # bytes of each item's first k lines, k = 0..len
    for entries in items:
        prefix = [0]
        for entry in entries:
            prefix.append(prefix[-1] + len(entry.line) + 1)
        prefixes.append(prefix)

    def cost(index: int, share: int) -> tuple[int, int]:
        marker = 0 < share < len(items[index])
        return share + marker, prefixes[index][share] + MARKER_COST * marker

    def total(shares: list[int]) -> tuple[int, int]:
        costs = [cost(index, share) for index, share in enumerate(shares)]
        return sum(count for count, _ in costs), sum(bytes_ for _, bytes_ in costs)

    low, high = 0, max((len(entries) for entries in items), default=0)
    while low < high:
        share = (low + high + 1) // 2
        used_lines, used_bytes = total([min(share, len(entries)) for entries in items])
        if used_lines <= lines and used_bytes <= size:
            low = share
        else:
            high = share - 1
    shares = [min(low, len(entries)) for entries in items]
    if low < min_share:
        shares = [0] * len(items)
        used_lines = used_bytes = 0
        for index, entries in enumerate(items):
            more_lines, more_bytes = cost(index, min(min_share, len(entries)))
            if used_lines + more_lines <= lines and used_bytes + more_bytes <= size:
                shares[index] = min(min_share, len(entries))
                used_lines, used_bytes = used_lines + more_lines, used_bytes + more_bytes
    used_lines, used_bytes = total(shares)
    for index, entries in enumerate(items):
        if shares[index] < len(entries):
            before, after = cost(index, shares[index]), cost(index, shares[index] + 1)
            if used_lines + after[0] - before[0] <= lines and used_bytes + after[1] - before[1] <= size:
                used_lines += after[0] - before[0]
                used_bytes += after[1] - before[1]
                shares[index] += 1
    return shares


def _fill(template: str, values: dict[str, str]) -> str:
    """`{name}` replaced by its value (empty if it was not found); a `[[...]]` part goes when each of its fields is
    empty or 0 (`[[, +{body} lines]]`). One pass, so a value that looks like `{name}` stays as it is."""
    def fill(text: str) -> str:
        return _FIELD.sub(lambda field: values.get(field.group(1), ""), text)

    def part(found: re.Match[str]) -> str:
        if found.group(2) is not None:
            return values.get(found.group(2), "")
        names = _FIELD.findall(found.group(1))
        return "" if names and all(values.get(name, "") in ("", "0") for name in names) else fill(found.group(1))

    return _TEMPLATE.sub(part, template)


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|‘[^’]*’|“[^”]*”")
# Numbers, and words with a digit in them (hex ids, UUIDs, pod names' hashes, timestamps).
_NUMBER = re.compile(r"[\w.:-]*\d[\w.:-]*")


def _generic(message: str) -> str:
    """A diagnostic's message as a code, for tools that print none: quoted names and numbers made generic."""
    generic = _NUMBER.sub("N", _QUOTED.sub("'…'", message.strip()))
    return generic if len(generic) <= 80 else generic[:79] + "…"


def _span(first: int, last: int) -> str:
    return f"raw line {first}" if first == last else f"raw lines {first}-{last}"


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
