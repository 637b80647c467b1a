"""The episode store: SQLite in WAL mode, the single source of truth for everything codeoid keeps.

Import the submodules directly (`codeoid.store.db`, `codeoid.store.episodes`, ...): this file stays empty
so a hook pays only for what it uses.

The bottom layer: it imports nothing from codeoid but itself and the shared helpers at the top of the package
(`paths`, `log`, `text`, `records`, `workspace`).
"""
