"""The mean and covariance of a collection's embeddings, kept incrementally, for standardising cosines.

A cosine of 0.45 is a strong match in one corpus and noise in another: short chat turns all lean one way, so
every query finds many near 0.5. Over the corpus's embeddings x (mean mu, covariance Sigma), a query q's cosines
q.x have mean q.mu and variance q' Sigma q, so z = (cos - q.mu) / sqrt(q' Sigma q) says how unusual a hit is for
this query in this corpus, on the same scale as a standardised BM25 score (`codeoid.memory.ranking`). The sums
live in the store (`codeoid.store.dense_stats`): the indexer adds every batch it writes; retracted episodes are
not taken out again (a handful among thousands barely moves a mean).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codeoid.store import dense_stats
from codeoid.store.db import store_path

if TYPE_CHECKING:
    import numpy as np

# Below this many vectors the covariance says little; recall then standardises over the retrieved cosines.
MIN_COUNT = 50


def add(db: sqlite3.Connection, collection: str, vectors: Sequence[Sequence[float]]) -> None:
    """Add embeddings just written to `collection` to its running sums."""
    import numpy as np

    if not vectors:
        return
    batch = np.asarray(vectors, dtype=np.float64)
    dimension = batch.shape[1]
    found = dense_stats.load(db, collection)
    if found is None or found.dimension != dimension:
        count, total, outer = 0, np.zeros(dimension), np.zeros((dimension, dimension))
    else:
        count = found.vectors
        total = np.frombuffer(found.total, dtype=np.float64).copy()
        outer = np.frombuffer(found.outer_total, dtype=np.float64).reshape(dimension, dimension).copy()
    total += batch.sum(axis=0)
    outer += batch.T @ batch
    dense_stats.save(db, collection, dense_stats.Sums(dimension, count + len(batch), total.tobytes(),
                                                      outer.tobytes()))


@dataclass(frozen=True)
class CorpusStats:
    count: int
    mean: np.ndarray
    covariance: np.ndarray

    def standardiser(self, query: Sequence[float]) -> tuple[float, float]:
        """(q.mu, sqrt(q' Sigma q)) for a query vector: a cosine c becomes (c - first) / second."""
        import numpy as np

        q = np.asarray(query, dtype=np.float64)
        spread = float(q @ self.covariance @ q)
        return float(q @ self.mean), max(spread, 1e-12) ** 0.5


_loaded: dict[tuple[str, str], CorpusStats] = {}


def load(db: sqlite3.Connection, collection: str) -> CorpusStats | None:
    """The collection's statistics, or None while it holds too few vectors to trust them. Kept in memory until
    the indexer adds to them (a query reads one integer, not the 1 MB of sums)."""
    import numpy as np

    count = dense_stats.vectors(db, collection)
    if count is None or count < MIN_COUNT:
        return None
    key = (store_path(db), collection)
    cached = _loaded.get(key)
    if cached is not None and cached.count == count:
        return cached
    found = dense_stats.load(db, collection)
    if found is None:
        return None
    n, d = found.vectors, found.dimension
    mean = np.frombuffer(found.total, dtype=np.float64) / n
    second = np.frombuffer(found.outer_total, dtype=np.float64).reshape(d, d) / n
    _loaded[key] = CorpusStats(n, mean, second - np.outer(mean, mean))
    return _loaded[key]
