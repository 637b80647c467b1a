"""Ranking compared on both retrieval sets: BM25 with and without session neighbours, dense alone, reciprocal rank
fusion and z-score fusion, with z-score weights tuned on the tuning halves only.

Each set goes into a fresh store through the capture API the hooks use (the coding set: `corpus.jsonl.gz`, one
workspace; the conversational set: `conversations/corpus.jsonl.gz`, one workspace per group of 25 conversations),
is indexed by the shipped model into a real `chroma run`, and every question's candidates are collected through
`retrieval`'s own candidate functions (`_lexical_candidates`, `_dense_candidates`: the path of the MCP server's
`recall`) once, with 100 of each. Every configuration is then a re-fusion of those candidates with
`ranking.fuse` / `ranking.fuse_z`, exactly as `recall_ranked` fuses them; a check re-runs `recall_ranked` with the
defaults on every question and counts how often its top 10 equals the re-fused one.

"Plain BM25" is `queries.search_bm25` over `episodes_fts` (each episode alone: recall before this change). RRF
uses the previous defaults (dense 0.75, recency 0.2, path 1.0, k 10). z-score weights are chosen by a grid search
maximising the sum of both tuning halves' MRR (conversational set: groups 0-3; coding set: its `tune` split) and
reported on the held-out halves with 95% bootstrap intervals (1,000 resamples over questions, seed 7).

    .venv/bin/python benchmarks/retrieval/fusion.py run --set chat --cache /tmp/chat.json
    .venv/bin/python benchmarks/retrieval/fusion.py run --set code --cache /tmp/code.json
    .venv/bin/python benchmarks/retrieval/fusion.py report /tmp/chat.json /tmp/code.json --out fusion.json
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "tests"))

import evaluate  # noqa: E402

from codeoid.memory import ranking, retrieval  # noqa: E402
from codeoid.memory.ranking import RecallWeights  # noqa: E402
from codeoid.store import context_index, identity, queries  # noqa: E402

POOL = 100
RRF_BEFORE = RecallWeights(zscore=0)  # the shipped fusion before this change
GRID: dict[str, tuple[float, ...]] = {
    "dense": (0.5, 0.75, 1.0, 1.25, 1.5, 2.0), "recency": (0.0, 0.1, 0.25, 0.5), "path": (0.0, 0.5, 1.0, 2.0),
    "role": (0.0, 0.25, 0.5, 1.0), "candidates": (20.0, 50.0, 100.0),
}
# BM25 column weights (self, near, mid, far), chosen first, by BM25 alone: the recipe (the episode as heavy
# as its nearest neighbours), the episode heavier, and neighbours lighter.
COLUMN_GRID = [(1.0, 1.0, 0.5, 0.25), (2.0, 1.0, 0.5, 0.25), (4.0, 1.0, 0.5, 0.25), (2.0, 0.5, 0.25, 0.125),
               (4.0, 0.5, 0.25, 0.125), (1.0, 0.5, 0.25, 0.0)]
CHECKED = 4  # every CHECKED-th question is also run through `recall_ranked` whole, to check the re-fusion


def _key(columns: Sequence[float]) -> str:
    return ",".join(str(float(w)) for w in columns)


def load_set(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if name == "code":
        return evaluate.load_corpus(), evaluate.load_questions()
    return (evaluate.load_corpus(HERE / "conversations" / "corpus.jsonl.gz"),
            evaluate.load_questions(HERE / "conversations" / "questions.jsonl"))


def fill_chat(memory: Any, episodes: Sequence[dict[str, Any]], scratch: Path, *, now: float
              ) -> tuple[dict[str, int], dict[int, int]]:
    """Each group a workspace (its own git project), each conversation a session, dated so the newest turn of a
    group ends an hour before `now`; the store id of each key and the workspace id of each group."""
    from test_mcp_server import git_project

    span = {group: max(e["at"] for e in episodes if e["group"] == group) for group in {e["group"] for e in episodes}}
    projects = {group: git_project(scratch / f"group-{group}") for group in span}
    owners: dict[str, Any] = {}
    ids: dict[str, int] = {}
    for episode in episodes:
        group = episode["group"]
        if episode["session"] not in owners:
            owners[episode["session"]] = memory.backing(f"chat-{episode['session']}", project=projects[group])
        memory.clock = now - 3600 - (span[group] - episode["at"])
        add = memory.user if episode["kind"] == "user" else memory.assistant
        ids[episode["key"]] = add(owners[episode["session"]], episode["text"])
    workspaces = {}
    for group, project in projects.items():
        found = queries.workspace_id_for(memory.db, str(project))
        assert found is not None
        workspaces[group] = found
    return ids, workspaces


def collect(db: Any, workspace_id: int, query: str) -> dict[str, Any]:
    """One question's candidates, as `recall_ranked` gathers them, `POOL` of each; the BM25 ones for every grid
    point of column weights."""
    by_columns = {}
    for columns in COLUMN_GRID:
        found, found_stats = retrieval._lexical_candidates(db, query, workspace_id, POOL, None, columns)
        by_columns[_key(columns)] = {"lexical": [[row["id"], row["score"]] for row in found],
                                     "stats": list(found_stats)}
    lexical, stats = retrieval._lexical_candidates(db, query, workspace_id, POOL, None, RecallWeights().columns())
    plain = queries.search_bm25(db, query, workspace_id=workspace_id, limit=POOL,
                                exclude_origins=retrieval.NOT_RECALLED_ORIGINS)
    dense, fallback = retrieval._dense_candidates(db, query, workspace_id, POOL)
    assert dense is not None, fallback
    store = identity.store_id(db)
    chunks = [(hit.episode_id, 1.0 - hit.distance) for hit in dense.hits if hit.store == store]
    rows = {row["id"]: row for row in (*lexical, *plain)}
    rows.update(queries.recallable_episodes(db, [i for i, _ in chunks if i not in rows], workspace_id=workspace_id,
                                            exclude_origins=retrieval.NOT_RECALLED_ORIGINS))
    # Each dense candidate's session neighbours (two on each side), for ranking experiments that pass a turn's
    # meaning on to the turns around it.
    neighbours = {str(episode_id): near for episode_id, near in context_index.session_neighbours(
        db, list(dict.fromkeys(i for i, _ in chunks)), before=retrieval.NEIGHBOUR_REACH,
        after=retrieval.NEIGHBOUR_REACH).items()}
    rows.update(queries.recallable_episodes(
        db, [i for near in neighbours.values() for i in near if i not in rows], workspace_id=workspace_id,
        exclude_origins=retrieval.NOT_RECALLED_ORIGINS))
    return {
        "lexical": [[row["id"], row["score"]] for row in lexical], "stats": list(stats), "by_columns": by_columns,
        "plain": [row["id"] for row in plain],
        "chunks": [[i, cosine] for i, cosine in chunks if i in rows],
        "standardiser": list(dense.standardiser) if dense.standardiser else None,
        "meta": {str(i): [row["created_at"], row["kind"], json.loads(row["paths"] or "[]"), row["tool_name"],
                          (row["original_command"] or "")[:40]] for i, row in rows.items()},
        "neighbours": neighbours,
    }


def refuse(c: dict[str, Any], query: str, weights: RecallWeights, now: float, *, plain: bool = False
           ) -> list[int]:
    """The top 10 `recall_ranked` gives with `weights` from cached candidates (`plain`: lexical candidates from
    `episodes_fts`, for RRF as it was)."""
    n = weights.candidates
    meta = {int(i): m for i, m in c["meta"].items()}
    created_at = {i: m[0] for i, m in meta.items()}
    paths = {i: m[2] for i, m in meta.items()}
    chosen = c["by_columns"].get(_key(weights.columns()), c)
    lexical = c["plain"][:n] if plain else [i for i, _ in chosen["lexical"][:n]]
    best: dict[int, float] = {}
    for episode_id, cosine in c["chunks"][:n]:
        best.setdefault(episode_id, cosine)
    if not weights.dense:
        return lexical[:evaluate.DEPTH]
    if not weights.bm25:
        return list(best)[:evaluate.DEPTH]
    if not weights.zscore:
        fused = ranking.fuse(lexical, list(best), created_at=created_at, paths=paths, query=query, weights=weights,
                             now=now)
    else:
        total, squares, corpus = chosen["stats"]
        centre, spread = c["standardiser"] or (None, None)
        fused = ranking.fuse_z(
            ranking.LexicalCandidates(dict((i, s) for i, s in chosen["lexical"][:n]), total, squares, corpus,
                                      cut=len(chosen["lexical"]) >= n),
            ranking.DenseCandidates(best, centre, spread), created_at=created_at, paths=paths,
            roles={i: ranking.role_of(m[1], m[3], m[4]) if len(m) > 3 else m[1] for i, m in meta.items()},
            query=query, weights=weights, now=now,
            neighbours={int(i): [j for j in near if j in meta] for i, near in c.get("neighbours", {}).items()
                        if int(i) in best})
    return [episode_id for episode_id, _ in fused[:evaluate.DEPTH]]


def ranks(state: dict[str, Any], questions: Sequence[dict[str, Any]], weights: RecallWeights, *,
          plain: bool = False) -> list[int | None]:
    ids = state["ids"]
    return [evaluate.answer_rank(refuse(state["candidates"][q["id"]], q["question"], weights, state["now"],
                                        plain=plain), (ids[k] for k in q["answers"])) for q in questions]


def run(args: argparse.Namespace) -> None:
    from test_mcp_server import Memory, git_project

    from codeoid.memory import chroma_server

    episodes, questions = load_set(args.set)
    with tempfile.TemporaryDirectory() as scratch:
        evaluate.fresh_environment(Path(scratch) / "home")
        memory = Memory(Path(os.environ["CODEOID_HOME"]), git_project(Path(scratch) / "project"))
        try:
            now = time.time()
            started = time.perf_counter()
            if args.set == "code":
                ids = evaluate.fill_store(memory, episodes, now=now)
                workspace = queries.workspace_id_for(memory.db, str(memory.project))
                assert workspace is not None
                workspace_of = {q["id"]: workspace for q in questions}
            else:
                ids, workspaces = fill_chat(memory, episodes, Path(scratch), now=now)
                workspace_of = {q["id"]: workspaces[q["group"]] for q in questions}
            print(f"stored {len(ids)} episodes in {time.perf_counter() - started:.0f} s", flush=True)
            index_and_collect(memory.db, args, questions, ids, workspace_of, now)
        finally:
            memory.db.close()
            chroma_server.stop_server()


def resume(args: argparse.Namespace) -> None:
    """Go on with a store a `run` left behind (its scratch data dir), indexing what is left and collecting: the
    episodes were stored in corpus order, so episode n is the corpus's n-th."""
    from codeoid.memory import chroma_server
    from codeoid.store import db as store_db

    episodes, questions = load_set(args.set)
    index, count = (int(part) for part in args.shard.split("/"))
    os.environ["CODEOID_HOME"] = str(args.home)
    db = store_db.connect()
    try:
        stored = db.execute("SELECT id, text FROM episodes ORDER BY id").fetchall()
        assert len(stored) == len(episodes)
        ids = {episode["key"]: row[0] for episode, row in zip(episodes, stored, strict=True)}
        assert all(row[1].startswith(episode["text"][:20]) for episode, row in zip(episodes, stored, strict=True)
                   if episode["kind"] != "tool")
        now = float(db.execute("SELECT max(created_at) FROM episodes").fetchone()[0]) + 3600
        roots = {str(row[1]): int(row[0]) for row in db.execute("SELECT id, root FROM workspaces")}
        if args.set == "code":
            workspace_of = {q["id"]: next(iter(roots.values())) for q in questions}
        else:
            by_group = {int(root.rsplit("group-", 1)[1]): i for root, i in roots.items() if "group-" in root}
            workspace_of = {q["id"]: by_group[q["group"]] for q in questions}
        index_and_collect(db, args, questions[index::count], ids, workspace_of, now)
    finally:
        db.close()
        if count == 1:
            chroma_server.stop_server()  # shards share the server; the last one to finish leaves it to idle out


def index_and_collect(db: Any, args: argparse.Namespace, questions: list[dict[str, Any]], ids: dict[str, int],
                      workspace_of: dict[str, int], now: float) -> None:
    evaluate.index_store(db)
    started = time.perf_counter()
    candidates = {q["id"]: collect(db, workspace_of[q["id"]], q["question"]) for q in questions}
    print(f"candidates collected in {time.perf_counter() - started:.0f} s", flush=True)
    state = {"set": args.set, "now": now, "ids": ids, "candidates": candidates}
    checked = questions[::CHECKED]
    agree = 0
    for q in checked:
        through = retrieval.recall_ranked(db, q["question"], workspace_id=workspace_of[q["id"]],
                                          limit=evaluate.DEPTH, weights=dataclasses.replace(RecallWeights(),
                                                                                            recency=0.0))
        agree += [row["id"] for row in through.rows] == refuse(candidates[q["id"]], q["question"],
                                                             dataclasses.replace(RecallWeights(), recency=0.0), now)
    state["agree"] = [agree, len(checked)]
    print(f"re-fused defaults equal recall_ranked's top 10 on {agree}/{len(checked)} questions", flush=True)
    args.cache.write_text(json.dumps(state))


def configs(tuned: RecallWeights) -> dict[str, tuple[RecallWeights, bool]]:
    return {
        "BM25, each episode alone (before)": (RecallWeights(dense=0.0), True),
        "BM25 with session neighbours": (RecallWeights(dense=0.0), False),
        "dense alone": (evaluate.DENSE_ALONE, False),
        "RRF, plain BM25 (before)": (RRF_BEFORE, True),
        "RRF, neighbour BM25": (RRF_BEFORE, False),
        "z-score fusion (session six)": (evaluate.SESSION_SIX, False),
        "z-score fusion (shipped defaults)": (RecallWeights(), False),
        "z-score fusion (best on tuning halves)": (tuned, False),
    }


def tune_columns(states: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]]
                 ) -> list[tuple[float, tuple[float, ...]]]:
    """Column weights by the sum of the tuning halves' MRR of BM25 alone, best first."""
    results = []
    for columns in COLUMN_GRID:
        weights = dataclasses.replace(RecallWeights(dense=0.0), **dict(zip(
            ("bm25_self", "bm25_near", "bm25_mid", "bm25_far"), columns, strict=True)))
        total = sum(evaluate.scores(ranks(state, tuning, weights))["MRR"] for state, tuning in states)
        results.append((total, columns))
    results.sort(key=lambda item: -item[0])
    return results


def tune(states: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]], columns: Sequence[float]
         ) -> list[tuple[float, RecallWeights]]:
    names = list(GRID)
    results = []
    column_weights = dict(zip(("bm25_self", "bm25_near", "bm25_mid", "bm25_far"), columns, strict=True))
    for values in itertools.product(*(GRID[name] for name in names)):
        chosen: dict[str, Any] = dict(zip(names, values, strict=True))
        chosen["candidates"] = int(chosen["candidates"])
        weights = dataclasses.replace(RecallWeights(), **chosen, **column_weights)
        total = sum(evaluate.scores(ranks(state, tuning, weights))["MRR"] for state, tuning in states)
        results.append((total, weights))
    results.sort(key=lambda item: -item[0])
    return results


def report(args: argparse.Namespace) -> None:
    merged: dict[str, dict[str, Any]] = {}
    for path in args.caches:
        state = json.loads(Path(path).read_text())
        if state["set"] in merged:  # another shard of the same run
            merged[state["set"]]["candidates"].update(state["candidates"])
            merged[state["set"]]["agree"] = [a + b for a, b in zip(merged[state["set"]]["agree"], state["agree"],
                                                                   strict=True)]
        else:
            merged[state["set"]] = state
    loaded = []
    for state in merged.values():
        _, questions = load_set(state["set"])
        loaded.append((state, [q for q in questions if q["id"] in state["candidates"]]))
    halves = [(state, [q for q in questions if q["split"] == "tune"]) for state, questions in loaded]
    by_columns = tune_columns(halves)
    print("BM25 column weights (self, near, mid, far) by tuning-half MRR: " + "; ".join(
        f"{c} {score:.3f}" for score, c in by_columns[:5]) + f"; worst {by_columns[-1][1]} {by_columns[-1][0]:.3f}")
    results = tune(halves, by_columns[0][1])
    best_score, best = results[0]
    print(f"best on tuning halves (sum of MRR {best_score:.3f}): {best}")
    for score, weights in results[1:6]:
        print(f"  next {score:.3f}: {weights}")
    out: dict[str, Any] = {"tuned": dataclasses.asdict(best), "grid": {k: list(v) for k, v in GRID.items()},
                           "columns_by_tuning_mrr": [[score, list(c)] for score, c in by_columns],
                           "shipped": dataclasses.asdict(RecallWeights()), "sets": {}}
    for state, questions in loaded:
        found: dict[str, Any] = {"agree": state["agree"], "episodes": len(state["ids"])}
        for half in ("tune", "heldout"):
            members = [q for q in questions if q["split"] == half]
            found[half] = {"questions": len(members)}
            by_config = {name: ranks(state, members, weights, plain=plain)
                         for name, (weights, plain) in configs(best).items()}
            for name, found_ranks in by_config.items():
                found[half][name] = evaluate.with_intervals(found_ranks)
            if "style" in members[0]:
                for style in ("lexical", "paraphrase"):
                    chosen = [i for i, q in enumerate(members) if q["style"] == style]
                    found[half][f"by style: {style}"] = {
                        name: evaluate.with_intervals([r[i] for i in chosen]) for name, r in by_config.items()}
            shipped = by_config["z-score fusion (shipped defaults)"]
            for against in ("RRF, plain BM25 (before)", "RRF, neighbour BM25", "BM25 with session neighbours"):
                found[half][f"shipped z-score minus {against} (paired)"] = {
                    m: evaluate.paired_difference(shipped, by_config[against], m) for m in ("R@10", "MRR")}
        out["sets"][state["set"]] = found
        for half in ("tune", "heldout"):
            print(f"\n{state['set']} {half} ({found[half]['questions']} questions), re-fused = recall_ranked on "
                  f"{state['agree'][0]}/{state['agree'][1]}")
            print(markdown({k: v for k, v in found[half].items() if isinstance(v, dict) and "R@1" in v}))
            for key, value in found[half].items():
                if key.startswith("by style"):
                    print(f"{key}: " + "; ".join(f"{n} MRR {v['MRR']['value']:.3f} [{v['MRR']['low']:.2f}, "
                                                 f"{v['MRR']['high']:.2f}]" for n, v in value.items()))
                if "paired" in key:
                    print(f"{key}: " + ", ".join(f"{m} {d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
                                                 for m, d in value.items()))
    args.out.write_text(json.dumps(out, indent=1) + "\n")


def markdown(table: dict[str, dict[str, dict[str, float]]]) -> str:
    rows = ["| ranking | R@1 | R@5 | R@10 | MRR |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, found in table.items():
        cells = [f"{found[m]['value']:.3f} [{found[m]['low']:.2f}, {found[m]['high']:.2f}]"
                 for m in ("R@1", "R@5", "R@10", "MRR")]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    collect_cmd = commands.add_parser("run", help="fill a store, index it, cache every question's candidates")
    collect_cmd.add_argument("--set", choices=("chat", "code"), required=True)
    collect_cmd.add_argument("--cache", type=Path, required=True)
    resume_cmd = commands.add_parser("resume", help="go on with the data dir a stopped `run` left behind")
    resume_cmd.add_argument("--set", choices=("chat", "code"), required=True)
    resume_cmd.add_argument("--home", type=Path, required=True)
    resume_cmd.add_argument("--cache", type=Path, required=True)
    resume_cmd.add_argument("--shard", default="0/1", help="i/n: only every n-th question from the i-th (processes "
                            "in parallel on a loaded machine); `report` merges the caches of one set")
    report_cmd = commands.add_parser("report", help="tune on the tuning halves and report both halves")
    report_cmd.add_argument("caches", nargs="+")
    report_cmd.add_argument("--out", type=Path, default=HERE / "fusion.json")
    args = parser.parse_args()
    {"run": run, "resume": resume, "report": report}[args.command](args)


if __name__ == "__main__":
    main()
