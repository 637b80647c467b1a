"""Which lines of a recalled episode a hit shows: the lines that answer the question, not the first that share a
word with it.

A line scores by the query words it holds, each weighed by how rare it is in the whole store (its inverse
document frequency over the episodes' FTS index, not over the episode's own lines: "test" in a test report is
common in the store too, "timezone" is not), by meaning (the lines of the chunks the vector index ranked near
the question, `Recalled` rows' `chunks`), and by the shape of a tool's output where the question asks for it: a
run's count line (`3 failed, 40 passed`) for "how many", an error line (`KeyError: 'user_id'`, `E  assert ...`,
`FAILED ...`) for what broke. Words match as the FTS index matches them (porter stems over unicode61 tokens).

A compressed Bash output has its raw output behind it (`codeoid.store.raw`): the lines compression cut, a commit
body `git log` lost, the middle of a long file, are scored with the episode's own and may be shown from there,
numbered as `get_episode("raw-...", lines=...)` pages them. Only the first `raw.SEARCHED_BYTES` (a megabyte) of a
text or a raw output are searched, as much as BM25 indexes of a raw output, so a 100 MB log costs recall what 1 MB
does; the hit says when lines were not searched.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from codeoid.pages import split_lines
from codeoid.store import raw
from codeoid.store.queries import STOP_WORDS

# The episodes index's tokenizer (migration m001's episodes_fts): a line matches the way its episode did.
TOKENIZER = "porter unicode61"
# Lines a hit may show as its best, at most (each with its context).
MOST = 5
# A hit none of whose lines holds a query word (found by its input, its path, its meaning) shows its first lines, up
# to this many as its share of the budget allows: a short script found by what it was written for shows the input it
# feeds in (week store, third tuning half: one question more at 20, none at 10, no other set moved).
START_LINES = 20
# A long line is shown from the part that holds most of the question's weight, about this many characters of it.
FOCUS_CHARS = 200
# A long line shown from its middle starts at the sentence that holds the focus when it began at most this far back.
SENTENCE_BACK = 160
# The end of a sentence in prose (a dot, question or exclamation mark before a space; not `a.b` or `1.5`).
SENTENCE_END = re.compile(r"[.!?](?=\s)")
# Weights of the signals besides the words (a line holding every query word scores 1 by its words).
MEANING = 0.35  # lines of a chunk the vector index found near the question (see `_chunk_bonus`)
NEAR = 0.2  # a chunk's cosine with the question from which its meaning counts, rising to all of it at NEAREST
NEAREST = 0.5
COUNT_LINE = 0.4  # a run's summary of counts
ERROR_LINE = 0.3  # an error line
# A failing test's id line, beside its error line bonus, when the question asks what failed: it names the failure
# ("FAILED tests/test_schema.py::test_data_key_as_empty_string"), where an assertion's `E` lines share the
# question's ordinary words (week store, second tuning half: 0.591 -> 0.614, no other set moved).
FAILED_TEST = 0.4
FAILURE_DETAIL = 0.4  # the same for an assertion's line when the question names the failure (`_NAMES_A_FAILURE`)
ASKED = 2.0  # how much more a shape counts when the question asks for it ("how many", "what broke")
# A diff's added or removed line (an edit's patch, `git show`), beside the unchanged lines around it that share the
# question's words: what the change did.
CHANGED = 0.3
EXPANDS = 0.5  # the share of a text line's score lent to the raw lines it names ("raw lines 64-73") with query words

_WORD = re.compile(r"\w+")
# How a compressed output names the raw lines a line of it stands for: a commit's digest, a cut's note, a file's
# line in a diff's index (`compressors`' notes: "..., raw lines 64-73", "(raw lines 1-19)").
_NAMES_RAW = re.compile(r"\braw lines? ([\d,]+)(?:-([\d,]+))?")
# How a compressor's note on lines it cut begins ("[codeoid] 45 lines cut, raw lines 61-105"), and how far after a
# scored line one still continues it.
CUT_NOTE = "[codeoid] "
CUT_REACH = 2
_TOKEN = re.compile(r"[^\W_]+")
# A part of a camel-case identifier, from where it starts: "Zone" and "Info" of "ZoneInfo".
_CAMEL_PART = re.compile(r"[A-Za-z][a-z]+")
# A run's summary: pytest, unittest, jest/vitest, cargo, go test, type checkers and linters, git's diffstat.
_COUNT = re.compile(r"\b\d+ (?:passed|failed|skipped|xfailed|xpassed)\b|^(?!collected )[^\n]*\b\d+ deselected\b|"
                    r"^Ran \d+ tests? in |"
                    r"^(?:OK|FAILED) \(|^Found \d+ errors?\b|\btest result: |\b\d+ files? changed\b|^Tests?:\s+\d+|"
                    r"^FAIL\t", re.MULTILINE)
# An error line: an exception and its message, pytest's `E` lines and summary, a tool's `error:` or `fatal:`.
_ERROR = re.compile(r"^[ \t]*(?:[\w.]*(?:Error|Exception|Interrupt)\b:|E {2,}\S|FAILED |FAIL:|ERROR\b|"
                    r"(?:\w+: )?(?:error|fatal|panic)(?:\[\w+\])?:|Error:)", re.MULTILINE)
# Code that raises an error (a file's line, a diff's added or removed one): what "what error does it give"
# asks for, and only then (week store, fourth tuning half: one question more; counted always, it came before the
# changed lines of an edit asked about otherwise, and the fifth lost one).
_RAISES = re.compile(r"^[+-]?[ \t]*(?:raise|throw)\s+(?:new\s+)?[\w.]*(?:Error|Exception)\b", re.MULTILINE)
# A failing test by its id (pytest's summary, unittest's FAIL:), which "which test failed" asks for first.
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR|FAIL:) \S+::?\S|^(?:FAIL|ERROR): \w+ \(")
# Git's diffstat, a count only for "how many": every commit of a `git log --stat` digest has one.
_DIFFSTAT = re.compile(r"\d+ files? changed")
# A question that names a failure as a thing it already knows of ("in the failing money test", "the red run where
# ...") asks what was in it (the input, the message, the value), not which tests failed: the assertion's lines
# answer, the ids do not (week store, fifth tuning half: 0.675 -> 0.725, no other set moved).
_NAMES_A_FAILURE = re.compile(r"\b(?:the|a|that|this|our)\s+(?:[\w-]+\s+)?(?:failing|failed|red|broken|crashing)\b",
                              re.IGNORECASE)
# What a failure says beyond its id: pytest's `E` lines, an exception and its message.
_FAILURE_DETAIL = re.compile(r"^[ \t]*(?:E {2,}\S|[\w.]*(?:Error|Exception)\b:)")
_ASKS_COUNT = re.compile(r"\bhow (?:many|much|often)\b|\bcount\b|\bnumber of\b|\btotal\b", re.IGNORECASE)
_ASKS_FAILURE = re.compile(r"\b(?:fail\w*|broke\w*|break\w*|crash\w*|errors?|wrong|exception|traceback|blew|blow\w*|"
                           r"caught|catch\w*|complain\w*|refus\w*|why (?:did|does|do|was|were|is)(?:n't| not)|"
                           r"(?:could|would|did|does)n't|missing)\b", re.IGNORECASE)

# The clause before the question proper says which turn, run or file is meant ("the last time a full run of the
# suite came back red, what did all the failures have in common?", "in the failing money test, what input ..."):
# the hit was found by it, and its lines are chosen by what is asked. A word only the clause holds weighs a quarter
# (measured with a ranking since left out, the week's tuning halves showed one question more at 0.25, none at 0.5,
# one more and one fewer at 0; with this ranking no R@5 moved, and that answer shows its evidence as the tenth hit).
_LEADING = re.compile(r"^[^?]{8,160}?,\s*(?=(?:what|which|who|whose|where|when|why|how|did|does|do|is|was|were|are|"
                      r"can|could|should|would|has|have|had)\b)", re.IGNORECASE)
LEADING_WEIGHT = 0.25

_local = threading.local()
# Stems of the words seen, by word; cleared when it would hold more than `STEMS_KEPT`.
STEMS_KEPT = 100_000
_stemmed: dict[str, tuple[str, ...]] = {}


@dataclass(frozen=True)
class Terms:
    """A question's words as the index stems them, each with its weight in the store (inverse document frequency),
    and which shapes of output it asks for."""

    weights: Mapping[str, float]
    asks_count: bool = False
    asks_failure: bool = False
    asks_detail: bool = False  # it names a failure ("in the failing money test, what ...") and asks what was in it

    @property
    def total(self) -> float:
        return sum(self.weights.values())


@dataclass(frozen=True)
class Pick:
    """One line a hit shows as an answer, best first: its number in its source and where in it to look."""

    number: int
    source: str  # "text": the episode's text; "raw": the raw output behind it
    why: str  # "words": it holds query words; "meaning"; "shape" (a count or error line); "diff" (a line a diff
    # changed, found by meaning); when nothing matched,
    # "changed" (a diff's added and removed lines) or "start" (the first lines)
    focus: int = 0  # a long line is shown from about this character on
    # Where in a long line the question's words are and what each weighs (character, weight): which of its
    # sentences to show when it cannot be shown whole.
    spots: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class LineChoice:
    """The lines a hit shows, best first, and what it needs to show them."""

    picks: tuple[Pick, ...]
    how: str  # why the best line was chosen (`Pick.why`)
    total: int  # lines in the episode's text
    searched: int  # of them, searched (the rest lie past `raw.SEARCHED_BYTES`)
    raw_id: str | None = None  # the raw output some picks come from
    raw_lines: Mapping[int, str] = field(default_factory=dict)  # its picked lines and their context, as paged
    raw_searched: int = 0  # raw lines searched
    raw_complete: bool = True  # the whole raw output was searched
    # The line of the text that is the footer compression ends its output with (`footer_line`): never shown, not
    # even as context; 0 when there is none.
    footer: int = 0


def question_terms(db: sqlite3.Connection, query: str) -> Terms:
    """`query`'s content words (stop words left out, unless nothing else is left), stemmed, with their weights;
    a word only the question's leading clause holds weighs `LEADING_WEIGHT` of its weight."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(query)))
    content = [word for word in words if word not in STOP_WORDS] or words
    stemmed = _stems(content)
    weights = _idf(db, {stem for found in stemmed.values() for stem in found})
    leading = _LEADING.match(query)
    if leading:
        asked = {word.lower() for word in _WORD.findall(query[leading.end():])}
        kept = {stem for word in asked & stemmed.keys() for stem in stemmed[word]}
        weights = {stem: weight * (1.0 if stem in kept else LEADING_WEIGHT) for stem, weight in weights.items()}
    return Terms(weights, bool(_ASKS_COUNT.search(query)), bool(_ASKS_FAILURE.search(query)),
                 bool(_NAMES_A_FAILURE.search(query)))


def choose(db: sqlite3.Connection, terms: Terms, row: Mapping[str, object], *, context: int = 1,
           most: int = MOST) -> LineChoice:
    """The lines of `row` (a recalled episode, with the vector index's `chunks` if it found any) that answer best,
    from its text and from the raw output behind it; with the raw lines to show (and `context` around each, twice
    that where a blank line is in the way)."""
    text = str(row.get("text") or "")
    lines = split_lines(text)
    searched_text = text[:raw.SEARCHED_BYTES]
    searched = min(len(lines), len(split_lines(searched_text)))
    meaning = _chunk_bonus(row.get("chunks"), len(lines))
    tool = row.get("kind") == "tool"
    changed = _changed_lines(lines[:searched]) if tool else []
    raw_id = row.get("raw_output_id")
    footer = footer_line(text, raw_id)
    scored = [candidate for candidate in
              _score(terms, searched_text, lines, "text", meaning, shapes=tool, changed=frozenset(changed))
              if candidate[1].number != footer]
    behind = raw.cut_head(db, raw_id, text) if isinstance(raw_id, str) and raw_id else None
    raw_all: list[str] = []
    if behind is not None:
        raw_all = split_lines(behind[0])
        kept = set(lines)  # a line compression kept is shown from the text
        # A cut line's meaning counts as far as its chunk is nearer the question than the kept text's nearest: a
        # block of cut lines only as near as the kept ones (a bot's commit bodies under the digest line that
        # answers, a grep's cut block) does not come before a kept line that holds the question's words.
        floor = max(meaning.values(), default=0.0)
        raw_meaning = {number: bonus - floor for number, bonus in
                       _chunk_bonus(row.get("raw_chunks"), len(raw_all)).items() if bonus > floor}
        scored += [candidate for candidate in _score(terms, behind[0], raw_all, "raw", raw_meaning, shapes=True,
                                                     lent=_named_raw_lines(scored, lines))
                   if raw_all[candidate[1].number - 1] not in kept]
    scored.sort(key=lambda item: (-item[0], item[1].source != "text", item[1].number))
    picks = _distinct(scored, lines, raw_all, most)
    if not picks:
        if changed:  # an edit or a diff found by its input or its meaning: what it changed says what it did
            return LineChoice(tuple(Pick(number, "text", "changed") for number in changed[:most]), "changed",
                              len(lines), searched, footer=footer)
        first = range(1, min(len(lines), max(most, START_LINES)) + 1)
        return LineChoice(tuple(Pick(number, "text", "start") for number in first if number != footer),
                          "start", len(lines), searched, footer=footer)
    wanted = {pick.number + offset for pick in picks if pick.source == "raw"
              for offset in range(-2 * context, 2 * context + 1)}  # the context, past a blank line
    raw_lines = {number: raw_all[number - 1] for number in sorted(wanted) if 1 <= number <= len(raw_all)}
    return LineChoice(picks, picks[0].why, len(lines), searched, str(raw_id) if raw_lines else None, raw_lines,
                      len(raw_all), behind[1] if behind is not None else True, footer)


def footer_line(text: str, raw_id: object) -> int:
    """The number of the line of `text` that is the note compression ends its output with (what it removed, the
    raw output's id), 0 when there is none: the hit's header says both already, so the footer never takes the room
    of a line that answers (with the raw lines' say-line no longer naming the raw output a second time, `hits._say`:
    week store, fourth and sixth tuning halves one question more each, no other set moved). It ends stdout, so a
    command's stderr, stored after it, may follow."""
    if not isinstance(raw_id, str) or not raw_id:
        return 0
    # As `codeoid.compressors.engine.footer` writes it; not imported from there: the memory modules also run from a
    # checkout, where `compressors/` is not yet `codeoid.compressors`.
    at = text.rfind(f"Exact output: {raw_id} (")
    if at < 0:
        return 0
    start = text.rfind("\n", 0, at) + 1
    return text.count("\n", 0, start) + 1 if text.startswith(CUT_NOTE, start) else 0


def _distinct(scored: Sequence[tuple[float, Pick]], lines: Sequence[str], raw_lines: Sequence[str],
              most: int) -> tuple[Pick, ...]:
    """The best `most` picks, a line that repeats an earlier pick's text word for word left out: a workflow's six
    `steps:` lines, a log's recurring line, say once what they say, and the room goes to the next line that
    answers."""
    picks: list[Pick] = []
    seen: set[str] = set()
    for _, pick in scored:
        said = (lines if pick.source == "text" else raw_lines)[pick.number - 1].strip()
        if said in seen:
            continue
        seen.add(said)
        picks.append(pick)
        if len(picks) == most:
            break
    return tuple(picks)


def _changed_lines(lines: Sequence[str]) -> list[int]:
    """The added and removed lines of a unified diff (an edit's patch, `git diff`), by number; none when the text
    is not a diff."""
    if not any(line.startswith(("@@ ", "diff --git ")) for line in lines):
        return []
    return [number for number, line in enumerate(lines, 1)
            if line.startswith(("+", "-")) and not line.startswith(("+++ ", "--- "))]


def _score(terms: Terms, text: str, lines: Sequence[str], source: str, meaning: Mapping[int, float], *,
           shapes: bool, lent: Sequence[tuple[int, int, float]] = (),
           changed: frozenset[int] = frozenset()) -> list[tuple[float, Pick]]:
    """Every line of `text` (split as `lines`) with something for it, scored: its words' share of the question's
    weight, its meaning bonus, its shape's, and what the text lines that name it lend (`lent`: first and last raw
    line, score)."""
    matches = _matches(terms, text)
    clues = _clues(text) if shapes else []
    numbers = _line_numbers(text, sorted({at for at, _ in matches} | set(clues)))
    held: dict[int, dict[str, float]] = {}  # line -> stem -> weight
    spots: dict[int, list[tuple[int, float]]] = {}  # line -> (character in the line, weight) of each matching word
    for at, stem in matches:
        number = numbers[at]
        held.setdefault(number, {})[stem] = terms.weights[stem]
        spots.setdefault(number, []).append((at - text.rfind("\n", 0, at) - 1, terms.weights[stem]))
    shaped = {numbers[at] for at in clues}
    total = terms.total or 1.0
    scored: list[tuple[float, Pick]] = []
    for number in set(held) | set(meaning) | shaped | (changed & set(meaning)):
        if not 1 <= number <= len(lines):
            continue
        line = lines[number - 1]
        by_meaning = MEANING * meaning.get(number, 0.0)
        by_shape = _shape_bonus(terms, line) if number in shaped else 0.0
        by_change = CHANGED if number in changed else 0.0
        by_lending = max((share for first, last, share in lent if first <= number <= last), default=0.0) \
            if number in held else 0.0
        score = sum(held.get(number, {}).values()) / total + by_meaning + by_shape + by_change + by_lending
        why = "words" if number in held else max((by_meaning, "meaning"), (by_shape, "shape"), (by_change, "diff"),
                                                  key=lambda item: item[0])[1]
        if score > 0:
            found = spots.get(number, [])
            scored.append((score, Pick(number, source, why, _focus(line, found),
                                       tuple(found) if len(line) > FOCUS_CHARS else ())))
    return scored


def _named_raw_lines(scored: Sequence[tuple[float, Pick]], lines: Sequence[str]) -> list[tuple[int, int, float]]:
    """The raw lines each scored text line names, with `EXPANDS` of its score: the commit body under the digest
    the question matched, the failure under the note that names it, rank above raw lines that match elsewhere.
    A cut's note just after a scored line (past a blank one) names what that line went on to say ("3. Install
    the hooks." and the command cut under it), so it lends the same."""
    named = []
    for score, pick in scored:
        for number in range(pick.number, min(pick.number + CUT_REACH, len(lines)) + 1):
            line = lines[number - 1]
            if number > pick.number and not line.startswith(CUT_NOTE):
                continue
            for found in _NAMES_RAW.finditer(line):
                first = int(found[1].replace(",", ""))
                named.append((first, int((found[2] or found[1]).replace(",", "")), EXPANDS * score))
    return named


def _line_numbers(text: str, positions: Sequence[int]) -> dict[int, int]:
    """The line (1-based) of each of the sorted character `positions` of `text`, counting newlines once."""
    numbers, line, previous = {}, 1, 0
    for at in positions:
        line += text.count("\n", previous, at)
        numbers[at] = line
        previous = at
    return numbers


def _matches(terms: Terms, text: str) -> list[tuple[int, str]]:
    """(character, stem) of every word of `text` whose stem is a query stem. Candidates are words that begin with a
    prefix every word of the stem shares (found with `str.find` on the lowered text, far faster than a regular
    expression tried at every character), then stemmed by the index's own tokenizer."""
    if not terms.weights or not text:
        return []
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer: offsets would shift
        lowered = "".join(char if len(char.lower()) != 1 else char.lower() for char in text)
    found: list[tuple[int, str]] = []
    for prefix in {_prefix(stem) for stem in terms.weights}:
        at = lowered.find(prefix)
        while at >= 0:
            camel = at > 0 and text[at].isupper() and text[at - 1].islower()  # the Info of ZoneInfo
            if at == 0 or not lowered[at - 1].isalnum() or camel:
                word = _TOKEN.match(lowered, at)
                part = _CAMEL_PART.match(text, at)
                if camel and part is not None:
                    found.append((at, part.group(0).lower()))
                elif word is not None:
                    found.append((at, word.group(0)))
                    if part is not None and part.end() < word.end():  # the Zone of ZoneInfo
                        found.append((at, part.group(0).lower()))
            at = lowered.find(prefix, at + len(prefix))
    stems = _stems(sorted({said for _, said in found}))
    matched: dict[int, str] = {}
    for at, said in found:
        stem = next((stem for stem in stems.get(said, ()) if stem in terms.weights), None)
        if stem is not None:
            matched.setdefault(at, stem)
    return sorted(matched.items())


def word_prefixes(words: Sequence[str]) -> set[str]:
    """What every word sharing a porter stem with one of `words` starts with ("bumped" -> "bump", which "bump" and
    "bumping" start with too)."""
    return {_prefix(stem) for stems in _stems(list(words)).values() for stem in stems}


def _prefix(stem: str) -> str:
    """What every word with this porter stem starts with: the stem, less a final `i` (happy -> happi) or `e`."""
    return stem[:-1] if len(stem) > 3 and stem[-1] in "ie" else stem


# Literal pieces of every count or error line (`_COUNT`, `_ERROR`, `_RAISES`), found with `str.find`; each line
# holding one is then matched in full.
_SHAPE_CLUES = (" passed", " failed", " skipped", " xfailed", " xpassed", " deselected", " changed", "Ran ", "OK (",
                "Found ", "test result", "Test", "FAIL", "Error", "Exception", "Interrupt", "E  ", "ERROR", "error",
                "fatal", "panic", "raise ", "throw ")


def _clues(text: str) -> list[int]:
    """The start of each line of `text` that is a count summary or an error line."""
    found: set[int] = set()
    for clue in _SHAPE_CLUES:
        at = text.find(clue)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            if start not in found and (_COUNT.search(text, start, end) or _ERROR.match(text, start, end)
                                       or _RAISES.match(text, start, end)):
                found.add(start)
            at = text.find(clue, end)
    return sorted(found)


def _shape_bonus(terms: Terms, line: str) -> float:
    """A count line counts more when the question asks how many (a diffstat counts only then), an error line when
    it asks what broke (and not how many: "how many tests failed" wants the count, not each failure); of the error
    lines, a failing test's id when it asks what failed, the assertion's lines when it asks about a failure it
    names."""
    bonus = 0.0
    count = _COUNT.search(line)
    if count and (terms.asks_count or not _DIFFSTAT.fullmatch(count.group(0))):
        bonus += COUNT_LINE * (ASKED if terms.asks_count else 1.0)
    failure = terms.asks_failure and not terms.asks_count
    if _RAISES.match(line) and failure:
        bonus += ERROR_LINE * ASKED
    elif _ERROR.match(line):
        bonus += ERROR_LINE * (ASKED if failure else 1.0)
        if terms.asks_detail and not terms.asks_count:
            bonus += FAILURE_DETAIL if _FAILURE_DETAIL.match(line) else 0.0
        elif _FAILED_TEST.match(line) and failure:
            bonus += FAILED_TEST
    return bonus


def _focus(line: str, spots: Sequence[tuple[int, float]]) -> int:
    """Where to start showing a line too long to show whole: the window of `FOCUS_CHARS` holding the most weight,
    from the start of its sentence when that is near (an answer's clause that holds the question's words often
    follows the one that answers it: "Since Marco's change the prefix was ..., so nothing matched")."""
    if len(line) <= FOCUS_CHARS or not spots:
        return 0
    ordered = sorted(spots)
    best, best_at = -1.0, 0
    for first, (at, _) in enumerate(ordered):
        weight = sum(weight for other, weight in ordered[first:] if other < at + FOCUS_CHARS)
        if weight > best:
            best, best_at = weight, at
    start = max(0, min(best_at - FOCUS_CHARS // 4, len(line) - FOCUS_CHARS))
    ends = list(SENTENCE_END.finditer(line, max(0, start - SENTENCE_BACK), start + 1))
    if ends:
        return len(line) - len(line[ends[-1].end():].lstrip())
    space = line.find(" ", start, start + 24)  # begin at a word where one is near
    return space + 1 if start and space >= 0 else start


def _chunk_bonus(chunks: object, lines: int) -> dict[int, float]:
    """Each line's meaning bonus from the chunks the vector index found of this episode (`[start, end, cosine]`
    each), 0 to 1 as the cosine rises from `NEAR` to `NEAREST`: the nearest chunk of an episode found by its words
    may still be far from the question, and then says nothing about which of its lines answer."""
    if not isinstance(chunks, list | tuple):
        return {}
    bonus: dict[int, float] = {}
    for chunk in chunks:
        if not isinstance(chunk, list | tuple) or len(chunk) != 3:
            continue
        near = min(1.0, max(0.0, (float(chunk[2]) - NEAR) / (NEAREST - NEAR)))
        for number in range(int(chunk[0]), min(int(chunk[1]), lines) + 1):
            bonus[number] = max(bonus.get(number, 0.0), near)
    return bonus


def _idf(db: sqlite3.Connection, stems: set[str]) -> dict[str, float]:
    """Each stem's inverse document frequency over the episodes' FTS index: log(N / episodes holding it)."""
    if not stems:
        return {}
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.codeoid_episode_terms USING fts5vocab(main, episodes_fts, row)")
    total = int(db.execute("SELECT coalesce(max(id), 0) FROM episodes").fetchone()[0])
    weights = {}
    for stem in stems:
        row = db.execute("SELECT doc FROM temp.codeoid_episode_terms WHERE term = ?", (stem,)).fetchone()
        held = int(row[0]) if row else 0
        weights[stem] = math.log((total + 1) / (min(held, total) + 0.5))
    return weights


def _stems(words: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each word's stems as the index's tokenizer makes them (`snake_case` is two), from a private in-memory FTS5
    table, so stemming never touches the store or takes any of its locks. Remembered: the words of one store's
    outputs recur from recall to recall."""
    missing = [word for word in words if word not in _stemmed]
    if missing:
        if len(_stemmed) + len(missing) > STEMS_KEPT:
            _stemmed.clear()
        scratch = _scratch()
        scratch.execute("BEGIN")
        scratch.execute("DELETE FROM words")
        scratch.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(missing, 1))
        found: dict[int, list[str]] = {}
        for number, stem in scratch.execute("SELECT doc, term FROM word_stems ORDER BY doc, offset"):
            found.setdefault(int(number), []).append(str(stem))
        scratch.execute("COMMIT")
        _stemmed.update({word: tuple(found.get(number, ())) for number, word in enumerate(missing, 1)})
    return {word: stems for word in words if (stems := _stemmed.get(word)) is not None}  # another thread may clear


def _scratch() -> sqlite3.Connection:
    db: sqlite3.Connection | None = getattr(_local, "db", None)
    if db is None:
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=True)
        db.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{TOKENIZER}')")
        db.execute("CREATE VIRTUAL TABLE word_stems USING fts5vocab(words, instance)")
        _local.db = db
    return db
