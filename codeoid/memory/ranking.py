"""Fusing BM25 and vector candidates into one ranking, with recency, path and role bonuses, weights as settings.

Two fusions. The default (`fuse_z`) adds standardised scores: each BM25 score as a z-score over the whole corpus
(an episode that does not match scores 0), each cosine as a z-score over the corpus's embeddings
(`codeoid.memory.corpus_stats`), so a signal that is sure of one episode outweighs one that is lukewarm about
many, which rank fusion cannot see. Measured on LoCoMo (issue 13) it beat reciprocal rank fusion by ~0.02 R@10,
and on this repository's benchmarks (README, "Retrieval quality"). `fuse` is reciprocal rank fusion, kept for
`CODEOID_RECALL_ZSCORE=0` and the comparison. Bonuses apply to candidates only: they reorder what matched, they
never make a match.

Settings come from the environment, `CODEOID_RECALL_<FIELD>` in upper case (e.g. `CODEOID_RECALL_DENSE=1.5`).
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields

_PATH_LIKE = re.compile(r"[\w.~\-]*/[\w.\-/]+|[\w\-]+\.[A-Za-z][\w]{0,7}\b")
SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class RecallWeights:
    # Tuned on the tuning half of benchmarks/retrieval (README, "Retrieval quality"). A small rrf_k keeps a
    # first rank in one signal worth more than middling ranks in both: with k=60, exact matches that only BM25
    # ranks first lost to agreement, and fused R@1 fell below BM25's own.
    bm25: float = 1.0
    dense: float = 0.4
    recency: float = 0.2  # a brand-new episode gains this fraction of a first rank
    recency_half_life_days: float = 14.0
    path: float = 1.0  # an episode touching every path the query names gains this fraction of a first rank
    rrf_k: float = 10.0
    candidates: int = 50  # taken from each signal before fusing
    # z-score fusion: bonus for an episode of the role the query names ("your explanation", "the diff"; `role_of`)
    role: float = 1.5
    date: float = 0.0  # bonus for an episode of the day the query names ("on May 13", "2018-05-13"), in UTC
    zscore: int = 1  # 1: `fuse_z`; 0: reciprocal rank fusion (`fuse`)
    # z-score fusion: 1 takes the signed square root of each BM25 z-score. Standardised over a corpus where most
    # episodes score 0, an exact match's z runs to 10 or 30, and meaning could never outvote it; the root keeps the
    # order within BM25 and lets a paraphrase's meaning count (coding set, tuning half: paraphrased MRR 0.074 ->
    # 0.148 with the weights below).
    bm25_root: int = 1
    # z-score fusion: a tool call next to a turn whose meaning matches (two places either way in its session) takes
    # this share of that turn's meaning score when it beats its own. The edit or traceback a question paraphrases
    # rarely reads like the question; the prompt or explanation beside it does. Prompts and answers lend but never
    # borrow: in a conversation the turn itself is the answer, and borrowed meaning only crowded it (conversational
    # set, tuning half: R@10 0.824 -> 0.784).
    neighbours: float = 1.0
    # BM25 column weights over an episode and its session neighbours (`codeoid.store.context_index`): the episode
    # itself four times its nearest neighbours, or a long failing run loses to the short turn after it that
    # quotes its first line (BM25 normalises by each column's length).
    bm25_self: float = 4.0
    bm25_near: float = 1.0
    bm25_mid: float = 0.5
    bm25_far: float = 0.25
    # z-score fusion: a turn with tool calls (a prompt, its calls, its answer) is one unit. Each of its episodes may
    # take the turn's best score less `turn_gap` (a question that reads like the prompt lends to the explanation
    # or the failing run that answered it), and only its best episode keeps its place: the others fall by
    # `turn_repeat`, so an answer shows the turn's best evidence, not three pieces of one turn. A prompt, which
    # asked rather than answered, is worth `turn_prompt` less as its turn's evidence.
    turn: int = 1
    turn_gap: float = 1.0
    turn_repeat: float = 1.0
    turn_prompt: float = 1.5
    # z-score fusion: time and order a query names (`query_time`). `when`: bonus for an episode of the day, week or
    # session named ("yesterday", "three days ago", "last week", "in the previous session", "session 8");
    # `order`: for "first"/"earliest" or "last"/"latest", this much for the earliest (latest) session among the
    # candidates that score above the floor, half as much for the next, and so on;
    # `anchor`: for "before X"/"after X", this much for the turn nearest the event X (found by its words) on that
    # side, half as much for the next, and so on.
    when: float = 3.0
    order: float = 1.0
    anchor: float = 2.0

    def columns(self) -> tuple[float, float, float, float]:
        return self.bm25_self, self.bm25_near, self.bm25_mid, self.bm25_far

    @classmethod
    def from_env(cls) -> RecallWeights:
        values: dict[str, float | int] = {}
        for spec in fields(cls):
            raw = os.environ.get(f"CODEOID_RECALL_{spec.name.upper()}")
            if raw is None:
                continue
            try:
                values[spec.name] = int(raw) if spec.type in (int, "int") else float(raw)
            except ValueError:
                continue
        return cls(**values)  # type: ignore[arg-type]


def vector_enabled() -> bool:
    """`CODEOID_VECTOR=off` turns semantic memory off: no indexer, recall is BM25 alone."""
    return os.environ.get("CODEOID_VECTOR", "on").strip().lower() not in ("off", "0", "false", "no")


def query_paths(query: str) -> list[str]:
    """The file paths or names a query mentions (`src/db.py`, `Makefile` is not one; `db.py` is)."""
    return list(dict.fromkeys(match.group(0).strip("./") or match.group(0) for match in _PATH_LIKE.finditer(query)))


def path_overlap(wanted: Sequence[str], touched: Iterable[str]) -> float:
    """The share of the query's paths the episode touched (by whole path suffix or by file name)."""
    if not wanted:
        return 0.0
    touched = list(touched)
    names = {os.path.basename(path) for path in touched}
    hits = 0
    for path in wanted:
        if "/" in path:
            hits += any(stored == path or stored.endswith("/" + path) for stored in touched)
        else:
            hits += path in names
    return hits / len(wanted)


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = (r"(january|february|march|april|may|june|july|august|september|october|november|december"
          r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b\.?")
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATES = (
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), lambda m: (int(m[2]), int(m[3]))),
    (re.compile(rf"\b{_MONTH}\s+{_DAY}\b", re.IGNORECASE), lambda m: (_month(m[1]), int(m[2]))),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}", re.IGNORECASE), lambda m: (_month(m[2]), int(m[1]))),
)


def _month(name: str) -> int:
    return _MONTHS.index(name.lower()[:3]) + 1


def query_dates(query: str) -> set[tuple[int, int]]:
    """The calendar days a query names, as (month, day): "on May 13", "13th of May", "2018-05-13". The year is
    left out: people rarely say it, and a store seldom spans two years."""
    found = set()
    for pattern, day_of in _DATES:
        for match in pattern.finditer(query):
            month, day = day_of(match)
            if 1 <= month <= 12 and 1 <= day <= 31:
                found.add((month, day))
    return found


def on_named_day(created_at: float, days: set[tuple[int, int]]) -> bool:
    """Whether the episode was stored on one of `days` (UTC, as the neighbour index's date prefix)."""
    if not days:
        return False
    stamp = time.gmtime(created_at)
    return (stamp.tm_mon, stamp.tm_mday) in days


def fuse(bm25: Sequence[int], dense: Sequence[int], *, created_at: Mapping[int, float],
         paths: Mapping[int, Sequence[str]], query: str, weights: RecallWeights,
         now: float | None = None) -> list[tuple[int, float]]:
    """Episode ids from both ranked lists (best first, no repeats within a list), fused, best first.

    A signal weighted 0 is left out entirely, not merely scored 0: its candidates would otherwise still
    enter the ranking through the recency bonus, so `bm25=0` or `dense=0` gives the other signal alone.
    """
    now = time.time() if now is None else now
    k = weights.rrf_k
    scores: dict[int, float] = {}
    for weight, ranked in ((weights.bm25, bm25), (weights.dense, dense)):
        if weight == 0:
            continue
        for rank, episode_id in enumerate(ranked, 1):
            scores[episode_id] = scores.get(episode_id, 0.0) + weight / (k + rank)
    wanted = query_paths(query)
    days = query_dates(query) if weights.date else set()
    first = 1.0 / (k + 1)
    for episode_id in scores:
        age_days = max(0.0, now - created_at.get(episode_id, now)) / SECONDS_PER_DAY
        bonus = weights.recency * 0.5 ** (age_days / max(weights.recency_half_life_days, 1e-6))
        bonus += weights.path * path_overlap(wanted, paths.get(episode_id, ()))
        bonus += weights.date * on_named_day(created_at.get(episode_id, now), days)
        scores[episode_id] += bonus * first
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))


# What a question says about whose turn it wants ("what did I ask", "you suggested"), or, for a tool call, what
# kind of action: "the diff", "the edit" want a change; "the traceback", "the failure output" a command's run;
# "the read of" a file read. In a coding session the same file is read, edited and tested many times, and the
# read of a file matches a question about its edit by every word of the file.
_ASKED = r"(say|said|ask|asked|write|wrote|tell|told|mention|mentioned|want|wanted|request|requested|type|typed)"
_ANSWERED = (r"(say|said|suggest|suggested|answer|answered|tell|told|recommend|recommended|propose|proposed|explain"
             r"|explained|write|wrote|mention|mentioned|reply|replied|think|thought|conclude|concluded)")
_ROLE_CUES = {
    "user": re.compile(rf"\b(i|we)\s+(\w+\s+)?{_ASKED}\b|\b(my|our)\s+(question|prompt|request)\b"
                       r"|\bthe user\b", re.IGNORECASE),
    "assistant": re.compile(rf"\b(you|claude)\s+(\w+\s+)?{_ANSWERED}\b|\byour\s+(answer|suggestion|explanation"
                            r"|reply|advice|plan)\b", re.IGNORECASE),
    "change": re.compile(r"\b(diffs?|edit(s|ed)?|chang(e|es|ed)|patch(es|ed)?|modif(y|ied|ication))\b", re.IGNORECASE),
    "run": re.compile(r"\b(output|traceback|stack ?trace|stderr|stdout|error message|exit (code|status)|test run"
                      r"|failures?|fail(ed|ing|s)?|log|ran|run|check(ed)?|verif(y|ied)|measur(e|ed)|pass(ed)?"
                      r"|broke|broken|crash(ed|es)?)\b", re.IGNORECASE),
    "read": re.compile(r"\b(the read|we read|opened|contents of)\b", re.IGNORECASE),
    "commit": re.compile(r"\b(commit(s|ted)?|tag(s|ged)?|merg(e|ed)|push(ed)?)\b", re.IGNORECASE),
}
# Within a turn that holds tool calls, these ask for its answer (the explanation, the decision, the review): "why
# did the hints vanish", "what did we decide", "where did the bug come from". Not across a conversation, whose
# turns are each the answer: there "why is summer my favourite season?" asks for the person's own turn
# (conversational set, tuning half: "where does most of my knowledge ... come from?" fell from rank 2 to 4).
_ANSWER_CUES = re.compile(r"^\s*why\b|\b(the|what was the) (reason|root cause|explanation)\b|\b(decide|decided"
                          r"|decision|conclude|concluded|conclusion|review|reviewed|agree|agreed|came from|come from"
                          r"|cause|caused)\b", re.IGNORECASE)
# What each cue wants: a run's cue wants a failing run most ("what broke", "the crash", "which tests failed") and
# any run besides ("how did we check", "did the suite pass").
_FAILED = re.compile(r"\b(traceback|stack ?trace|stderr|error|failures?|fail(ed|ing|s)?|broke|broken|crash(ed|es)?"
                     r"|went wrong)\b", re.IGNORECASE)
# Tool names of each action, as Claude Code, Codex and Gemini CLI record them; any other tool (a search, an MCP
# tool) is plain `tool`, which no cue names.
_CHANGE_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch", "replace", "write_file"})
_READ_TOOLS = frozenset({"Read", "read_file", "read_many_files"})
_RUN_TOOLS = frozenset({"Bash", "shell", "exec_command", "run_shell_command"})
_SHOWS_A_CHANGE = re.compile(r"\s*git\s+(diff|show)\b")
_RECORDS = re.compile(r"\s*git\s+(commit|tag|merge|push)\b")
_PRINTS_A_FILE = re.compile(r"\s*cat\s")  # as `recall_file` counts a read
TOOL_ROLES = frozenset({"change", "read", "run", "failure", "commit", "tool"})


def query_roles(query: str, *, in_turn: bool = False) -> set[str]:
    """The roles a query names (`user`, `assistant`, or a tool call's `change`, `run`, `failure`, `commit`,
    `read`), by plain cues; usually none. A run's cue names a failing run too, and a cue of failure ("what
    broke", "the crash") names it alone. `in_turn`: within a turn that holds tool calls, where "why" and "what
    did we decide" name its answer too (`_ANSWER_CUES`)."""
    roles = {role for role, cue in _ROLE_CUES.items() if cue.search(query)}
    if in_turn and _ANSWER_CUES.search(query):
        roles.add("assistant")
    if "run" in roles:
        roles.add("failure")
        if _FAILED.search(query):
            roles.discard("run")
    return roles


def role_of(kind: str, tool_name: str | None, command: str | None, is_error: object = False) -> str:
    """An episode's role for `query_roles`: its kind for a prompt or an answer, what it did for a tool call (a
    `git diff` or `git show` shows a change, a `cat` reads, a `git commit`, `tag`, `merge` or `push` records
    one, a run that failed is a `failure`)."""
    if kind != "tool":
        return kind
    if tool_name in _CHANGE_TOOLS or (tool_name in _RUN_TOOLS and _SHOWS_A_CHANGE.match(command or "")):
        return "change"
    if tool_name in _READ_TOOLS or (tool_name in _RUN_TOOLS and _PRINTS_A_FILE.match(command or "")):
        return "read"
    if tool_name in _RUN_TOOLS and is_error:
        return "failure"
    if tool_name in _RUN_TOOLS and _RECORDS.match(command or ""):
        return "commit"
    return "run" if tool_name in _RUN_TOOLS else "tool"


@dataclass(frozen=True)
class LexicalCandidates:
    """One query's BM25 candidates, best first, with the corpus-wide sums of its scores (every episode that does
    not match scores 0), from `codeoid.store.queries.search_context`."""

    scores: dict[int, float]
    total: float
    squares: float
    corpus: int
    cut: bool  # the list stopped at the pool size: a candidate missing from it may still have matched

    _standard: tuple[float, float, float] = field(init=False, repr=False, default=(0.0, 1.0, 0.0))

    def __post_init__(self) -> None:
        n = max(self.corpus, len(self.scores), 1)
        mean = self.total / n
        spread = max(self.squares / n - mean * mean, 1e-12) ** 0.5
        missing = min(self.scores.values()) if self.cut and self.scores else 0.0
        object.__setattr__(self, "_standard", (mean, spread, missing))

    def z(self, episode_id: int) -> float:
        """The episode's BM25 score standardised over the corpus; one outside the list counts as scoring 0, or,
        when the list was cut, as its last score (it matched no better than that)."""
        mean, spread, missing = self._standard
        return (self.scores.get(episode_id, missing) - mean) / spread


@dataclass(frozen=True)
class DenseCandidates:
    """One query's nearest episodes with their best chunk's cosine, and how cosines of this query spread over the
    corpus: `centre` q.mu and `spread` sqrt(q' Sigma q) (`codeoid.memory.corpus_stats`), or, while the corpus is
    too small to say, the mean and deviation of the cosines retrieved."""

    cosines: dict[int, float]
    centre: float | None = None
    spread: float | None = None
    _standard: tuple[float, float, float] = field(init=False, repr=False, default=(0.0, 1.0, 0.0))

    def __post_init__(self) -> None:
        values = list(self.cosines.values())
        if not values:
            return
        if self.centre is not None and self.spread:
            centre, spread = self.centre, self.spread
        else:
            centre = sum(values) / len(values)
            spread = max((sum((v - centre) ** 2 for v in values) / len(values)) ** 0.5, 1e-6)
        object.__setattr__(self, "_standard", (centre, spread, min(values)))

    def z(self, episode_id: int) -> float:
        """The episode's cosine standardised; one not retrieved counts as the farthest retrieved."""
        if not self.cosines:
            return 0.0
        centre, spread, missing = self._standard
        return (self.cosines.get(episode_id, missing) - centre) / spread


def fuse_z(lexical: LexicalCandidates, dense: DenseCandidates, *, created_at: Mapping[int, float],
           paths: Mapping[int, Sequence[str]], roles: Mapping[int, str], query: str, weights: RecallWeights,
           now: float | None = None, neighbours: Mapping[int, Sequence[int]] | None = None,
           ) -> list[tuple[int, float]]:
    """Candidates of both signals scored `bm25 * z_bm25 + dense * z_cosine` plus bonuses in z units, best first.
    A signal weighted 0 brings no candidates and no score (`dense=0` is BM25 alone). `neighbours` are each dense
    candidate's session neighbours that recall may return: the tool calls among them become candidates too, scored
    with the meaning they borrow (`weights.neighbours`); none are passed, none are borrowed. `roles` are the
    candidates' (`role_of`): the role bonus goes to those of a role the query names."""
    now = time.time() if now is None else now
    candidates: dict[int, None] = {}
    if weights.bm25:
        candidates.update(dict.fromkeys(lexical.scores))
    borrowed: dict[int, float] = {}
    if weights.dense:
        candidates.update(dict.fromkeys(dense.cosines))
        if weights.neighbours and neighbours:
            for episode_id, near in neighbours.items():
                lent = weights.neighbours * dense.z(episode_id)
                for other in near:
                    if roles.get(other) in TOOL_ROLES:
                        borrowed[other] = max(borrowed.get(other, lent), lent)
                        candidates.setdefault(other, None)
    wanted = query_paths(query)
    wanted_roles = query_roles(query)
    days = query_dates(query) if weights.date else set()
    fused = []
    for episode_id in candidates:
        score = 0.0
        if weights.bm25:
            z = lexical.z(episode_id)
            score += weights.bm25 * (math.copysign(math.sqrt(abs(z)), z) if weights.bm25_root else z)
        if weights.dense:
            score += weights.dense * max(dense.z(episode_id), borrowed.get(episode_id, -math.inf))
        age_days = max(0.0, now - created_at.get(episode_id, now)) / SECONDS_PER_DAY
        score += weights.recency * 0.5 ** (age_days / max(weights.recency_half_life_days, 1e-6))
        score += weights.path * path_overlap(wanted, paths.get(episode_id, ()))
        if roles.get(episode_id) in wanted_roles:
            score += weights.role
        score += weights.date * on_named_day(created_at.get(episode_id, now), days)
        fused.append((episode_id, score))
    return sorted(fused, key=lambda item: (-item[1], -item[0]))


TurnKey = tuple[str, int]


def by_turn(fused: Sequence[tuple[int, float]], *, turn_of: Mapping[int, TurnKey],
            members: Mapping[TurnKey, Sequence[int]], roles: Mapping[int, str], query: str,
            weights: RecallWeights) -> list[tuple[int, float]]:
    """`fused` with turns as units (`RecallWeights.turn`): within each turn of `members` (the turns that hold a
    tool call, each with every episode recall may return of it) its answers, and its episodes of the role the
    query names (with the role bonus), score at least the turn's best less `turn_gap`; a prompt scores
    `turn_prompt` less; only the turn's best keeps its score: the rest fall by `turn_repeat`. Episodes of other
    turns keep theirs. Best first."""
    scores = dict(fused)
    wanted = query_roles(query, in_turn=True)
    best_of: dict[TurnKey, float] = {}
    for episode_id, score in fused:
        key = turn_of.get(episode_id)
        if key is not None and key in members:
            best_of[key] = max(best_of.get(key, -math.inf), score)
    out: dict[int, float] = {i: score for i, score in fused if turn_of.get(i) not in best_of}
    for key, best in best_of.items():
        ranked = []
        for episode_id in members[key]:
            role = roles.get(episode_id)
            score = scores.get(episode_id, -math.inf)
            if role == "assistant" or role in wanted:  # the turn's answer, or the action the query names
                score = max(score, best - weights.turn_gap + (weights.role if role in wanted else 0.0))
            if roles.get(episode_id) == "user":
                score -= weights.turn_prompt
            ranked.append((score, scores.get(episode_id, -math.inf), episode_id))
        ranked.sort(key=lambda item: (-item[0], -item[1], -item[2]))  # of equal lent scores, the better own
        for place, (score, _, episode_id) in enumerate(ranked):
            out[episode_id] = score - (weights.turn_repeat if place else 0.0)
    return sorted(out.items(), key=lambda item: (-item[1], -item[0]))


_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
            "ten": 10, "a couple of": 2, "a few": 3}
_N = r"(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few)"
_PARTS = {"morning": (0, 12), "afternoon": (12, 18), "evening": (17, 24), "night": (18, 24)}
_DAYS_AGO = re.compile(rf"\b{_N}\s+days?\s+ago\b", re.IGNORECASE)
_YESTERDAY = re.compile(r"\byesterday\b", re.IGNORECASE)
_TODAY = re.compile(r"\b(today|this (morning|afternoon|evening))\b", re.IGNORECASE)
_PART = re.compile(r"\b(morning|afternoon|evening|night)\b", re.IGNORECASE)
_WEEK = re.compile(r"\b(last|previous|past) week\b|\ba week ago\b", re.IGNORECASE)
_PREVIOUS_SESSION = re.compile(r"\b(previous|last|prior|latest|most recent) (session|conversation|chat)\b",
                               re.IGNORECASE)
_SESSION_N = re.compile(r"\b(?:session|conversation|chat)\s+(?:number\s+)?#?(\d{1,3})\b"
                        r"|\b(\d{1,3})(?:st|nd|rd|th) (?:session|conversation|chat)\b", re.IGNORECASE)
_FIRST = re.compile(r"\b(first|earliest|initially|originally|to begin with|at the start)\b", re.IGNORECASE)
_LAST = re.compile(r"\b(last|latest|most recent(ly)?|recently|finally)\b(?! (week|session|conversation|chat))",
                   re.IGNORECASE)
_ANCHOR = re.compile(r"\b(?:(?:right|just|shortly|soon|immediately)\s+)?(before|after|since|until|prior to)\s+"
                     r"((?:the|our|we|that|a|an)\b[^?.,;]*|[^?.,;]+)", re.IGNORECASE)


@dataclass(frozen=True)
class TimeCue:
    """What a query says about time and order (`query_time`); empty when it says nothing."""

    start: float | None = None  # a window of time the query names, [start, end)
    end: float | None = None
    order: str | None = None  # "first" or "last"
    session: int | None = None  # the Nth session of the workspace, counted from 1 in time order
    previous_session: bool = False
    anchor: str | None = None  # the event of "before X" / "after X", in the query's words
    side: str | None = None  # "before" or "after"
    rest: str = ""  # the query without its time words: what the episodes themselves should match

    def __bool__(self) -> bool:
        return any((self.start is not None, self.order, self.session, self.previous_session, self.anchor))


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def query_time(query: str, now: float | None = None) -> TimeCue:
    """Time and order in a query, resolved against `now` in local time: a day ("yesterday", "three days ago",
    "today", with "morning"/"afternoon"/"evening"), a week ("last week": the seven days before today), a session
    ("in the previous session", "during session 8", "the 3rd session"), an order ("first", "earliest", "last",
    "latest") or an event ("before the merge", "right after the release")."""
    now = time.time() if now is None else now
    midnight = time.mktime(time.localtime(now)[:3] + (0, 0, 0, 0, 0, -1))
    start = end = None
    rest = query
    day = None
    if (match := _DAYS_AGO.search(query)) is not None:
        day = _number(match[1])
    elif _YESTERDAY.search(query):
        day = 1
    elif _TODAY.search(query):
        day = 0
    if day is not None:
        start = midnight - day * SECONDS_PER_DAY
        end = start + SECONDS_PER_DAY
        if (part := _PART.search(query)) is not None:
            first_hour, last_hour = _PARTS[part[1].lower()]
            start, end = start + first_hour * 3600, start + last_hour * 3600
    elif _WEEK.search(query):
        start, end = midnight - 7 * SECONDS_PER_DAY, midnight
    session = None
    if (match := _SESSION_N.search(query)) is not None:
        session = int(match[1] or match[2])
    previous = bool(_PREVIOUS_SESSION.search(query))
    order = None
    if _FIRST.search(query):
        order = "first"
    elif _LAST.search(query) and not previous:
        order = "last"
    anchor = side = None
    if (match := _ANCHOR.search(query)) is not None:
        side = "before" if match[1].lower() in ("before", "until", "prior to") else "after"
        anchor = match[2].strip()
        rest = rest.replace(match[0], " ")
    for pattern in (_DAYS_AGO, _YESTERDAY, _TODAY, _WEEK, _PREVIOUS_SESSION, _SESSION_N, _FIRST, _LAST, _PART):
        rest = pattern.sub(" ", rest)
    return TimeCue(start, end, order, session, previous, anchor, side, " ".join(rest.split()))


def in_time(fused: Sequence[tuple[int, float]], cue: TimeCue, *, created_at: Mapping[int, float],
            in_session: Mapping[int, bool], event: float | None, turn_of: Mapping[int, TurnKey],
            weights: RecallWeights) -> list[tuple[int, float]]:
    """`fused` with the bonuses `cue` earns (`RecallWeights.when`, `order`, `anchor`): `in_session` says which
    episodes belong to the session the query names, `event` is when its "before X" / "after X" happened (the
    turns on that side earn by their place from it: the nearest `anchor`, the next half of it ...)."""
    out = []
    sessions: dict[object, float] = {}  # for "first" / "last": each session's first candidate, by time
    for episode_id, score in fused:
        if episode_id in created_at and score >= 0:
            session = turn_of[episode_id][0] if episode_id in turn_of else episode_id
            sessions[session] = min(sessions.get(session, math.inf), created_at[episode_id])
    ordered = sorted(sessions, key=lambda session: sessions[session], reverse=cue.order == "last")
    place = {session: n for n, session in enumerate(ordered)}
    near: dict[object, float] = {}
    if event is not None and cue.side is not None:
        for episode_id, _ in fused:
            at = created_at.get(episode_id)
            gap = None if at is None else (at - event) if cue.side == "after" else (event - at)
            if gap is not None and gap > 0:
                unit = turn_of.get(episode_id, episode_id)
                near[unit] = min(near.get(unit, math.inf), gap)
    nearness = {unit: n for n, unit in enumerate(sorted(near, key=lambda unit: near[unit]))}
    for episode_id, score in fused:
        at = created_at.get(episode_id)
        if at is None:
            out.append((episode_id, score))
            continue
        if cue.start is not None and cue.end is not None and cue.start <= at < cue.end:
            score += weights.when
        if (cue.session or cue.previous_session) and in_session.get(episode_id):
            score += weights.when
        session = turn_of[episode_id][0] if episode_id in turn_of else episode_id
        if cue.order and session in place:
            score += weights.order * 0.5 ** place[session]
        unit = turn_of.get(episode_id, episode_id)
        if unit in nearness:
            score += weights.anchor * 0.5 ** nearness[unit]
        out.append((episode_id, score))
    return sorted(out, key=lambda item: (-item[1], -item[0]))
