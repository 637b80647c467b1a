"""Build the `week` set: a developer's twelve days on marshmallow, played through the real `claude` CLI with codeoid's
hooks installed, and stored exactly as those hooks stored it.

The script clones marshmallow from the local mirror at a pinned commit into `--root` (default /tmp/mmw), makes a
scratch virtualenv there with marshmallow installed editable and its test tools pinned, and starts the scripted
fake Anthropic API of the end-to-end tests (`tests/e2e`). `ClaudeRig` then runs the pinned `claude -p` in an
isolated HOME whose project is that clone, with `codeoid install` done: each prompt of `sessions.py` is one run
(later prompts of a session `--resume` it), the fake API answers with the scripted tool calls and texts, Claude Code
runs them for real (Bash through codeoid's rewrite, so long outputs reach the window compressed and their raw
bytes are stored; Read and Edit on the real files), and codeoid's hooks store every prompt, call, result and
answer in the rig's `CODEOID_HOME`. Teammates' commits (`before` in `sessions.py`) are made between sessions, as
them, at their simulated times; git's own dates follow one fixed calendar whose "today" is BASE_DATE.

What it writes next to itself:
- `store.db.gz`: the store the hooks filled (a `VACUUM INTO` copy with the derived indexes emptied);
- `sessions.json`: each session's backing Claude Code session id, simulated day and hour, and its turns' starts
  in minutes, which `placement.py` uses to date every row at prepare time;
- `keys.json`: the episode id of every key (`s03.fail`, `s07.a2`), found by the scripted tool-use ids, prompt and
  answer texts.

Then it checks the questions (`questions.jsonl`) if they exist: every question's evidence must be in the text or
the raw output of one of its answer episodes, or the build fails; nothing else about them is looked at.

    .venv/bin/python benchmarks/retrieval/week/make_corpus.py            # build and check: 4-7 minutes on 2 cores
    .venv/bin/python benchmarks/retrieval/week/make_corpus.py --check    # only check the questions' evidence

A rebuild gives the same commits, tool-use ids and episode ids (`keys.json`); only what the clock decides differs
(timings, durations in test summaries), which no question's evidence depends on.

Needs network access to the package index once (the scratch venv) and the mirror from `fetch
github:marshmallow-code/marshmallow`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE))

from e2e.fake_anthropic import FakeAnthropic, Reply, Text, ToolUse, tool_results_in  # noqa: E402
from e2e.rig import ClaudeRig, find_claude  # noqa: E402
from placement import clear_derived  # noqa: E402
from sessions import SESSIONS, Ctx  # noqa: E402

MIRROR = Path("/work/.mirror/marshmallow-code+marshmallow/repo")
COMMIT = "341b927f219205704728c05cd61f04d7e9727523"  # marshmallow 3.23.0 plus a docs commit, 2024-10-24
REMOTE = "https://github.com/marshmallow-code/marshmallow.git"
BRANCH = "dev"
BASE_DATE = dt.date(2026, 12, 4)  # git's "today": commits and tags are dated BASE_DATE - days_ago
USER = ("Dana Reyes", "dana.reyes@example.org")
PINS = ["pytest==9.2.0", "simplejson==4.3.0", "packaging==26.4", "pluggy==1.7.0", "iniconfig==2.3.1",
        "Pygments==2.21.0", "ruff==0.6.9"]
SCRATCH_FILES = ("/tmp/only_bench.py", "/tmp/partial_repro.py")  # written by sessions; Write needs them new
STORE_GZ = HERE / "store.db.gz"
SESSIONS_JSON = HERE / "sessions.json"
KEYS_JSON = HERE / "keys.json"
QUESTIONS = HERE / "questions.jsonl"
ALPHABET = string.digits + string.ascii_uppercase + string.ascii_lowercase


class ProjectRig(ClaudeRig):
    """The e2e rig with the real repository as its project instead of a one-file git repo."""

    def _init_project(self) -> None:
        """Nothing here: `setup_project` clones marshmallow once the rig's environment exists."""


def git_date(days_ago: float, hour: float) -> str:
    day = BASE_DATE - dt.timedelta(days=days_ago)
    moment = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC) + dt.timedelta(hours=hour)
    return moment.strftime("%Y-%m-%d %H:%M:%S +0000")


def identity(who: tuple[str, str], days_ago: float, hour: float) -> dict[str, str]:
    name, email = who
    when = git_date(days_ago, hour)
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}


def run(command: list[str] | str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env={**os.environ, "TZ": "UTC", **(env or {})}, capture_output=True,
                          text=True, shell=isinstance(command, str), timeout=900)
    if done.returncode:
        raise SystemExit(f"{command} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def setup_project(root: Path, mirror: Path) -> tuple[Path, Path]:
    """The clone at the pinned commit on `dev`, and its scratch virtualenv (marshmallow editable, pinned tools)."""
    project, venv = root / "marshmallow", root / "venv"
    run(["git", "clone", "-q", str(mirror), str(project)], root)
    run(["git", "checkout", "-q", "-B", BRANCH, COMMIT], project)
    run(["git", "remote", "set-url", "origin", REMOTE], project)
    run(["git", "config", "user.name", USER[0]], project)
    run(["git", "config", "user.email", USER[1]], project)
    run([sys.executable, "-m", "venv", str(venv)], root)
    run([str(venv / "bin" / "pip"), "install", "-q", "-e", f"{project}[tests]", *PINS], root)
    return project, venv


def tool_id(session: str, turn: int, index: int) -> str:
    """A tool-use id shaped like the API's, the same on every build."""
    number = int.from_bytes(hashlib.sha256(f"week:{session}:{turn}:{index}".encode()).digest(), "big")
    chars = []
    for _ in range(22):
        number, digit = divmod(number, len(ALPHABET))
        chars.append(ALPHABET[digit])
    return "toolu_01" + "".join(chars)


def resolve(value: Any, ctx: Ctx) -> Any:
    return value(ctx) if callable(value) else value


class TurnScript:
    """One prompt's scripted replies: a reply per tool call (with any text said before it), then the answer.

    Replies are functions of the request, so a call can use what the previous one printed (a hash, the conflict
    git wrote); `answer_text` keeps the answer as it was sent, to find its episode afterwards."""

    def __init__(self, session: str, number: int, turn: dict[str, Any], project: Path) -> None:
        self.session, self.number, self.project = session, number, project
        self.calls: list[tuple[dict[str, Any], str]] = []
        self.items: list[Callable[[dict[str, Any]], Reply | str]] = []
        self.answer_text: str | None = None
        pending: str | None = None
        for index, step in enumerate(turn["steps"]):
            if "say" in step:
                pending = step["say"]
                continue
            call_id = tool_id(session, number, index)
            self.calls.append((step, call_id))
            self.items.append(self._call(step, call_id, pending))
            pending = None
        self.items.append(self._answer(turn["answer"]))

    def ctx(self, body: dict[str, Any]) -> Ctx:
        by_id = {result.tool_use_id: result.text for result in tool_results_in(body)}
        results = {step["key"]: by_id[call_id] for step, call_id in self.calls if step.get("key") and call_id in by_id}
        ordered = tool_results_in(body)
        return Ctx(self.project, results, ordered[-1].text if ordered else "")

    def path(self, name: str) -> str:
        return name if name.startswith("/") else str(self.project / name)

    def _call(self, step: dict[str, Any], call_id: str, said: str | None) -> Callable[[dict[str, Any]], Reply]:
        def reply(body: dict[str, Any]) -> Reply:
            ctx = self.ctx(body)
            tool = step["tool"]
            if tool == "Bash":
                tool_input: dict[str, Any] = {"command": resolve(step["command"], ctx)}
                if step.get("description"):
                    tool_input["description"] = step["description"]
            elif tool == "Read":
                tool_input = {"file_path": self.path(step["path"])}
                tool_input.update({k: step[k] for k in ("offset", "limit") if step.get(k) is not None})
            elif tool == "Edit":
                tool_input = {"file_path": self.path(step["path"]), "old_string": resolve(step["old"], ctx),
                              "new_string": step["new"]}
            elif tool == "Write":
                tool_input = {"file_path": self.path(step["path"]), "content": step["content"]}
            else:
                raise ValueError(tool)
            blocks: list[Text | ToolUse] = [Text(said)] if said else []
            return Reply([*blocks, ToolUse(tool, tool_input, id=call_id)])
        return reply

    def _answer(self, answer: Any) -> Callable[[dict[str, Any]], str]:
        def reply(body: dict[str, Any]) -> str:
            self.answer_text = str(resolve(answer, self.ctx(body)))
            return self.answer_text
        return reply


@contextmanager
def opened(path: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(path)
    try:
        yield db
    finally:
        db.close()


def check_calls(store: Path, script: TurnScript) -> None:
    """Every scripted call was stored, ended as it should (a Bash call's exit status) and was not refused."""
    with opened(store) as db:
        for step, call_id in script.calls:
            row = db.execute("SELECT is_error, exit_status, substr(text, 1, 600) FROM episodes "
                             "WHERE tool_use_id = ? AND kind = 'tool'", (call_id,)).fetchone()
            assert row is not None, f"{script.session} turn {script.number}: {step} was not stored"
            is_error, status, text = row
            if step["tool"] == "Bash":
                assert (status or 0) == step["expect"], (f"{script.session} turn {script.number}: {step['command']!r} "
                                                         f"exited {status}, not {step['expect']}:\n{text}")
            else:
                assert not is_error, f"{script.session} turn {script.number}: {step['tool']} failed:\n{text}"


def apply_before(action: dict[str, Any], project: Path) -> None:
    env = identity(action["who"], action["days_ago"], action["hour"])
    if action["do"] == "shell":
        run(action["command"], project, env)
        return
    path = project / action["path"]
    text = path.read_text()
    assert text.count(action["old"]) == 1, (action["path"], action["old"][:200])
    path.write_text(text.replace(action["old"], action["new"]))
    if action["message"]:
        run(["git", "commit", "-q", "-a", "-m", action["message"]], project, env)


def script_keys() -> list[str]:
    """Every episode key the sessions define, failing on a duplicate (a later one would hide the earlier)."""
    keys = []
    for session in SESSIONS:
        for number, turn in enumerate(session["turns"], 1):
            keys += [f"{session['key']}.p{number}", f"{session['key']}.a{number}"]
            keys += [f"{session['key']}.{step['key']}" for step in turn["steps"] if step.get("key")]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    assert not duplicates, f"keys used twice: {duplicates}"
    return keys


def play(root: Path, mirror: Path) -> tuple[Path, list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every session through the real CLI; the store, the placement of each session and how to find each key."""
    script_keys()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for scratch in SCRATCH_FILES:
        Path(scratch).unlink(missing_ok=True)
    claude = find_claude()
    assert claude, "no claude binary: install the pinned CLI into .tools/ (see docs/testing.md)"
    placed: list[dict[str, Any]] = []
    finders: dict[str, dict[str, Any]] = {}
    with FakeAnthropic() as api:
        rig = ProjectRig(root / "world", api, claude)
        try:
            project, venv = setup_project(root, mirror)
            rig.project = project
            rig.trust(project)
            rig.env.update(PATH=f"{venv / 'bin'}{os.pathsep}{rig.env['PATH']}", VIRTUAL_ENV=str(venv), TZ="UTC",
                           CODEOID_VECTOR="off", PYTHONDONTWRITEBYTECODE="1")
            rig.install_codeoid()
            store = rig.codeoid_home / "store.db"
            for session in SESSIONS:
                for action in session["before"]:
                    apply_before(action, project)
                backing: str | None = None
                turns = []
                for number, turn in enumerate(session["turns"], 1):
                    script = TurnScript(session["key"], number, turn, project)
                    api.add(*script.items)
                    rig.env.update(identity(USER, session["days_ago"], session["hour"] + (turn["at"] + 3) / 60))
                    started = time.perf_counter()
                    result = rig.run(turn["prompt"], *(("--resume", backing) if backing else ()), timeout=900)
                    assert result.exit_code == 0, result.describe()
                    api.assert_script_consumed()
                    if backing is None:
                        backing = result.session_id
                    assert result.session_id == backing, (session["key"], result.session_id, backing)
                    check_calls(store, script)
                    assert script.answer_text is not None
                    prefix = session["key"]
                    finders[f"{prefix}.p{number}"] = {"kind": "user", "backing": backing, "text": turn["prompt"]}
                    finders[f"{prefix}.a{number}"] = {"kind": "assistant", "backing": backing,
                                                      "text": script.answer_text}
                    for step, call_id in script.calls:
                        if step.get("key"):
                            finders[f"{prefix}.{step['key']}"] = {"kind": "tool", "tool_use_id": call_id}
                    turns.append({"number": number, "at": turn["at"]})
                    print(f"{prefix} turn {number}: {len(script.calls)} calls in "
                          f"{time.perf_counter() - started:.0f} s", flush=True)
                placed.append({"key": session["key"], "backing_session_id": backing,
                               "days_ago": session["days_ago"], "hour": session["hour"], "turns": turns})
            # Every event reached the store: nothing waits in the spool, and no hook had a reason to log.
            spooled = [p.name for p in (rig.codeoid_home / "spool").iterdir() if p.name != ".reserve"]
            assert not spooled, f"events left in the spool: {spooled}"
            assert not (rig.codeoid_home / "logs" / "codeoid.log").exists(), rig.codeoid_log()
        finally:
            rig.close()
    return store, placed, finders


def find_keys(store: Path, finders: dict[str, dict[str, Any]]) -> dict[str, int]:
    """The episode of every key, by its tool-use id or by its exact text in its backing session."""
    keys = {}
    with opened(store) as db:
        for key, found in finders.items():
            if found["kind"] == "tool":
                rows = db.execute("SELECT id FROM episodes WHERE kind = 'tool' AND tool_use_id = ?",
                                  (found["tool_use_id"],)).fetchall()
            else:
                rows = db.execute("SELECT id FROM episodes WHERE kind = ? AND backing_session_id = ? AND text = ?",
                                  (found["kind"], found["backing"], found["text"])).fetchall()
            assert len(rows) == 1, (key, rows)
            keys[key] = rows[0][0]
    return keys


def export(store: Path, placed: list[dict[str, Any]], keys: dict[str, int]) -> None:
    """The store as the hooks left it (derived indexes emptied), gzipped, with its placement and keys."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "store.db"
        with opened(store) as db:
            db.execute("VACUUM INTO ?", (str(copy),))
        with opened(copy) as db:
            clear_derived(db)
            db.commit()
            db.execute("VACUUM")
        with open(copy, "rb") as source, open(STORE_GZ, "wb") as target, \
                gzip.GzipFile(filename="store.db", mode="wb", fileobj=target, mtime=0, compresslevel=9) as packed:
            shutil.copyfileobj(source, packed)
    SESSIONS_JSON.write_text(json.dumps(placed, indent=1) + "\n")
    KEYS_JSON.write_text(json.dumps(keys, indent=1) + "\n")


@contextmanager
def built_store() -> Iterator[sqlite3.Connection]:
    """The shipped store, unpacked into a temporary file."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "store.db"
        with gzip.open(STORE_GZ, "rb") as packed, open(path, "wb") as out:
            shutil.copyfileobj(packed, out)
        with opened(path) as db:
            yield db


def episode_texts(db: sqlite3.Connection, episode_id: int) -> tuple[str, str]:
    """An episode's stored text and, when it has one, its raw output's stdout (empty otherwise)."""
    from codeoid.store.raw import read_raw_stdout

    text, raw_id = db.execute("SELECT text, raw_output_id FROM episodes WHERE id = ?", (episode_id,)).fetchone()
    raw = read_raw_stdout(db, raw_id).decode("utf-8", "replace") if raw_id else ""
    return text, raw


def check_questions() -> None:
    """Each question's evidence is in one of its answer episodes (its text, or its raw output); fail otherwise."""
    if not QUESTIONS.exists():
        print("no questions.jsonl yet: nothing to check")
        return
    keys = json.loads(KEYS_JSON.read_text())
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    missing, raw_only = [], []
    with built_store() as db:
        for question in questions:
            wanted = question["evidence"] if isinstance(question["evidence"], list) else [question["evidence"]]
            in_text = in_raw = False
            for key in question["answers"]:
                if key not in keys:
                    missing.append(f"{question['id']}: unknown key {key}")
                    continue
                text, raw = episode_texts(db, keys[key])
                in_text |= any(item.lower() in text.lower() for item in wanted)
                in_raw |= any(item.lower() in raw.lower() for item in wanted)
            if not (in_text or in_raw):
                missing.append(f"{question['id']}: {wanted} is in none of {question['answers']}")
            elif not in_text:
                raw_only.append(question["id"])
    print(f"{len(questions)} questions; evidence only in a raw output (cut from the episode's text): "
          f"{len(raw_only)} ({', '.join(raw_only)})")
    if missing:
        raise SystemExit("evidence not found:\n" + "\n".join(missing))


def summary() -> None:
    """What the built store holds: sessions, episodes, raw outputs, long tool results."""
    keys = json.loads(KEYS_JSON.read_text())
    with built_store() as db:
        counts = db.execute("SELECT count(DISTINCT backing_session_id), count(*), sum(kind = 'tool') FROM episodes"
                            ).fetchone()
        raws = db.execute("SELECT count(*) FROM raw_outputs").fetchone()[0]
        long_results = []
        for episode_id, raw_id, text in db.execute("SELECT id, raw_output_id, text FROM episodes WHERE kind = 'tool'"
                                                   ).fetchall():
            lines = max(text.count("\n") + 1, len(episode_texts(db, episode_id)[1].splitlines()) if raw_id else 0)
            if lines > 100:
                long_results.append(lines)
    print(f"{counts[0]} sessions, {counts[1]} episodes ({counts[2]} tool calls), {raws} raw outputs, "
          f"{len(long_results)} tool results over 100 lines, {len(keys)} keys; "
          f"{STORE_GZ.name} {STORE_GZ.stat().st_size / 1e6:.2f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/mmw"), help="where the clone and the rig live")
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    parser.add_argument("--check", action="store_true", help="only check the questions against the built store")
    args = parser.parse_args()
    if not args.check:
        started = time.perf_counter()
        store, placed, finders = play(args.root, args.mirror)
        export(store, placed, find_keys(store, finders))
        print(f"built in {time.perf_counter() - started:.0f} s", flush=True)
    summary()
    check_questions()


if __name__ == "__main__":
    main()
