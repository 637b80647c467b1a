"""Recall's answer: a short ranked list of hits, each naming its episode and showing only the lines that matched.

A hit is a header (episode id, kind, time, session and turn, tool and command or path, size and token estimate, a
raw output behind a compressed one) and a few numbered lines, grep style (`82:` a line that matched, `81-` context
around it, `--` a gap), verbatim up to `LINE_CHARS` each. The reader pages the rest by line number: the hit says
which call returns exactly the lines shown. The whole answer fits a byte budget (recall's default is about 1.8k
tokens): hits share what their headers leave, and hits whose headers alone would not fit are named at the end.
The MCP server's `recall` and `codeoid search` both render through here, each with its own way to page.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from codeoid.memory.matched_lines import MatchedLines, matched_lines
from codeoid.pages import byte_size, estimate_tokens, format_line_range, share_budget, split_lines
from codeoid.store import raw
from codeoid.text import agent_label, one_line

# Room for the line that says which lines matched and how to page them.
SAY_BYTES = 160
# The least a shown hit's lines take: its best line's number and head.
MIN_LINE_BYTES = 64
# A shown line longer than this shows its head and how many bytes follow; the page call returns it whole.
LINE_CHARS = 240
# Lines holding query words a hit shows at most (best first), each with its context.
MOST_MATCHED = 5
# Context lines shown on each side of a line that holds query words.
CONTEXT = 1
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


def render_hits(head: str, rows: Sequence[Row], *, query: str, budget: int | None, page_call: PageCall,
                raw_outputs: Mapping[str, RawFacts] | None = None, notes: Mapping[int, str] | None = None,
                places: Mapping[int, str] | None = None, more_hint: str = "") -> str:
    """`head`, then one block per hit, best first, within `budget` bytes (None: each hit at its natural size).
    `notes` are lineage notes by episode id (in a fork); `places` the workspace of each, when hits span several.

    As many hits are shown as fit with at least their best line each; the rest are named at the end."""
    raw_outputs = raw_outputs or {}
    notes = notes or {}
    places = places or {}
    matches = [matched_lines(str(row["text"]), query, chunk=_chunk(row), most=MOST_MATCHED) for row in rows]
    headers = [_header(row, found, raw_outputs, notes.get(int(str(row["id"]))), places.get(int(str(row["id"]))),
                       page_call) for row, found in zip(rows, matches, strict=True)]
    if budget is None:
        return _render(head, rows, matches, headers, None, page_call, more_hint)
    shown = len(rows)
    while shown > 1 and (byte_size(head) + byte_size(_left_out_note(rows[shown:], more_hint))
                         + sum(byte_size(header) + SAY_BYTES + MIN_LINE_BYTES for header in headers[:shown])) > budget:
        shown -= 1
    while True:  # the estimate above is close; a hit whose say-line ran long can still tip the total over
        text = _render(head, rows[:shown], matches, headers, budget, page_call, more_hint, left_out=rows[shown:])
        if byte_size(text) <= budget or shown == 1:
            return text
        shown -= 1


def _render(head: str, rows: Sequence[Row], matches: list[MatchedLines], headers: list[str], budget: int | None,
            page_call: PageCall, more_hint: str, left_out: Sequence[Row] = ()) -> str:
    note = _left_out_note(left_out, more_hint)
    fixed = byte_size(head) + sum(byte_size(header) + 3 for header in headers[:len(rows)]) + byte_size(note) + 2
    wanted = [_natural_size(str(row["text"]), found) for row, found in zip(rows, matches, strict=False)]
    allowances = share_budget(wanted, max(budget - fixed, 0)) if budget is not None else wanted
    blocks = [head]
    for row, found, header, allowance in zip(rows, matches, headers, allowances, strict=False):
        blocks.append(header + "\n" + _lines_block(row, found, allowance, page_call))
    if note:
        blocks.append(note)
    return "\n\n".join(blocks)


def kind_of(row: Row) -> str:
    return f"tool {row['tool_name']}" if row["kind"] == "tool" else str(row["kind"])


def _chunk(row: Row) -> tuple[int, int] | None:
    found = row.get("matched_lines")
    if isinstance(found, tuple | list) and len(found) == 2:
        return int(found[0]), int(found[1])
    return None


def _header(row: Row, found: MatchedLines, raw_outputs: Mapping[str, RawFacts], note: str | None,
            place: str | None, page_call: PageCall) -> str:
    text = str(row["text"])
    fields = [f"=== episode {row['id']}", kind_of(row), _time(float(str(row["created_at"])))]
    session = f"session {str(row['session_id'])[:8]}"
    fields.append(session + (f" turn {row['turn']}" if row.get("turn") is not None else ""))
    fields.append(f"agent {agent_label(row.get('agent'))}")
    fields.append(str(row["state"]))
    if row.get("score") is not None:
        fields.append(f"score {float(str(row['score'])):.3g}")
    if row["kind"] == "tool" and row.get("is_error"):
        fields.append(f"exit {row['exit_status']} (error)" if row.get("exit_status") is not None else "error")
    fields.append(f"{found.total:,} line{'s' if found.total != 1 else ''}, {byte_size(text):,} bytes, "
                  f"~{estimate_tokens(text):,} tokens")
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
            lines.append(_raw_line(str(raw_id), facts, page_call))
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


def _raw_line(raw_id: str, facts: RawFacts | None, page_call: PageCall) -> str:
    if facts is None:
        return f"compressed output; raw output {raw_id} is no longer stored"
    if facts.expired:
        return (f"compressed output; raw expired: raw output {raw_id} ({facts.size:,} bytes) was dropped to keep the "
                "data dir under its disk budget")
    if facts.lines is None:
        return (f"compressed output; the exact stdout is raw output {raw_id} ({facts.size:,} bytes): page it with "
                f"{page_call(raw_id, '1-200')}")
    return (f"compressed output; the exact stdout is raw output {raw_id}: {facts.lines:,} lines, {facts.size:,} "
            f"bytes; page it with {page_call(raw_id, format_line_range(1, max(1, min(facts.lines, 200))))}")


def _natural_size(text: str, found: MatchedLines) -> int:
    """The bytes a hit's lines take when nothing is cut: what it asks of the shared budget."""
    lines = split_lines(text)
    shown = _with_context(found, set(found.numbers))
    return SAY_BYTES + _cost(lines, shown)


def _with_context(found: MatchedLines, chosen: set[int]) -> list[int]:
    if found.how != "words":
        return sorted(chosen)
    around = {number + offset for number in chosen for offset in range(-CONTEXT, CONTEXT + 1)}
    return sorted(number for number in around if 1 <= number <= found.total)


def _lines_block(row: Row, found: MatchedLines, allowance: int, page_call: PageCall) -> str:
    """The say-line (which lines, why, how to page them) and the numbered lines, within `allowance` bytes: the best
    lines first, each with its context while it fits, then in line order."""
    lines = split_lines(str(row["text"]))
    if not lines:
        return "(empty text)"
    room = allowance - SAY_BYTES
    chosen: list[int] = []
    shown: list[int] = []
    for number in found.numbers:
        for trial in (_with_context(found, {*chosen, number}), sorted({*shown, number})):
            if not chosen or _cost(lines, trial) <= room:
                chosen.append(number)
                shown = trial
                break
    if _cost(lines, shown) > room and len(shown) > 1:  # even the best line's context does not fit
        shown = [chosen[0]]
    widths = share_budget([min(byte_size(lines[number - 1]), LINE_CHARS) for number in shown],
                          max(room - sum(len(str(number)) + 3 for number in shown), MIN_HEAD_BYTES * len(shown)))
    best = _group_of(shown, chosen[0])
    say = _say(found, sorted(chosen), page_call(str(row["id"]), format_line_range(best[0], best[-1])))
    return say + "\n" + _numbered(lines, shown, set(chosen) if found.how == "words" else set(shown), widths)


def _group_of(shown: list[int], number: int) -> list[int]:
    """The run of consecutive shown lines that holds `number`."""
    at = shown.index(number)
    first = last = at
    while first > 0 and shown[first - 1] == shown[first] - 1:
        first -= 1
    while last < len(shown) - 1 and shown[last + 1] == shown[last] + 1:
        last += 1
    return shown[first:last + 1]


def _say(found: MatchedLines, chosen: list[int], best: str) -> str:
    if found.how == "words":
        unsearched = f"; lines past {found.searched:,} were not searched" if found.searched < found.total else ""
        which = f"line {chosen[0]} holds" if len(chosen) == 1 else f"lines {_ranges(chosen)} hold"
        return f"{which} query words (context around them below; best: {best}{unsearched}):"
    if found.how == "meaning":
        return f"no line holds a query word; found by meaning in lines {_ranges(chosen)} (best: {best}):"
    return f"no line holds a query word (the match is in its input, or by meaning); its first lines ({best}):"


def _numbered(lines: list[str], shown: list[int], matched: set[int], widths: list[int]) -> str:
    out: list[str] = []
    previous = None
    for number, width in zip(shown, widths, strict=True):
        if previous is not None and number != previous + 1:
            out.append("--")
        mark = ":" if number in matched else "-"
        out.append(f"{number}{mark} {_clip(lines[number - 1], max(width, MIN_HEAD_BYTES))}")
        previous = number
    return "\n".join(out)


def _cost(lines: list[str], shown: list[int]) -> int:
    """Bytes the numbered lines take (a `--` gap line included), each cut at `LINE_CHARS`."""
    return sum(min(byte_size(lines[number - 1]), LINE_CHARS) + len(str(number)) + 6 for number in shown)


def _clip(line: str, width: int) -> str:
    """The line verbatim, or, when it is longer than `width` bytes, its head and how many bytes are left out."""
    if byte_size(line) <= width:
        return line
    head = line.encode("utf-8", "surrogatepass")[:max(width - 16, MIN_HEAD_BYTES)].decode("utf-8", "ignore")
    return f"{head}… [+{byte_size(line) - byte_size(head):,} bytes]"


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
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))
