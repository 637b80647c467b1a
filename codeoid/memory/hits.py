"""Recall's answer: a short ranked list of hits, each naming its episode and showing only the lines that answer.

A hit is a header (episode id, kind, time, session and turn, tool and command or path, size and token estimate, a
raw output behind a compressed one) and a few numbered lines, grep style (`82:` a line chosen as an answer, `81-`
context around it, `--` a gap), verbatim up to `LINE_CHARS` each (a longer line shows the part that holds the
question's words). Which lines, best first, is `codeoid.memory.line_choice`'s answer: lines of the episode's text,
and lines of the raw output behind a compressed one, under a line that names that raw output. The reader pages the
rest by line number: the hit says which call returns exactly the lines shown. The whole answer fits a byte budget
(recall's default is about 1.8k tokens): hits share what their headers leave, the better ranked a larger share, and
hits whose headers alone would not fit are named at the end. The MCP server's `recall` and `codeoid search` both
render through here, each with its own way to page.
"""

from __future__ import annotations

import bisect
import json
import re
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from codeoid.memory.line_choice import SENTENCE_END, LineChoice, Pick
from codeoid.pages import byte_size, estimate_tokens, format_line_range, share_budget, split_lines
from codeoid.store import raw
from codeoid.text import agent_label, one_line

# Room for the line that says which lines are shown and how to page them, when deciding how many hits fit (each
# hit's lines then reserve what their own say-line takes at most: `_Sources.say_bytes`).
SAY_BYTES = 160
# What a say-line may grow by past its estimate: a subset of the picks can list one more run ("5, 7" for "5-7").
SAY_SLACK = 8
# The least a shown hit's lines take: its best line's number and head.
MIN_LINE_BYTES = 64
# A shown line longer than this shows its head (or the part that holds the question's words) and how many bytes are
# left out; the page call returns it whole. A line at most `CLIP_SLACK` bytes longer is shown whole: the marker would
# take about as much. An answer's paragraph is one line of 300-700 characters, and cut at 240 it lost the clause
# that answered (the week set's tuning half: shown R@5 0.565 -> 0.609 at 480, no other set moved).
LINE_CHARS = 480
CLIP_SLACK = 24
# The best hit's lines are cut at twice that: it is the likeliest answer, and an explanation of 500-900 characters
# says its cause last ("...so there was little to win there anyway"; the week set's second tuning half: shown R@5
# 0.500 -> 0.545, the other sets unmoved; the lower hits' share of the budget pays for it).
TOP_LINE_CHARS = 2 * LINE_CHARS
# Context lines shown on each side of a chosen line.
CONTEXT = 1
# The share of the budget a hit's lines get falls with its rank: the k-th hit's weight is 1 / (1 + k * RANK_SHARE).
RANK_SHARE = 0.5
# A line shown from its middle keeps its opening sentence if that takes at most 1/OPENING_SHARE of the line's room.
OPENING_SHARE = 3
# The sentences holding the question's words a long line tries to show, best first (a megabyte of prose holds
# thousands, and only a few fit).
SENTENCES_TRIED = 8
# A line longer than this (a minified file, a log with no newlines) is shown by the window that holds most of the
# question, not read as sentences: an answer's paragraph is a few kilobytes.
SENTENCE_LINE_CHARS = 32_768
# The least of a sentence's head worth showing after the whole sentence before it ("It's off in this clone").
MIN_GOES_ON_BYTES = 12
# A sentence of prose, with the spaces before it (`SENTENCE_END` closes it, or the line's end).
_SENTENCE = re.compile(r"\s*.+?(?:[.!?](?=\s)|$)", re.DOTALL)
# A line cut to fit a small budget still shows at least this many bytes of its head.
MIN_HEAD_BYTES = 40
COMMAND_CHARS = 240
# Raw outputs larger than this are not read through to count their lines for a hit (their size is given instead):
# counting reads every byte, and a recall must stay fast whatever it finds.
MAX_COUNTED_RAW_BYTES = 8 << 20

Row = Mapping[str, object]
# (item id, "82-93") -> how the reader asks for those lines: `get_episode("42", lines="82-93")`, `codeoid show ...`
PageCall = Callable[[str, str], str]


@dataclass(frozen=True)
class RawFacts:
    """What a hit says about the raw output behind a compressed Bash episode."""

    id: str
    size: int
    lines: int | None  # None when the output is too large to count for a hit, or expired
    expired: bool = False  # retention dropped the bytes (`codeoid gc`); the metadata stays


def raw_facts(db: sqlite3.Connection, raw_id: str) -> RawFacts | None:
    """The raw output's size and line count (lines numbered as `get_episode` pages them), or None if it is gone."""
    found = raw.get_raw_output(db, raw_id)
    if found is None:
        return None
    if found.expired_at is not None:
        return RawFacts(raw_id, found.stdout_size, None, expired=True)
    if found.stdout_size > MAX_COUNTED_RAW_BYTES:
        return RawFacts(raw_id, found.stdout_size, None)
    newlines, last = 0, b""
    for chunk in raw.iter_raw_stdout(db, raw_id):
        newlines += chunk.count(b"\n")
        last = chunk
    return RawFacts(raw_id, found.stdout_size, newlines + (1 if last and not last.endswith(b"\n") else 0))


def render_hits(head: str, rows: Sequence[Row], *, choices: Sequence[LineChoice], budget: int | None,
                page_call: PageCall, raw_outputs: Mapping[str, RawFacts] | None = None,
                notes: Mapping[int, str] | None = None, places: Mapping[int, str] | None = None,
                more_hint: str = "") -> str:
    """`head`, then one block per hit, best first, within `budget` bytes (None: each hit at its natural size).
    `choices` are the lines each hit shows (`line_choice.choose`); `notes` are lineage notes by episode id (in a
    fork); `places` the workspace of each, when hits span several.

    As many hits are shown as fit with at least their best line each; the rest are named at the end."""
    raw_outputs = raw_outputs or {}
    notes = notes or {}
    places = places or {}
    headers = [_header(row, found, raw_outputs, notes.get(int(str(row["id"]))), places.get(int(str(row["id"]))))
               for row, found in zip(rows, choices, strict=True)]
    if budget is None:
        return _render(head, rows, choices, headers, None, page_call, more_hint)
    shown = len(rows)
    while shown > 1 and (byte_size(head) + byte_size(_left_out_note(rows[shown:], more_hint))
                         + sum(byte_size(header) + SAY_BYTES + MIN_LINE_BYTES for header in headers[:shown])) > budget:
        shown -= 1
    while True:  # the estimate above is close; a hit whose say-line ran long can still tip the total over
        text = _render(head, rows[:shown], choices, headers, budget, page_call, more_hint, left_out=rows[shown:])
        if byte_size(text) <= budget or shown == 1:
            return text
        shown -= 1


def _render(head: str, rows: Sequence[Row], choices: Sequence[LineChoice], headers: list[str], budget: int | None,
            page_call: PageCall, more_hint: str, left_out: Sequence[Row] = ()) -> str:
    note = _left_out_note(left_out, more_hint)
    fixed = byte_size(head) + sum(byte_size(header) + 3 for header in headers[:len(rows)]) + byte_size(note) + 2
    sources = [_Sources(row, found, page_call, TOP_LINE_CHARS if rank == 0 else LINE_CHARS)
               for rank, (row, found) in enumerate(zip(rows, choices, strict=False))]
    wanted = [_cost(source, _with_context(source, set(source.picks))) for source in sources]
    weights = [1 / (1 + rank * RANK_SHARE) for rank in range(len(rows))]
    allowances = share_budget(wanted, max(budget - fixed, 0), weights) if budget is not None else wanted
    blocks = [head]
    for source, header, allowance in zip(sources, headers, allowances, strict=False):
        blocks.append(header + "\n" + _lines_block(source, allowance, page_call))
    if note:
        blocks.append(note)
    return "\n\n".join(blocks)


def kind_of(row: Row) -> str:
    return f"tool {row['tool_name']}" if row["kind"] == "tool" else str(row["kind"])


def _header(row: Row, found: LineChoice, raw_outputs: Mapping[str, RawFacts], note: str | None,
            place: str | None) -> str:
    """What the hit is, in as few bytes as say it: the budget's bytes are worth more as lines that answer. The agent
    is named when it is not Claude Code, the state when it is not live."""
    text = str(row["text"])
    fields = [f"=== episode {row['id']}", kind_of(row), _time(float(str(row["created_at"])))]
    session = f"session {str(row['session_id'])[:8]}"
    fields.append(session + (f" turn {row['turn']}" if row.get("turn") is not None else ""))
    agent = agent_label(row.get("agent"))
    if agent != "claude":
        fields.append(f"agent {agent}")
    if row["state"] != "live":
        fields.append(str(row["state"]))
    if row.get("score") is not None:
        fields.append(f"score {float(str(row['score'])):.3g}")
    if row["kind"] == "tool" and row.get("is_error"):
        fields.append(f"exit {row['exit_status']} (error)" if row.get("exit_status") is not None else "error")
    fields.append(f"{found.total:,} line{'s' if found.total != 1 else ''}, ~{estimate_tokens(text):,} tokens")
    lines = [" · ".join(fields)]
    if place:
        lines.append(f"workspace: {place}")
    what = _what(row)
    if what:
        lines.append(what)
    if note:
        lines.append(f"lineage: {note}")
    if row.get("cut"):
        lines.append(f"cut: {row['cut']}")
    raw_id = row.get("raw_output_id")
    if raw_id:
        facts = raw_outputs.get(str(raw_id))
        if facts is not None and not facts.expired and facts.size == byte_size(text):
            lines.append(f"whole output, also kept verbatim as raw output {raw_id}")  # no rule cut it
        else:
            lines.append(_raw_line(str(raw_id), facts))
    return "\n".join(lines)


def _what(row: Row) -> str:
    """The tool call in one line: its command, or the path it touched, or its input."""
    if row["kind"] != "tool":
        return ""
    if row.get("tool_name") == "Bash":
        command = str(row.get("original_command") or row.get("command") or "")
        return f"command: {one_line(command, COMMAND_CHARS)}" if command else ""
    paths = _json_list(row.get("paths"))
    if paths:
        return "path: " + one_line(", ".join(paths), COMMAND_CHARS)
    if row.get("input"):
        return f"input: {one_line(str(row['input']), COMMAND_CHARS)}"
    return ""


def _raw_line(raw_id: str, facts: RawFacts | None) -> str:
    if facts is None:
        return f"compressed output; raw output {raw_id} is no longer stored"
    if facts.expired:
        return (f"compressed output; raw expired: raw output {raw_id} ({facts.size:,} bytes) was dropped to keep the "
                "data dir under its disk budget")
    size = f"{facts.lines:,} lines, {facts.size:,} bytes" if facts.lines is not None else f"{facts.size:,} bytes"
    return f"compressed; the exact stdout is raw output {raw_id} ({size})"


Key = tuple[str, int]  # a line a hit may show: its source ("text", "raw") and its number there


class _Sources:
    """A hit's lines: the episode's text and the raw output's lines the choice carries, the picks best first."""

    def __init__(self, row: Row, found: LineChoice, page_call: PageCall, line_chars: int = LINE_CHARS) -> None:
        self.item = str(row["id"])
        self.line_chars = line_chars
        self.found = found
        self.text = split_lines(str(row["text"]))
        self.picks: list[Key] = [(pick.source, pick.number) for pick in found.picks]
        self.by_key: dict[Key, Pick] = {(pick.source, pick.number): pick for pick in found.picks}
        self.sections = list(dict.fromkeys(source for source, _ in self.picks))
        self.say_bytes = {where: self._say_bound(where, page_call) for where in self.sections}

    def _say_bound(self, where: str, page_call: PageCall) -> int:
        """The most this source's say-line can take: it as it reads with all its picks, paging lines numbered as
        high as the source goes. A one-line answer's say-line is a third of `SAY_BYTES`, and the rest is room for
        the answer's own words."""
        last = len(self.text) if where == "text" else max([self.found.raw_searched, *self.found.raw_lines])
        item = self.item if where == "text" else str(self.found.raw_id)
        picked = [key for key in self.picks if key[0] == where]
        return byte_size(_say(self, where, picked, page_call(item, f"{last}-{last}"))) + SAY_SLACK

    def line(self, key: Key) -> str | None:
        source, number = key
        if source == "text":
            return self.text[number - 1] if 1 <= number <= len(self.text) and number != self.found.footer else None
        return self.found.raw_lines.get(number)


def _with_context(source: _Sources, chosen: set[Key]) -> list[Key]:
    """The chosen lines and `CONTEXT` lines either side of each (those that exist; past a blank line, which says
    nothing, to the line beyond it), in reading order."""
    if source.found.how == "start":
        return _ordered(source, chosen)
    around = set(chosen)
    for where, number in chosen:
        for step in (-1, 1):
            for offset in range(1, 2 * CONTEXT + 1):
                line = source.line((where, number + step * offset))
                if line is None:
                    break
                around.add((where, number + step * offset))
                if line.strip() and offset >= CONTEXT:
                    break
    return _ordered(source, around)


def _next(source: _Sources, key: Key) -> list[Key]:
    """The line after `key`, where there is one: a sentence or a call often goes on there (a commit body wrapped at
    72 characters, a traceback's frame and its code), and it is the context worth most when only one fits."""
    following = (key[0], key[1] + 1)
    return [following] if source.found.how != "start" and source.line(following) is not None else []


def _ordered(source: _Sources, keys: set[Key]) -> list[Key]:
    return sorted(keys, key=lambda key: (source.sections.index(key[0]) if key[0] in source.sections else 0, key[1]))


def _lines_block(source: _Sources, allowance: int, page_call: PageCall) -> str:
    """For each source of the hit's lines (its text, its raw output) that has room, the say-line (which lines, why,
    how to page them) and the numbered lines, within `allowance` bytes: the best lines first, each with its context
    while it fits, then alone."""
    if not source.text and not source.picks:
        return "(empty text)"
    room = allowance
    chosen: list[Key] = []
    shown: list[Key] = []
    for key in source.picks:
        for trial in (_with_context(source, {*chosen, key}), _ordered(source, {*shown, key, *_next(source, key)}),
                      _ordered(source, {*shown, key}), _ordered(source, {*chosen, key})):
            if not chosen or _cost(source, trial) <= room:
                chosen.append(key)
                shown = trial
                break
    if _cost(source, shown) > room and len(shown) > 1:  # even the best line's context does not fit
        shown = [chosen[0]]
    chosen = [key for key in chosen if key in shown]
    sections = [where for where in source.sections if any(key[0] == where for key in shown)]
    overhead = sum(len(str(number)) + 3 for _, number in shown) + sum(source.say_bytes[where] for where in sections)
    widths = share_budget([_shown_size(source.line(key) or "", source.line_chars) for key in shown],
                          max(room - overhead, MIN_HEAD_BYTES * len(shown)))
    width_of = dict(zip(shown, widths, strict=True))
    parts = []
    for where in sections:
        keys = [key for key in shown if key[0] == where]
        picked = [key for key in chosen if key[0] == where]
        best = _group_of([number for _, number in keys], picked[0][1])
        item = source.item if where == "text" else str(source.found.raw_id)
        say = _say(source, where, picked, page_call(item, format_line_range(best[0], best[-1])))
        parts.append(say + "\n" + _numbered(source, keys, set(picked), width_of))
    return "\n".join(parts)


def _group_of(shown: list[int], number: int) -> list[int]:
    """The run of consecutive shown lines that holds `number`."""
    at = shown.index(number)
    first = last = at
    while first > 0 and shown[first - 1] == shown[first] - 1:
        first -= 1
    while last < len(shown) - 1 and shown[last + 1] == shown[last] + 1:
        last += 1
    return shown[first:last + 1]


def _say(source: _Sources, where: str, picked: list[Key], best: str) -> str:
    """Which lines of this source are shown as answers, why, and the call that pages the best of them."""
    found = source.found
    numbers = sorted(number for _, number in picked)
    why = {source.by_key[key].why for key in picked if key in source.by_key}
    if found.how == "start":
        return f"no line holds a query word (the match is in its input, or by meaning); its first lines ({best}):"
    if found.how == "changed":
        return (f"no line holds a query word (the match is in its input, or by meaning); the lines it changed, "
                f"{_ranges(numbers)} ({best}):")
    if why == {"words"}:
        which = f"line {numbers[0]} holds" if len(numbers) == 1 else f"lines {_ranges(numbers)} hold"
        said = f"{which} query words"
    elif why == {"meaning"}:
        said = f"no line holds a query word; found by meaning in lines {_ranges(numbers)}"
    else:
        reasons = [reason for key, reason in (("words", "query words"), ("meaning", "meaning"),
                                              ("shape", "an error or count line"), ("diff", "what it changed"))
                   if key in why]
        said = f"{'line' if len(numbers) == 1 else 'lines'} {_ranges(numbers)} match by {' and '.join(reasons)}"
    if where == "raw":
        unsearched = "" if found.raw_complete else f"; its lines past {found.raw_searched:,} were not searched"
        return f"lines compression cut: {said} (best: {best}{unsearched}):"
    unsearched = f"; lines past {found.searched:,} were not searched" if found.searched < found.total else ""
    return f"{said} (best: {best}{unsearched}):"


def _numbered(source: _Sources, keys: list[Key], picked: set[Key], width_of: Mapping[Key, int]) -> str:
    out: list[str] = []
    previous = None
    for key in keys:
        number = key[1]
        if previous is not None and number != previous + 1:
            out.append("--")
        mark = ":" if key in picked else "-"
        pick = source.by_key.get(key)
        shown = _clip(source.line(key) or "", max(width_of[key], MIN_HEAD_BYTES), pick.focus if pick else 0,
                      pick.spots if pick else ())
        out.append(f"{number}{mark} {shown}")
        previous = number
    return "\n".join(out)


def _cost(source: _Sources, shown: list[Key]) -> int:
    """Bytes the numbered lines take (a `--` gap line included), each cut at `LINE_CHARS`, and the say-line of each
    source they come from."""
    lines = sum(_shown_size(source.line(key) or "", source.line_chars) + len(str(key[1])) + 6 for key in shown)
    return lines + sum(source.say_bytes.get(where, SAY_BYTES) for where in {key[0] for key in shown})


def _shown_size(line: str, line_chars: int) -> int:
    """What a line takes shown with no other limit: all of it, or `line_chars` of it."""
    size = byte_size(line)
    return size if size <= line_chars + CLIP_SLACK else line_chars


def _clip(line: str, width: int, focus: int = 0, spots: Sequence[tuple[int, float]] = ()) -> str:
    """The line verbatim, or, when it is longer than `width` bytes, the sentences that hold the question's words
    (`_sentences`), or the part from character `focus` on (its head when 0), and how many bytes are left out on
    each side: `[+120 bytes] …middle… [+80 bytes]`. A line shown from its middle keeps its opening sentence when
    that is short (`Not a bug. [+120 bytes] …middle… [+80 bytes]`): an answer's paragraph says its verdict first
    and the part holding the question's words later."""
    if byte_size(line) <= width:
        return line
    if spots and (sentences := _sentences(line, width, spots)) is not None:
        return sentences
    opening = _opening(line[:focus], width // OPENING_SHARE) if focus > 0 else ""
    if opening and not line[len(opening):focus].strip():  # the focus is the sentence after the opening
        opening, focus = "", 0
    skipped = byte_size(line[len(opening):focus])
    lead = (f"{opening} " if opening else "") + (f"[+{skipped:,} bytes] …" if focus > 0 else "")
    rest = line[focus:] if focus > 0 else line
    part = rest.encode("utf-8", "surrogatepass")[:max(width - 16 - byte_size(lead), MIN_HEAD_BYTES)].decode(
        "utf-8", "ignore")
    left = byte_size(rest) - byte_size(part)
    return f"{lead}{part}… [+{left:,} bytes]" if left else f"{lead}{part}"


def _sentences(line: str, width: int, spots: Sequence[tuple[int, float]]) -> str | None:
    """A long line shown as the sentences that hold most of the question's weight, in their order, each whole:
    the short opening sentence (the verdict), those sentences best first while they fit, the sentence after each
    (whole, or as much of its head as the room left holds), and the bytes between them named: `Not a bug.
    [+210 bytes] …It passes them through. It would have… [+96 bytes]`. An explanation says what the question asks
    in two places as often as in one ("makes git remember how you resolved ...; ... for a one-off clash like ours
    it would have saved nothing"). None when the line is not prose of a readable length (`SENTENCE_LINE_CHARS`), or
    its best sentence does not fit."""
    if len(line) > SENTENCE_LINE_CHARS:
        return None
    spans = [(match.start() + len(match.group(0)) - len(match.group(0).lstrip()), match.end())
             for match in _SENTENCE.finditer(line) if match.group(0).strip()]
    if len(spans) < 2:
        return None
    weight = [0.0] * len(spans)
    starts = [start for start, _ in spans]
    for at, found in spots:  # a megabyte line can hold thousands of each: one bisection a word
        index = bisect.bisect_right(starts, at) - 1
        if index >= 0 and at < spans[index][1]:
            weight[index] += found
    chosen: dict[int, int] = {}  # sentence -> how many of its characters are shown

    def take(index: int) -> bool:
        if index in chosen or not 0 <= index < len(spans):
            return False
        trial = {**chosen, index: spans[index][1] - spans[index][0]}
        if byte_size(_fragments(line, spans, trial)) > width:
            return False
        chosen[index] = trial[index]
        return True

    if byte_size(line[slice(*spans[0])]) <= width // OPENING_SHARE:
        take(0)
    best = [index for index in sorted(range(len(spans)), key=lambda index: (-weight[index], index))
            if weight[index]][:SENTENCES_TRIED]
    for index in best:
        take(index)
    if not best or best[0] not in chosen:  # the sentence that holds most of the question does not fit whole
        return None
    grown = True
    while grown:  # the sentence after a chosen one goes on with it, best first
        grown = any([take(index + 1) for index in sorted(chosen, key=lambda index: (-weight[index], index))])
    for index in sorted(chosen, key=lambda index: (-weight[index], index)):
        if index + 1 < len(spans) and index + 1 not in chosen:
            room = width - byte_size(_fragments(line, spans, {**chosen, index + 1: 0})) - len(" [+99,999 bytes]")
            if room >= MIN_GOES_ON_BYTES:
                start, end = spans[index + 1]
                head = line[start:end].encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
                chosen[index + 1] = len(head)
            break
    return _fragments(line, spans, chosen)


def _fragments(line: str, spans: Sequence[tuple[int, int]], chosen: Mapping[int, int]) -> str:
    """The `chosen` sentences of `line` (index -> characters of it shown), in order, with the bytes between them
    named: ` [+58 bytes] …` after a whole sentence, `… [+58 bytes] …` after a cut one."""
    shown: list[str] = []
    at, whole = 0, True
    for index in sorted(chosen):
        start = spans[index][0]
        if start > at and line[at:start].strip():
            shown.append(f"{'' if whole else '…'}{' ' if shown else ''}[+{byte_size(line[at:start]):,} bytes] …")
        elif start > at:
            shown.append(line[at:start])
        at = start + chosen[index]
        whole = at == spans[index][1]
        shown.append(line[start:at])
    if at < len(line):
        shown.append(f"… [+{byte_size(line[at:]):,} bytes]")
    return "".join(shown)


def _opening(head: str, most: int) -> str:
    """The first sentence of `head` when it ends within `most` bytes, else nothing."""
    end = SENTENCE_END.search(head[:most])
    return head[:end.end()] if end and byte_size(head[:end.end()]) <= most else ""


def _ranges(numbers: Sequence[int]) -> str:
    """`82, 90-93`: sorted line numbers as runs."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(format_line_range(first, last) for first, last in runs)


def _left_out_note(rows: Sequence[Row], more_hint: str) -> str:
    if not rows:
        return ""
    named = ", ".join(f"{row['id']} ({kind_of(row)}, ~{estimate_tokens(str(row['text'])):,} tokens)" for row in rows)
    return f"[{len(rows)} more hit{'s' if len(rows) != 1 else ''} did not fit the answer budget: {named}{more_hint}]"


def _json_list(value: object) -> list[str]:
    if not isinstance(value, str) or not value:
        return []
    try:
        found = json.loads(value)
    except ValueError:
        return []
    return [item for item in found if isinstance(item, str)] if isinstance(found, list) else []


def _time(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))
