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
                      r"|failures?|fail(ed|ing)|log)\b", re.IGNORECASE),
    "read": re.compile(r"\b(the read|we read|opened|contents of)\b", re.IGNORECASE),
}
# Tool names of each action, as Claude Code, Codex and Gemini CLI record them; any other tool (a search, an MCP
# tool) is plain `tool`, which no cue names.
_CHANGE_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch", "replace", "write_file"})
_READ_TOOLS = frozenset({"Read", "read_file", "read_many_files"})
_RUN_TOOLS = frozenset({"Bash", "shell", "exec_command", "run_shell_command"})
_SHOWS_A_CHANGE = re.compile(r"\s*git\s+(diff|show)\b")
_PRINTS_A_FILE = re.compile(r"\s*cat\s")  # as `recall_file` counts a read
TOOL_ROLES = frozenset({"change", "read", "run", "tool"})


def query_roles(query: str) -> set[str]:
    """The roles a query names (`user`, `assistant`, or a tool call's `change`, `run`, `read`), by plain cues;
    usually none."""
    return {role for role, cue in _ROLE_CUES.items() if cue.search(query)}


def role_of(kind: str, tool_name: str | None, command: str | None) -> str:
    """An episode's role for `query_roles`: its kind for a prompt or an answer, what it did for a tool call (a
    `git diff` or `git show` shows a change, a `cat` reads)."""
    if kind != "tool":
        return kind
    if tool_name in _CHANGE_TOOLS or (tool_name in _RUN_TOOLS and _SHOWS_A_CHANGE.match(command or "")):
        return "change"
    if tool_name in _READ_TOOLS or (tool_name in _RUN_TOOLS and _PRINTS_A_FILE.match(command or "")):
        return "read"
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
