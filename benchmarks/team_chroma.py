"""The team route under load: several stores (separate data dirs, as separate machines would be) indexing into and
recalling from one authenticated Chroma server at once, on 127.0.0.1.

Each store is a real codeoid store (the capture API) of one shared workspace (the same git remote, so every store
writes the same collection), filled with real source lines (as `recall_latency.py` fills its stores: prompts,
answers, 40-line tool results), and indexed by the real indexer and model into codeoid's own Chroma server serving
TCP with a token (`python -m codeoid.memory.chroma_serve --port`), the way a team would run it. Every store runs
in its own process with its own `CODEOID_HOME`, `CODEOID_CHROMA_URL` and `CODEOID_CHROMA_TOKEN`.

Two runs over the same stores: each store alone on a fresh server (the baseline), then all of them at once on one
server, started together, each recalling between its index batches while the others write. Checked:
- every vector accounted for: each store's chunk ids on the server are exactly the ones its indexer made (none
  missing, none extra), and the collection holds their sum;
- each store's recall unchanged: the ranked episodes of `recall_ranked` (BM25 + vectors fused) and this store's
  own nearest chunks are the same, question by question, as when it was alone.
Reported: index time, recall latency while the others write (p50/p95), and the counts.

    .venv/bin/python benchmarks/team_chroma.py [--stores 4] [--episodes 150] [--questions 15] [--timeout 900]
        [--markdown]

Bounded: `--stores` processes, `--episodes` each, and `--timeout` seconds for each run (past it the workers are
killed and the run fails).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

REMOTE = "https://github.com/example/team-service.git"
TOOL_LINES = 40


# ---- the parent ------------------------------------------------------------------------------------------------

def start_server(root: Path, token_file: Path) -> tuple[subprocess.Popen[bytes], str]:
    from codeoid.memory.chroma_http import Endpoint, heartbeat

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    log = (root / "server.log").open("ab")
    server = subprocess.Popen([sys.executable, "-m", "codeoid.memory.chroma_serve", "--port", str(port), "--path",
                               str(root / "chroma"), "--token-file", str(token_file)], stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while not heartbeat(Endpoint(url, token_file.read_text()), timeout=1.0):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise SystemExit(f"the team server did not start: {(root / 'server.log').read_text()}")
        time.sleep(0.1)
    return server, url


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_workers(root: Path, homes: list[Path], url: str, token: str, questions: list[list[str]], name: str,
                together: bool, timeout: float) -> list[dict[str, Any]]:
    """One worker process per store (all at once, or one after the other), against the server at `url`."""
    barrier = root / f"barrier-{name}"
    barrier.mkdir()
    results = []
    groups = [list(range(len(homes)))] if together else [[index] for index in range(len(homes))]
    deadline = time.monotonic() + timeout
    for group in groups:
        workers = []
        for index in group:
            out = root / f"{name}-{index}.json"
            env = {**os.environ, "CODEOID_HOME": str(homes[index]), "CODEOID_CHROMA_URL": url,
                   "CODEOID_CHROMA_TOKEN": token, "CODEOID_VECTOR": "on", "OMP_NUM_THREADS": "1"}
            workers.append((out, subprocess.Popen(
                [sys.executable, __file__, "--worker", str(index), "--barrier", str(barrier), "--expect",
                 str(len(group)), "--out", str(out), "--ask", json.dumps(questions[index])], env=env)))
        for out, worker in workers:
            try:
                worker.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for _, other in workers:
                    other.kill()
                raise SystemExit(f"the {name} run took more than {timeout:.0f} s") from None
            if worker.returncode != 0:
                raise SystemExit(f"a {name} worker failed (exit {worker.returncode})")
            results.append(json.loads(out.read_text()))
    return results


def build_stores(root: Path, stores: int, episodes: int) -> tuple[list[Path], list[list[str]]]:
    """`stores` data dirs, each a store of `episodes` episodes in the shared workspace, and questions for each."""
    from recall_latency import source_lines

    lines = source_lines(limit=60_000)
    homes, questions = [], []
    for index in range(stores):
        home = root / f"machine-{index}" / "home"
        project = root / f"machine-{index}" / "project"
        project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        subprocess.run(["git", "-C", str(project), "remote", "add", "origin", REMOTE], check=True)
        rng = random.Random(100 + index)
        offset = index * (len(lines) // stores)
        mine = lines[offset:offset + len(lines) // stores]
        lines_file = root / f"machine-{index}" / "lines.json"
        lines_file.write_text(json.dumps(mine[:8000]))
        done = subprocess.run([sys.executable, __file__, "--fill", str(episodes), "--project", str(project),
                               "--seed", str(100 + index), "--lines", str(lines_file)],
                              env={**os.environ, "CODEOID_HOME": str(home)}, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        asked = json.loads(done.stdout)
        questions.append([f"{asked[rng.randrange(len(asked))]} {word}" for word in
                          rng.choices(("fails", "timeout", "why", "config", "the parser"), k=len(asked))][:100])
        homes.append(home)
    return homes, questions


def fill(episodes: int, project: str, seed: int, lines: list[str]) -> None:
    """In a worker: the store of one machine (CODEOID_HOME), and the lines its questions are drawn from."""
    from test_mcp_server import Memory

    from codeoid.store import capture, queries
    from codeoid.store import db as store_db

    memory = Memory(Path(os.environ["CODEOID_HOME"]), Path(project))
    memory.clock = time.time() - 7 * 86400  # a week old: a later recall's recency is the same to within noise
    rng = random.Random(seed)
    owner = memory.backing(f"machine-{seed}")
    asked = []
    with store_db.write_transaction(memory.db):
        for n in range(episodes):
            at = rng.randrange(len(lines) - TOOL_LINES)
            if n % 10 < 4:
                capture.add_user_turn(memory.db, owner, prompt=f"why does {lines[at].strip()[:80]} fail?",
                                      prompt_id=f"p{n}", origin="user", now=memory.now())
            elif n % 10 < 7:
                capture.add_assistant_message(memory.db, owner, message_id=f"m{n}", text="\n".join(lines[at:at + 5]),
                                              now=memory.now())
            else:
                capture.add_tool_call(memory.db, owner, tool_name="Bash", tool_use_id=f"t{n}",
                                      tool_input={"command": f"sed -n {at},{at + TOOL_LINES}p src/m{n % 17}.py"},
                                      response={"stdout": "\n".join(lines[at:at + TOOL_LINES]), "stderr": "",
                                                "interrupted": False}, error=None, agent_id=None, now=memory.now())
            asked.append(" ".join(lines[at + 2].split()[:6]))
    while queries.catch_up_fts(memory.db, batch=5000):
        pass
    print(json.dumps(asked))


# ---- a worker: one machine -------------------------------------------------------------------------------------

def worker(index: int, barrier: Path, expect: int, out: Path, ask: list[str]) -> None:
    from codeoid.memory import chroma_server, retrieval
    from codeoid.memory.chroma_http import Endpoint, request
    from codeoid.memory.chroma_rest import API, open_collection
    from codeoid.memory.indexer import Indexer, IndexerSettings
    from codeoid.memory.vector_index import VectorIndex, collection_name, workspace_index_id
    from codeoid.store import db as store_db
    from codeoid.store import identity, queries, vector_progress

    db = store_db.connect()
    vector_progress.reset(db)  # each run indexes the store from nothing
    store = identity.store_id(db)
    workspace_id = int(db.execute("SELECT id FROM workspaces").fetchone()[0])
    workspace = workspace_index_id(*queries.workspace_ids(db, workspace_id))  # type: ignore[misc]
    indexer = Indexer(db, settings=IndexerSettings(batch_episodes=8))
    indexer.embedder.embed(["load the model before the others start"])
    (barrier / f"ready-{index}").touch()
    while len(list(barrier.glob("ready-*"))) < expect:
        time.sleep(0.02)

    began = time.perf_counter()
    during = []
    asked = 0
    while indexer.step():
        start = time.perf_counter()
        retrieval.recall_ranked(db, ask[asked % len(ask)], workspace_id=workspace_id, limit=6)
        during.append((time.perf_counter() - start) * 1000)
        asked += 1
    indexed_s = time.perf_counter() - began
    (barrier / f"done-{index}").touch()
    while len(list(barrier.glob("done-*"))) < expect:  # recall once every store has written all it will
        time.sleep(0.05)

    index_of = VectorIndex(store=store)
    recalled, nearest = [], []
    for question in ask:
        recalled.append([row["id"] for row in retrieval.recall_ranked(db, question, workspace_id=workspace_id,
                                                                      limit=6).rows])
        nearest.append([[hit.episode_id, hit.chunk] for hit in index_of.query(question, workspace, n=20)
                        if hit.store == store])
    expected = sorted(f"{store}:{episode['id']}:{chunk.number}"
                      for episode in db_rows(db) if indexer.indexable(episode) for chunk in indexer.chunks(episode))
    target = Endpoint(chroma_server.remote_url() or "", chroma_server.remote_token())
    collection = open_collection(target, collection_name(workspace))
    assert collection is not None
    status, body = request(target, "POST", f"{API}/collections/{collection.id}/get",
                           {"where": {"store": store}, "include": []})
    found = sorted(body["ids"]) if status == 200 and isinstance(body, dict) else []
    status, total = request(target, "GET", f"{API}/collections/{collection.id}/count")
    out.write_text(json.dumps({
        "store": store, "index_s": indexed_s, "during_ms": during, "recalled": recalled, "nearest": nearest,
        "expected": len(expected), "found": len(found), "missing": len(set(expected) - set(found)),
        "extra": len(set(found) - set(expected)), "collection_total": total}))


def db_rows(db: Any) -> list[dict[str, Any]]:
    from codeoid.store.queries import _rows
    from codeoid.store.vector_progress import EPISODE_COLUMNS

    return _rows(db.execute(f"SELECT {EPISODE_COLUMNS} FROM episodes e JOIN workspaces w ON w.id = e.workspace_id"
                            " ORDER BY e.id"))


# ---- the report ------------------------------------------------------------------------------------------------

def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share / 100 * (len(ordered) - 1))))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=150)
    parser.add_argument("--questions", type=int, default=15)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--worker", type=int)
    parser.add_argument("--barrier", type=Path)
    parser.add_argument("--expect", type=int)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--ask")
    parser.add_argument("--fill", type=int)
    parser.add_argument("--project")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--lines")
    args = parser.parse_args()
    if args.fill is not None:
        fill(args.fill, args.project, args.seed, json.loads(Path(args.lines).read_text()))
        return
    if args.worker is not None:
        worker(args.worker, args.barrier, args.expect, args.out, json.loads(args.ask))
        return

    with tempfile.TemporaryDirectory(prefix="codeoid-team-") as scratch:
        root = Path(scratch)
        token_file = root / "token"
        token_file.write_text(secrets.token_urlsafe(32))
        token_file.chmod(0o600)
        homes, questions = build_stores(root, args.stores, args.episodes)
        questions = [asked[:args.questions] for asked in questions]
        alone = []
        for index in range(args.stores):
            solo_root = root / f"solo-{index}"
            solo_root.mkdir()
            server, url = start_server(solo_root, token_file)
            try:
                alone += run_workers(root, [homes[index]], url, token_file.read_text(), [questions[index]],
                                     f"solo{index}", together=False, timeout=args.timeout)
            finally:
                stop(server)
        shared_root = root / "shared"
        shared_root.mkdir()
        server, url = start_server(shared_root, token_file)
        began = time.perf_counter()
        try:
            together = run_workers(root, homes, url, token_file.read_text(), questions, "shared", together=True,
                                   timeout=args.timeout)
        finally:
            wall = time.perf_counter() - began
            stop(server)
    report(args, alone, together, wall)


def report(args: argparse.Namespace, alone: list[dict[str, Any]], together: list[dict[str, Any]],
           wall: float) -> None:
    expected = sum(result["expected"] for result in together)
    rows = []
    for solo, shared in zip(alone, together, strict=True):
        same_recall = sum(a == b for a, b in zip(solo["recalled"], shared["recalled"], strict=True))
        same_nearest = sum(a == b for a, b in zip(solo["nearest"], shared["nearest"], strict=True))
        rows.append((shared["store"][:8], shared["expected"], shared["found"], shared["missing"], shared["extra"],
                     f"{solo['index_s']:.1f} / {shared['index_s']:.1f}",
                     f"{percentile(shared['during_ms'], 50):.0f} / {percentile(shared['during_ms'], 95):.0f}",
                     f"{same_recall}/{len(shared['recalled'])}", f"{same_nearest}/{len(shared['nearest'])}"))
    totals = {result["collection_total"] for result in together}
    head = ("store", "chunks made", "on the server", "missing", "extra", "index s alone / together",
            "recall ms while others write p50 / p95", "recall unchanged", "own nearest unchanged")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("| " + " | ".join("---" for _ in head) + " |")
        for row in rows:
            print("| " + " | ".join(str(cell) for cell in row) + " |")
    else:
        for row in rows:
            print(dict(zip(head, row, strict=True)))
    print(f"\n{args.stores} stores x {args.episodes} episodes, {args.questions} questions each; the collection holds "
          f"{sorted(totals)} chunks for {expected} made; the shared run took {wall:.0f} s "
          f"(bound {args.timeout:.0f} s).")
    if totals != {expected} or any(row[3] or row[4] for row in rows):
        raise SystemExit("vectors unaccounted for")


if __name__ == "__main__":
    main()
