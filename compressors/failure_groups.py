"""Failures grouped by cause: a test run's failure reports, each read whole, named by cause and trimmed.

A runner reports each failing test in a section of its own (pytest's `____ test ____`, unittest's `FAIL: test`,
jest's `● test`, cargo's `---- test stdout ----`...), and most of a run's bytes are those sections' tracebacks.
When one regression fails fifty tests, the fifty tracebacks say one thing fifty times. `FailureGroups` holds each
section until it ends, names its cause, and decides every line of it:

- the cause (`cause_of`): the failure's message with the words it shares with a parametrised test's parameters,
  numbers, hex, quoted values and paths made generic, and the innermost frame in the project's
  own code (a library's frames do not count; when it is in the test's own file, the file without the line, so
  that the same assertion failing in many tests of one file is one cause);
- the first failure of a cause keeps its first lines (the test id), its reasons, every line the rule keeps or the
  engine's diagnostics flag, and, within the traceback budget, the frames at both ends of the project's part of the
  stack (the test's own and the one that raised) with their code pointers and caret lines, and the head of its
  captured output; its other lines go with the engine's usual gap markers (count and raw line range);
- every later failure of the cause keeps what its first failure does not already show: its message, reasons
  (`reason_lines` of them), lines the rule keeps and diagnostics, each only where its text differs from every
  line the first failure kept, and then its first lines (the test id) too. A later failure with nothing of its
  own (the same message, word for word) is cut whole. One note after each run of later failures names the
  first failure, every test cut whole, the lines cut and the raw line range, so that
  `get_episode(id, lines="A-B")` pages exactly there;
- the runner's own list of failing tests with their reasons (`listing`: pytest's `FAILED id - reason`) keeps
  the first line of each reason; the later ones with the same reason are cut, and one note per reason names
  every test id cut. So every failing test is still named, and every distinct error line shown once.

Budgets: `failures.budget` counts the traceback lines kept over all first failures (never more than the rule's
own budget lines, where one is set). The failures operation spends first: every line it keeps counts against the
rule's budget (`[rule.budget]`, or the global one) before anything else, and that budget cuts only the lines
outside failure reports (passing tests, progress, headers), tier by tier. Every marker, the engine's and these
notes, reads `N lines cut (what), raw lines A-B`.

The module decides; the pipeline (`pipeline.py`) holds the lines, applies the verdicts and writes. Lines are
opaque items with `line` (the raw bytes), `lineno` and `repeats` (identical consecutive raw lines folded into
one).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from codeoid.compressors.rules import Failures

# RELEASE: no failure after all (no reason, no message: a passing test's `=== RUN` block, jest's console output);
# the line goes through the rule's other operations.
KEEP, OMIT, CUT, DROP, RELEASE = range(5)
# A report longer than this is decided as far as it has come and the rest of it goes through the usual rules:
# the pipeline holds a report's lines until it ends, and this bounds that.
MAX_SECTION_LINES = 2000
MAX_SECTION_BYTES = 1 << 20
# Causes remembered; past this a new cause is shown as a first failure but not remembered.
MAX_CAUSES = 1024
# Lines of a first failure remembered to tell its later failures' diagnostics apart.
MAX_LEAD_LINES = 400
# Lines remembered per cause, of its first failure and what its later ones showed of their own.
MAX_SHOWN_LINES = 2000
# Tests a note names one by one; past this it counts the rest (their ids are in the raw lines it points at).
MAX_NAMED = 1000
# Failing tests remembered in raw order, with their raw lines, for the list a ceiling leaves in their place.
MAX_FAILING = 4096
# A run of at most this many trimmed lines inside a first failure is shown rather than marked: the marker would
# cost as much.
SMALL_GAP = 2

_VARYING = re.compile(r"""
    (?P<quoted>'[^'\n]*'|"[^"\n]*"|`[^`\n]*`)
  | (?P<path>(?:[A-Za-z]:)?(?:[\w.~@+-]*[/\\])+[\w.@+-]+)
  | (?P<hex>\b0x[0-9a-fA-F]+\b)
  | (?P<number>(?<![\w.])-?\d+(?:\.\d+)*(?:e[+-]?\d+)?(?![\w]))
""", re.X)
# A line of only carets, tildes and bars under a code line: Python 3.11's `^^^^`, jest's `|    ^`.
_CARETS = re.compile(r"^[\s|~^]*\^[\s|~^]*$")


def cause_of(message: str, test: str = "") -> str:
    """`message` with what differs between failures of one cause made generic: the words it shares with the
    parameters in the test's id (`Unknown format: 10h36m` in `test_parse[10h36m-...]`), quoted values, paths,
    hex and numbers."""
    parameters = test[test.find("[") + 1:test.rfind("]")] if "[" in test and test.rstrip().endswith("]") else ""
    if parameters:
        words: list[str] = []
        for word in message.split():
            if word not in parameters:
                words.append(word)
            elif not words or words[-1] != "<param>":
                words.append("<param>")
        message = " ".join(words)
    return _VARYING.sub(lambda found: f"<{found.lastgroup}>", message.strip())


class _Cause:
    __slots__ = ("first", "where", "texts")

    def __init__(self, first: str, where: str, texts: set[str]) -> None:
        self.first = first  # the test id of its first failure
        self.where = where  # the frame that raised, as `path:line`, or "" when none is known
        self.texts = texts  # the lines its failures showed so far, without their indentation


class _Run:
    """Consecutive later failures of one cause, for the note that follows them."""

    __slots__ = ("cause", "failures", "cut", "first_line", "last_line", "whole")

    def __init__(self, cause: _Cause) -> None:
        self.cause = cause
        self.failures = 0
        self.cut = 0
        self.first_line = 0
        self.last_line = 0
        self.whole: list[str] = []  # the tests cut whole, which only the note names


class _Listed:
    """The later lines of a listing that gave one reason again: cut, and named by one note."""

    __slots__ = ("first", "tests", "lines", "first_line", "last_line")

    def __init__(self, first: str) -> None:
        self.first = first  # the test whose listing line, kept, gave the reason first
        self.tests: list[str] = []
        self.lines = 0
        self.first_line = 0
        self.last_line = 0


def _union(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns)) if patterns else None


class FailureGroups:
    """Feed every line with `feed`; `finish` at the end. Verdicts and notes go to the pipeline's callbacks.

    `keep`, `diagnostic` and `drop` are the rule's own line tests (the rule's keep patterns, the engine's
    diagnostics, the rule's drop patterns). `apply(line, verdict, text)` receives every held line's verdict
    (KEEP; OMIT: trimmed, with a gap marker; CUT: counted by a note; DROP; RELEASE); `note(text, before)` asks for
    a marker line before the held line `before`, or after everything so far when `before` is None (`text` may
    be a callable, made when the line is written).
    """

    def __init__(self, spec: Failures, *, keep: Callable[[str], bool], diagnostic: Callable[[str], bool],
                 drop: Callable[[str], bool], apply: Callable[[Any, int, str], None],
                 note: Callable[[str | Callable[[], str], Any], None]) -> None:
        self.spec = spec
        self._keep, self._diagnostic, self._drop = keep, diagnostic, drop
        self._apply, self._note = apply, note
        self._begin = re.compile(spec.begin) if spec.begin else None
        self._start = re.compile(spec.start)
        self._end = re.compile(spec.end) if spec.end else None
        self._reason = _union(spec.reason)
        self._message = re.compile(spec.message) if spec.message else None
        self._frame = re.compile(spec.frame) if spec.frame else None
        self._frame_after = re.compile(spec.frame_after) if spec.frame_after else None
        self._pointer = _union(spec.pointer)
        self._library = _union(spec.library)
        self._captured = re.compile(spec.captured) if spec.captured else None
        self._listing = re.compile(spec.listing) if spec.listing else None
        self._listing_reason = re.compile(spec.listing_reason) if spec.listing_reason else None
        self._listed: dict[str, _Listed] = {}
        # Every test a listing line named, and the same id as a report names it (`ChunkedTests.test_none` for
        # pytest's `tests/test_more.py::ChunkedTests::test_none`): a run's note need not name them again.
        self._listed_tests: set[str] = set()
        self._reported: set[str] = set()  # every test a report was about (shown, or named by a note)
        # Every line a report showed (without its indentation): another report shows it again only as its
        # message. A doctest's ten identical inner tracebacks are one.
        self._shown: set[str] = set()
        self._pending: tuple[Any, str, str] | None = None  # a listing line whose reason is on the next line
        # A report is a failure once a line says why (a reason or the message); one that never does is given back.
        self._evidence = _union((*spec.reason, *((spec.message,) if spec.message else ())))
        self._failing = False
        self._begun = self._begin is None
        self._name = ""
        self._stacked: list[str] = []  # tests named on the lines right after the first (`stacked`)
        self._lines: list[tuple[Any, str]] = []
        self._open = False
        self._held = 0  # bytes of the open report
        self._causes: dict[tuple[str, str], _Cause] = {}
        self._run: _Run | None = None
        self._budget = spec.budget
        # Every failing report in raw order (its test, first and last raw line), and every test the runner's list
        # names (its id and line): what `failing_tests` names when the output must shrink past its budget.
        self.reports: list[tuple[str, int, int]] = []
        self.listed: list[tuple[str, int]] = []

    def feed(self, line: Any, text: str) -> bool:
        """Whether `line` belongs to a failure report or is a listing line cut (then this decides it)."""
        if self._listing is not None and not self._open:
            listed = self._list(line, text)
            if listed is not None:
                return listed
        if not self._begun:
            if self._begin is not None and self._begin.search(text):
                self._begun = True
            return False
        if self._end is not None and self._end.search(text):
            self._close()
            self._end_run(None)
            return False
        found = self._start.search(text)
        if found is not None:
            name = next((group for group in found.groups() if group), text.strip())
            if self.spec.stacked and self._open and not self._failing and len(self._lines) == 1 + len(
                    self._stacked):
                self._stacked.append(name)  # one more test whose report is the one that follows
                self._name_test(name)
                self._lines.append((line, text))
                self._held += len(line.line)
                return True
            self._close()
            self._open = True
            self._name = name
            self._name_test(name)
            self._stacked = []
            self._lines = [(line, text)]
            self._held = len(line.line)
            self._failing = self._evidence is not None and self._evidence.search(text) is not None
            return True
        if not self._open:
            self._end_run(None)
            return False
        self._lines.append((line, text))
        self._held += len(line.line)
        if not self._failing and self._evidence is not None and self._evidence.search(text) is not None:
            self._failing = True
        if len(self._lines) >= MAX_SECTION_LINES or self._held >= MAX_SECTION_BYTES:
            self._close()
        return True

    def finish(self, closing: Any = None) -> None:
        """The output ended: decide the open report (`closing`, the output's last line, is always kept)."""
        self._close(closing)
        self._end_run(None)
        self._release_pending()
        self._end_listing()

    def _list(self, line: Any, text: str) -> bool | None:
        """A listing line: False to keep it (its reason is new), True when held or cut (the reason was given
        before); None: not one."""
        assert self._listing is not None
        pending, self._pending = self._pending, None
        if pending is not None:
            reason = self._listing_reason.search(text) if self._listing_reason is not None else None
            if reason is not None:
                held, held_text, test = pending
                if self._listed_again(test, (reason.group(1) if reason.groups() else reason.group(0)).strip(),
                                      [held, line]):
                    self._apply(held, CUT, held_text)
                    self._apply(line, CUT, text)
                    return True
                self._apply(held, RELEASE, held_text)
                return False
            self._apply(pending[0], RELEASE, pending[1])
        found = self._listing.search(text)
        if found is None:
            self._end_listing()
            return None
        test = found.group(1)
        if len(self.listed) < MAX_FAILING:
            self.listed.append((test, line.lineno))
        if len(self._listed_tests) < MAX_SHOWN_LINES:
            self._listed_tests.update((test, test.partition("::")[2].replace("::", ".")))
        if found.lastindex is None or found.lastindex < 2 or found.group(2) is None:
            if self._listing_reason is None:
                return False
            self._pending = (line, text, test)  # its reason is the next line
            return True
        if self._listed_again(test, found.group(2).strip(), [line]):
            self._apply(line, CUT, text)
            return True
        return False

    def _listed_again(self, test: str, reason: str, lines: list[Any]) -> bool:
        """Whether an earlier listing line gave `reason` (then `test` and its `lines` join its note)."""
        listed = self._listed.get(reason)
        if listed is None:
            if len(self._listed) < MAX_CAUSES:
                self._listed[reason] = _Listed(test)
            return False
        listed.tests.append(test)
        listed.lines += len(lines)
        listed.first_line = listed.first_line or lines[0].lineno
        listed.last_line = lines[-1].lineno
        return True

    def _release_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            self._apply(pending[0], RELEASE, pending[1])

    def _end_listing(self) -> None:
        listed, self._listed = self._listed, {}
        for entry in listed.values():
            if entry.tests:
                count = entry.lines
                self._note(f"{count} line{'s' if count > 1 else ''} cut (the same reason as {entry.first}: "
                           f"{_names(entry.tests)}), {_span(entry.first_line, entry.last_line)}", None)

    # -- deciding a report -----------------------------------------------------------------------------------------

    def _close(self, closing: Any = None) -> None:
        if not self._open:
            return
        self._open = False
        lines, self._lines = self._lines, []
        if not self._failing:
            for line, text in lines:
                self._apply(line, RELEASE, text)
            return
        if len(self.reports) < MAX_FAILING:
            last = lines[-1][0]
            self.reports.append((self._name, lines[0][0].lineno, last.lineno + last.repeats))
        texts = [text for _, text in lines]
        message_at, message = self._message_of(texts)
        frames = self._frames(texts)
        project = [frame for frame in frames if not self._is_library(frame[1])]
        innermost = outermost = None
        if project:
            innermost, outermost = (project[0], project[-1]) if self.spec.innermost_first else (project[-1],
                                                                                                 project[0])
        where = ""
        if innermost is not None and outermost is not None:
            # Raised in the test's own file: the line differs from test to test, the cause need not.
            where = innermost[1] if innermost[1] == outermost[1] else f"{innermost[1]}:{innermost[2]}"
        key = (cause_of(message, self._name), where)
        cause = self._causes.get(key)
        spent = None
        if cause is None:
            verdicts = self._first_of_cause(texts, frames, {innermost, outermost} - {None}, message_at)
            verdicts[1:1 + len(self._stacked)] = [CUT] * len(self._stacked)  # named by a note, below
            self._end_run(lines[0][0])
            stacked = len(self._stacked)
            if CUT in verdicts[1 + stacked:]:
                spent = [line for (line, _), verdict in zip(lines[1 + stacked:], verdicts[1 + stacked:], strict=True)
                         if verdict == CUT and line is not closing]
            if len(self._causes) < MAX_CAUSES:
                kept = {text.strip() for text, verdict in zip(texts, verdicts, strict=True) if verdict == KEEP}
                self._causes[key] = _Cause(self._name, where, set(list(kept)[:MAX_LEAD_LINES]))
        else:
            verdicts = self._later_of_cause(texts, cause, message_at, 1 + len(self._stacked))
            run = self._run
            if run is None or run.cause is not cause:
                self._end_run(lines[0][0])
                run = self._run = _Run(cause)
            run.failures += 1
            if KEEP not in verdicts:
                run.whole.extend([self._name, *self._stacked])
            for (line, _), verdict in zip(lines, verdicts, strict=True):
                if verdict == CUT and line is not closing:
                    run.cut += 1 + line.repeats
                    run.first_line = run.first_line or line.lineno
                    run.last_line = line.lineno + line.repeats
        for (line, text), verdict in zip(lines, verdicts, strict=True):
            self._apply(line, KEEP if line is closing else verdict, text)
        if cause is None and self._stacked:
            count = len(self._stacked)
            self._note(f"{count} line{'s' if count > 1 else ''} cut (tests failing with this same report: "
                       f"{_names(self._stacked)}), {_span(lines[1][0].lineno, lines[count][0].lineno)}", None)
        if spent:
            cut = sum(1 + line.repeats for line in spent)
            self._note(f"{cut} line{'s' if cut > 1 else ''} cut (traceback budget spent), "
                       f"{_span(spent[0].lineno, spent[-1].lineno + spent[-1].repeats)}", None)

    def failing_tests(self) -> list[tuple[str, int, int]]:
        """Every failing test once, as the runner's list names it where it has one (else as its report does), with
        the raw lines of its report (or of its line in the list): the runner's order, then tests only reported."""
        spans: dict[str, tuple[int, int]] = {}
        for name, first, last in self.reports:
            spans.setdefault(name, (first, last))
        found: list[tuple[str, int, int]] = []
        named: set[str] = set()
        for test, lineno in self.listed:
            if test in named:
                continue
            as_reported = test.partition("::")[2].replace("::", ".")
            span = spans.get(test) or spans.get(as_reported) or (lineno, lineno)
            named.update((test, as_reported))
            found.append((test, *span))
        found.extend((name, first, last) for name, first, last in self.reports if name not in named)
        return found

    def names(self, test: str) -> bool:
        """Whether a failure report or the runner's list of failing tests names `test` (as itself, or as pytest
        heads a report: `tests/a.py::Class::test` is `Class.test`)."""
        as_reported = test.partition("::")[2].replace("::", ".")
        return any(name in known for name in (test, as_reported) for known in (self._listed_tests, self._reported))

    def _name_test(self, name: str) -> None:
        if len(self._reported) < MAX_SHOWN_LINES:
            self._reported.add(name)

    def _remember(self, text: str) -> None:
        if len(self._shown) < MAX_SHOWN_LINES:
            self._shown.add(text.strip())

    def _must_keep(self, index: int, text: str) -> bool:
        return index < self.spec.head or self._keep(text)

    def _first_of_cause(self, texts: list[str], frames: list[tuple[int, str, str, bool]],
                        chosen: set[Any], message_at: int | None) -> list[int]:
        spec = self.spec
        verdicts = [OMIT] * len(texts)
        reasons = 0
        for index, text in enumerate(texts):
            if index >= spec.head and index != message_at and text.strip() in self._shown:
                continue  # shown already, by this report or an earlier one: trimmed with the rest
            if self._must_keep(index, text) or self._diagnostic(text):
                verdicts[index] = KEEP
                self._remember(text)
            elif self._reason is not None and self._reason.search(text) and reasons < spec.reason_lines:
                reasons += 1
                verdicts[index] = KEEP
                self._remember(text)
            elif self._drop(text):
                verdicts[index] = DROP
        starts = [frame[0] for frame in frames]
        if message_at is not None:
            # The message goes on to the next frame (unittest's list diff under its AssertionError).
            following = min((start for start in starts if start > message_at), default=len(texts))
            shown = 0
            for index in range(message_at + 1, following):
                if verdicts[index] == OMIT and shown < spec.reason_lines:
                    verdicts[index] = KEEP
                    shown += 1
        if self._budget <= 0:
            return [CUT if verdict == OMIT else verdict for verdict in verdicts]
        detail = set()
        # The frames at both ends of the project's part of the stack, with the code each points at.
        for frame in frames:
            if frame not in chosen:
                continue
            index, _, _, after = frame
            detail.add(index)
            if after:  # pytest's long form: the frame's code comes before its location line
                previous = max((start for start in starts if start < index), default=0)
                for pointer in (i for i in range(previous + 1, index) if self._is_pointer(texts[i])):
                    detail.update(range(max(previous + 1, pointer - spec.frame_lines), pointer + 1))
            else:
                following = min((start for start in starts if start > index), default=len(texts))
                detail.update(range(index + 1, min(index + 1 + spec.frame_lines, following)))
                detail.update(i for i in range(index + 1, following) if self._is_pointer(texts[i]))
        # Code pointers before the stack (jest's code frame), unless they belong to its first frame.
        if not frames or not frames[0][3]:
            detail.update(i for i in range(starts[0] if starts else len(texts)) if self._is_pointer(texts[i]))
        detail.update(self._captured_head(texts))
        # The caret line under a kept code line.
        for index in sorted(detail):
            if index + 1 < len(texts) and _CARETS.match(texts[index + 1]):
                detail.add(index + 1)
        for index in sorted(detail):
            if verdicts[index] == OMIT and self._budget > 0:
                verdicts[index] = KEEP
                self._budget -= 1
        self._fill_small_gaps(verdicts)
        return verdicts

    def _later_of_cause(self, texts: list[str], cause: _Cause, message_at: int | None, names: int) -> list[int]:
        """What a later failure of `cause` shows: only lines its first failure does not, then its test ids too
        (its first `names` lines name its tests)."""
        verdicts = [CUT] * len(texts)
        head = max(self.spec.head, names)
        reasons = 0
        shown = set(cause.texts)
        for index, text in enumerate(texts):
            if index < head:
                continue  # the test id: shown with what it has of its own, or named by the run's note
            if text.strip() in shown or (index != message_at and text.strip() in self._shown):
                if self._drop(text):
                    verdicts[index] = DROP
                continue  # its first failure, this one or another report shows this line (a doctest indents it)
            if index == message_at:
                verdicts[index] = KEEP
                reasons += self._reason is not None and self._reason.search(text) is not None
            elif self._keep(text):
                verdicts[index] = KEEP
            elif self._reason is not None and self._reason.search(text) and reasons < self.spec.reason_lines:
                reasons += 1
                verdicts[index] = KEEP
            elif self._diagnostic(text):
                verdicts[index] = KEEP
            elif self._drop(text):
                verdicts[index] = DROP
            if verdicts[index] == KEEP:
                shown.add(text.strip())
                self._remember(text)
        if KEEP in verdicts:
            verdicts[:head] = [KEEP] * min(head, len(verdicts))
        if len(shown) <= MAX_SHOWN_LINES:
            cause.texts = shown  # what this failure showed, its cause's later failures need not show again
        return verdicts

    def _fill_small_gaps(self, verdicts: list[int]) -> None:
        index = 0
        while index < len(verdicts):
            if verdicts[index] != OMIT:
                index += 1
                continue
            end = index
            while end < len(verdicts) and verdicts[end] in (OMIT, DROP):
                end += 1
            omitted = [i for i in range(index, end) if verdicts[i] == OMIT]
            if len(omitted) <= SMALL_GAP and self._budget >= len(omitted):
                for i in omitted:
                    verdicts[i] = KEEP
                self._budget -= len(omitted)
            index = end

    def _captured_head(self, texts: list[str]) -> list[int]:
        if self._captured is None:
            return []
        head: list[int] = []
        shown = -1  # lines of the current captured block shown so far; -1: not in one
        for index, text in enumerate(texts):
            if self._captured.search(text):
                head.append(index)
                shown = 0
            elif shown >= 0 and shown < self.spec.captured_lines:
                head.append(index)
                shown += 1
        return head

    # -- reading a report ------------------------------------------------------------------------------------------

    def _frames(self, texts: list[str]) -> list[tuple[int, str, str, bool]]:
        """(index, path, line, location comes after the code) for every frame location line."""
        frames = []
        for index, text in enumerate(texts):
            for pattern, after in ((self._frame, False), (self._frame_after, True)):
                if pattern is None:
                    continue
                found = pattern.search(text)
                if found is not None:
                    frames.append((index, found.group(1), found.group(2), after))
                    break
        return frames

    def _message_of(self, texts: list[str]) -> tuple[int | None, str]:
        """Where the cause's message is, and its text."""
        if self._message is None:
            return None, ""
        order = range(len(texts) - 1, -1, -1) if self.spec.last_message else range(len(texts))
        for index in order:
            found = self._message.search(texts[index])
            if found is not None:
                return index, next((group for group in found.groups() if group), found.group(0))
        return None, ""

    def _is_library(self, path: str) -> bool:
        return self._library is not None and self._library.search(path) is not None

    def _is_pointer(self, text: str) -> bool:
        return self._pointer is not None and self._pointer.search(text) is not None

    def _end_run(self, before: Any) -> None:
        run, self._run = self._run, None
        if run is None or not run.cut:
            return
        where = f" ({run.cause.where})" if run.cause.where else ""
        shown = run.failures - len(run.whole)

        def text() -> str:
            """Made when written: by then the runner's own list of failing tests may have named every test cut."""
            parts = [f"the rest of {shown} more failure{'s' if shown > 1 else ''}"] if shown else []
            if run.whole:
                count = len(run.whole)
                named = ("each named in the list of failing tests below"
                         if all(name in self._listed_tests for name in run.whole) else _names(run.whole))
                parts.append(f"{count} more failure{'s' if count > 1 else ''} whole: {named}")
            # The engine's gap marker form: the count, what was cut, then the raw lines (their ids and reasons
            # lie among them) where get_episode pages.
            return (f"{run.cut} line{'s' if run.cut > 1 else ''} cut (failures with the cause of "
                    f"{run.cause.first}{where}: {'; '.join(parts)}), {_span(run.first_line, run.last_line)}")

        self._note(text, before)


def _names(tests: list[str]) -> str:
    named = ", ".join(tests[:MAX_NAMED])
    return named if len(tests) <= MAX_NAMED else f"{named} and {len(tests) - MAX_NAMED} more"


def _span(first: int, last: int) -> str:
    return f"raw line {first}" if first == last else f"raw lines {first}-{last}"
