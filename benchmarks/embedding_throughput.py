"""Embedding throughput on one core, and vector query latency on the local Chroma server at 10k vectors.

Throughput: the bundled MiniLM (one inference thread) embeds a deterministic corpus built from the running
Python's standard library sources, shaped as a coding session would produce it. Tokens are the word pieces the
model actually reads (after truncation at 256), so tokens/s is comparable across corpora; CPU/wall shows the
one-core bound held, and tokens per CPU-second is the figure to trust on a machine busy with other work (wall
time then includes waiting).
Episodes/s is for this mix, each episode cut into chunks of at most 200 word pieces by lines:
  40% user prompts (one to three lines of comment or docstring prose),
  30% assistant messages (five to twenty lines of such prose),
  30% tool results (a 40-to-400-line window of a source file, as a Read returns it).

Latency: `VectorIndex.query` (query embedding + HTTP + HNSW) and the search alone (a precomputed query vector),
against a fresh local server in a temporary data dir holding `--vectors` chunks: a few hundred embedded for
real, the rest synthetic unit vectors (allowed for scale by issue 4; HNSW cost does not depend on where the
vectors came from).

    .venv/bin/python benchmarks/embedding_throughput.py [--episodes 300] [--vectors 10000] [--queries 200]
        [--batch-tokens 256,512,2048] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from codeoid.memory.embedding import MiniLMEmbedder

STDLIB = Path(os.__file__).parent
CHUNK_TOKENS = 200


def corpus_lines() -> tuple[list[str], list[list[str]]]:
    """Prose lines (comments and docstring lines) and the line lists of source files, from the running Python's
    standard library: real code and prose that stay the same for a given Python version, unlike this repo."""
    prose: list[str] = []
    sources: list[list[str]] = []
    for path in sorted(STDLIB.glob("*.py")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        sources.append(lines)
        prose += [line.strip().strip('"#').strip() for line in lines if line.strip().startswith(("#", '"""'))]
    return [line for line in prose if len(line.split()) > 3], sources


def episodes(count: int, seed: int = 4) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    prose, sources = corpus_lines()
    made = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.4:
            made.append(("user", "\n".join(rng.choices(prose, k=rng.randint(1, 3)))))
        elif roll < 0.7:
            made.append(("assistant", "\n".join(rng.choices(prose, k=rng.randint(5, 20)))))
        else:
            lines = rng.choice([s for s in sources if len(s) >= 40])
            start = rng.randrange(0, max(1, len(lines) - 40))
            made.append(("tool", "\n".join(lines[start:start + rng.randint(40, 400)])))
    return made


def chunks_of(text: str, embedder: MiniLMEmbedder) -> list[str]:
    """Consecutive lines up to CHUNK_TOKENS word pieces; a longer single line is left to the model's truncation."""
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for line in text.splitlines() or [""]:
        cost = embedder.count_tokens(line) - 2
        if current and used + cost > CHUNK_TOKENS:
            chunks.append("\n".join(current))
            current, used = [], 0
        current.append(line)
        used += cost
    chunks.append("\n".join(current))
    return chunks


def throughput(embedder: MiniLMEmbedder, count: int) -> dict[str, float]:
    made = episodes(count)
    chunks = [chunk for _, text in made for chunk in chunks_of(text, embedder)]
    tokens = sum(min(embedder.count_tokens(chunk), embedder.max_tokens) for chunk in chunks)
    embedder.embed(["warm up"])
    cpu_before, start = os.times(), time.perf_counter()
    embedder.embed(chunks)
    wall = time.perf_counter() - start
    cpu_after = os.times()
    cpu = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
    return {"episodes": len(made), "chunks": len(chunks), "tokens": tokens, "seconds": wall,
            "tokens_per_s": tokens / wall, "tokens_per_cpu_s": tokens / cpu, "episodes_per_s": len(made) / wall,
            "cpu_per_wall": cpu / wall}


def query_latency(vectors: int, queries: int) -> dict[str, float]:
    """p50/p95 in ms, with a private data dir and server that are stopped afterwards."""
    with tempfile.TemporaryDirectory() as home:
        os.environ["CODEOID_HOME"] = home
        os.environ.pop("CODEOID_CHROMA_URL", None)
        from codeoid.memory import chroma_rest, chroma_server
        from codeoid.memory.vector_index import Chunk, VectorIndex, collection_name

        try:
            workspace = "github.com/example/benchmark"
            index = VectorIndex(store="benchmark")
            embedder = MiniLMEmbedder()
            made = episodes(300, seed=9)
            real = [Chunk(i, n, 1, 1, chunk) for i, (_, text) in enumerate(made)
                    for n, chunk in enumerate(chunks_of(text, embedder))]
            index.add_chunks(workspace, real)
            target = chroma_server.endpoint()
            collection = chroma_rest.open_collection(target, collection_name(workspace, with_text=False))
            assert collection is not None
            rng = np.random.default_rng(5)
            for start in range(len(real), vectors, 1000):
                size = min(1000, vectors - start)
                block = rng.standard_normal((size, embedder.dimension)).astype(np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                ids = range(100_000 + start, 100_000 + start + size)
                chroma_rest.upsert(
                    target, collection, ids=[f"benchmark:{i}:0" for i in ids], embeddings=block.tolist(),
                    documents=None,
                    metadatas=[{"store": "benchmark", "episode_id": i, "chunk": 0, "start_line": 1, "end_line": 1}
                               for i in ids],
                )
            assert index.count(workspace) == max(vectors, len(real))
            questions = [text.splitlines()[0][:200] for _, text in episodes(queries, seed=11)]
            index.query(questions[0], workspace, n=10)
            full, search = [], []
            for question in questions:
                start_time = time.perf_counter()
                index.query(question, workspace, n=10)
                full.append((time.perf_counter() - start_time) * 1000)
                vector = embedder.embed([question])
                start_time = time.perf_counter()
                chroma_rest.nearest(target, collection, vector[0].tolist(), 10)
                search.append((time.perf_counter() - start_time) * 1000)
        finally:
            chroma_server.stop_server()
    return {"vectors": vectors, "queries": queries, "query_p50_ms": percentile(full, 50),
            "query_p95_ms": percentile(full, 95), "search_p50_ms": percentile(search, 50),
            "search_p95_ms": percentile(search, 95)}


def percentile(values: list[float], q: int) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--vectors", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch-tokens", default=str(MiniLMEmbedder.BATCH_TOKENS),
                        help="comma-separated padded-token budgets per inference run to compare")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    # A timeout's SIGTERM then still runs the `finally` that stops the benchmark's private Chroma server.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))

    rows = []
    for budget in (int(b) for b in args.batch_tokens.split(",")):
        embedder = MiniLMEmbedder()
        embedder.BATCH_TOKENS = budget
        rows.append((budget, throughput(embedder, args.episodes)))
    latency = query_latency(args.vectors, args.queries)

    if args.markdown:
        print("| batch tokens | episodes | chunks | tokens | tokens/s (1 core) | tokens per CPU-second | episodes/s "
              "| CPU/wall |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for budget, r in rows:
            print(f"| {budget} | {r['episodes']:.0f} | {r['chunks']:.0f} | {r['tokens']:.0f} | "
                  f"{r['tokens_per_s']:,.0f} | {r['tokens_per_cpu_s']:,.0f} | {r['episodes_per_s']:.1f} | "
                  f"{r['cpu_per_wall']:.2f} |")
        print()
        print("| vectors | queries | recall query p50 | p95 | search alone p50 | p95 |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        print(f"| {latency['vectors']:,.0f} | {latency['queries']:.0f} | {latency['query_p50_ms']:.1f} ms | "
              f"{latency['query_p95_ms']:.1f} ms | {latency['search_p50_ms']:.1f} ms | "
              f"{latency['search_p95_ms']:.1f} ms |")
    else:
        for budget, r in rows:
            print(f"batch_tokens={budget}", " ".join(f"{k}={v:.2f}" for k, v in r.items()))
        print(" ".join(f"{k}={v:.2f}" for k, v in latency.items()))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs visible, one inference thread", file=sys.stderr)


if __name__ == "__main__":
    main()
