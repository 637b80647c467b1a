"""This store's own id: what its chunks in Chroma are qualified by.

Episode ids count up in each store (each machine's data dir) from 1, so they say nothing outside it. A team's
shared Chroma server holds several stores' chunks in one collection per workspace; the store id keeps them
apart. It is random, made once by migration m007, and never changes for the life of the store.
"""

from __future__ import annotations

import sqlite3


def store_id(db: sqlite3.Connection) -> str:
    return str(db.execute("SELECT store_id FROM store_identity").fetchone()[0])
