"""The fidelity contract (DESIGN §5) as checks on a (raw, compressed) pair, written without looking at any rule.

Each detector reads the raw output the way a person would (what is an error, a failing test, a changed file, a
file with search hits) and reports what the compressed output lost. They know nothing of the rule packs or the
engine beyond the documented marker prefix, so a rule that drifts cannot also drift its own check.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterable

# The documented prefix of every line codeoid adds (compressors package docstring).
MARKER = b"[codeoid] "


def lines_of(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def text(line: bytes) -> str:
    return line.decode("utf-8", "surrogateescape")


def output_lines(compressed: bytes) -> tuple[list[bytes], list[str]]:
    """The compressed output split into kept raw lines and codeoid's own (marker) lines."""
    kept, added = [], []
    for line in lines_of(compressed):
        if line.startswith(MARKER):
            added.append(text(line))
        else:
            kept.append(line)
    return kept, added


# -- structural: true of every rule on every output ---------------------------------------------------------------

def kept_lines_unaltered(raw: bytes, compressed: bytes) -> list[str]:
    """Every unmarked output line is a raw line, byte for byte, in raw order (a subsequence of the raw lines)."""
    raw_lines = lines_of(raw)
    kept, _ = output_lines(compressed)
    position = 0
    for line in kept:
        while position < len(raw_lines) and raw_lines[position] != line:
            position += 1
        if position == len(raw_lines):
            return [f"unmarked line not in raw order (altered or added): {text(line)[:120]!r}"]
        position += 1
    return []


def closing_line_survives(raw: bytes, compressed: bytes) -> list[str]:
    """The last non-blank raw line (a runner's verdict, `N directories`, a total) is still there."""
    closing = next((line for line in reversed(lines_of(raw)) if line.strip()), None)
    kept, _ = output_lines(compressed)
    if closing is not None and closing not in kept:
        return [f"closing line lost: {text(closing)[:120]!r}"]
    return []


STRUCTURAL: list[Callable[[bytes, bytes], list[str]]] = [kept_lines_unaltered, closing_line_survives]


# -- diagnostics: errors, failures, tracebacks, warnings ---------------------------------------------------------

_ERROR_HEADS = [re.compile(pattern) for pattern in (
    r"^\s*Traceback \(most recent call last\):",
    r"^(?:E\s+)?(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?::|$)",  # the exception a traceback ends with
    r"panicked at |^panic: ",
    r"(?i)^(?:\S+:\d+(?::\d+)?: )?(?:error|fatal)(?:\[\w+\])?: ",  # compilers and tools
)]
# A failing test's report starts with a line naming it; the test must stay named (`failing_tests_named`), but when
# its report says nothing its cause's first report does not, the line itself may go.
_FAILURE_HEADS = [re.compile(pattern) for pattern in (
    r"^_{3,} .+ _{3,}$",  # pytest failure section
    r"^(?:FAIL|ERROR): \S",  # unittest failure section
    r"^\s*--- FAIL: ",  # go
    r"^---- .+ ----$",  # cargo test's captured output of a failing test
    r"^\s*● ",  # jest failure
    r"^\s*(?:×|✕) ",  # vitest, jest failing test
)]


def error_heads_survive(raw: bytes, compressed: bytes) -> list[str]:
    """Every distinct error or traceback head is kept at least once. Fifty tests failing with one word-for-word
    error show it once; the tests that share it are named (`failing_tests_named`), and the raw lines paged.
    Indentation makes no head distinct (a doctest's report indents the traceback it caught)."""
    needed = dict.fromkeys(line.strip() for line in lines_of(raw) if any(p.search(text(line)) for p in _ERROR_HEADS)
                           and not any(p.search(text(line)) for p in _FAILURE_HEADS))
    kept = {line.strip() for line in output_lines(compressed)[0]}
    return [f"error head lost: {text(line)[:120]!r}" for line in needed if line not in kept]


def failure_heads_named(raw: bytes, compressed: bytes) -> list[str]:
    """Every failure report's head is kept or names its test in a codeoid line (a group's note)."""
    kept, added = output_lines(compressed)
    kept_set = set(kept)
    notes = "\n".join(added)
    problems = []
    for line in dict.fromkeys(lines_of(raw)):
        head = text(line)
        if line in kept_set or not any(p.search(head) for p in _FAILURE_HEADS):
            continue
        name = _failure_name(head)
        if not name or not (re.search(rf"(?:^|\s){re.escape(name)}(?:[,;)]|$)", notes, re.M)
                            or _pytest_id_named(name, compressed)):
            problems.append(f"failure head neither kept nor named: {head[:120]!r}")
    return problems


_WARNING = re.compile(r"\b[A-Z]\w*Warning\b|(?i:^\s*warning\b|\bwarning(?:\[\w+\])?: )")


def _pytest_id_named(name: str, compressed: bytes) -> bool:
    """pytest heads a report `Class.test[params]`; its node id, `path::Class::test[params]`, names it too."""
    function, bracket, params = name.partition("[")
    return f"::{function.replace('.', '::')}{bracket}{params}".encode() in compressed


def _failure_name(head: str) -> str:
    """The test a failure head names: the text between its decorations."""
    for pattern in (r"^_{3,} (.+?) _{3,}$", r"^(?:FAIL|ERROR): (.+)$", r"^\s*--- FAIL: (\S+)",
                    r"^---- (.+?) (?:stdout|stderr) ----$", r"^\s*● (.+)$", r"^\s*(?:×|✕) (.+?)(?: \d+ ?m?s)?$"):
        found = re.search(pattern, head)
        if found:
            return found.group(1).strip()
    return ""


def warnings_survive(raw: bytes, compressed: bytes) -> list[str]:
    """Every distinct warning line is kept at least once (identical repeats may collapse with a count)."""
    kept = set(output_lines(compressed)[0])
    return [f"warning lost: {text(line)[:120]!r}" for line in dict.fromkeys(lines_of(raw))
            if _WARNING.search(text(line)) and line not in kept]


# -- failing tests ------------------------------------------------------------------------------------------------

_FAILING_TEST_IDS = [re.compile(pattern) for pattern in (
    r"^(?:FAILED|ERROR) (\S+)",  # pytest short summary
    r"^(\S+::\S+) (?:FAILED|ERROR)\b",  # pytest -v
    r"^(?:FAIL|ERROR): \S+ \(([\w.]+)\)",  # unittest
    r"^(\S+) \([\w.]+\)(?: \.\.\.)? (?:FAIL|ERROR)$",  # unittest -v
    r"^\s*--- FAIL: (\S+)",  # go test
    r"^FAIL\s+(\S+)\s+[\d.]+s$",  # go test package
    r"^test (\S+) \.\.\. FAILED$",  # cargo test
    r"^\s*✕ (.+?)(?: \(\d+ m?s\))?$",  # jest
    r"^\s*● (.+)$",  # jest failure headers
    r"^\s*× (.+?)(?: \d+m?s)?$",  # vitest
    r"^\s*\d+\) (.+)$",  # mocha
)]


def failing_tests_named(raw: bytes, compressed: bytes) -> list[str]:
    """Every failing test id that the raw output names is still named somewhere in the compressed output."""
    ids: dict[str, None] = {}
    for line in lines_of(raw):
        for pattern in _FAILING_TEST_IDS:
            found = pattern.search(text(line))
            if found:
                ids[found.group(1).strip()] = None
    output = text(compressed)
    return [f"failing test not named: {test_id!r}" for test_id in ids if test_id not in output]


# -- git ----------------------------------------------------------------------------------------------------------

_STATUS_FILE = re.compile(r"^\t(?:[a-z][a-z ]+:\s+)?(.+?)$")
_SHORT_STATUS_FILE = re.compile(r"^[ MADRCUT?!]{2} (.+)$")
_DIFF_FILE = re.compile(r"^diff --(?:git|cc) (?:a/)?(\S+)(?: b/(\S+))?")
_STAT_FILE = re.compile(r"^ (\S.*?)\s+\|\s+(?:\d+|Bin)")


def _files_named(raw: bytes, compressed: bytes, patterns: tuple[re.Pattern[str], ...]) -> list[str]:
    files: dict[str, None] = {}
    for line in lines_of(raw):
        for pattern in patterns:
            found = pattern.search(text(line))
            if found:
                for path in found.groups():
                    if path:
                        files[path.split(" -> ")[-1]] = None
                break
    output = text(compressed)
    return [f"changed file not named: {path!r}" for path in files if path not in output]


def status_files_named(raw: bytes, compressed: bytes) -> list[str]:
    """Every changed or untracked file that git status lists (long or short format) is still named."""
    return _files_named(raw, compressed, (_STATUS_FILE, _SHORT_STATUS_FILE))


def diff_files_named(raw: bytes, compressed: bytes) -> list[str]:
    """Every file a diff (or its --stat) changes is still named."""
    return _files_named(raw, compressed, (_DIFF_FILE, _STAT_FILE))


def _changes_per_file(lines: Iterable[bytes]) -> list[tuple[bytes, str, int, int]]:
    """(header line, path, lines added, lines removed) for each file section of a patch: a section starts at its
    `diff --git` line; its +/- lines are those after its first hunk header (before it, ---/+++ are headers)."""
    sections: list[tuple[bytes, str, int, int]] = []
    header: bytes | None = None
    path = ""
    added = removed = 0
    in_hunk = False
    for line in lines:
        found = _DIFF_FILE.match(text(line))
        if found or line.startswith(b"commit "):
            if header is not None:
                sections.append((header, path, added, removed))
            header, path, added, removed, in_hunk = (line, found.group(2) or found.group(1), 0, 0, False) \
                if found else (None, "", 0, 0, False)
        elif header is not None and line.startswith(b"@@"):
            in_hunk = True
        elif header is not None and in_hunk and line.startswith(b"+"):
            added += 1
        elif header is not None and in_hunk and line.startswith(b"-"):
            removed += 1
    if header is not None:
        sections.append((header, path, added, removed))
    return sections


def diff_files_named_with_counts(raw: bytes, compressed: bytes) -> list[str]:
    """Every file a patch changes is named with its lines added and removed: either all its changed lines are
    shown under its own header, or a codeoid line names the file with `+N` and `-M`."""
    kept, added_lines = output_lines(compressed)
    shown = {header: (plus, minus) for header, _, plus, minus in _changes_per_file(kept)}
    problems = []
    for header, path, plus, minus in _changes_per_file(lines_of(raw)):
        if shown.get(header) == (plus, minus):
            continue
        stated = re.compile(rf"(?:^|\s){re.escape(path)}(?:\s|$).*\+{plus}\b.*-{minus}\b")
        if not any(stated.search(line) for line in added_lines):
            problems.append(f"changed file not named with its counts: {path!r} (+{plus} -{minus})")
    return problems


# -- search -------------------------------------------------------------------------------------------------------

# A search line is `path` then a separator: `:12:` for a hit and `-12-` for context (with line numbers), or `:`
# for a hit without them. The path is the shortest prefix followed by a separator.
_SEARCH_LINE = re.compile(r"^(.+?)([:-]\d+[:-]|:)")


def _hits_per_file(lines: Iterable[bytes]) -> Counter[str]:
    hits: Counter[str] = Counter()
    for line in lines:
        found = _SEARCH_LINE.match(text(line))
        if found and found.group(2).startswith(":"):
            hits[found.group(1)] += 1
    return hits


def search_files_named_with_counts(raw: bytes, compressed: bytes) -> list[str]:
    """Every file with hits is named, and its number of hits is either all shown or stated beside its name."""
    kept, added = output_lines(compressed)
    shown = _hits_per_file(kept)
    problems = []
    for path, count in _hits_per_file(lines_of(raw)).items():
        if shown[path] == count:
            continue
        stated = re.compile(rf"(?:^|\s){re.escape(MARKER.decode())}?.*{re.escape(path)}\b.*\b{count}\b")
        if not any(stated.search(line) for line in added):
            problems.append(f"file with {count} hits not named with its count: {path!r} (shown {shown[path]})")
    return problems


# -- linters, type checkers, compilers ------------------------------------------------------------------------

# A diagnostic's location, as the tools print it: `path:12:5: CODE`, `path(12,5): error`, ` --> path:12:5`,
# pyright's `  path:12:5 - error`, eslint's `  12:5  error` under its file's header line.
_LOCATIONS = [re.compile(pattern) for pattern in (
    r"^(?P<path>[^\s:()]+\.\w+):(?P<line>\d+):(?:\d+:?)? (?!note: )",  # a note belongs to the diagnostic above
    r"^(?P<path>[^\s:()]+\.\w+)\((?P<line>\d+),\d+\): (?:error|warning)",
    r"^\s*--> (?P<path>[^\s:]+):(?P<line>\d+):\d+$",
    r"^\s+(?P<path>/\S+):(?P<line>\d+):\d+ - (?:error|warning)",
)]
_HEADER = re.compile(r"^(/\S+\.\w+)$")
_ESLINT = re.compile(r"^\s+(?P<line>\d+):\d+\s+(?:error|warning)\s")


def _locations(lines: Iterable[bytes]) -> list[tuple[bytes, str, str]]:
    found: list[tuple[bytes, str, str]] = []
    header = ""
    for line in lines:
        decoded = text(line)
        if _HEADER.match(decoded):
            header = decoded
            continue
        eslint = _ESLINT.match(decoded)
        if eslint and header:
            found.append((line, header, eslint.group("line")))
            continue
        for pattern in _LOCATIONS:
            match = pattern.search(decoded)
            if match:
                found.append((line, match.group("path"), match.group("line")))
                break
    return found


def diagnostics_located(raw: bytes, compressed: bytes) -> list[str]:
    """Every diagnostic's location is shown (its line kept) or named by a codeoid line: the file with that line
    number in its list (`src/a.py:3,7,12`), or the file with a count (`src/a.py (12)`)."""
    kept, added = output_lines(compressed)
    kept_set = set(kept)
    notes = "\n".join(added)
    problems = []
    for line, path, number in dict.fromkeys(_locations(lines_of(raw))):
        if line in kept_set:
            continue
        listed = re.search(rf"(?:^|\s){re.escape(path)}:(?:\d+,)*{number}(?:,|\s|$)", notes, re.M)
        counted = re.search(rf"(?:^|\s){re.escape(path)} \(\d+\)", notes, re.M)
        if not (listed or counted):
            problems.append(f"diagnostic location neither shown nor named: {path}:{number}")
    return problems


def summary_lines_survive(raw: bytes, compressed: bytes) -> list[str]:
    """A tool's verdict and totals (`Found 230 errors.`, `3 errors, 1 warning`, `rated at`) are kept."""
    verdict = re.compile(r"(?i)^(?:Found \d+ (?:error|problem)|\d+ errors?, \d+ warnings?|Your code has been rated|"
                         r"Success: |✖ \d+ problems?|Found \d+ errors? in |error: could not compile|"
                         r"make(?:\[\d+\])?: \*\*\*)")
    kept = set(output_lines(compressed)[0])
    return [f"summary line lost: {text(line)[:120]!r}" for line in dict.fromkeys(lines_of(raw))
            if verdict.search(text(line)) and line not in kept]


_LOG_PROBLEM = re.compile(r"(?i)\b(?:error|fatal|panic|exception|failed|warn(?:ing)?|critical|refused|killed)\b")


def log_problems_located(raw: bytes, compressed: bytes) -> list[str]:
    """Every log line reporting a problem is kept, or its raw line number is named by a codeoid line (a list
    such as `raw lines 7,8,60` or a range such as `raw lines 7-1290` that covers it)."""
    kept, added = output_lines(compressed)
    kept_set = set(kept)
    named: set[int] = set()
    ranges: list[tuple[int, int]] = []
    for note in added:
        for listed in re.findall(r"raw lines ([\d,]+)(?![\d-])", note):
            named.update(int(number) for number in listed.split(",") if number)
        ranges.extend((int(a), int(b)) for a, b in re.findall(r"raw lines (\d+)-(\d+)", note))
    problems = []
    for number, line in enumerate(lines_of(raw), 1):
        if line in kept_set or not _LOG_PROBLEM.search(text(line)):
            continue
        if number not in named and not any(a <= number <= b for a, b in ranges):
            problems.append(f"log problem neither shown nor located: line {number}: {text(line)[:100]!r}")
    return problems


DETECTORS_BY_KIND: dict[str, list[Callable[[bytes, bytes], list[str]]]] = {
    "tests": [error_heads_survive, failure_heads_named, warnings_survive, failing_tests_named],
    "git-status": [status_files_named],
    "git-diff": [diff_files_named, diff_files_named_with_counts],
    "git-log": [],
    "git-branch": [],
    "listing": [],
    "search": [search_files_named_with_counts],
    "lint": [diagnostics_located, summary_lines_survive],
    "install": [error_heads_survive, summary_lines_survive],
    "build": [diagnostics_located, summary_lines_survive, error_heads_survive],
    "logs": [log_problems_located],
}


def violations(kind: str, raw: bytes, compressed: bytes, *, named_by_range: bool = True) -> list[str]:
    """Everything the compressed output breaks of the fidelity contract, for an output of this kind. An item
    (an error head, a failing test, a file) that is not shown but lies on raw lines a codeoid line names with
    their range (`raw lines A-B`: past the ceiling) is named, and kept to the contract, unless `named_by_range`
    is False (then only what is shown counts: what the model sees without paging)."""
    ranges = named_ranges(compressed) if named_by_range else []
    raw_lines = [text(line) for line in lines_of(raw)] if ranges else []
    found: list[str] = []
    for detector in STRUCTURAL + DETECTORS_BY_KIND[kind]:
        found.extend(f"{detector.__name__}: {problem}" for problem in detector(raw, compressed)
                     if detector in STRUCTURAL or not _on_named_lines(problem, raw_lines, ranges))
    return found


_RANGE = re.compile(r"raw lines? (\d+)(?:-(\d+))?")
# The first repr()-quoted text of a problem: the item it is about.
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'" + '|"((?:[^"\\\\]|\\\\.)*)"')


def named_ranges(compressed: bytes) -> list[tuple[int, int]]:
    """The raw line ranges codeoid's lines name (`raw lines 120-499`, `raw line 7`)."""
    _, added = output_lines(compressed)
    return [(int(found.group(1)), int(found.group(2) or found.group(1)))
            for line in added for found in _RANGE.finditer(line)]


def _on_named_lines(problem: str, raw_lines: list[str], ranges: list[tuple[int, int]]) -> bool:
    """Whether the item a problem is about (its first quoted text) is on a raw line inside a named range."""
    quoted = _QUOTED.search(problem)
    if quoted is None or not ranges:
        return False
    try:
        item = ast.literal_eval(quoted.group(0))
    except (ValueError, SyntaxError):
        return False
    return any(item.strip() in line and any(first <= number <= last for first, last in ranges)
               for number, line in enumerate(raw_lines, 1))
