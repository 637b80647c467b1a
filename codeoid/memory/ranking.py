"""Fusing BM25 and vector candidates into one ranking, with recency and path overlap, weights as settings.

Reciprocal rank fusion: each list contributes `weight / (k + rank)`, so the two signals need no common scale
(BM25 scores and cosine distances are not comparable, and their spread changes with every query). Recency
and path overlap are bonuses in units of a first-rank contribution, applied to candidates only: they reorder
what matched, they never make a match.

Settings come from the environment, `CODEOID_RECALL_<FIELD>` in upper case (e.g. `CODEOID_RECALL_DENSE=1.5`).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

_PATH_LIKE = re.compile(r"[\w.~\-]*/[\w.\-/]+|[\w\-]+\.[A-Za-z][\w]{0,7}\b")
SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class RecallWeights:
    # Tuned on the tuning half of benchmarks/retrieval (README, "Retrieval quality"). A small rrf_k keeps a
    # first rank in one signal worth more than middling ranks in both: with k=60, exact matches that only BM25
    # ranks first lost to agreement, and fused R@1 fell below BM25's own.
    bm25: float = 1.0
    dense: float = 0.75
    recency: float = 0.2  # a brand-new episode gains this fraction of a first rank
    recency_half_life_days: float = 14.0
    path: float = 1.0  # an episode touching every path the query names gains this fraction of a first rank
    rrf_k: float = 10.0
    candidates: int = 50  # taken from each signal before fusing

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
    first = 1.0 / (k + 1)
    for episode_id in scores:
        age_days = max(0.0, now - created_at.get(episode_id, now)) / SECONDS_PER_DAY
        bonus = weights.recency * 0.5 ** (age_days / max(weights.recency_half_life_days, 1e-6))
        bonus += weights.path * path_overlap(wanted, paths.get(episode_id, ()))
        scores[episode_id] += bonus * first
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))
