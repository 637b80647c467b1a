"""Retrieval quality: BM25 alone, dense alone and fused, on questions whose answers sit in known episodes.

A fresh store (temporary data dir) is filled from `corpus.jsonl.gz` through the capture API the hooks use,
indexed with the shipped model into its own local `chroma run` server, and every question goes through
`retrieval.recall_ranked`, the path the MCP server's `recall` takes: with `dense=0` (BM25 alone, the ranking
recall gives when the vector index is down), with `bm25=0` and no bonuses (meaning alone), with the fused
defaults, and with the defaults before this benchmark tuned them. A question is answered at rank r when any
of its answer episodes (interchangeable: the same failure run twice, the Edit and the diff) is the r-th
result. Recall@k is the share of questions answered within k, MRR the mean of 1/r over the top 10; 95%
intervals come from a seeded bootstrap over questions.

BM25 variants: porter stemming off is measured on a copy of the store whose FTS table is rebuilt with the
unicode61 tokenizer alone; stop words kept, by emptying `queries.STOP_WORDS` while those questions run.
`--tune` searches reciprocal-rank-fusion weights by re-fusing cached candidate lists (`ranking.fuse`, as
`recall_ranked` does with `zscore=0`) on the tuning half only; the table is always the held-out half. The z-score
fusion recall ships now is compared and tuned on both sets by `fusion.py`.

    .venv/bin/python benchmarks/retrieval/evaluate.py [--tune] [--cache candidates.json] [--from-cache ...]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import itertools
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from codeoid.memory import ranking  # noqa: E402
from codeoid.memory.ranking import RecallWeights  # noqa: E402
from codeoid.store import queries  # noqa: E402

CUTOFFS = (1, 5, 10)
DEPTH = 10
RESAMPLES = 1000
SEED = 7
# The fusion defaults before this benchmark tuned them, kept for the comparison.
PREVIOUS_DEFAULTS = RecallWeights(dense=1.0, path=0.5, rrf_k=60.0, zscore=0)
RRF = RecallWeights(zscore=0)  # reciprocal rank fusion with its tuned weights, what `refused` and `tune` re-fuse
BM25_ALONE = RecallWeights(dense=0.0)
DENSE_ALONE = RecallWeights(bm25=0.0, recency=0.0, path=0.0, role=0.0, neighbours=0.0)
# z-score fusion as session six shipped it: BM25's z-scores whole, no role bonus, no meaning lent to neighbours.
SESSION_SIX = RecallWeights(dense=0.75, role=0.0, bm25_root=0, neighbours=0.0)
GRID: dict[str, tuple[float, ...]] = {
    "dense": (0.5, 0.75, 1.0, 1.5, 2.0), "recency": (0.0, 0.1, 0.2, 0.4), "path": (0.0, 0.25, 0.5, 1.0),
    "rrf_k": (5.0, 10.0, 20.0, 30.0, 60.0), "candidates": (20.0, 50.0),
}


def load_corpus(path: Path = HERE / "corpus.jsonl.gz") -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as lines:
        return [json.loads(line) for line in lines]


def load_questions(path: Path = HERE / "questions.jsonl") -> list[dict[str, Any]]:
    with open(path) as lines:
        return [json.loads(line) for line in lines]


def fresh_environment(home: Path) -> None:
    """Point codeoid at a new data dir and drop every setting that would change what is measured."""
    os.environ["CODEOID_HOME"] = str(home)
    for name in ("CODEOID_CHROMA_URL", "CODEOID_VECTOR", *(f"CODEOID_RECALL_{f.name.upper()}"
                                                           for f in dataclasses.fields(RecallWeights))):
        os.environ.pop(name, None)


def index_store(db: sqlite3.Connection) -> None:
    """What the memory service does for a new store: FTS and neighbour rows, then every episode embedded by the
    shipped model into the data dir's own `chroma run` (started here; the caller stops it)."""
    from codeoid.memory import chroma_server
    from codeoid.memory.indexer import Indexer

    started = time.perf_counter()
    queries.catch_up_fts(db)
    print(f"FTS and neighbour index built in {time.perf_counter() - started:.1f} s", flush=True)
    chroma_server.ensure_server()
    started = time.perf_counter()
    Indexer(db).catch_up()
    print(f"vectors indexed in {time.perf_counter() - started:.0f} s", flush=True)


def fill_store(memory: Any, episodes: Sequence[dict[str, Any]], *, now: float) -> dict[str, int]:
    """Store the episodes through the capture API (one backing session per corpus session), dated so the
    newest ends an hour before `now`; return the store id of each episode key."""
    span = max(episode["at"] for episode in episodes)
    owners: dict[str, Any] = {}
    ids: dict[str, int] = {}
    for episode in episodes:
        if episode["session"] not in owners:
            owners[episode["session"]] = memory.backing(f"corpus-{episode['session']}")
        owner = owners[episode["session"]]
        memory.clock = now - 3600 - (span - episode["at"])
        if episode["kind"] == "user":
            ids[episode["key"]] = memory.user(owner, episode["text"])
        elif episode["kind"] == "assistant":
            ids[episode["key"]] = memory.assistant(owner, episode["text"])
        else:
            ids[episode["key"]] = memory.tool(owner, episode["tool"], episode["input"], episode["response"],
                                              error=episode["error"])
    return ids


def sessions_slice(episodes: Sequence[dict[str, Any]], questions: Sequence[dict[str, Any]], sessions: set[str]
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The episodes of some sessions and the questions answered wholly within them (a small corpus for tests)."""
    kept = [episode for episode in episodes if episode["session"] in sessions]
    keys = {episode["key"] for episode in kept}
    return kept, [question for question in questions if set(question["answers"]) <= keys]


@contextlib.contextmanager
def stop_words_kept() -> Iterator[None]:
    """BM25 with the query's stop words kept (as before they were dropped), for the variant table."""
    shipped = queries.STOP_WORDS
    queries.STOP_WORDS = frozenset()
    try:
        yield
    finally:
        queries.STOP_WORDS = shipped


def rebuilt_without_stemming(db: sqlite3.Connection, path: str) -> sqlite3.Connection:
    """A copy of the store whose FTS table tokenizes with unicode61 alone (no porter stemming)."""
    copy = sqlite3.connect(path, isolation_level=None)
    db.backup(copy)
    copy.executescript("""
        DROP TABLE episodes_fts;
        CREATE VIRTUAL TABLE episodes_fts USING fts5(
            input, text, content='episodes', content_rowid='id', tokenize='unicode61');
        INSERT INTO episodes_fts(episodes_fts) VALUES ('rebuild');
    """)
    return copy


Ranker = Callable[[str], list[int]]


def recall_ranker(db: sqlite3.Connection, workspace_id: int, weights: RecallWeights, *, limit: int = DEPTH
                  ) -> Ranker:
    from codeoid.memory import retrieval

    def rank(query: str) -> list[int]:
        found = retrieval.recall_ranked(db, query, workspace_id=workspace_id, limit=limit, weights=weights)
        assert found.fallback is None, found.fallback
        return [row["id"] for row in found.rows]

    return rank


def answer_rank(ranked: Sequence[int], answers: Iterable[int]) -> int | None:
    wanted = set(answers)
    return next((position for position, found in enumerate(ranked[:DEPTH], 1) if found in wanted), None)


def ranks_of(rank: Ranker, questions: Sequence[dict[str, Any]], ids: dict[str, int]) -> list[int | None]:
    return [answer_rank(rank(question["question"]), (ids[key] for key in question["answers"]))
            for question in questions]


def scores(ranks: Sequence[int | None]) -> dict[str, float]:
    n = max(len(ranks), 1)
    found = {f"R@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in CUTOFFS}
    found["MRR"] = sum(1 / r for r in ranks if r is not None) / n
    return found


def with_intervals(ranks: Sequence[int | None], *, resamples: int = RESAMPLES, seed: int = SEED
                   ) -> dict[str, dict[str, float]]:
    """Each score with its 95% percentile bootstrap interval (questions resampled with replacement)."""
    rng = random.Random(seed)
    point = scores(ranks)
    samples: dict[str, list[float]] = {name: [] for name in point}
    for _ in range(resamples):
        drawn = scores([ranks[rng.randrange(len(ranks))] for _ in ranks])
        for name, value in drawn.items():
            samples[name].append(value)
    out = {}
    for name, value in point.items():
        ordered = sorted(samples[name])
        out[name] = {"value": value, "low": ordered[int(0.025 * resamples)],
                     "high": ordered[int(0.975 * resamples) - 1]}
    return out


def paired_difference(better: Sequence[int | None], worse: Sequence[int | None], metric: str, *,
                      resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, float]:
    """`metric` of `better` minus that of `worse` on the same questions, with a paired bootstrap interval."""
    rng = random.Random(seed)
    pairs = list(zip(better, worse, strict=True))
    point = scores(better)[metric] - scores(worse)[metric]
    drawn = []
    for _ in range(resamples):
        sample = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        drawn.append(scores([a for a, _ in sample])[metric] - scores([b for _, b in sample])[metric])
    drawn.sort()
    return {"value": point, "low": drawn[int(0.025 * resamples)], "high": drawn[int(0.975 * resamples) - 1]}


@dataclasses.dataclass
class Candidates:
    """What `recall_ranked` fuses for one question: each signal's list (best first) and the bonuses' inputs."""

    bm25: list[int]
    dense: list[int]
    created_at: dict[int, float]
    paths: dict[int, list[str]]


def candidates_of(db: sqlite3.Connection, workspace_id: int, query: str, pool: int) -> Candidates:
    from codeoid.memory import retrieval

    bm25 = retrieval.recall_ranked(db, query, workspace_id=workspace_id, limit=pool, weights=BM25_ALONE).rows
    dense = retrieval.recall_ranked(db, query, workspace_id=workspace_id, limit=pool, weights=DENSE_ALONE).rows
    rows = {row["id"]: row for row in (*bm25, *dense)}
    return Candidates([row["id"] for row in bm25], [row["id"] for row in dense],
                      {i: row["created_at"] for i, row in rows.items()},
                      {i: json.loads(row["paths"] or "[]") for i, row in rows.items()})


def refused(candidates: Candidates, query: str, weights: RecallWeights, now: float) -> list[int]:
    """The fused ranking `recall_ranked` would give with `weights`, from cached candidate lists."""
    n = weights.candidates
    fused = ranking.fuse(candidates.bm25[:n], candidates.dense[:n], created_at=candidates.created_at,
                         paths=candidates.paths, query=query, weights=weights, now=now)
    return [episode_id for episode_id, _ in fused[:DEPTH]]


def tune(questions: Sequence[dict[str, Any]], cached: dict[str, Candidates], ids: dict[str, int],
         now: float) -> list[tuple[float, RecallWeights]]:
    """Every grid point scored by MRR on `questions` (the tuning half), best first."""
    results = []
    names = list(GRID)
    for values in itertools.product(*(GRID[name] for name in names)):
        chosen: dict[str, Any] = dict(zip(names, values, strict=True))
        chosen["candidates"] = int(chosen["candidates"])
        weights = dataclasses.replace(RRF, **chosen)
        ranks = [answer_rank(refused(cached[q["id"]], q["question"], weights, now), (ids[k] for k in q["answers"]))
                 for q in questions]
        results.append((scores(ranks)["MRR"], weights))
    results.sort(key=lambda item: -item[0])
    return results


def markdown(table: dict[str, dict[str, dict[str, float]]], n: int) -> str:
    rows = [f"| held-out ({n} questions) | R@1 | R@5 | R@10 | MRR |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, found in table.items():
        cells = [f"{found[m]['value']:.3f} [{found[m]['low']:.2f}, {found[m]['high']:.2f}]"
                 for m in ("R@1", "R@5", "R@10", "MRR")]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tune", action="store_true", help="search fusion weights on the tuning half")
    parser.add_argument("--cache", type=Path, help="write the candidate lists and ranks here (JSON)")
    parser.add_argument("--from-cache", type=Path, help="tune from a cache written by --cache; no store, no model")
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    args = parser.parse_args()
    questions = load_questions()
    tuning = [q for q in questions if q["split"] == "tune"]
    heldout = [q for q in questions if q["split"] == "heldout"]
    if args.from_cache:
        state = json.loads(args.from_cache.read_text())
        cached = {key: Candidates(c["bm25"], c["dense"], {int(i): t for i, t in c["created_at"].items()},
                                  {int(i): p for i, p in c["paths"].items()}) for key, c in state["candidates"].items()}
        report_tuning(tuning, heldout, cached, state["ids"], state["now"])
        return
    with tempfile.TemporaryDirectory() as scratch:
        fresh_environment(Path(scratch) / "home")
        run(args, questions, tuning, heldout, scratch)


def run(args: argparse.Namespace, questions: list[dict[str, Any]], tuning: list[dict[str, Any]],
        heldout: list[dict[str, Any]], scratch: str) -> None:
    from test_mcp_server import Memory, git_project

    from codeoid.memory import chroma_server

    episodes = load_corpus()
    memory = Memory(Path(os.environ["CODEOID_HOME"]), git_project(Path(scratch) / "project"))
    try:
        now = time.time()
        started = time.perf_counter()
        ids = fill_store(memory, episodes, now=now)
        print(f"stored {len(ids)} episodes in {time.perf_counter() - started:.0f} s", flush=True)
        index_store(memory.db)
        workspace_id = queries.workspace_id_for(memory.db, str(memory.project))
        assert workspace_id is not None
        db = memory.db
        configs: dict[str, Ranker] = {
            "BM25 alone": recall_ranker(db, workspace_id, BM25_ALONE),
            "dense alone": recall_ranker(db, workspace_id, DENSE_ALONE),
            "fused (defaults)": recall_ranker(db, workspace_id, RecallWeights()),
            "fused (RRF)": recall_ranker(db, workspace_id, RRF),
            "fused (previous defaults)": recall_ranker(db, workspace_id, PREVIOUS_DEFAULTS),
            "fused (session six's z-score)": recall_ranker(db, workspace_id, SESSION_SIX),
        }
        ranks = {name: ranks_of(rank, questions, ids) for name, rank in configs.items()}
        nostem = rebuilt_without_stemming(db, os.path.join(scratch, "nostem.db"))
        variant_ranks = {"porter, stop words dropped (shipped)": ranks["BM25 alone"],
                         "no stemming, stop words dropped": ranks_of(recall_ranker(nostem, workspace_id, BM25_ALONE),
                                                                     questions, ids)}
        with stop_words_kept():
            variant_ranks["porter, stop words kept"] = ranks_of(configs["BM25 alone"], questions, ids)
            variant_ranks["no stemming, stop words kept"] = ranks_of(
                recall_ranker(nostem, workspace_id, BM25_ALONE), questions, ids)
        cached = {q["id"]: candidates_of(db, workspace_id, q["question"], int(max(GRID["candidates"])))
                  for q in questions}
        check = [refused(cached[q["id"]], q["question"], RRF, time.time()) for q in questions]
        agree = sum(a == b for a, b in zip(check, (configs["fused (RRF)"](q["question"]) for q in questions),
                                           strict=True))
        print(f"re-fused cached candidates match recall_ranked on {agree}/{len(questions)} questions", flush=True)
        if args.cache:
            args.cache.write_text(json.dumps({"now": now, "ids": ids, "candidates": {
                key: dataclasses.asdict(c) for key, c in cached.items()}}))
        tuned: RecallWeights | None = None
        if args.tune:
            tuned = report_tuning(tuning, heldout, cached, ids, now)
            if tuned is not None:
                ranks["fused (tuned)"] = ranks_of(recall_ranker(db, workspace_id, tuned), questions, ids)
        write_results(args.out, questions, ranks, variant_ranks, tuned, len(episodes))
    finally:
        memory.db.close()
        chroma_server.stop_server()


def report_tuning(tuning: list[dict[str, Any]], heldout: list[dict[str, Any]], cached: dict[str, Candidates],
                  ids: dict[str, int], now: float) -> RecallWeights | None:
    """Tune on the tuning half; print the best weights and both halves for them and the defaults. Return the
    best weights when they beat the defaults on the tuning half."""
    results = tune(tuning, cached, ids, now)
    defaults = RRF
    default_mrr = scores([answer_rank(refused(cached[q["id"]], q["question"], defaults, now),
                                      (ids[k] for k in q["answers"])) for q in tuning])["MRR"]
    best_mrr, best = results[0]
    print(f"tuning half: defaults MRR {default_mrr:.3f}; best {best_mrr:.3f} with {best}")
    for mrr, weights in results[1:6]:
        print(f"  next: {mrr:.3f} {weights}")
    for name, weights in (("defaults", defaults), ("tuned", best)):
        ranks = [answer_rank(refused(cached[q["id"]], q["question"], weights, now), (ids[k] for k in q["answers"]))
                 for q in heldout]
        print(f"held-out, re-fused, {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in scores(ranks).items()))
    return best if best_mrr > default_mrr else None


def write_results(out: Path, questions: list[dict[str, Any]], ranks: dict[str, list[int | None]],
                  variant_ranks: dict[str, list[int | None]], tuned: RecallWeights | None, episodes: int) -> None:
    halves = {half: [i for i, q in enumerate(questions) if q["split"] == half] for half in ("tune", "heldout")}
    held = halves["heldout"]

    def part(found: list[int | None], members: list[int]) -> list[int | None]:
        return [found[i] for i in members]

    table = {name: with_intervals(part(found, held)) for name, found in ranks.items()}
    variants = {name: with_intervals(part(found, held)) for name, found in variant_ranks.items()}
    by_style = {style: {name: scores([found[i] for i in held if questions[i]["style"] == style])
                        for name, found in ranks.items()} for style in ("lexical", "paraphrase")}
    singles = ("BM25 alone", "dense alone")
    best_single = max(singles, key=lambda name: table[name]["MRR"]["value"])
    fused_names = [name for name in ranks if name.startswith("fused")]
    against_best = {name: {metric: paired_difference(part(ranks[name], held), part(ranks[best_single], held), metric)
                           for metric in ("R@1", "R@5", "R@10", "MRR")} for name in fused_names}
    result = {
        "episodes": episodes, "questions": len(questions), "heldout_questions": len(held),
        "tuning_questions": len(halves["tune"]), "resamples": RESAMPLES, "seed": SEED,
        "weights": {"defaults": dataclasses.asdict(RecallWeights()), "bm25 alone": dataclasses.asdict(BM25_ALONE),
                    "dense alone": dataclasses.asdict(DENSE_ALONE),
                    "tuned": dataclasses.asdict(tuned) if tuned else None},
        "heldout": table, "heldout_by_style": by_style, "bm25_variants_heldout": variants,
        "tuning_half": {name: scores(part(found, halves["tune"])) for name, found in ranks.items()},
        "bm25_variants_tuning_half": {name: scores(part(found, halves["tune"]))
                                      for name, found in variant_ranks.items()},
        "fused_minus_best_single": {"best_single": best_single, **against_best},
    }
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(table, len(held)))
    print()
    print(markdown(variants, len(held)).replace("held-out", "BM25 variant, held-out"))
    print()
    for style, found in by_style.items():
        print(f"{style}: " + "; ".join(f"{name} R@5 {s['R@5']:.3f} MRR {s['MRR']:.3f}" for name, s in found.items()))
    for name, diff in against_best.items():
        print(f"{name} minus {best_single}: " + ", ".join(
            f"{m} {d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" for m, d in diff.items()))


if __name__ == "__main__":
    main()
