"""The episode store: SQLite in WAL mode, the single source of truth for everything codeoid keeps.

Import the submodules directly (`codeoid.store.db`, `codeoid.store.episodes`, ...): this file stays empty
so a hook pays only for what it uses.
"""
