"""The `codeoid` command as a user times it: a fresh process per run, against a 10k-episode store with vectors.

The store and its Chroma collection are filled as `recall_latency.py` fills them (real source lines arranged as
sessions, one synthetic unit vector per episode); the query is embedded by the real model inside `codeoid search`.
Reported, as medians and p95 over the runs: `python -c pass` (the floor), `codeoid --version`, `codeoid statusline`,
and `codeoid search` warm (the Chroma server already running, files in the page cache) and cold (the first search
after the Chroma server stopped, which starts it), plus `codeoid search` with `CODEOID_VECTOR=off` (BM25 alone).

    .venv/bin/python benchmarks/cli_latency.py [--episodes 10000] [--runs 20] [--markdown] [--codeoid PATH]

`--codeoid` times another installation's `codeoid` (an older version, say) against the same store.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

from recall_latency import fill_store, fill_vectors, source_lines  # noqa: E402

BIN = Path(sys.executable).parent
QUERIES = ("flaky parser timeout", "why does the config error", "retry the failing test", "httpx client pool")


def timed(command: list[str], *, cwd: Path, env: dict[str, str], stdin: bytes = b"") -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, input=stdin, capture_output=True, timeout=120)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed: {done.stderr.decode()[-2000:]}")
    return elapsed


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    return f"median {statistics.median(ordered):.0f} ms, p95 {ordered[int(0.95 * (len(ordered) - 1))]:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--codeoid", default=str(BIN / "codeoid"), help="the codeoid executable to time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["CODEOID_HOME"] = os.path.join(scratch, "home")
        os.environ.pop("CODEOID_CHROMA_URL", None)
        from codeoid.memory import chroma_server

        try:
            memory, newest = fill_store(args.episodes, source_lines())
            fill_vectors(memory, newest)
            memory.db.close()
            env = {**os.environ, "CODEOID_VECTOR": "on"}
            cwd = memory.project
            codeoid = args.codeoid
            rows: dict[str, list[float]] = {name: [] for name in (
                "python -c pass", "codeoid --version", "codeoid statusline", "codeoid search (warm)",
                "codeoid search (cold: Chroma server stopped)", "codeoid search, CODEOID_VECTOR=off")}
            timed([codeoid, "search", QUERIES[0]], cwd=cwd, env=env)  # the server up, the model file cached
            for run in range(args.runs):
                query = QUERIES[run % len(QUERIES)]
                rows["python -c pass"].append(timed([sys.executable, "-c", "pass"], cwd=cwd, env=env))
                rows["codeoid --version"].append(timed([codeoid, "--version"], cwd=cwd, env=env))
                rows["codeoid statusline"].append(timed([codeoid, "statusline"], cwd=cwd, env=env, stdin=b"{}"))
                rows["codeoid search (warm)"].append(timed([codeoid, "search", query], cwd=cwd, env=env))
                rows["codeoid search, CODEOID_VECTOR=off"].append(
                    timed([codeoid, "search", query], cwd=cwd, env={**env, "CODEOID_VECTOR": "off"}))
            for run in range(max(3, args.runs // 5)):
                chroma_server.stop_server()
                rows["codeoid search (cold: Chroma server stopped)"].append(
                    timed([codeoid, "search", QUERIES[run % len(QUERIES)]], cwd=cwd, env=env))
        finally:
            chroma_server.stop_server()
    for name, times in rows.items():
        if args.markdown:
            print(f"| {name}, {args.episodes:,} episodes | {summary(times)} |")
        else:
            print(f"{name}: {summary(times)} ({len(times)} runs)")


if __name__ == "__main__":
    main()
