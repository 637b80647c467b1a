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
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING

from codeoid.memory import actions

if TYPE_CHECKING:
    from codeoid.memory.when import Resolved

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
    # z-score fusion: turns of work as a unit (`codeoid.memory.turns.TurnWeights`); `turn_lend=0` and
    # `turn_repeat=0` leave turns out.
    turn_lend: float = 1.0
    turn_step: float = 0.2
    turn_prompt: float = 1.0
    turn_repeat: float = 0.15
    turn_explanation: float = 1.0
    turn_answer: float = 1.0
    # z-score fusion: bonus for an episode the question's time and order words point at (`codeoid.memory.when`)
    time: float = 5.0
    # z-score fusion: "the last time we edited the release notes" is the latest of the edits that match the release
    # notes about as well as the best one does (within this margin), not the latest edit; 0 orders every episode of
    # the action named, whatever its topic.
    order_margin: float = 1.0

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
    """`CODEOID_VECTOR=off` turns semantic memory off: no indexer, recall ranks by words (with time, actions and
    turns) and not by meaning."""
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
           paths: Mapping[int, Sequence[str]], tags: Mapping[int, frozenset[str]], query: str,
           weights: RecallWeights, now: float | None = None, neighbours: Mapping[int, Sequence[int]] | None = None,
           ) -> list[tuple[int, float]]:
    """Candidates of both signals scored `bm25 * z_bm25 + dense * z_cosine` plus bonuses in z units, best first
    (`ZFusion.fuse`)."""
    return ZFusion(lexical, dense, query=query, weights=weights, now=now).fuse(
        created_at=created_at, paths=paths, tags=tags, neighbours=neighbours)


class ZFusion:
    """One query's z-score fusion: any episode scored the same way, a candidate of either signal or not (an episode
    neither signal retrieved counts as their last candidate; `codeoid.memory.turns` scores a turn's other
    episodes so)."""

    def __init__(self, lexical: LexicalCandidates, dense: DenseCandidates, *, query: str, weights: RecallWeights,
                 now: float | None = None, when: Resolved | None = None) -> None:
        self.lexical, self.dense, self.weights, self.when = lexical, dense, weights, when
        self.now = time.time() if now is None else now
        self.asked = actions.asked(query)
        self._paths = query_paths(query)
        self._days = query_dates(query) if weights.date else set()
        self._borrowed: dict[int, float] = {}

    def fuse(self, *, created_at: Mapping[int, float], paths: Mapping[int, Sequence[str]],
             tags: Mapping[int, frozenset[str]], neighbours: Mapping[int, Sequence[int]] | None = None,
             sessions: Mapping[int, str] | None = None, extra: Sequence[int] = ()) -> list[tuple[int, float]]:
        """The candidates of both signals, best first. A signal weighted 0 brings no candidates and no score
        (`dense=0` is BM25 alone). `neighbours` are each dense candidate's session neighbours that recall may
        return: the tool calls among them become candidates too, scored with the meaning they borrow
        (`weights.neighbours`); none are passed, none are borrowed. `tags` are the candidates'
        (`actions.tags_of`): the role bonus goes to those that fit what the query names. `extra` are ranked too
        though neither signal found them (what the question's time words point at); `sessions` are the session
        of each, which those words may name."""
        weights = self.weights
        candidates: dict[int, None] = {}
        if weights.bm25:
            candidates.update(dict.fromkeys(self.lexical.scores))
        if weights.dense:
            candidates.update(dict.fromkeys(self.dense.cosines))
            if weights.neighbours and neighbours:
                candidates.update(dict.fromkeys(self.lend_meaning(neighbours, tags)))
        candidates.update(dict.fromkeys(extra))
        sessions = sessions or {}

        def scored() -> list[tuple[int, float]]:
            return [(episode_id, self.score(episode_id, created_at.get(episode_id), paths.get(episode_id, ()),
                                            tags.get(episode_id, frozenset()), sessions.get(episode_id)))
                    for episode_id in candidates]

        when = self.when
        if when is not None and when.order_by_topic and weights.order_margin and weights.time:
            self.when = replace(when, ordered=dict.fromkeys(when.ordered, 0.0))  # the order counting for nothing
            self.when = self._ordered_among_relevant(when, scored(), created_at, tags, sessions)
        return sorted(scored(), key=lambda item: (-item[1], -item[0]))

    def _ordered_among_relevant(self, when: Resolved, unordered: Sequence[tuple[int, float]],
                                created_at: Mapping[int, float], tags: Mapping[int, frozenset[str]],
                                sessions: Mapping[int, str]) -> Resolved:
        """`when` with its first or last episodes chosen among the candidates that fit the action named and score
        (`unordered`: with the order counting for nothing) within `order_margin` of the best of them: the first time
        we ran *the linter*, not the first run of anything. None fit: `when` as the store's ends gave it."""
        fitting = [(episode_id, score) for episode_id, score in unordered
                   if episode_id in created_at
                   and actions.fits_in_full(self.asked, tags.get(episode_id, frozenset()))
                   and when.within_pointers(created_at[episode_id], sessions.get(episode_id))]
        if not fitting:
            return when
        best = max(score for _, score in fitting)
        near = sorted((episode_id for episode_id, score in fitting if score >= best - self.weights.order_margin),
                      key=lambda episode_id: (created_at[episode_id], episode_id),
                      reverse=when.order_by_topic == "last")
        return replace(when, ordered=when.picked(near) or when.ordered)

    def lend_meaning(self, neighbours: Mapping[int, Sequence[int]], tags: Mapping[int, frozenset[str]]) -> list[int]:
        """Let the tool calls among each dense candidate's `neighbours` borrow its meaning score; return them."""
        for episode_id, near in neighbours.items():
            lent = self.weights.neighbours * self.dense.z(episode_id)
            for other in near:
                if tags.get(other, frozenset()) & actions.TOOL_ROLES:
                    self._borrowed[other] = max(self._borrowed.get(other, lent), lent)
        return list(self._borrowed)

    def score(self, episode_id: int, created_at: float | None, paths: Sequence[str], tags: frozenset[str],
              session_id: str | None = None) -> float:
        weights = self.weights
        score = 0.0
        if weights.bm25:
            z = self.lexical.z(episode_id)
            score += weights.bm25 * (math.copysign(math.sqrt(abs(z)), z) if weights.bm25_root else z)
        if weights.dense:
            score += weights.dense * max(self.dense.z(episode_id), self._borrowed.get(episode_id, -math.inf))
        stamp = self.now if created_at is None else created_at
        age_days = max(0.0, self.now - stamp) / SECONDS_PER_DAY
        score += weights.recency * 0.5 ** (age_days / max(weights.recency_half_life_days, 1e-6))
        score += weights.path * path_overlap(self._paths, paths)
        score += weights.role * self.asked.strength * actions.fit_or_explains(self.asked, tags)
        score += weights.date * on_named_day(stamp, self._days)
        if self.when is not None and weights.time:
            score += weights.time * self.when.bonus(episode_id, stamp, session_id)
        return score
