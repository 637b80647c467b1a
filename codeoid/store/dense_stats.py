"""The running sums behind the vector index's corpus statistics (table `dense_stats`, migration m010).

Recall standardises a cosine by the corpus it came from (`codeoid.memory.corpus_stats`): that needs the mean
embedding and the covariance of one collection, which the indexer keeps current by adding each batch's
vectors here. The store only keeps the bytes (float64, native order); the arithmetic lives with numpy in the
memory package.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from codeoid.store.db import write_transaction


class Sums(NamedTuple):
    dimension: int
    vectors: int  # how many were added
    total: bytes  # `dimension` float64
    outer_total: bytes  # `dimension * dimension` float64, row-major


def load(db: sqlite3.Connection, collection: str) -> Sums | None:
    row = db.execute("SELECT dimension, count, total, outer_total FROM dense_stats WHERE collection = ?",
                     (collection,)).fetchone()
    return Sums(int(row[0]), int(row[1]), bytes(row[2]), bytes(row[3])) if row else None


def vectors(db: sqlite3.Connection, collection: str) -> int | None:
    """How many vectors the collection's sums hold (what tells a cached copy is still current)."""
    row = db.execute("SELECT count FROM dense_stats WHERE collection = ?", (collection,)).fetchone()
    return int(row[0]) if row else None


def save(db: sqlite3.Connection, collection: str, sums: Sums) -> None:
    with write_transaction(db):
        db.execute("INSERT OR REPLACE INTO dense_stats VALUES (?, ?, ?, ?, ?)",
                   (collection, sums.dimension, sums.vectors, sums.total, sums.outer_total))
