"""Time and order in a question, resolved against the store: "yesterday afternoon", "three days ago", "the last
commit", "the first test run that failed", "right after the release", "in the previous session", "session 8".

A question about *when* shares no word with its answer: "what did we do yesterday afternoon?" matches nothing,
and "the last commit we made" matches every commit alike. So the time words are read apart (`read`), resolved
against the workspace's sessions and events (`resolve`), and become a bonus for the episodes they point at, with
those episodes added as candidates (`Resolved`): the episodes of a day or part of a day (the first or last day of
the workspace's work among them: "on my first day"), of a session picked by
order or by number, the sessions next to an event (the merge, the release, a tag) on the side the question names,
and the first or last episode of the action the question names (`codeoid.memory.actions`).

An expression that resolves to nothing in the store (a conversation imported from 2018 asked about "yesterday",
"after summer camp" where no command ever merged or released anything) changes nothing, so a conversational
memory ranks as before. Days and parts of days are the machine's local time, as the user lives them.
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from codeoid.memory import actions, line_choice
from codeoid.store import queries
from codeoid.store.queries import Row

_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3}
_NUMBER = r"(\d{1,3}|a couple of|couple of|a few|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a)"
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
             "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12}
_PART = r"(morning|afternoon|evening|night)"
_PARTS = {"morning": (5, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 24), None: (0, 24)}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_TODAY = re.compile(rf"\b(?:today|this {_PART}|tonight|earlier today)\b", re.IGNORECASE)
# A part of the day after a day: "yesterday afternoon", "three days ago in the morning", "on Monday that evening".
_DAY_PART = rf"(?:,?\s+(?:in the |that |during the |late in the |early in the )?{_PART})?"
_YESTERDAY = re.compile(rf"\b(?:(the day before yesterday)|yesterday{_DAY_PART}|last (night|evening))\b",
                        re.IGNORECASE)
_DAYS_AGO = re.compile(rf"\b{_NUMBER}\s+days?\s+(?:ago|back){_DAY_PART}\b", re.IGNORECASE)
_WEEKS_AGO = re.compile(rf"\b{_NUMBER}\s+weeks?\s+(?:ago|back)\b", re.IGNORECASE)
# "the other day": some day of the past week, not today.
_OTHER_DAY = re.compile(r"\bthe other day\b", re.IGNORECASE)
# "over the weekend", "last weekend": the latest Saturday and Sunday.
_WEEKEND = re.compile(r"\b(?:over|at|during|on|this|last|past)\s+(?:the\s+)?weekend\b", re.IGNORECASE)
# "at the start of the week": this week's Monday and Tuesday.
_WEEK_START = re.compile(r"\b(?:at\s+|in\s+)?the\s+(?:start|beginning)\s+of\s+(?:the|this)\s+week\b",
                         re.IGNORECASE)
# "yesterday morning's fix ... the release we tagged that afternoon": a part of the day a question named before.
_SAME_DAY = re.compile(rf"\b(?:(?:that|the same) {_PART}|(?:later|earlier) (?:that|the same) day|the same day)\b",
                       re.IGNORECASE)
_WEEK = re.compile(r"\b(last|this|previous|past)\s+week\b|\bearlier this week\b", re.IGNORECASE)
# "on my first day", "the afternoon of our last day", "my first morning": the first or last day the workspace saw
# work, or a part of it.
# Not "the first day of the month" or "my first day at the new job": a day of something else.
_END_DAY = re.compile(rf"\b(?:(?:in |on )?the {_PART} of |on )?(?:(?:my|our|the) (?P<which>first|last) day|(?:my|our) "
                      rf"(?P<which_part>first|last) {_PART})\b(?! (?:of|at|in)\b){_DAY_PART}", re.IGNORECASE)
_WEEKDAY = re.compile(rf"\b(?:on|last)\s+({'|'.join(_WEEKDAYS)})\b{_DAY_PART}", re.IGNORECASE)
_SESSION_WORD = r"(?:session|conversation|chat|window)"
_PREVIOUS_SESSION = re.compile(rf"\b(?:previous|last|prior|earlier)\s+{_SESSION_WORD}\b|\b{_SESSION_WORD}\s+before"
                               r"\s+(?:this|the current)\s+one\b", re.IGNORECASE)
_THIS_SESSION = re.compile(rf"\b(?:this|the current|our current)\s+{_SESSION_WORD}\b", re.IGNORECASE)
_NUMBERED_SESSION = re.compile(rf"\b{_SESSION_WORD}\s+(?:number\s+|#)?(\d{{1,4}})\b|\b(?:the|our|my)\s+"
                               rf"({'|'.join(_ORDINALS)}|\d{{1,4}}(?:st|nd|rd|th))\s+{_SESSION_WORD}\b",
                               re.IGNORECASE)
_END_SESSION = re.compile(rf"\b(first|earliest|initial|oldest|latest|most recent|newest|last)\s+{_SESSION_WORD}\b",
                          re.IGNORECASE)
# "the last commit", "the first thing we fixed", "the first test run that failed", "the last time we ran it".
_WORK_NOUN_WORDS = ("thing", "things", "task", "step", "bug", "problem", "issue", "fix", "fixes", "change", "changes",
                   "commit", "commits", "run", "runs", "test", "tests", "failure", "failures", "error", "errors",
                   "crash", "edit", "edits", "time", "release", "tag", "merge", "check")
_WORK_NOUNS = rf"(?:\w+\s+){{0,2}}?({'|'.join(_WORK_NOUN_WORDS)})\b"
_ORDER = re.compile(rf"\b(first|earliest|initial|last|latest|most recent|final|newest|previous)\s+{_WORK_NOUNS}"
                    r"|\b(?:we|i|you)\s+(first|last)\s+(?!of\b|one\b)[a-z]+|\b(most recently)\b", re.IGNORECASE)
# "the second time we ran it": the n-th of the action from the oldest; "the time before last", "the penultimate
# commit": the second from the newest.
_NTH = re.compile(rf"\b({'|'.join(word for word in _ORDINALS if word != 'first')}|\d{{1,2}}(?:st|nd|rd|th))\s+"
                  rf"{_WORK_NOUNS}", re.IGNORECASE)
_BEFORE_LAST = re.compile(rf"\b(?:the\s+)?(?:time|one)\s+before\s+(?:the\s+)?last\b|\b(?:penultimate|"
                          rf"second[- ]to[- ]last|second[- ]last|last\s+but\s+one)\s+{_WORK_NOUNS}",
                          re.IGNORECASE)
# "the first patch release", "the last merge": an event named by its order is the session it happened in, not the
# first or last of the action the other words name ("has the first patch release been published?" asks no edit).
_EVENT_BY_ORDER = re.compile(r"\b(first|earliest|initial|last|latest|most recent|final|newest)\s+((?:[\w-]+\s+){0,2}?)"
                             r"(release|tag|merge)\b", re.IGNORECASE)
# "for the feature release", "in the bug-fix release": an event singled out by the words before its noun, with no
# order or preposition: the session of the event whose work those words describe (`_qualified`).
_EVENT_BY_NAME = re.compile(r"\b(?:the|our|that)\s+((?:[\w'-]+\s+){1,2}?)(release|tag|merge)\b", re.IGNORECASE)
# The words before an event's noun that say which one ("the bug-fix release"), past its determiner.
_QUALIFIED = re.compile(r"\b(?:the|a|an|our|my|their|that|this)\s+((?:[\w'-]+\s+){1,2})$", re.IGNORECASE)
# Words there that order events or say nothing of which one ("the first patch release": "patch" singles it out).
_NOT_QUALIFIERS = frozenset({"first", "earliest", "initial", "last", "latest", "most", "recent", "final", "newest",
                             "next", "previous", "same", "new", "big", "whole", "actual", "real"})
# Words that make an event someone else's ("since the last upstream release"): no command of ours is that event.
_FOREIGN = frozenset({"upstream", "official", "vendor", "external", "their"})
# "right after the release", "just before we merged", "before we cut the first patch release", "once we had merged
# the teammate's branch": an event word within `_EVENT_REACH` words of the preposition.
_RELATIVE = re.compile(r"\b(right |just |shortly |soon |immediately |directly )?(before|after|since|following"
                       r"|prior to|ahead of|once|by the time)\b", re.IGNORECASE)
_EVENT_REACH = 6
_EVENT_CHARS = 160  # where those words are looked for
# "before the pipeline pushes a release", "after every merge": any such event, not one the store can point at.
_ANY = frozenset({"a", "an", "any", "every", "each"})
# "before we reviewed the branch", "after I asked about the cache": something done, by its own words.
_WE_DID = re.compile(r"\s*(?:we|i|you)\s+(?:had\s+|have\s+|finally\s+|first\s+)?((?:[\w'-]+ed|ran|wrote|did"
                     r"|made|took|found|saw|began|read|met)(?:\s+[\w'-]+){0,4})", re.IGNORECASE)
# Words that say only that something was asked or done ("the last thing I asked you about"), beside the order
# words and `_WORK_NOUNS`: a question of nothing but these names no topic to order the episodes of.
_UNTOPICAL = frozenset({"ask", "asked", "asking", "say", "said", "tell", "told", "talk", "talked", "discuss",
                        "discussed", "mention", "mentioned", "happen", "happened", "work", "worked", "look", "looked",
                        "stuff", "times", "earliest", "initial", "last", "latest", "recent", "final",
                        "newest", "very", "ever", "make", "made", "making", "do", "done", "doing", "go", "went",
                        "get", "got", "previous", "penultimate", "one", *_ORDINALS, *_WORK_NOUN_WORDS})
# Events an order can hang on, by the word a question names them with: the shell commands that are the event.
_EVENTS = {
    "merge": r"git\s+(?:-C\s+\S+\s+)?merge\b", "release": r"git\s+(?:-C\s+\S+\s+)?tag\b|\brelease\b|\bpublish\b",
    "tag": r"git\s+(?:-C\s+\S+\s+)?tag\b", "push": r"git\s+(?:-C\s+\S+\s+)?push\b",
    "rebase": r"git\s+(?:-C\s+\S+\s+)?rebase\b", "deploy": r"\bdeploy", "upgrade": r"\bupgrade\b|--upgrade|\s-U\b",
    "install": r"\b(?:pip|pip3|npm|yarn|pnpm|uv|cargo|apt|apt-get|brew|poetry)\s+(?:install|add|ci|sync)\b",
    "commit": r"git\s+(?:-C\s+\S+\s+)?commit\b", "revert": r"git\s+(?:-C\s+\S+\s+)?revert\b",
}
# What each event's command holds for certain: an SQL LIKE pattern that narrows the scan before `_EVENTS` decides.
_EVENT_LIKE = {"merge": ["%merge%"], "release": ["%tag%", "%release%", "%publish%"], "tag": ["%tag%"],
               "push": ["%push%"], "rebase": ["%rebase%"], "deploy": ["%deploy%"],
               "upgrade": ["%upgrade%", "%-U%"], "install": ["%install%", "% add %", "% ci%", "%sync%"],
               "commit": ["%commit%"], "revert": ["%revert%"]}
_EVENT_WORDS = {"merge": "merge", "merged": "merge", "merging": "merge", "release": "release", "released": "release",
                "releasing": "release", "tag": "tag", "tagged": "tag", "tagging": "tag", "push": "push",
                "pushed": "push", "rebase": "rebase", "rebased": "rebase", "deploy": "deploy", "deployed": "deploy",
                "deployment": "deploy", "upgrade": "upgrade", "upgraded": "upgrade", "install": "install",
                "installed": "install", "commit": "commit", "committed": "commit", "revert": "revert",
                "combined": "merge", "shipped": "release", "ship": "release", "published": "release",
                "rotation": "rotation", "rotated": "rotation", "rotate": "rotation",
                "reverted": "revert"}
# How much of a bonus the sessions a step away from an event keep (the event's own session is step 0).
STEP_SHARE = (1.0, 0.6, 0.3, 0.15)
STEP_SHARE_CLOSE = (1.0, 0.35, 0.1)
# Events of one kind a qualifier ("the bug-fix release") chooses among, and the span around each whose prompts and
# answers say what it was.
QUALIFIED_EVENTS = 20
QUALIFIER_BEFORE = 6 * 3600
QUALIFIER_AFTER = 3600
# Candidates a resolved expression adds at most (the prompts and answers of what it points at, and the episodes of
# the action named).
ADDED = 40
# Episodes an order looks through, from the oldest or the newest, for the first or last of the action named.
ORDER_SCAN = 4000
# Episodes at the oldest or newest end of the store a first or last is looked for among (`_ends`).
ORDER_WINDOW = 5_000
_SCAN_COLUMNS = "e.id, e.kind, e.session_id, e.created_at, e.tool_name, e.is_error, e.origin," \
                " substr(coalesce(e.original_command, e.command), 1, 200) AS original_command"


@dataclass(frozen=True)
class Days:
    """Whole days back from today (0 today, 1 yesterday; `back` a range of them) and part of the day."""

    first: int
    last: int
    part: str | None = None


@dataclass(frozen=True)
class Event:
    """An event a question orders by: a command named by `name` (a key of `_EVENTS`), or, with `name` None, what
    we did in the words of `phrase` ("before we reviewed the branch"); on which `side` ("at": the session it happened
    in, for "the first patch release"); `close` for "right after";
    `first` for "the first patch release" (else the latest such event); `beside` "session" or "day" for "the
    session after the merge", "the day before we reviewed it" (the next session or day, not the event's own);
    `qualifier` the words that single out one of several ("the feature release")."""

    name: str | None
    side: str
    close: bool = False
    first: bool = False
    beside: str | None = None
    phrase: str = ""
    qualifier: tuple[str, ...] = ()  # words that single out which event: "bug-fix" of "the bug-fix release"


@dataclass(frozen=True)
class Read:
    """The time words of a question, before they are resolved against a store; `where` holds the character spans
    of the words that only point in time (a day, a session, an event), by what they name ("days", "sessions",
    "event"), so that a resolved pointer can leave the words searched for."""

    days: tuple[Days, ...] = ()
    sessions: tuple[str, ...] = ()  # "previous", "this", "first", "last", or a number "8"
    end_days: tuple[tuple[str, str | None], ...] = ()  # ("first" or "last", part of the day) of the workspace's work
    order: str | None = None  # "first" or "last": of the action the question names
    nth: int = 1  # which from that end: 2 for "the second time", "the time before last"
    event: Event | None = None
    where: tuple[tuple[str, int, int], ...] = ()

    @property
    def anything(self) -> bool:
        return bool(self.days or self.end_days or self.sessions or self.order or self.event)

    def without(self, text: str, kinds: set[str]) -> str:
        """`text` without the words of the pointers of `kinds`."""
        for kind, start, end in sorted(self.where, key=lambda item: -item[1]):
            if kind in kinds:
                text = text[:start] + " " + text[end:]
        return re.sub(r"\s+([?.!,;:])", r"\1", " ".join(text.split()))


def read(question: str, today: dt.date | None = None) -> Read:
    """The time and order words of `question` (see the module docstring); `today` anchors weekday names."""
    today = today or dt.date.today()
    days: list[Days] = []
    where: list[tuple[str, int, int]] = []

    def day(match: re.Match[str], found: Days) -> None:
        days.append(found)
        where.append(("days", match.start(), match.end()))

    for match in _TODAY.finditer(question):
        day(match, Days(0, 0, _part(match.group(0))))
    for match in _YESTERDAY.finditer(question):
        day(match, Days(2, 2) if match.group(1) else Days(1, 1, _part(match.group(0))))
    for match in _DAYS_AGO.finditer(question):
        count = _number(match.group(1))
        part = _part(match.group(0)[len(match.group(1)):])
        day(match, Days(count - 1, count + 1, part) if match.group(1).lower().endswith("few")
            else Days(count, count, part))
    for match in _WEEKS_AGO.finditer(question):
        count = _number(match.group(1))
        day(match, Days(7 * count - 3, 7 * count + 3))
    for match in _OTHER_DAY.finditer(question):
        day(match, Days(1, 6))
    for match in _WEEKEND.finditer(question):
        saturday, sunday = (today.weekday() - 5) % 7, (today.weekday() - 6) % 7
        day(match, Days(0, 0) if saturday == 0 else Days(sunday, saturday))
    for match in _WEEK_START.finditer(question):
        day(match, Days(max(today.weekday() - 1, 0), today.weekday()))
    for match in _WEEK.finditer(question):
        monday = today.weekday()
        which = (match.group(1) or "this").lower()
        day(match, Days(0, 7) if which == "past" else Days(monday + 1, monday + 7) if which in ("last", "previous")
            else Days(0, monday))
    for match in _WEEKDAY.finditer(question):
        back = (today.weekday() - _WEEKDAYS.index(match.group(1).lower())) % 7 or 7
        day(match, Days(back, back, _part(match.group(0))))
    for match in _SAME_DAY.finditer(_blank(question, [(start, end) for _, start, end in where])):
        before = [(start, found) for (kind, start, _), found in zip(where, days, strict=True)
                  if kind == "days" and start < match.start()]
        if before:
            earlier = max(before, key=lambda item: item[0])[1]
            day(match, Days(earlier.first, earlier.last, _part(match.group(0))))
    end_days = []
    for match in _END_DAY.finditer(_blank(question, [(start, end) for _, start, end in where])):
        end_days.append(((match.group("which") or match.group("which_part")).lower(), _part(match.group(0))))
        where.append(("days", match.start(), match.end()))
    masked = _blank(question, [(start, end) for _, start, end in where])
    sessions: list[str] = []
    for pattern, name in ((_PREVIOUS_SESSION, "previous"), (_THIS_SESSION, "this")):
        for match in pattern.finditer(masked):
            sessions.append(name)
            where.append(("sessions", match.start(), match.end()))
    for match in _NUMBERED_SESSION.finditer(masked):
        number = match.group(1) or match.group(2)
        sessions.append(str(_ORDINALS.get(number.lower()) or int(re.sub(r"\D", "", number))))
        where.append(("sessions", match.start(), match.end()))
    for match in _END_SESSION.finditer(masked):
        if not any(start <= match.start() < end for kind, start, end in where if kind == "sessions"):
            word = match.group(1).lower()
            sessions.append("first" if word in ("first", "earliest", "initial", "oldest") else "last")
            where.append(("sessions", match.start(), match.end()))
    masked = _blank(question, [(start, end) for _, start, end in where])
    event = _read_event(masked, where)
    for named in _EVENT_BY_ORDER.finditer(masked) if event is None else ():
        if not _FOREIGN & set(qualifier := _qualifier(named.group(2))):
            event = Event(name=_EVENT_WORDS[named.group(3).lower()], side="at",
                          first=named.group(1).lower() in ("first", "earliest", "initial"), qualifier=qualifier)
            where.append(("event at", named.start(), named.end()))
            break
    for named in _EVENT_BY_NAME.finditer(masked) if event is None else ():
        if (qualifier := _qualifier(named.group(1))) and not _FOREIGN & set(qualifier):
            event = Event(name=_EVENT_WORDS[named.group(2).lower()], side="at", qualifier=qualifier)
            where.append(("event at", named.start(), named.end()))
            break
    masked = _blank(question, [(start, end) for _, start, end in where])
    order, nth = _order(masked)
    return Read(tuple(days), tuple(dict.fromkeys(sessions)), tuple(end_days), order, nth, event, tuple(where))


def _order(masked: str) -> tuple[str | None, int]:
    """The end an order counts from ("first" or "last") and how far: ("last", 2) for "the time before last"."""
    def ours(match: re.Match[str]) -> bool:
        return not _FOREIGN & set(re.findall(r"[a-z]+", match.group(0).lower()))

    if any(map(ours, _BEFORE_LAST.finditer(masked))):
        return "last", 2
    if (nth := next(filter(ours, _NTH.finditer(masked)), None)) is not None:
        word = nth.group(1).lower()
        return "first", _ORDINALS.get(word) or int(re.sub(r"\D", "", word))
    if (found := next(filter(ours, _ORDER.finditer(masked)), None)) is None:
        return None, 1
    word = next(group for group in found.groups() if group).lower()
    return ("first" if word in ("first", "earliest", "initial") else "last"), 1


def _read_event(masked: str, where: list[tuple[str, int, int]]) -> Event | None:
    """The first "before/after X" whose X is an event: a command's word within `_EVENT_REACH` words ("before we
    cut the first patch release"), else something we did ("before we reviewed the branch"); its span joins
    `where`."""
    for match in _RELATIVE.finditer(masked):
        after = masked[match.end():match.end() + _EVENT_CHARS]  # bounded: a hostile question repeats "before"
        words = list(re.finditer(r"[\w'-]+", after))[:_EVENT_REACH]
        named = next((w for at, w in enumerate(words) if w.group(0).lower() in _EVENT_WORDS
                      and (at == 0 or words[at - 1].group(0).lower() not in _ANY)), None)
        done = _WE_DID.match(after) if named is None else None
        if named is None and done is None:
            continue
        named_by = _QUALIFIED.search(after[:named.start()]) if named is not None else None
        qualifier = _qualifier(named_by.group(1)) if named_by is not None else ()
        if _FOREIGN & set(qualifier):
            continue
        end = match.end() + (named.end() if named is not None else done.end() if done is not None else 0)
        before = masked[:match.start()]
        beside = re.search(rf"\b({_SESSION_WORD}|day)\s*$", before, re.IGNORECASE)
        where.append(("event", match.start(), end))
        return Event(
            name=_EVENT_WORDS[named.group(0).lower()] if named is not None else None,
            side="before" if match.group(2).lower() in ("before", "prior to", "ahead of", "by the time") else "after",
            close=bool(match.group(1)), first=bool(re.search(r"\b(first|earliest|initial)\b",
                                                             masked[match.end():end], re.IGNORECASE)),
            beside=None if beside is None else "day" if beside.group(1).lower() == "day" else "session",
            phrase=done.group(1) if done is not None else "",
            qualifier=qualifier)
    return None


def names_topic(question: str) -> bool:
    """Whether `question` names something beyond an order, an action and the asking: "the last time we bumped
    the version" does, "what was the last thing I asked you about" and "the last commit" do not."""
    return any(word not in queries.STOP_WORDS and word not in _UNTOPICAL and not word.isdigit()
               and not actions.asked(word).anything for word in re.findall(r"[a-z0-9]+", question.lower()))


def _qualifier(words: str) -> tuple[str, ...]:
    """The words of `words` that can single out one event of several: not an order, not a stop word."""
    return tuple(word for word in re.findall(r"[a-z0-9]+", words.lower())
                 if word not in _NOT_QUALIFIERS and word not in queries.STOP_WORDS and not word.isdigit())


def _blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """`text` with `spans` blanked out, its other characters where they were."""
    for start, end in spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _part(text: str) -> str | None:
    found = re.search(_PART, text, re.IGNORECASE)
    return found.group(1).lower() if found else ("night" if "tonight" in text.lower() else None)


def _number(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


@dataclass(frozen=True)
class Span:
    start: float
    end: float


@dataclass
class Resolved:
    """What a question's time words point at in one workspace: spans of time, sessions with a weight each, and the
    first or last episode of the action named; `bonus` scores an episode against all of it, from 0 to 1."""

    query: str = ""  # the question without the words of the pointers that resolved
    spans: list[Span] = field(default_factory=list)
    # Context windows of one session picked like sessions: under `codeoid run` a session lasts for weeks, and "the
    # previous session" is the window before the last rotation.
    windows: list[Span] = field(default_factory=list)
    sessions: dict[str, float] = field(default_factory=dict)
    # Sessions around an event, each with the time on the far side of which its episodes count (after: later than
    # it; before: earlier than it) and their weight.
    around: dict[str, tuple[float, float]] = field(default_factory=dict)
    side: str | None = None
    event_found: bool = False
    ordered: dict[int, float] = field(default_factory=dict)  # episode id -> weight, for "the first/last X"
    # "first" or "last" when `ordered` found something and the question names a topic to order by ("the last time
    # we edited *the release notes*"): ranking then takes the first or last among the episodes that match it
    # (`codeoid.memory.ranking.ZFusion`).
    order_by_topic: str | None = None
    nth: int = 1  # which from that end ("the second time")
    added: list[int] = field(default_factory=list)

    @property
    def anything(self) -> bool:
        return bool(self.spans or self.sessions or self.windows or self.around or self.ordered)

    def bonus(self, episode_id: int, created_at: float, session_id: str | None) -> float:
        """The share of the time bonus an episode earns: each kind of cue the question gave counts equally."""
        parts = self._pointers(created_at, session_id)
        if self.ordered:
            parts.append(self.ordered.get(episode_id, 0.0))
        return sum(parts) / len(parts) if parts else 0.0

    def picked(self, in_order: Sequence[int]) -> dict[int, float]:
        """Of episodes in the order's direction, the `nth` and the two after it, weighing 1, 1/2 and 1/4."""
        return {episode_id: 0.5 ** place for place, episode_id in enumerate(in_order[self.nth - 1:self.nth + 2])}

    def within_pointers(self, created_at: float, session_id: str | None) -> bool:
        """Whether an episode is where the cues other than the order point ("the last commit yesterday" orders
        yesterday's commits only); with no such cue, every episode is."""
        parts = self._pointers(created_at, session_id)
        return not parts or any(parts)

    def _pointers(self, created_at: float, session_id: str | None) -> list[float]:
        parts: list[float] = []
        if self.spans:
            parts.append(float(any(span.start <= created_at < span.end for span in self.spans)))
        if self.sessions or self.windows:
            in_window = any(window.start <= created_at < window.end for window in self.windows)
            parts.append(max(self.sessions.get(session_id or "", 0.0), float(in_window)))
        if self.around:
            edge, weight = self.around.get(session_id or "", (0.0, 0.0))
            on_side = created_at > edge if self.side == "after" else created_at < edge
            parts.append(weight if on_side else 0.0)
        return parts


def resolve(db: sqlite3.Connection, question: str, *, workspace_id: int | None, caller_session: str | None,
            skip_live_of: str | None, exclude_origins: tuple[str, ...], now: float | None = None) -> Resolved:
    """`question`'s time words against the workspace's store (see the module docstring). Anything that points at
    no episode is dropped."""
    now = time.time() if now is None else now
    words = read(question, dt.date.fromtimestamp(now))
    resolved = Resolved(query=question)
    if workspace_id is None or not words.anything:
        return resolved
    scope = _Scope(workspace_id, skip_live_of, exclude_origins)
    resolved.spans = [span for span in (_span(days, now) for days in words.days)
                      if _count(db, "e.created_at >= ? AND e.created_at < ?", [span.start, span.end], scope)]
    ordered = _sessions(db, workspace_id)
    resolved.spans += [_end_day(ordered, which, part) for which, part in words.end_days if ordered]
    resolved.sessions = _picked(words.sessions, ordered, caller_session)
    if "previous" in words.sessions and not resolved.sessions and caller_session and skip_live_of:
        resolved.windows = _previous_window(db, caller_session, skip_live_of)
    # "after the merge" asks for no merge, "the first patch release" for no patch
    unpointed = words.without(question, {"days", "sessions", "event", "event at"})
    asked = actions.asked(unpointed)
    if words.event is not None:
        event = _event(db, words.event, resolved.spans, scope)
        if event is not None and words.event.side == "at":
            resolved.sessions[str(event["session_id"])] = 1.0
        elif event is not None and words.event.beside == "day":
            resolved.spans += _day_beside(float(event["created_at"]), ordered, words.event.side)
        elif event is not None:
            resolved.around, resolved.side = _around(event, ordered, words.event), words.event.side
        resolved.event_found = event is not None
    if words.order is not None:
        resolved.nth = words.nth
        resolved.ordered = _first_or_last(db, words.order, asked, resolved, scope)
        resolved.order_by_topic = words.order if resolved.ordered and names_topic(unpointed) else None
    if resolved.anything:
        resolved.added = _added(db, resolved, asked, scope)
    pointed = {kind for kind, found in (("days", resolved.spans), ("sessions", resolved.sessions or resolved.windows),
                                        ("event", resolved.event_found)) if found}
    resolved.query = words.without(question, pointed) if pointed else question
    return resolved


def _end_day(ordered: list[tuple[str, float, float]], which: str, part: str | None) -> Span:
    """The first or last day the workspace saw work (its oldest session's first episode, its newest's last), or
    the part of it named."""
    at = ordered[0][1] if which == "first" else max(last for _, _, last in ordered)
    day = dt.datetime.fromtimestamp(at).date()
    start_hour, end_hour = _PARTS[part]
    return Span((dt.datetime.combine(day, dt.time()) + dt.timedelta(hours=start_hour)).timestamp(),
                (dt.datetime.combine(day, dt.time()) + dt.timedelta(hours=end_hour)).timestamp())


def _span(days: Days, now: float) -> Span:
    today = dt.datetime.fromtimestamp(now).date()
    start_hour, end_hour = _PARTS[days.part]
    first = dt.datetime.combine(today - dt.timedelta(days=days.last), dt.time()) + dt.timedelta(hours=start_hour)
    last = dt.datetime.combine(today - dt.timedelta(days=days.first), dt.time()) + dt.timedelta(hours=end_hour)
    return Span(first.timestamp(), last.timestamp())


@dataclass(frozen=True)
class _Scope:
    """What recall may return: the workspace's episodes, not the caller's live ones, not of excluded origins."""

    workspace_id: int
    skip_live_of: str | None
    exclude_origins: tuple[str, ...]

    def rows(self, db: sqlite3.Connection, where: str, params: Sequence[object], *, order: str = "e.id",
             limit: int = ORDER_SCAN, columns: str = "") -> list[Row]:
        return queries.recallable_episodes_where(db, where, list(params), workspace_id=self.workspace_id,
                                                 skip_live_of=self.skip_live_of,
                                                 exclude_origins=self.exclude_origins,
                                                 columns=columns or _SCAN_COLUMNS, order=order, limit=limit)


def _count(db: sqlite3.Connection, where: str, params: list[object], scope: _Scope) -> int:
    return len(scope.rows(db, where, params, order="e.created_at", limit=1, columns="e.id"))


def _sessions(db: sqlite3.Connection, workspace_id: int) -> list[tuple[str, float, float]]:
    """The workspace's sessions that hold episodes, oldest first: (id, first episode time, last episode time)."""
    return [(str(row[0]), float(row[1]), float(row[2])) for row in db.execute(
        "SELECT s.id, (SELECT created_at FROM episodes e WHERE e.session_id = s.id ORDER BY id LIMIT 1) AS first,"
        " (SELECT created_at FROM episodes e WHERE e.session_id = s.id ORDER BY id DESC LIMIT 1) AS last"
        " FROM sessions s WHERE s.workspace_id = ? AND last IS NOT NULL ORDER BY first", (workspace_id,))]


def _picked(names: Sequence[str], ordered: list[tuple[str, float, float]], caller: str | None) -> dict[str, float]:
    """The sessions named: the previous one (the latest that is not the caller's), the caller's, the first or the
    last, or the Nth from the first."""
    picked: dict[str, float] = {}
    others = [session for session in ordered if session[0] != caller]
    for name in names:
        if name == "previous" and others:
            picked[max(others, key=lambda s: s[2])[0]] = 1.0
        elif name == "this" and caller is not None:
            picked[caller] = 1.0
        elif name == "first" and ordered:
            picked[ordered[0][0]] = 1.0
        elif name == "last" and others:
            picked[max(others, key=lambda s: s[2])[0]] = 1.0
        elif name.isdigit() and 1 <= int(name) <= len(ordered):
            picked[ordered[int(name) - 1][0]] = 1.0
    return picked


def _previous_window(db: sqlite3.Connection, session_id: str, current: str) -> list[Span]:
    """The span of the context window the caller's session had before its current one, if it rotated."""
    windows = db.execute("SELECT id, started_at FROM backing_sessions WHERE session_id = ? ORDER BY started_at",
                         (session_id,)).fetchall()
    ids = [str(row[0]) for row in windows]
    if current not in ids or ids.index(current) == 0:
        return []
    at = ids.index(current)
    return [Span(float(windows[at - 1][1]), float(windows[at][1]))]


def _event(db: sqlite3.Connection, event: Event, spans: list[Span], scope: _Scope) -> Row | None:
    """Where the event happened (its session and time), within the spans named if any: the latest (or the first)
    shell run that is the event, one that succeeded if any did; a rotation itself; or what we did in the words of
    the question."""
    if event.name is None:
        return _done(db, event.phrase, spans, scope)
    if event.name == "rotation":
        row = db.execute(
            "SELECT r.session_id, r.created_at FROM rotations r JOIN sessions s ON s.id = r.session_id"
            f" WHERE s.workspace_id = ? ORDER BY r.created_at {'ASC' if event.first else 'DESC'} LIMIT 1",
            (scope.workspace_id,)).fetchone()
        return {"session_id": row[0], "created_at": row[1]} if row else None
    pattern = re.compile(_EVENTS[event.name], re.IGNORECASE)
    failed: Row | None = None
    found: list[Row] = []
    order = "first" if event.first else "last"
    words = " OR ".join("coalesce(e.original_command, e.command) LIKE ?" for _ in _EVENT_LIKE[event.name])
    for row in scope.rows(db, "e.kind = 'tool' AND e.tool_name IN ({}) AND ({}) AND {}".format(
            ", ".join("?" for _ in actions.RUN_TOOLS), words, _ends(db, order)),
            [*sorted(actions.RUN_TOOLS), *_EVENT_LIKE[event.name]], order="e.id" if event.first else "e.id DESC"):
        if spans and not any(span.start <= float(row["created_at"]) < span.end for span in spans):
            continue
        if pattern.search(str(row["original_command"] or "")):
            if event.qualifier:
                found.append(row)
                if len(found) == QUALIFIED_EVENTS:
                    break
                continue
            if not row["is_error"]:
                return row
            failed = failed or row  # a merge that stopped at a conflict is still the merge, failing none did
    return _qualified(db, event.qualifier, found, scope) if found else failed


def _qualified(db: sqlite3.Connection, qualifier: Sequence[str], found: Sequence[Row], scope: _Scope) -> Row:
    """Of the events `found` (latest first, or first first), the one whose work the `qualifier` words describe
    most: "the bug-fix release" is the tag of the session whose prompts and answers, in the hours before it, said
    "a patch release with the two fixes", not the feature release's that came after it. Ties, and words that
    describe none, go to the order; one that succeeded before one that failed."""
    wanted = line_choice.word_prefixes(list(qualifier))

    def described(row: Row) -> int:
        at = float(row["created_at"])
        texts = [str(row["original_command"] or "")] + [str(said["text"] or "") for said in scope.rows(
            db, "e.session_id = ? AND e.kind IN ('user', 'assistant') AND e.created_at >= ? AND e.created_at <= ?",
            [row["session_id"], at - QUALIFIER_BEFORE, at + QUALIFIER_AFTER], columns="e.id, e.text", limit=50)]
        held = set(re.findall(r"[a-z0-9]+", " ".join(texts).lower()))
        return sum(any(word.startswith(prefix) for word in held) for prefix in wanted)

    scored = [(described(row), not row["is_error"], -at) for at, row in enumerate(found)]
    return found[max(range(len(found)), key=lambda at: scored[at])]


def _done(db: sqlite3.Connection, phrase: str, spans: list[Span], scope: _Scope) -> Row | None:
    """The episode of a turn of work that best says `phrase` ("reviewed the branch"): it holds most of the
    phrase's words (two at least), or words of the same stem ("bump" for "bumped"). Only turns that hold a tool call
    count, so a conversation's "after summer camp" points at nothing."""
    wanted = line_choice.word_prefixes([word for word in re.findall(r"[a-z0-9]+", phrase.lower())
                                        if word not in queries.STOP_WORDS])
    if len(wanted) < 2:  # "before I took it over": one ordinary word ("took") is in any long output
        return None
    for row in queries.search_bm25(db, phrase, workspace_id=scope.workspace_id, limit=10,
                                   skip_live_of=scope.skip_live_of, exclude_origins=scope.exclude_origins):
        if spans and not any(span.start <= float(row["created_at"]) < span.end for span in spans):
            continue
        held = set(re.findall(r"[a-z0-9]+", f"{row['input'] or ''} {row['text']}".lower()))
        said = sum(any(word.startswith(prefix) for word in held) for prefix in wanted)
        if said * 3 >= len(wanted) * 2 and db.execute(
                "SELECT 1 FROM episodes WHERE session_id = ? AND turn IS ? AND kind = 'tool' LIMIT 1",
                (row["session_id"], row["turn"])).fetchone():
            return row
    return None


def _day_beside(at: float, ordered: list[tuple[str, float, float]], side: str) -> list[Span]:
    """The day of work before (or after) the day of `at`: the nearest other day a session was active on."""
    day = dt.datetime.fromtimestamp(at).date()
    start = dt.datetime.combine(day, dt.time()).timestamp()
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time()).timestamp()
    if side == "before":
        times = [last for _, _, last in ordered if last < start]
        found = max(times) if times else None
    else:
        times = [first for _, first, _ in ordered if first >= end]
        found = min(times) if times else None
    if found is None:
        return []
    other = dt.datetime.fromtimestamp(found).date()
    return [Span(dt.datetime.combine(other, dt.time()).timestamp(),
                 dt.datetime.combine(other + dt.timedelta(days=1), dt.time()).timestamp())]


def _around(event_row: Row, ordered: list[tuple[str, float, float]], event: Event) -> dict[str, tuple[float, float]]:
    """The sessions nearest the event on the side named (its own, if anything in it happened on that side and the
    question did not ask for the next session, then the next ones), each with the edge its episodes must pass and
    its share of the bonus."""
    shares = STEP_SHARE_CLOSE if event.close else STEP_SHARE
    ids = [session[0] for session in ordered]
    if event_row["session_id"] not in ids:
        return {}
    at = ids.index(str(event_row["session_id"]))
    edge = float(event_row["created_at"])
    skip = 1 if event.beside == "session" else 0
    after = event.side == "after"
    steps = ordered[at + skip:] if after else ordered[at - skip::-1] if at - skip >= 0 else []
    beside = [session_id for session_id, first, last in steps if (last > edge if after else first < edge)]
    return {session_id: (edge, share) for session_id, share in zip(beside, shares, strict=False)}


def _ends(db: sqlite3.Connection, order: str) -> str:
    """An SQL condition keeping a scan for the first or last of something to the oldest or newest `ORDER_WINDOW`
    episodes of the store, so that a question about an action the store never saw costs a bounded read."""
    row = db.execute(f"SELECT {'min' if order == 'first' else 'max'}(id) FROM episodes").fetchone()
    edge = int(row[0] or 0)
    return f"e.id <= {edge + ORDER_WINDOW}" if order == "first" else f"e.id >= {edge - ORDER_WINDOW}"


def _first_or_last(db: sqlite3.Connection, order: str, asked: actions.Asked, resolved: Resolved,
                   scope: _Scope) -> dict[int, float]:
    """The first or last episodes that fit what the question asks for (`Resolved.picked`), among those the other
    time words point at if any; with nothing asked, the first or last prompts."""
    found: list[int] = []
    where, params = actions.fitting_sql(asked)
    for row in scope.rows(db, f"({where}) AND {_ends(db, order)}", params,
                          order="e.id" if order == "first" else "e.id DESC"):
        tags = actions.tags_of(str(row["kind"]), row["tool_name"], row["original_command"], row["is_error"])
        if not actions.fits_in_full(asked, tags):
            continue
        if not resolved.within_pointers(float(row["created_at"]), str(row["session_id"])):
            continue
        found.append(int(row["id"]))
        if len(found) == resolved.nth + 2:
            break
    return resolved.picked(found)


def _added(db: sqlite3.Connection, resolved: Resolved, asked: actions.Asked, scope: _Scope) -> list[int]:
    """Episodes to rank although neither words nor meaning found them: what the time words point at (the
    prompts and answers of those spans and sessions, and the runs and edits of the action named), earliest first
    within each span or set of sessions."""
    added = list(resolved.ordered)
    pointed: list[tuple[str, list[object], str]] = [
        ("e.created_at >= ? AND e.created_at < ?", [span.start, span.end], "e.created_at")
        for span in (*resolved.spans, *resolved.windows)]
    sessions = [*resolved.sessions, *resolved.around]
    if sessions:
        pointed.append((f"e.session_id IN ({', '.join('?' for _ in sessions)})", list(sessions), "e.id"))
    for where, params, order in pointed:
        for row in scope.rows(db, where, params, order=order, limit=10 * ADDED):
            if not resolved.bonus(int(row["id"]), float(row["created_at"]), str(row["session_id"])):
                continue
            tags = actions.tags_of(str(row["kind"]), row["tool_name"], row["original_command"], row["is_error"])
            if row["kind"] != "tool" or (asked.roles and actions.fit(asked, tags)):
                added.append(int(row["id"]))
                if len(added) >= ADDED:
                    return added
    return list(dict.fromkeys(added))
