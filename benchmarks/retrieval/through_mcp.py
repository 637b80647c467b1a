"""The harder conversational set (`people/`) measured the way a session meets it: episodes written by the capture
API the hooks call, indexed by the memory service's own indexer into a real `chroma run`, and every question
asked through the installed `codeoid-mcp` over stdio (the `mcp` SDK's client), which forwards to the memory
service; the evidence is read off the episode ids in `recall`'s answer. No LLM anywhere.

A configuration is a set of `CODEOID_RECALL_*` / `CODEOID_VECTOR` settings given to `codeoid-mcp`, which forwards
them with each call (one service answers sessions started with different settings): `bm25` is
`CODEOID_VECTOR=off` (the ranking recall gives when the vector index is down), `fused` the shipped defaults.
Each person is one workspace (its own git project), so each gets its own `codeoid-mcp` started in that project.

`--set coding` and `--set lines` are coding histories (`coding/`, `lines/`) filled the same way, the `lines` set's
successful Bash outputs passed through `codeoid-compress` as the rewrite would. With `--field shown` a hit counts
only when the numbered lines it shows (of its episode, or of the raw output behind it) hold the question's
`evidence`: what the model reads, not which episode was listed, and never the header's command.

Evidence R@k: a question whose answer is one turn (or any of a few interchangeable ones) scores 1 when one of
them is in the top k; a multi-hop question scores the share of its evidence turns in the top k (LoCoMo's
evidence recall). MRR: 1 / the rank of the first evidence turn, over the top 10. 95% intervals: 1,000 bootstrap
resamples over questions, seed 7; differences between configurations are paired.

    .venv/bin/python benchmarks/retrieval/through_mcp.py prepare --home /tmp/people-home
    .venv/bin/python benchmarks/retrieval/through_mcp.py ask --home /tmp/people-home --out runs.json \\
        bm25:CODEOID_RECALL_DENSE=0 fused: role1:CODEOID_RECALL_ROLE=1
    .venv/bin/python benchmarks/retrieval/through_mcp.py report runs.json

`--set coding` and `--set week` are coding histories of one project each (`coding/`, `week/`); `week` was made with
the real `claude` CLI and codeoid's hooks (`week/make_corpus.py`), and `prepare --set week` places its stored
sessions on their simulated days before today (prepare and ask on the same UTC day, after 10:00 UTC, when this
morning's sessions are over; earlier in the day run both under Debian's libfaketime, `faketime -f +7h CMD`, so the
memory service and Chroma the benchmark starts share the shifted clock):

    .venv/bin/python benchmarks/retrieval/through_mcp.py prepare --set week --home /tmp/week-home
    .venv/bin/python benchmarks/retrieval/through_mcp.py ask --set week --split tune --field shown \\
        --home /tmp/week-home --out week-runs.json bm25:CODEOID_RECALL_DENSE=0 words:CODEOID_VECTOR=off fused:
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

import evaluate  # noqa: E402

PEOPLE = HERE / "people"
CODING = HERE / "coding"
WEEK = HERE / "week"
LINES = HERE / "lines"
DEPTH = 10
# The question sets' halves, in the order a report lists them.
SPLITS = ("tune", "tune2", "tune3", "tune4", "tune5", "tune6", "heldout")
_EPISODE = re.compile(r"^=== episode (\d+)", re.MULTILINE)
_SHOWN_LINE = re.compile(r"^\d+[:-] (.*)$", re.MULTILINE)
SETS = {"people": PEOPLE, "coding": CODING, "week": WEEK, "tasks": HERE, "lines": LINES}
#: The project folder each single-project set's `codeoid-mcp` runs in.
PROJECTS = {"coding": "sqlparse", "week": "marshmallow", "tasks": "tasks", "lines": "flask"}


def _questions(name: str) -> list[dict[str, Any]]:
    today = dt.date.today().weekday()  # a question naming a weekday holds on one day of the week only
    questions = [q for q in evaluate.load_questions(SETS[name] / "questions.jsonl")
                 if q.get("weekday", today) == today]
    for q in questions:  # the coding set: every question is one group (one project), any answer counts
        q.setdefault("group", 0)
        q.setdefault("all", False)
        q.setdefault("type", q.get("class", ""))
    return questions


def _project(home: Path, group: int, name: str) -> Path:
    return home / (f"person-{group}" if name == "people" else PROJECTS[name])


def prepare(args: argparse.Namespace) -> None:
    """Fill a fresh data dir through the capture API (each turn at its real time) and index it."""
    if args.set in ("coding", "lines"):
        prepare_coding(args)
        return
    if args.set == "week":
        prepare_week(args)
        return
    if args.set == "tasks":
        prepare_tasks(args)
        return
    from test_mcp_server import Memory, git_project

    from codeoid.memory import chroma_server

    evaluate.fresh_environment(args.home / "data")
    episodes = evaluate.load_corpus(PEOPLE / "corpus.jsonl.gz")
    projects = {group: git_project(args.home / f"person-{group}") for group in sorted({e["group"] for e in episodes})}
    memory = Memory(args.home / "data", projects[0])
    try:
        owners: dict[str, Any] = {}
        ids: dict[str, int] = {}
        started = time.perf_counter()
        for episode in episodes:
            if episode["session"] not in owners:
                memory.clock = episode["at"] - 1
                owners[episode["session"]] = memory.backing(f"people-{episode['session']}",
                                                            project=projects[episode["group"]])
            memory.clock = max(memory.clock, episode["at"])
            add = memory.user if episode["kind"] == "user" else memory.assistant
            ids[episode["key"]] = add(owners[episode["session"]], episode["text"])
        print(f"stored {len(ids)} turns in {time.perf_counter() - started:.0f} s", flush=True)
        (args.home / "ids.json").write_text(json.dumps(ids))
        evaluate.index_store(memory.db)
    finally:
        memory.db.close()
        chroma_server.stop_server()


def prepare_coding(args: argparse.Namespace) -> None:
    """A coding history (`coding/make_corpus.py`, `lines/make_corpus.py`): each session opened by the capture API
    at its time (days before today's UTC midnight, so "yesterday" means yesterday), every prompt, answer and tool
    call as the hooks store them (a failing Bash run as Claude Code reports it: the error text with its exit code).
    In the `lines` set a successful Bash output goes through the installed `codeoid-compress` as the Bash rewrite
    would send it: the model's view is what the rules keep, and the raw output is archived."""
    from test_mcp_server import Memory, git_project

    from codeoid.memory import chroma_server

    evaluate.fresh_environment(args.home / "data")
    episodes = evaluate.load_corpus(SETS[args.set] / "corpus.jsonl.gz")
    project = git_project(_project(args.home, 0, args.set))
    midnight = time.time() // 86400 * 86400
    memory = Memory(args.home / "data", project)
    try:
        owners: dict[str, Any] = {}
        ids: dict[str, int] = {}
        for episode in sorted(episodes, key=lambda e: (-e["days_ago"], e["hour"], e["seconds"])):
            at = midnight - episode["days_ago"] * 86400 + episode["hour"] * 3600 + episode["seconds"]
            if episode["session"] not in owners:
                memory.clock = at - 1
                owners[episode["session"]] = memory.backing(f"coding-{episode['session']}")
            memory.clock = max(memory.clock, at)
            owner = owners[episode["session"]]
            if episode["kind"] == "user":
                ids[episode["key"]] = memory.user(owner, episode["text"])
            elif episode["kind"] == "assistant":
                ids[episode["key"]] = memory.assistant(owner, episode["text"])
            elif args.set == "lines" and episode["tool"] == "Bash" and episode.get("response"):
                ids[episode["key"]] = _compressed_bash(memory, owner, project, episode)
            else:
                ids[episode["key"]] = memory.tool(owner, episode["tool"], episode["input"], episode.get("response"),
                                                  error=episode.get("error"))
        print(f"stored {len(ids)} episodes", flush=True)
        (args.home / "ids.json").write_text(json.dumps(ids))
        evaluate.index_store(memory.db)
    finally:
        memory.db.close()
        chroma_server.stop_server()


def prepare_tasks(args: argparse.Namespace) -> None:
    """The template coding set (`make_corpus.py`: 2,843 episodes in 79 sessions on httpx, click and h11), stored as
    `evaluate.py` stores it, the newest episode an hour before now."""
    from test_mcp_server import Memory, git_project

    from codeoid.memory import chroma_server

    evaluate.fresh_environment(args.home / "data")
    memory = Memory(args.home / "data", git_project(args.home / "tasks"))
    try:
        ids = evaluate.fill_store(memory, evaluate.load_corpus(), now=time.time())
        print(f"stored {len(ids)} episodes", flush=True)
        (args.home / "ids.json").write_text(json.dumps(ids))
        evaluate.index_store(memory.db)
    finally:
        memory.db.close()
        chroma_server.stop_server()


def prepare_week(args: argparse.Namespace) -> None:
    """The week on marshmallow (`week/make_corpus.py`): the store the real CLI's hooks filled, copied into a fresh data
    dir, every time in it moved to its session's simulated day before today (`week/placement.py`), its workspace
    pointed at a new project folder with the same remote, then indexed the way the memory service indexes a store.
    The episodes themselves (text, input, response, raw output) stay exactly as the hooks stored them."""
    import gzip
    import shutil
    import subprocess

    from codeoid.memory import chroma_server
    from codeoid.store import db as store_db
    from codeoid.workspace import identify

    sys.path.insert(0, str(WEEK))
    from make_corpus import REMOTE
    from placement import place

    data, project = args.home / "data", args.home / PROJECTS["week"]
    if data.exists() or project.exists():
        raise SystemExit(f"{args.home} already holds a data dir or project; prepare into a fresh --home")
    evaluate.fresh_environment(data)
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin", REMOTE], check=True)
    path = data / "store.db"
    data.mkdir(mode=0o700)
    with gzip.open(WEEK / "store.db.gz", "rb") as packed, open(path, "wb") as out:
        shutil.copyfileobj(packed, out)
    path.chmod(0o600)
    today = (dt.datetime.strptime(args.today, "%Y-%m-%d").replace(tzinfo=dt.UTC).timestamp()
             if args.today else time.time() // 86400 * 86400)
    workspace = identify(str(project))
    db = store_db.connect(str(path))  # migrations of a newer codeoid first, so placement sees every time column
    try:
        latest = place(db, json.loads((WEEK / "sessions.json").read_text()), midnight=today,
                       workspace=(workspace.key, workspace.root, workspace.portable_id))
        if latest > time.time():
            print(f"warning: the store's last episode is placed at {time.strftime('%H:%M', time.gmtime(latest))} UTC, "
                  "later than now; prepare after that time for today's sessions to lie in the past", flush=True)
        keys = json.loads((WEEK / "keys.json").read_text())
        stored = {row[0] for row in db.execute("SELECT id FROM episodes")}
        assert set(keys.values()) <= stored, "keys.json names episodes the store does not hold"
        (args.home / "ids.json").write_text(json.dumps(keys))
        print(f"placed {len(stored)} episodes in {len(json.loads((WEEK / 'sessions.json').read_text()))} sessions "
              f"before {time.strftime('%Y-%m-%d', time.gmtime(today))}", flush=True)
        if args.recompress:
            print(f"{_recompress(db, project)} compressed outputs now stored as the installed rules store them",
                  flush=True)
        evaluate.index_store(db)
    finally:
        db.close()
        chroma_server.stop_server()


def _recompress(db: Any, project: Path) -> int:
    """Each successful compressed Bash output run again through the installed `codeoid-compress` (`_compress`)
    and stored as its hook would store it now: the new text, and an output the rules now pass whole stored whole,
    with no raw output. A failed run's text holds Claude Code's own "Exit code" line, which a pipe cannot
    reproduce, so failures stay as recorded."""
    import tempfile

    from codeoid.store import raw
    from codeoid.store.capture import estimate_tokens

    changed = 0
    rows = db.execute("SELECT e.id, e.command, e.tool_use_id, e.raw_output_id, e.text, e.summary FROM episodes e"
                      " JOIN raw_outputs r ON r.id = e.raw_output_id WHERE r.exit_status = 0").fetchall()
    with tempfile.TemporaryDirectory() as scratch:
        for episode_id, command, tool_use_id, raw_id, text, summary in rows:
            stdout = raw.read_raw_stdout(db, raw_id)
            shown = _compress(command, tool_use_id, stdout, project, Path(scratch))
            now = shown.decode("utf-8", "replace").rstrip("\n")
            if now == text.rstrip("\n"):
                continue
            whole = shown == stdout
            lines = now.count("\n") + 1
            db.execute("UPDATE episodes SET text = ?, token_estimate = ?, summary = ?, raw_output_id = ? WHERE id = ?",
                       (now, estimate_tokens(now), re.sub(r"\d[\d,]* lines$", f"{lines} lines", summary),
                        None if whole else raw_id, episode_id))
            if whole:
                db.execute("DELETE FROM raw_chunks WHERE raw_output_id = ?", (raw_id,))
                db.execute("DELETE FROM raw_outputs WHERE id = ?", (raw_id,))
                db.execute("DELETE FROM raw_context WHERE rowid = ?", (episode_id,))
            changed += 1
    db.commit()
    return changed


def _compressed_bash(memory: Any, owner: Any, project: Path, episode: dict[str, Any]) -> int:
    """A successful Bash call as the rewrite leaves it: its stdout through `codeoid-compress` (the rule for the
    command, the raw bytes archived under the call's id), the compressed text as the tool's result."""
    tool_use_id = "toolu_" + episode["key"].replace(".", "_")
    shown = _compress(episode["input"]["command"], tool_use_id, episode["response"]["stdout"].encode(), project,
                      memory.home).decode()
    archived = memory.db.execute("SELECT id FROM raw_outputs WHERE id = ?", (f"raw-{tool_use_id}",)).fetchone()
    return memory.tool(owner, "Bash", episode["input"], {**episode["response"], "stdout": shown.rstrip("\n")},
                       raw_output_id=archived[0] if archived else None)


def _compress(command: str, tool_use_id: str, stdout: bytes, project: Path, home: Path) -> bytes:
    """What the Bash wrapper's own path shows for `stdout`: the installed `codeoid-compress` with the command's rule,
    the raw bytes archived under the call's id in the data dir `home`."""
    import subprocess

    return subprocess.run([str(Path(sys.executable).parent / "codeoid-compress"), "--command", command,
                           "--tool-use-id", tool_use_id, "--project-dir", str(project)], input=stdout,
                          capture_output=True, check=True, cwd=project,
                          env={**os.environ, "CODEOID_HOME": str(home)}).stdout


def _blocks(text: str) -> list[tuple[int, str]]:
    """Each hit of a recall answer: its episode id and its whole block (header, lines)."""
    starts = [(m.start(), int(m[1])) for m in _EPISODE.finditer(text)]
    return [(episode_id, text[at:starts[n + 1][0] if n + 1 < len(starts) else len(text)])
            for n, (at, episode_id) in enumerate(starts)]


def shown_text(block: str) -> str:
    """The lines a hit shows, numbered grep style (`82:` or `81-`, of the episode or of its raw output), without
    its header: the command or path there names what ran, not what it printed."""
    return "\n".join(found[1] for found in _SHOWN_LINE.finditer(block))


def _shows(block: str, evidence: str | list[str] | None) -> bool:
    if not evidence:
        return True
    wanted = [evidence] if isinstance(evidence, str) else evidence
    shown = shown_text(block).lower()
    return any(item.lower() in shown for item in wanted)


def ask(args: argparse.Namespace) -> None:
    """Every question through `codeoid-mcp` once per configuration; the top ten keys and each call's wall time."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from test_mcp_server import SERVER

    from codeoid.service import lifecycle

    keys = {episode_id: key for key, episode_id in json.loads((args.home / "ids.json").read_text()).items()}
    questions = _questions(args.set)
    if args.split:
        questions = [q for q in questions if q["split"] == args.split]
    runs = json.loads(args.out.read_text()) if args.out.exists() else {}
    os.environ["CODEOID_HOME"] = str(args.home / "data")

    async def one_person(group: int, env: dict[str, str], asked: list[dict[str, Any]]) -> dict[str, Any]:
        params = StdioServerParameters(command=SERVER, cwd=str(_project(args.home, group, args.set)),
                                       env={"CODEOID_HOME": str(args.home / "data"), "PATH": os.environ["PATH"],
                                            "CODEOID_GC_INTERVAL_SECONDS": "0", **env})
        found = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            for q in asked:
                started = time.perf_counter()
                answer = await client.call_tool("recall", {"query": q["question"], "limit": args.limit})
                seconds = time.perf_counter() - started
                text = "\n".join(getattr(block, "text", "") for block in answer.content)
                assert not answer.is_error, text
                if "BM25 only" in text and env.get("CODEOID_VECTOR") != "off":
                    raise SystemExit(f"recall fell back to BM25 alone: {text[:300]}")
                blocks = _blocks(text)
                found[q["id"]] = {"top": [keys.get(i, str(i)) for i, _ in blocks],
                                  "shown": [keys.get(i, str(i)) if _shows(block, q.get("evidence")) else "-"
                                            for i, block in blocks],
                                  "seconds": seconds, "chars": len(text)}
        return found

    try:
        for spec in args.configs:
            name, _, settings = spec.partition(":")
            env = dict(item.split("=", 1) for item in settings.split(",") if item)
            started = time.perf_counter()
            found: dict[str, Any] = {}
            for group in sorted({q["group"] for q in questions}):
                found.update(anyio.run(one_person, group, env, [q for q in questions if q["group"] == group]))
            runs[name] = {"env": env, "answers": {**runs.get(name, {}).get("answers", {}), **found},
                          "load": os.getloadavg()}
            args.out.write_text(json.dumps(runs))
            summary = evidence_recall(questions, found, args.field)
            print(f"{name}: R@5 {summary['R@5']:.3f} R@10 {summary['R@10']:.3f} MRR {summary['MRR']:.3f} "
                  f"({time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        lifecycle.stop_service()


def per_question(question: dict[str, Any], top: Sequence[str]) -> dict[str, float]:
    """R@1, R@5, R@10 and reciprocal rank of one question's top keys."""
    evidence = question["answers"]
    out = {}
    for k in (1, 5, 10):
        shown = set(top[:k])
        if question["all"]:
            out[f"R@{k}"] = sum(key in shown for key in evidence) / len(evidence)
        else:
            out[f"R@{k}"] = float(any(key in shown for key in evidence))
    first = next((rank for rank, key in enumerate(top[:DEPTH], 1) if key in evidence), None)
    out["MRR"] = 1 / first if first else 0.0
    return out


def evidence_recall(questions: Sequence[dict[str, Any]], answers: dict[str, Any], field: str = "top"
                    ) -> dict[str, float]:
    rows = [per_question(q, answers[q["id"]].get(field, answers[q["id"]]["top"])) for q in questions]
    return {metric: statistics.fmean(row[metric] for row in rows) for metric in rows[0]}


def interval(values: Sequence[float], *, resamples: int = evaluate.RESAMPLES, seed: int = evaluate.SEED
             ) -> dict[str, float]:
    """The mean of per-question values (or of paired differences) with a 95% percentile bootstrap interval."""
    rng = random.Random(seed)
    drawn = sorted(statistics.fmean(values[rng.randrange(len(values))] for _ in values) for _ in range(resamples))
    return {"value": statistics.fmean(values), "low": drawn[int(0.025 * resamples)],
            "high": drawn[int(0.975 * resamples) - 1]}


def report(args: argparse.Namespace) -> None:
    runs = json.loads(args.runs.read_text())
    questions = _questions(args.set)
    by = "R@5" if args.set in PROJECTS else "R@10"  # what the per-class breakdown counts
    out: dict[str, Any] = {}
    for half in SPLITS:
        members = [q for q in questions if q["split"] == half]
        if not members:
            continue
        print(f"\n{half}: {len(members)} questions")
        print("| ranking | R@1 | R@5 | R@10 | MRR | recall p50 / p95 ms |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        rows_of = {}
        for name, run in runs.items():
            if not all(q["id"] in run["answers"] for q in members):
                continue
            rows = [per_question(q, run["answers"][q["id"]].get(args.field, run["answers"][q["id"]]["top"]))
                    for q in members]
            rows_of[name] = rows
            cells = {m: interval([row[m] for row in rows]) for m in ("R@1", "R@5", "R@10", "MRR")}
            seconds = sorted(run["answers"][q["id"]]["seconds"] for q in members)
            p50, p95 = seconds[len(seconds) // 2], seconds[int(0.95 * (len(seconds) - 1))]
            out.setdefault(half, {})[name] = {**cells, "p50_ms": p50 * 1000, "p95_ms": p95 * 1000,
                                              "load": run.get("load")}
            print(f"| {name} | " + " | ".join(f"{c['value']:.3f} [{c['low']:.2f}, {c['high']:.2f}]"
                                               for c in cells.values()) + f" | {p50 * 1000:.0f} / {p95 * 1000:.0f} |")
            for kind in ("type", "style"):  # the coding set's type is its class
                groups: dict[str, list[float]] = {}
                for q, row in zip(members, rows, strict=True):
                    groups.setdefault(q[kind], []).append(row[by])
                out[half][name][f"{by} by {kind}"] = {g: [statistics.fmean(v), len(v)] for g, v in groups.items()}
        for better, worse in args.pairs:
            if better in rows_of and worse in rows_of:
                diff = {m: interval([a[m] - b[m] for a, b in zip(rows_of[better], rows_of[worse], strict=True)])
                        for m in ("R@5", "MRR")}
                out[half][f"{better} minus {worse}"] = diff
                print(f"{better} minus {worse} (paired): " + ", ".join(
                    f"{m} {d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" for m, d in diff.items()))
        for name in rows_of:
            print(f"{name} {by} by type: " + ", ".join(f"{g} {v:.2f} (n={n})" for g, (v, n) in
                                                      out[half][name][f"{by} by type"].items())
                  + "; by style: " + ", ".join(f"{g} {v:.2f} (n={n})" for g, (v, n) in
                                              out[half][name][f"{by} by style"].items()))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_cmd = commands.add_parser("prepare", help="fill and index a data dir")
    prepare_cmd.add_argument("--home", type=Path, required=True)
    prepare_cmd.add_argument("--set", choices=sorted(SETS), default="people")
    prepare_cmd.add_argument("--recompress", action="store_true",
                             help="week set: store each successful compressed output as the installed rules "
                                  "would now (the recorded text otherwise)")
    prepare_cmd.add_argument("--today", help="week set: the UTC day (YYYY-MM-DD) its days are counted back from "
                             "(default: today)")
    ask_cmd = commands.add_parser("ask", help="ask every question through codeoid-mcp per configuration")
    ask_cmd.add_argument("--home", type=Path, required=True)
    ask_cmd.add_argument("--out", type=Path, required=True)
    ask_cmd.add_argument("--split", choices=SPLITS)
    ask_cmd.add_argument("--set", choices=sorted(SETS), default="people")
    ask_cmd.add_argument("--limit", type=int, default=DEPTH,
                         help="hits a recall asks for (10; recall's own default is 6, whose hits get more room each)")
    ask_cmd.add_argument("--field", choices=("top", "shown"), default="top",
                         help="shown: a hit counts only when the lines it shows hold the question's evidence")
    ask_cmd.add_argument("configs", nargs="+", help="name:VAR=value,VAR=value (name: alone is the defaults)")
    report_cmd = commands.add_parser("report", help="tables with intervals, both halves")
    report_cmd.add_argument("runs", type=Path)
    report_cmd.add_argument("--json", type=Path)
    report_cmd.add_argument("--set", choices=sorted(SETS), default="people")
    report_cmd.add_argument("--field", choices=("top", "shown"), default="top",
                            help="shown: a hit counts only when the lines it shows hold the question's evidence")
    report_cmd.add_argument("--pair", dest="pairs", nargs=2, action="append", default=[["fused", "bm25"]],
                            metavar=("BETTER", "WORSE"))
    args = parser.parse_args()
    {"prepare": prepare, "ask": ask, "report": report}[args.command](args)


if __name__ == "__main__":
    main()
