"""The coding set's questions asked of a large store: what bounding BM25's work at scale costs in answers.

At 100k episodes BM25 scores at most `context_index.SCORED_ROWS` rows of a match: every row of its rarer phrases
and only the newest rows of the rest (`context_index.search`). The coding set is small enough (2,843 episodes)
that the bound never applies to it alone, so here it is stored first, as the oldest 2,843 episodes of a store
filled up to `--episodes` with a later coding history (the filler of `benchmarks/recall_latency.py`: real Python
source arranged as prompts, answers and 40-line tool results, in the same workspace). That is the bound's worst
case: every answer is older than the newest rows it keeps. Each question is then ranked by BM25 alone (the signal
the bound changes; meaning still searches every row) with the bound and without it, and both are reported with
95% bootstrap intervals and their paired difference, over all 342 questions and each style.

    .venv/bin/python benchmarks/retrieval/at_scale.py [--episodes 100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent / "tests"))

import evaluate  # noqa: E402

from codeoid.memory.ranking import RecallWeights  # noqa: E402
from codeoid.store import context_index, queries  # noqa: E402

BM25_ALONE = RecallWeights(dense=0.0)
UNBOUNDED = 10**9
DAY = 86400.0


def fill(place: Path, count: int) -> tuple[Any, dict[str, int]]:
    """The coding set, then filler up to `count` episodes, in one workspace; the corpus keys' episode ids."""
    from recall_latency import add_filler, source_lines
    from test_mcp_server import Memory, git_project

    evaluate.fresh_environment(place / "home")
    memory = Memory(place / "home", git_project(place / "project"))
    now = time.time()
    ids = evaluate.fill_store(memory, evaluate.load_corpus(), now=now - 60 * DAY)
    # Later work, every 40 s from 50 days ago.
    add_filler(memory, range(len(ids), count), source_lines(), when=lambda n: now - 50 * DAY + (n - len(ids)) * 40.0)
    began = time.perf_counter()
    while queries.catch_up_fts(memory.db, batch=5000):
        pass
    print(f"{count:,} episodes stored and indexed for BM25 in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    return memory, ids


def kept_ids(memory: Any) -> dict[str, int]:
    """The corpus keys' ids in a kept store: the coding set was stored first, in corpus order."""
    corpus = evaluate.load_corpus()
    rows = memory.db.execute("SELECT id FROM episodes ORDER BY id LIMIT ?", (len(corpus),)).fetchall()
    return {episode["key"]: int(row[0]) for episode, row in zip(corpus, rows, strict=True)}


def ranked(memory: Any, questions: list[dict[str, Any]], ids: dict[str, int], scored_rows: int
           ) -> tuple[list[int | None], list[float]]:
    context_index.SCORED_ROWS = scored_rows
    workspace = queries.workspace_id_for(memory.db, str(memory.project))
    assert workspace is not None
    rank = evaluate.recall_ranker(memory.db, workspace, BM25_ALONE)
    found, took = [], []
    for question in questions:
        began = time.perf_counter()
        top = rank(question["question"])
        took.append((time.perf_counter() - began) * 1000)
        found.append(evaluate.answer_rank(top, (ids[key] for key in question["answers"])))
    return found, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="build the store under this folder once and reuse it")
    args = parser.parse_args()
    questions = evaluate.load_questions()
    bound = context_index.SCORED_ROWS
    with tempfile.TemporaryDirectory() as scratch:
        place = args.keep / str(args.episodes) if args.keep else Path(scratch)
        if (place / "built").exists():
            from test_mcp_server import Memory

            evaluate.fresh_environment(place / "home")
            memory = Memory(place / "home", place / "project")
            ids = kept_ids(memory)
        else:
            memory, ids = fill(place, args.episodes)
            (place / "built").touch()
        try:
            ranked(memory, questions, ids, UNBOUNDED)  # the page cache and the word counts warm for both runs
            bounded, bounded_ms = ranked(memory, questions, ids, bound)
            every, every_ms = ranked(memory, questions, ids, UNBOUNDED)
        finally:
            memory.db.close()
    print(f"| BM25 alone, coding set inside {args.episodes:,} episodes | R@10 | MRR | median / p95 ms |")
    print("|---|---|---|---|")
    for style in (None, "lexical", "paraphrase"):
        chosen = [n for n, question in enumerate(questions) if style is None or question["style"] == style]
        for name, found, took in ((f"at most {bound:,} rows scored", bounded, bounded_ms),
                                  ("every row scored", every, every_ms)):
            shown = evaluate.with_intervals([found[n] for n in chosen])
            cells = [f"{shown[m]['value']:.3f} [{shown[m]['low']:.2f}, {shown[m]['high']:.2f}]"
                     for m in ("R@10", "MRR")]
            times = [took[n] for n in chosen]
            print(f"| {style or 'all'} ({len(chosen)}), {name} | {cells[0]} | {cells[1]} | "
                  f"{statistics.median(times):.0f} / {statistics.quantiles(times, n=20)[-1]:.0f} |")
        for metric in ("R@10", "MRR"):
            difference = evaluate.paired_difference([bounded[n] for n in chosen], [every[n] for n in chosen], metric)
            print(f"| {style or 'all'}: bounded minus every row, {metric} | {difference['value']:+.3f} "
                  f"[{difference['low']:+.3f}, {difference['high']:+.3f}] | | |")


if __name__ == "__main__":
    main()
