"""Rotation instead of compaction: when a backing Claude Code window fills up, `codeoid run` swaps it for a fresh
one that carries a small seed, and the model pages exact history back through the memory tools.

The supervisor (`supervisor.py`) and the hooks never call each other: they share a few small files in a run
directory under the data dir (`rundir.py`), which the supervisor watches. Everything a hook does here reads those
files and returns at once, so no hook ever waits on the supervisor.
"""
