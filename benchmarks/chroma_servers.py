"""codeoid's local Chroma server against `chroma run`: start, fill, query latency and RSS, one after the other.

Both serve the same engine (chromadb's Rust code); codeoid's on a unix socket with a token
(`codeoid.memory.chroma_serve`), `chroma run` on a TCP port without authentication (what codeoid ran before issue
25). Each gets a fresh data dir, unit vectors in batches of 1,000 through `codeoid.memory.chroma_rest` (no text, as
the local server keeps none), then 200 nearest-20 queries; RSS is the server process's after them.

    .venv/bin/python benchmarks/chroma_servers.py [--vectors 5000] [--queries 200] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from codeoid.memory import chroma_rest
from codeoid.memory.chroma_http import Endpoint, heartbeat
from codeoid.memory.embedding import default_embedder


def start(which: str, root: Path) -> tuple[subprocess.Popen[bytes], Endpoint]:
    env = {**os.environ, "RUST_LOG": "warn"}
    if which == "chroma run":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        chroma = os.path.join(os.path.dirname(sys.executable), "chroma")
        return (subprocess.Popen([chroma, "run", "--host", "127.0.0.1", "--port", str(port), "--path",
                                  str(root / "chroma")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 env=env), Endpoint(f"http://127.0.0.1:{port}"))
    token = secrets.token_urlsafe(32)
    (root / "token").write_text(token)
    return (subprocess.Popen([sys.executable, "-m", "codeoid.memory.chroma_serve", "--socket", str(root / "sock"),
                              "--path", str(root / "chroma"), "--token-file", str(root / "token")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env),
            Endpoint(f"unix:{root / 'sock'}", token))


def measure(which: str, vectors: int, queries: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="codeoid-chroma-") as scratch:
        server, target = start(which, Path(scratch))
        try:
            began = time.monotonic()
            while not heartbeat(target, 1.0):
                if server.poll() is not None or time.monotonic() - began > 300:
                    raise SystemExit(f"{which} did not start")
                time.sleep(0.05)
            started = time.monotonic() - began
            collection = chroma_rest.create_collection(target, "benchmark-collection", default_embedder(),
                                                       {"benchmark": "chroma_servers"})
            rng = np.random.default_rng(5)
            began = time.monotonic()
            for first in range(0, vectors, 1000):
                ids = range(first, min(vectors, first + 1000))
                block = rng.standard_normal((len(ids), 384)).astype(np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                chroma_rest.upsert(target, collection, [f"s:{i}:0" for i in ids], block.tolist(), None,
                                   [{"store": "s", "episode_id": i, "chunk": 0, "start_line": 1, "end_line": 1}
                                    for i in ids])
            filled = time.monotonic() - began
            asked = rng.standard_normal((queries, 384))
            asked /= np.linalg.norm(asked, axis=1, keepdims=True)
            times = []
            for vector in asked:
                began = time.perf_counter()
                chroma_rest.nearest(target, collection, vector.tolist(), 20)
                times.append((time.perf_counter() - began) * 1000)
            process = psutil.Process(server.pid)
            rss = sum(part.memory_info().rss for part in [process, *process.children(recursive=True)])
        finally:
            server.terminate()
            server.wait(timeout=60)
    return {"server": which, "start_s": started, "fill_s": filled, "p50_ms": float(np.percentile(times, 50)),
            "p95_ms": float(np.percentile(times, 95)), "rss_mb": rss / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    results = [measure(which, args.vectors, args.queries) for which in ("chroma run", "codeoid")]
    print(f"| server | start to first heartbeat | fill {args.vectors:,} | query p50 / p95 | RSS |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for result in results:
        print(f"| {result['server']} | {result['start_s']:.1f} s | {result['fill_s']:.1f} s | "
              f"{result['p50_ms']:.1f} / {result['p95_ms']:.1f} ms | {result['rss_mb']:.0f} MB |")


if __name__ == "__main__":
    main()
