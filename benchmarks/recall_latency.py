"""Recall through MCP at scale: the real `codeoid-mcp` process over the SDK's stdio client, a store of 10k and
100k episodes, and a Chroma collection with one vector per episode.

Episode text is real source code (lines of the Python packages installed beside codeoid) arranged as a coding
session stores it: prompts, answers, and tool results of 40 lines, so BM25 ranks over realistic vocabulary and
lengths. Vectors for the bulk are synthetic unit vectors (embedding 100k episodes would take hours on this VM and
says nothing about query latency); the query is embedded by the real model inside the server, as in use.
Reported: time to the first `tools/list`, recall round-trip p50/p95 (fused: BM25 + vector), the server's RSS
after the queries, the memory service's (which answers the server's calls), and the Chroma server's RSS.

    .venv/bin/python benchmarks/recall_latency.py [--episodes 10000,100000] [--queries 200] [--markdown]
        [--keep DIR]

`--keep DIR` builds each store (and its Chroma data) under DIR once and reuses it on later runs, so the timing can
be repeated when the machine is quiet without the ten minutes of filling. `--raw-share 0.1` makes that share of the
tool results compressed Bash outputs, each with a raw output of `RAW_LINES` lines that compression cut to its first
`TOOL_LINES` (what recall then also searches and may show), kept apart from the plain stores.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import psutil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

SOURCE_PACKAGES = ("click", "httpx", "mcp", "pydantic", "chromadb")
TOOL_LINES = 40
# What `--time-words` adds: a day, an order of an action, an event's side, a session (`codeoid.memory.when`).
TIME_WORDS = ("yesterday afternoon", "in the last commit", "right after the merge", "in the previous session",
              "three days ago", "in the first failing test run", "before the release", "last week")
RAW_LINES = 400
BATCH = 2000


def source_lines(limit: int = 400_000) -> list[str]:
    """Non-blank lines of real Python source, in a fixed order."""
    site = Path(sysconfig.get_paths()["purelib"])
    lines: list[str] = []
    for package in SOURCE_PACKAGES:
        for path in sorted((site / package).rglob("*.py")):
            lines += [line.rstrip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
            if len(lines) >= limit:
                return lines
    return lines


def fill_store(count: int, lines: list[str], raw_share: float = 0.0) -> tuple[Any, int]:
    """A store of `count` episodes in one workspace (40% prompts, 30% answers, 30% 40-line tool results, `raw_share`
    of them compressed from a longer raw output)."""
    from test_mcp_server import Memory, git_project

    from codeoid.store import queries

    home = Path(os.environ["CODEOID_HOME"])
    memory = Memory(home, git_project(home.parent / "project"))
    add_filler(memory, range(count), lines, when=lambda _n: memory.now(), raw_share=raw_share)
    began = time.perf_counter()
    while queries.catch_up_fts(memory.db, batch=5000):
        pass
    print(f"FTS and neighbour index of {count:,} episodes built in {time.perf_counter() - began:.1f} s",
          file=sys.stderr)
    return memory, memory.db.execute("SELECT max(id) FROM episodes").fetchone()[0]


def add_filler(memory: Any, numbers: range, lines: list[str], *, when: Callable[[int], float],
               raw_share: float = 0.0) -> None:
    """Episodes numbered `numbers` in one backing session of `memory`'s workspace (40% prompts, 30% answers, 30%
    40-line tool results of `lines`, `raw_share` of them the compressed view of a `RAW_LINES`-line raw output),
    episode n stored at `when(n)`."""
    from codeoid.store import capture, raw
    from codeoid.store import db as store_db

    rng = random.Random(7)
    owner = memory.backing("bench")
    for start in range(numbers.start, numbers.stop, BATCH):
        with store_db.write_transaction(memory.db):
            for n in range(start, min(numbers.stop, start + BATCH)):
                at = rng.randrange(len(lines) - TOOL_LINES)
                now = when(n)
                if n % 10 < 4:
                    capture.add_user_turn(memory.db, owner, prompt=f"why does {lines[at].strip()[:80]} fail?",
                                          prompt_id=f"p{n}", origin="user", now=now)
                elif n % 10 < 7:
                    capture.add_assistant_message(memory.db, owner, message_id=f"m{n}",
                                                  text="\n".join(lines[at:at + 5]), now=now)
                elif (n * 7919) % 1000 < raw_share * 1000:
                    first = n * 31 % (len(lines) - RAW_LINES)
                    command = f"cat src/module_{n % 97}.py"
                    raw.insert_raw_output(memory.db, f"raw-t{n}", command=command, cwd=None, tool_use_id=f"t{n}",
                                          stdout="\n".join(lines[first:first + RAW_LINES]).encode() + b"\n",
                                          session_id=None, workspace_id=None, exit_status=0, rule="cat",
                                          shown_size=None)
                    capture.add_tool_call(
                        memory.db, owner, tool_name="Bash", tool_use_id=f"t{n}", tool_input={"command": command},
                        response={"stdout": "\n".join([*lines[first:first + TOOL_LINES], f"[codeoid] "
                                                        f"{RAW_LINES - TOOL_LINES} lines cut, raw lines "
                                                        f"{TOOL_LINES + 1}-{RAW_LINES}"]),
                                  "stderr": "", "interrupted": False},
                        error=None, agent_id=None, now=now, raw_output_id=f"raw-t{n}",
                    )
                else:
                    capture.add_tool_call(
                        memory.db, owner, tool_name="Bash", tool_use_id=f"t{n}",
                        tool_input={"command": f"sed -n {at},{at + TOOL_LINES}p src/module_{n % 97}.py"},
                        response={"stdout": "\n".join(lines[at:at + TOOL_LINES]), "stderr": "",
                                  "interrupted": False},
                        error=None, agent_id=None, now=now,
                    )


def kept_store(place: Path) -> Any:
    """The store a `--keep` run built under `place`, opened as `fill_store` returns it."""
    from test_mcp_server import Memory

    return Memory(place / "home", place / "project")


def fill_vectors(memory: Any, newest: int) -> None:
    """One unit vector per episode in the workspace's collection, and the watermark that says they are there."""
    from codeoid.memory import chroma_rest, chroma_server, corpus_stats
    from codeoid.memory.embedding import default_embedder
    from codeoid.memory.vector_index import Chunk, VectorIndex, collection_name, workspace_index_id
    from codeoid.store import queries
    from codeoid.store.identity import store_id

    workspace_id = queries.workspace_id_for(memory.db, str(memory.project))
    workspace = workspace_index_id(*queries.workspace_ids(memory.db, workspace_id))
    store = store_id(memory.db)
    VectorIndex(store=store).add_chunks(workspace, [Chunk(1, 0, 1, 1, "a first real chunk creates the collection")])
    target = chroma_server.endpoint()
    collection = chroma_rest.open_collection(target, collection_name(workspace, with_text=False))
    assert collection is not None
    dimension = default_embedder().dimension
    rng = np.random.default_rng(5)
    for start in range(1, newest + 1, 1000):
        chroma_server.touch_lease()  # a raw client, not codeoid's: a slow fill must not outlast the idle stop
        ids = range(start, min(newest, start + 999) + 1)
        block = rng.standard_normal((len(ids), dimension)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        chroma_rest.upsert(target, collection, ids=[f"{store}:{i}:0" for i in ids], embeddings=block.tolist(),
                           documents=None,
                           metadatas=[{"store": store, "episode_id": i, "chunk": 0, "start_line": 1, "end_line": 1}
                                      for i in ids])
        corpus_stats.add(memory.db, workspace, block.tolist())  # as the indexer keeps them
    memory.db.execute("UPDATE vector_progress SET indexed_upto = ?, claimed_upto = ?", (newest, newest))


def _answering_processes() -> list[psutil.Process]:
    """The processes that answer a recall: the thin server, the memory service and the Chroma server (this data
    dir's), whose CPU time per recall does not depend on how loaded the machine is, as wall time does."""
    home = os.environ["CODEOID_HOME"]
    found = []
    for process in psutil.process_iter(["cmdline", "environ"]):
        try:
            line = " ".join(process.info["cmdline"] or [])
            if ("codeoid-mcp" in line and process.ppid() == os.getpid()) or (
                    home in line and ("codeoid.service.daemon" in line or "chroma" in line)):
                found.append(process)
        except psutil.Error:
            continue
    return found


def _cpu(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
    except psutil.Error:
        return 0.0
    return float(times.user + times.system)


def measure(memory: Any, questions: list[str]) -> dict[str, float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from test_mcp_server import SERVER

    from codeoid.memory import chroma_server

    async def session() -> dict[str, float]:
        params = StdioServerParameters(command=SERVER, cwd=str(memory.project),
                                       env={**os.environ, "CLAUDE_PROJECT_DIR": str(memory.project)})
        started = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await client.list_tools()
            first_list = time.perf_counter() - started
            answer = await client.call_tool("recall", {"query": questions[0]})  # loads the model
            text = "\n".join(getattr(block, "text", "") for block in answer.content)
            assert "BM25 + semantic" in text or "semantic" in text, text[:300]
            workers = _answering_processes()
            cpu_before = sum(_cpu(process) for process in workers)
            times = []
            for question in questions:
                begin = time.perf_counter()
                await client.call_tool("recall", {"query": question})
                times.append((time.perf_counter() - begin) * 1000)
            cpu_ms = (sum(_cpu(process) for process in workers) - cpu_before) * 1000 / len(questions)
            server = next(p for p in psutil.Process().children(recursive=True)
                          if "codeoid-mcp" in " ".join(p.cmdline()))
            rss = server.memory_info().rss
            service_rss = sum(process.memory_info().rss for process in psutil.process_iter(["cmdline"])
                              if "codeoid.service.daemon" in (process.info["cmdline"] or [])
                              and any(os.environ["CODEOID_HOME"] in part for part in process.info["cmdline"]))
        chroma = chroma_server.running_server()
        chroma_rss = psutil.Process(chroma.chroma_pid).memory_info().rss if chroma else 0
        return {"first_list_s": first_list, "cpu_ms": cpu_ms, "p50_ms": float(np.percentile(times, 50)),
                "p95_ms": float(np.percentile(times, 95)), "server_rss_mb": rss / 2**20,
                "service_rss_mb": service_rss / 2**20, "chroma_rss_mb": chroma_rss / 2**20}

    return anyio.run(session)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--keep", type=Path, help="build the stores under this folder once and reuse them")
    parser.add_argument("--time-words", action="store_true",
                        help="every fourth question names a time or an order (yesterday, the last commit, ...)")
    parser.add_argument("--raw-share", type=float, default=0.0,
                        help="this share of tool results are compressed, their raw outputs ten times as long")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    lines = source_lines()
    rng = random.Random(11)
    questions = [" ".join(rng.sample(lines[rng.randrange(len(lines))].split() or ["retry"], 1) +
                          rng.sample(("timeout", "failing test", "the parser", "config error", "why"), 2))
                 for _ in range(args.queries)]
    if args.time_words:  # every fourth asks about when: what recall resolves against the store before it ranks
        questions = [f"{question} {TIME_WORDS[n // 4 % len(TIME_WORDS)]}" if n % 4 == 3 else question
                     for n, question in enumerate(questions)]
    rows = []
    for count in (int(n) for n in args.episodes.split(",")):
        with tempfile.TemporaryDirectory() as scratch:
            name = f"{count}-raw{args.raw_share:g}" if args.raw_share else str(count)
            place = args.keep / name if args.keep else Path(scratch)
            os.environ["CODEOID_HOME"] = str(place / "home")
            os.environ.pop("CODEOID_CHROMA_URL", None)
            from codeoid.memory import chroma_server

            built = place / "built"
            try:
                began = time.perf_counter()
                if built.exists():
                    memory = kept_store(place)
                else:
                    memory, newest = fill_store(count, lines, args.raw_share)
                    fill_vectors(memory, newest)
                    built.touch()
                print(f"{count:,} episodes stored and vectors loaded in {time.perf_counter() - began:.0f} s",
                      file=sys.stderr)
                rows.append((count, measure(memory, questions)))
                memory.db.close()
            finally:
                from codeoid.service import lifecycle

                lifecycle.stop_service()
                chroma_server.stop_server()
    for count, row in rows:
        if args.markdown:
            print(f"| recall through MCP at {count:,} episodes (fused) | p50 {row['p50_ms']:.1f} ms, "
                  f"p95 {row['p95_ms']:.1f} ms, load {os.getloadavg()[0]:.1f}; CPU {row['cpu_ms']:.1f} ms a recall "
                  "(server, service and Chroma) |")
            print(f"| `codeoid-mcp` RSS / memory service RSS / chroma server RSS at {count:,} | "
                  f"{row['server_rss_mb']:.0f} MB / {row['service_rss_mb']:.0f} MB / {row['chroma_rss_mb']:.0f} MB |")
            print(f"| first `tools/list` after spawn ({count:,} episodes) | {row['first_list_s']:.2f} s |")
        else:
            print(count, {key: round(value, 2) for key, value in row.items()})


if __name__ == "__main__":
    main()
