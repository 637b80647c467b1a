"""The vector indexer end to end: episodes/s through redaction, chunking, embedding and upsert, and how soon a
new episode is indexed after its commit (the wake-up latency of `Indexer.run`).

A temporary data dir with its own local Chroma server; a store filled through the capture API with a mix of
40% prompts (one line), 30% assistant messages (about ten lines), 30% tool results (`--tool-lines` lines of
test-runner output). CPU time is the process's, so CPU/wall shows whether the one-core bound held.

    .venv/bin/python benchmarks/indexer.py [--episodes 300] [--tool-lines 120] [--wakeups 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--tool-lines", type=int, default=120)
    parser.add_argument("--wakeups", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["CODEOID_HOME"] = os.path.join(scratch, "home")
        from pathlib import Path

        from test_mcp_server import Memory, git_project

        from codeoid.memory import chroma_server
        from codeoid.memory.indexer import Indexer, IndexerSettings
        from codeoid.store import db as store_db
        from codeoid.store import vector_progress

        memory = Memory(Path(os.environ["CODEOID_HOME"]), git_project(Path(scratch) / "project"))
        try:
            owner = memory.backing("bench")
            for n in range(args.episodes):
                if n % 10 < 4:
                    memory.user(owner, f"Why does test_case_{n} fail only when the cache is warm?")
                elif n % 10 < 7:
                    memory.assistant(owner, "\n".join(f"Step {k}: the cache key for request {n} omits the locale, "
                                                      "so a warm entry answers for the wrong one." for k in range(10)))
                else:
                    memory.bash(owner, f"pytest -k case_{n}", "\n".join(
                        f"tests/test_cache.py::test_case_{n}_{k} PASSED [{k}%]" for k in range(args.tool_lines)))
            chroma_server.ensure_server()
            indexer = Indexer(memory.db, settings=IndexerSettings())
            indexer.embedder.embed(["warm up"])
            wall, cpu = time.perf_counter(), time.process_time()
            indexer.catch_up()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"indexed {args.episodes} episodes in {wall:.1f} s: {args.episodes / wall:.1f} episodes/s, "
                  f"CPU/wall {cpu / wall:.2f}")

            stop = threading.Event()
            def run_indexer() -> None:
                connection = store_db.connect()
                try:
                    Indexer(connection).run(stop)
                finally:
                    connection.close()

            runner = threading.Thread(target=run_indexer, daemon=True)
            runner.start()
            delays = []
            for n in range(args.wakeups):
                memory.user(owner, f"wake-up probe {n}")
                committed = time.perf_counter()
                latest = vector_progress.progress(memory.db).latest
                while vector_progress.progress(memory.db).indexed_upto < latest:
                    time.sleep(0.01)
                delays.append(time.perf_counter() - committed)
                time.sleep(0.3)
            stop.set()
            runner.join(timeout=10)
            print(f"new episode indexed after its commit: median {statistics.median(delays):.2f} s, "
                  f"max {max(delays):.2f} s over {len(delays)}")
        finally:
            chroma_server.stop_server()


if __name__ == "__main__":
    main()
