"""The vector indexer end to end: episodes/s through redaction, chunking, embedding and upsert, and how soon a
new episode is indexed after its commit (the wake-up latency of `Indexer.run`).

A temporary data dir with its own local Chroma server; a store filled through the capture API with a mix of
40% prompts (one line), 30% assistant messages (about ten lines), 30% tool results (`--tool-lines` lines of
test-runner output). With `--cut-kb N` each tool result is a compressed run of N KB whose middle compression cut
(the raw output stored, its head and tail kept), so the indexer also embeds the cut lines (`raw_chunks` of them at
most). CPU time is the process's, so CPU/wall shows whether the one-core bound held.

    .venv/bin/python benchmarks/indexer.py [--episodes 300] [--tool-lines 120] [--cut-kb 0] [--wakeups 10]
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
    parser.add_argument("--cut-kb", type=int, default=0, help="each tool result's raw output, compressed (KB)")
    parser.add_argument("--wakeups", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["CODEOID_HOME"] = os.path.join(scratch, "home")
        from pathlib import Path

        from test_mcp_server import Memory, git_project

        from codeoid.memory import chroma_server
        from codeoid.memory.indexer import Indexer, IndexerSettings
        from codeoid.store import db as store_db
        from codeoid.store import raw, vector_progress

        memory = Memory(Path(os.environ["CODEOID_HOME"]), git_project(Path(scratch) / "project"))
        try:
            owner = memory.backing("bench")
            for n in range(args.episodes):
                if n % 10 < 4:
                    memory.user(owner, f"Why does test_case_{n} fail only when the cache is warm?")
                elif n % 10 < 7:
                    memory.assistant(owner, "\n".join(f"Step {k}: the cache key for request {n} omits the locale, "
                                                      "so a warm entry answers for the wrong one." for k in range(10)))
                elif args.cut_kb:
                    lines = [f"tests/test_cache.py::test_case_{n}_{k} PASSED [{k % 100}%] locale {k * 7 % 13}"
                             for k in range(args.cut_kb * 1024 // 56)]
                    raw_id = f"raw-toolu_bench_{n}"
                    raw.store_raw_output(memory.db, raw_id, command=f"pytest -k case_{n}",
                                         stdout=("\n".join(lines) + "\n").encode(), exit_status=0,
                                         tool_use_id=f"toolu_bench_{n}", session_id=owner.session_id,
                                         workspace_id=owner.workspace_id)
                    kept = [*lines[:10], f"[codeoid] {len(lines) - 20} lines cut (passed tests), raw lines "
                                         f"11-{len(lines) - 10}", *lines[-10:]]
                    memory.bash(owner, f"pytest -k case_{n}", "\n".join(kept), raw_output_id=raw_id)
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
