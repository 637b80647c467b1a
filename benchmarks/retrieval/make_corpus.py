"""Generate the retrieval corpus and its questions, deterministically, from real package sources in this venv.

The workspace is a repository holding real modules of httpx, click and h11 under `src/`. Each task of
`tasks.py` becomes one debugging session (prompt, rg, Read of the real function, a pytest failure whose
traceback walks the function's real lines, the explanation, the Edit, a re-read of the new version, git diff,
the passing rerun, the commit); exploration sessions and the rest of each task session fill the store with
what surrounds such work: listings, greps, reads of other functions (and of the same files at older or newer
versions), passing suites, failures of other tests with look-alike errors, questions and answers about the
code. Every output is built from the real files as they stand after the fixes made so far.

Questions come six per task, three lexical (names, error strings, paths) and three paraphrased (the task's
`symptom` and `fix`, written apart from the corpus); their answers are found by content, not by position
(every Read that shows the function, every run that printed the failure), and each question records the share
of its words that occur in its answers. The split into a tuning and a held-out half is fixed here, stratified
by question type.

    .venv/bin/python benchmarks/retrieval/make_corpus.py   # writes corpus.jsonl.gz and questions.jsonl
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from tasks import TASKS, Task

HERE = Path(__file__).resolve().parent
SITE = Path(click.__file__).resolve().parent.parent
ROOT = "/home/dev/work/netkit"
SEED = 20261130
DAYS = 28
EXPLORATION_SESSIONS = 22
OTHER_FILES = ["httpx/_decoders.py", "httpx/_exceptions.py", "httpx/_status_codes.py", "httpx/_api.py",
               "httpx/_content.py", "click/decorators.py", "click/formatting.py", "click/parser.py",
               "click/exceptions.py", "h11/_readers.py", "h11/_writers.py", "h11/_state.py"]
LOOKALIKE_ERRORS = [
    "AssertionError: assert 200 == 404", "AssertionError: assert 'GET' == 'HEAD'", "KeyError: 'location'",
    "TypeError: 'NoneType' object is not iterable", "AttributeError: 'Response' object has no attribute '_content'",
    "ValueError: invalid literal for int() with base 10: ''", "httpx.ReadTimeout: timed out",
    "httpx.ConnectError: [Errno 111] Connection refused",
    "ssl.SSLError: [SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)",
    "click.exceptions.UsageError: Missing argument 'SRC'.", "AssertionError: assert None == 'utf-8'",
    "httpx.HTTPStatusError: Client error '404 Not Found' for url 'https://example.org/missing'",
    "TypeError: __init__() got an unexpected keyword argument 'verify'",
    "h11._util.RemoteProtocolError: malformed data", "click.exceptions.BadParameter: 'x' is not a valid integer.",
    "UnicodeEncodeError: 'ascii' codec can't encode character '\\xe9' in position 3: ordinal not in range(128)",
]
SEARCH_TERMS = ["timeout", "encoding", "def close", "raise ", "headers", "os.environ", "ctx.", "redirect",
                "cookies", "charset", "default", "def __init__", "stream", "proxy", "deprecated", "echo("]
CHATTER = [
    ("Let's look at the next item on the list.", "Next on the list is the CLI help output, then the proxy settings."),
    ("Can you check the CI log for the nightly run?",
     "The nightly run is green apart from a known flaky network test."),
    ("Any lint warnings left?", "ruff reports nothing; mypy is clean on src/."),
    ("Write a short note for the changelog.", "Changelog entry added under Unreleased."),
    ("Let's stop here for today.", "Everything is committed; the working tree is clean."),
]
STOP = set("""a an the and or of to in on at for with from by is are was were be been it its this that these those
we us our you your i me my did do does done what when where which who why how show find see saw said say get got
made make there their then than as not no into over about after before while just also any all some up out""".split())  # noqa: SIM905


@dataclass
class Workspace:
    """The repository's files as they stand now (fixes applied in session order)."""

    lines: dict[str, list[str]] = field(default_factory=dict)

    def load(self, file: str) -> list[str]:
        if file not in self.lines:
            self.lines[file] = (SITE / file).read_text().split("\n")
        return self.lines[file]

    def functions(self, file: str) -> list[tuple[str, int]]:
        return [(match.group(2), number) for number, line in enumerate(self.load(file))
                if (match := re.match(r"\s*(async\s+)?def\s+(\w+)\s*\(", line))]


def locate(lines: list[str], name: str) -> tuple[int, int, int]:
    """The 0-based def line, first body line after the docstring, and end (exclusive) of the first `name`."""
    start = next(i for i, line in enumerate(lines) if re.match(rf"\s*(async\s+)?def\s+{name}\s*\(", line))
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = start
    while not lines[body].rstrip().endswith(":"):
        body += 1
    body += 1
    first = lines[body].strip()
    if first.startswith(('"""', "'''", 'r"""')):
        quote = first.lstrip("r")[:3]
        if first.count(quote) < 2 or first == quote:
            body += 1
            while quote not in lines[body]:
                body += 1
        body += 1
    end = body
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    return start, body, end


def indent_patch(patch: str, indent: str) -> list[str]:
    out, level = [], indent
    for line in patch.split("\n"):
        out.append(level + line.strip())
        level = indent + "    " if line.rstrip().endswith(":") else indent
    return out


def short_hash(*parts: object) -> str:
    return hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()


def test_file(file: str) -> str:
    return f"tests/test_{Path(file).stem.lstrip('_')}.py"


class Corpus:
    def __init__(self) -> None:
        self.rng = random.Random(SEED)
        self.ws = Workspace()
        self.episodes: list[dict[str, Any]] = []
        self.commits: list[tuple[str, str]] = []
        self.clock = 0.0
        self.session = ""
        self.count = 0

    # -- episodes -------------------------------------------------------------------------------------------
    def add(self, kind: str, **fields: Any) -> str:
        self.count += 1
        self.clock += self.rng.uniform(8, 95)
        key = f"{self.session}.{self.count:03d}"
        self.episodes.append({"key": key, "session": self.session, "at": round(self.clock, 1), "kind": kind,
                              **fields})
        return key

    def user(self, text: str) -> str:
        return self.add("user", text=text)

    def assistant(self, text: str) -> str:
        return self.add("assistant", text=text)

    def bash(self, command: str, stdout: str, *, exit_code: int = 0) -> str:
        if exit_code:
            return self.add("tool", tool="Bash", input={"command": command}, response=None,
                            error=f"Exit code {exit_code}\n{stdout}")
        return self.add("tool", tool="Bash", input={"command": command},
                        response={"stdout": stdout, "stderr": "", "interrupted": False}, error=None)

    def read(self, file: str, offset: int, limit: int) -> str:
        lines = self.ws.load(file)
        chosen = lines[offset - 1:offset - 1 + limit]
        path = f"{ROOT}/src/{file}"
        return self.add("tool", tool="Read", input={"file_path": path, "offset": offset, "limit": limit},
                        response={"type": "text", "file": {"filePath": path, "content": "\n".join(chosen),
                                                           "numLines": len(chosen), "startLine": offset,
                                                           "totalLines": len(lines)}}, error=None)

    # -- outputs built from the workspace -------------------------------------------------------------------
    def rg(self, term: str, files: list[str], cap: int = 30) -> str:
        hits = []
        for file in files:
            for number, line in enumerate(self.ws.load(file), 1):
                if term in line:
                    hits.append(f"src/{file}:{number}:{line}")
        shown = hits[:cap]
        return "\n".join(shown) + (f"\n[... {len(hits) - cap} more matches]" if len(hits) > cap else "")

    def traceback(self, file: str, function: str, test: str, error: str, others: int) -> str:
        lines = self.ws.load(file)
        start, body, end = locate(lines, function)
        failing = min(body + self.rng.randint(0, 3), end - 1)
        while not lines[failing].strip() and failing > body:
            failing -= 1
        shown = lines[max(start, failing - 7):failing + 1]
        before = self.rng.randint(1, others)
        dots = "." * before + "F" + "." * (others - before)
        test_path = test_file(file)
        head = error.split(":")[0] if ":" in error else error
        shown = textwrap.dedent("\n".join(shown)).split("\n")
        frame = "\n".join(("    " + line) for line in shown[:-1])
        out = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0",
            f"rootdir: {ROOT}", "configfile: pyproject.toml", f"collected {others + 1} items", "",
            f"{test_path} {dots}{' ' * max(1, 44 - len(test_path) - len(dots))}[100%]", "",
            "=================================== FAILURES ===================================",
            f"{'_' * 20} {test} {'_' * 20}", "",
            f"    def {test}():",
            f"        subject = make_subject(\"{test.removeprefix('test_')}\")",
            f">       result = subject.{function}(*CASE.args, **CASE.kwargs)", "",
            f"{test_path}:{self.rng.randint(20, 400)}: ",
            "_ " * 38,
            f"src/{file}:{failing + 1}: in {function}",
            frame,
            f">   {shown[-1]}",
        ]
        out += [f"E   {part}" for part in error.split("\n")]
        out += ["", f"src/{file}:{failing + 1}: {head.split('.')[-1]}",
                "=========================== short test summary info ============================",
                f"FAILED {test_path}::{test} - {error.split(chr(10))[0]}",
                f"========================= 1 failed, {others} passed in {self.rng.uniform(0.2, 3):.2f}s "
                "========================="]
        return "\n".join(out)

    def passing_suite(self, files: list[str]) -> str:
        total, out = 0, ["============================= test session starts ==============================",
                         "platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0", f"rootdir: {ROOT}"]
        rows = []
        for file in files:
            n = self.rng.randint(6, 40)
            total += n
            rows.append(f"{test_file(file)} {'.' * n}")
        out += [f"collected {total} items", "", *rows, "",
                f"============================= {total} passed in {self.rng.uniform(1, 14):.2f}s "
                "=============================="]
        return "\n".join(out)

    def listing(self, package: str) -> str:
        rows = ["total " + str(self.rng.randint(200, 900))]
        for path in sorted((SITE / package).iterdir()):
            if path.name == "__pycache__":
                continue
            size = path.stat().st_size if path.is_file() else 4096
            kind = "d" if path.is_dir() else "-"
            rows.append(f"{kind}rw-r--r--  1 dev dev {size:>7} Nov {self.rng.randint(1, 28):>2} "
                        f"{self.rng.randint(8, 19):02d}:{self.rng.randint(0, 59):02d} {path.name}")
        return "\n".join(rows)

    def git_log(self) -> str:
        recent = self.commits[-10:][::-1]
        return "\n".join(f"{sha[:7]} {message}" for sha, message in recent) or "(no commits yet)"

    def git_status(self, files: list[str]) -> str:
        rows = ["On branch main", "Your branch is up to date with 'origin/main'.", "",
                "Changes not staged for commit:", '  (use "git add <file>..." to update what will be committed)']
        rows += [f"\tmodified:   src/{file}" for file in files]
        rows += ["", 'no changes added to commit (use "git add" and/or "git commit -a")']
        return "\n".join(rows)

    # -- sessions -------------------------------------------------------------------------------------------
    def filler(self, n: int, near: str | None = None) -> None:
        """`n` episodes of what surrounds real work, around `near` (a file) when given."""
        files = sorted({task.file for task in TASKS}) + OTHER_FILES
        for _ in range(n):
            choice = self.rng.random()
            file = near if near and self.rng.random() < 0.4 else self.rng.choice(files)
            if choice < 0.22:
                functions = self.ws.functions(file)
                name, number = self.rng.choice(functions)
                self.read(file, max(1, number - 3), self.rng.randint(25, 50))
            elif choice < 0.34:
                term = self.rng.choice(SEARCH_TERMS)
                self.bash(f"rg -n {json.dumps(term)} src/", self.rg(term, files, cap=25))
            elif choice < 0.42:
                package = file.split("/")[0]
                self.bash(f"ls -la src/{package}/", self.listing(package))
            elif choice < 0.48:
                self.bash("git log --oneline -10", self.git_log())
            elif choice < 0.53:
                self.bash("git status", self.git_status(self.rng.sample(files, self.rng.randint(1, 3))))
            elif choice < 0.61:
                chosen = self.rng.sample(files, self.rng.randint(3, 8))
                self.bash("pytest -q", self.passing_suite(chosen))
            elif choice < 0.71:
                name, _ = self.rng.choice([f for f in self.ws.functions(file) if not f[0].startswith("__")]
                                          or self.ws.functions(file))
                if any(task.function == name for task in TASKS):
                    continue
                test = f"test_{name.strip('_')}_{self.rng.choice(['edge_case', 'regression', 'roundtrip', 'empty'])}"
                error = self.rng.choice(LOOKALIKE_ERRORS)
                key = self.bash(f"pytest {test_file(file)} -q", self.traceback(file, name, test, error, 9), exit_code=1)
                self.assistant(f"`{test}` fails with `{error.split(':')[0]}` in `{name}`; this one is flaky on "
                               f"the shared runner, rerunning.")
                self.bash(f"pytest {test_file(file)} -q -k {test}", self.passing_suite([file]))
                del key
            elif choice < 0.86:
                name, number = self.rng.choice(self.ws.functions(file))
                doc = docstring(self.ws.load(file), name)
                if doc:
                    self.user(self.rng.choice([f"What does {name} do?", f"Explain {name} in src/{file} briefly.",
                                               f"Is {name} used anywhere important?"]))
                    self.assistant(f"`{name}` (src/{file}:{number + 1}): {doc}")
                else:
                    self.user(self.rng.choice(["ok, next", "run the tests again", "commit that please",
                                               "looks good", "what's left on the list?"]))
            else:
                asked, answered = self.rng.choice(CHATTER)
                self.user(asked)
                self.assistant(answered)

    def task_session(self, task: Task) -> dict[str, Any]:
        lines = self.ws.load(task.file)
        start, body, end = locate(lines, task.function)
        keys: dict[str, Any] = {}
        self.filler(self.rng.randint(2, 6))
        keys["prompt"] = self.user(task.prompt)
        self.assistant(f"Let me find `{task.function}` and the test first.")
        self.bash(f"rg -n {task.function} src/ tests/", self.rg(task.function, [task.file] + self.rng.sample(
            OTHER_FILES, 3)) + f"\n{test_file(task.file)}:{self.rng.randint(20, 400)}:def {task.test}():")
        offset = max(1, start - self.rng.randint(2, 12))
        keys["reads"] = [self.read(task.file, offset, (end - start) + self.rng.randint(15, 30))]
        self.filler(self.rng.randint(0, 3), near=task.file)
        failure = self.traceback(task.file, task.function, task.test, task.error, self.rng.randint(4, 30))
        keys["failures"] = [self.bash(f"pytest {test_file(task.file)} -x -q", failure, exit_code=1)]
        if self.rng.random() < 0.5:
            keys["failures"].append(self.bash(f"pytest {test_file(task.file)} -x -q -k {task.test}", failure,
                                              exit_code=1))
        keys["explanation"] = self.assistant(
            f"The failure comes from `{task.function}` in `src/{task.file}`: {task.cause}. "
            f"I'll change `{task.function}` and rerun `{task.test}`.")
        indent = re.match(r"\s*", lines[body]).group(0)  # type: ignore[union-attr]
        added = indent_patch(task.patch, indent)
        anchor = lines[body]
        path = f"{ROOT}/src/{task.file}"
        context = lines[max(0, body - 3):body]
        after = lines[body:body + 3]
        old_start = body - len(context) + 1
        hunk = [" " + line for line in context] + ["+" + line for line in added] + [" " + line for line in after]
        keys["edit"] = self.add("tool", tool="Edit", input={"file_path": path, "old_string": anchor,
                                                            "new_string": "\n".join([*added, anchor])},
                                response={"filePath": path, "oldString": anchor,
                                          "newString": "\n".join([*added, anchor]), "userModified": False,
                                          "replaceAll": False, "structuredPatch": [{
                                              "oldStart": old_start, "oldLines": len(context) + len(after),
                                              "newStart": old_start, "newLines": len(hunk), "lines": hunk}]},
                                error=None)
        lines[body:body] = added
        keys["reads"].append(self.read(task.file, offset, (end - start) + len(added) + self.rng.randint(5, 20)))
        sha_old, sha_new = short_hash(task.file, "old", self.count)[:7], short_hash(task.file, "new", self.count)[:7]
        keys["diff"] = self.bash("git diff", "\n".join([
            f"diff --git a/src/{task.file} b/src/{task.file}", f"index {sha_old}..{sha_new} 100644",
            f"--- a/src/{task.file}", f"+++ b/src/{task.file}",
            f"@@ -{old_start},{len(context) + len(after)} +{old_start},{len(hunk)} @@ {lines[start].strip()}",
            *hunk]))
        self.bash(f"pytest {test_file(task.file)} -q", self.passing_suite([task.file]))
        sha = short_hash(task.test, "commit")
        message = f"Fix {task.test}"
        self.commits.append((sha, message))
        self.bash(f"git commit -am {json.dumps(message)}",
                  f"[main {sha[:7]}] {message}\n 2 files changed, {len(added) + 9} insertions(+), 1 deletion(-)")
        self.assistant(f"Done: `{task.test}` passes and the change is committed ({sha[:7]}).")
        self.filler(self.rng.randint(8, 16), near=task.file)
        return keys


def docstring(lines: list[str], name: str) -> str:
    """The first paragraph of a function's docstring, on one line; empty when it has none."""
    try:
        _, body, _ = locate(lines, name)
        start = next(i for i in range(body - 1, 0, -1) if lines[i].strip().startswith(('"""', 'r"""', "'''"))
                     or lines[i].rstrip().endswith(":"))
    except (StopIteration, IndexError):
        return ""
    if lines[start].rstrip().endswith(":"):
        return ""
    text = " ".join(line.strip() for line in lines[start:body]).strip().lstrip("r").strip('"\' ')
    return text.split("  ")[0][:400]


def words(text: str) -> set[str]:
    """Content words, cut to 6 letters as a crude stem, for measuring how lexical a question is."""
    return {word[:6] for word in re.findall(r"[a-z][a-z0-9]+", text.lower().replace("_", " "))
            if word not in STOP and len(word) > 2}


def episode_text(episode: dict[str, Any]) -> str:
    if episode["kind"] != "tool":
        return str(episode["text"])
    return json.dumps(episode["input"]) + "\n" + json.dumps(episode["response"]) + "\n" + (episode["error"] or "")


def questions(corpus: Corpus, sessions: list[tuple[Task, dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    by_key = {episode["key"]: episode for episode in corpus.episodes}
    templates = {
        "failure_lexical": ["where did we see {error}", "{test} failure output", "the traceback ending in {error}"],
        "failure_paraphrase": ["what did the test failure say when {symptom}",
                               "show me the failing test run from when {symptom}",
                               "the traceback we got when {symptom}"],
        "diff_lexical": ["the diff that changed {function} in {name}", "git diff of the {function} fix",
                         "the edit to {function} in src/{file}"],
        "diff_paraphrase": ["the diff where we {fix}", "find the edit made to {fix}", "the change to {fix}"],
        "read_lexical": ["the read of src/{file} around {function}", "where we looked at {function} in {name}",
                         "open the {function} source we read"],
        "explain_paraphrase": ["why was it that {symptom}?", "your explanation of why {symptom}",
                               "what was the cause when {symptom}"],
    }
    for number, (task, keys) in enumerate(sessions):
        signature = f"def {task.function}("
        reads = [episode["key"] for episode in corpus.episodes if episode.get("tool") == "Read"
                 and episode["input"]["file_path"].endswith("/" + task.file)
                 and signature in episode["response"]["file"]["content"]]
        error_head = " ".join(task.error.split("\n")[0].split()[:8])
        answers = {
            "failure_lexical": keys["failures"], "failure_paraphrase": keys["failures"],
            "diff_lexical": [keys["edit"], keys["diff"]], "diff_paraphrase": [keys["edit"], keys["diff"]],
            "read_lexical": reads, "explain_paraphrase": [keys["explanation"]],
        }
        values = {"error": error_head, "test": task.test, "symptom": task.symptom, "fix": task.fix,
                  "function": task.function, "name": Path(task.file).name, "file": task.file}
        for kind, options in templates.items():
            question = options[number % len(options)].format(**values)
            answer_words = set().union(*(words(episode_text(by_key[key])) for key in answers[kind]))
            asked = words(question)
            yield {"type": kind, "style": kind.split("_")[1], "question": question, "answers": answers[kind],
                   "overlap": round(len(asked & answer_words) / max(len(asked), 1), 2)}


def split(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Number the questions and put half of each type, chosen by a seeded shuffle, in the held-out half."""
    rng = random.Random(SEED + 1)
    for kind in sorted({question["type"] for question in found}):
        members = [question for question in found if question["type"] == kind]
        rng.shuffle(members)
        for position, question in enumerate(members):
            question["split"] = "heldout" if position % 2 else "tune"
    return [{"id": f"q{n:03d}", **question} for n, question in enumerate(found, 1)]


def main() -> None:
    corpus = Corpus()
    order: list[Task | None] = [*TASKS, *[None] * EXPLORATION_SESSIONS]
    corpus.rng.shuffle(order)
    gap = DAYS * 86400 / len(order)
    sessions = []
    for number, task in enumerate(order, 1):
        corpus.session, corpus.count = f"s{number:02d}", 0
        corpus.clock = max(corpus.clock, (number - 1) * gap + corpus.rng.uniform(0, gap / 3))
        if task is None:
            corpus.filler(corpus.rng.randint(24, 36))
        else:
            sessions.append((task, corpus.task_session(task)))
    found = split(list(questions(corpus, sessions)))
    with gzip.GzipFile(HERE / "corpus.jsonl.gz", "wb", mtime=0) as out:
        for episode in corpus.episodes:
            out.write((json.dumps(episode, sort_keys=True) + "\n").encode())
    with open(HERE / "questions.jsonl", "w") as out:
        for question in found:
            out.write(json.dumps(question) + "\n")
    styles = {style: [q["overlap"] for q in found if q["style"] == style] for style in ("lexical", "paraphrase")}
    print(f"{len(corpus.episodes)} episodes in {len(order)} sessions; {len(found)} questions "
          + ", ".join(f"{style} {len(v)} (mean word overlap {sum(v) / len(v):.2f})" for style, v in styles.items()))
    print(f"from {SITE} ({os.path.basename(str(SITE))})")


if __name__ == "__main__":
    main()
