"""Regenerate the compression corpus: real outputs of real tools over real projects, raw and through rtk.

Projects, built under --work (default /tmp/codeoid-compress-corpus):
- toolz, more-itertools and click from their PyPI sdists, each a git repository with one commit per release
  (click's commit messages are its changelog sections), then a few tests broken, files added and removed in
  the working tree;
- a copy of three Go standard-library packages (container/list, container/ring, encoding/csv) as a module, two
  tests broken;
- the semver crate as Debian ships it (librust-semver-dev, /usr/share/cargo/registry), two tests broken;
- an npm project depending on the real `semver` package, with jest, vitest and mocha suites written here
  (npm tarballs do not ship their tests), a few cases wrong;
- flask (2.0.3, 3.0.3) and rich (10.16.2, 13.7.1) from their PyPI sdists, one commit per release, for release
  diffs of 60 to 90 files and about 500 KB;
- codeoid's own repository (its history up to a fixed commit, for long default-format logs) and this
  environment's site-packages (deep trees and long listings).

Each command runs under bash in its project, stdout captured (stderr too where the command says `2>&1`), as
the Bash tool would run it. Then `rtk rewrite COMMAND` is asked for rtk's rewrite; where it has one, that runs
in the same state and its stdout is saved beside the raw one. Writes tests/fixtures/compress/*.out,
*.rtk.out and manifest.json.

    .venv/bin/python benchmarks/compression/make_fixtures.py [--work DIR] [--only NAME ...] [--no-rtk]

Needs git, rg, ag, tree, go, cargo, node/npm, and network access to PyPI and npm.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "compress"
BIN = Path(sys.executable).parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "codeoid corpus", "GIT_AUTHOR_EMAIL": "corpus@example.invalid",
    "GIT_COMMITTER_NAME": "codeoid corpus", "GIT_COMMITTER_EMAIL": "corpus@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
}
MAX_FIXTURE_BYTES = 2_000_000


class Fixture(NamedTuple):
    name: str
    project: str  # a folder under the work dir
    command: str
    kind: str  # which fidelity detectors apply: tests, git-status, git-diff, git-log, git-branch, listing, search
    cwd_note: str


def run(command: str | list[str], cwd: Path, *, check: bool = True, env: dict[str, str] | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[bytes]:
    full_env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "NO_COLOR": "1", "TERM": "dumb",
                "CI": "1", **GIT_ENV, **(env or {})}
    full_env.pop("FORCE_COLOR", None)
    completed = subprocess.run(command, cwd=cwd, shell=isinstance(command, str), executable="/bin/bash"
                               if isinstance(command, str) else None, capture_output=True, env=full_env,
                               timeout=timeout, stdin=subprocess.DEVNULL)
    if check and completed.returncode != 0:
        raise SystemExit(f"{command!r} in {cwd} failed ({completed.returncode}):\n"
                         f"{completed.stderr.decode(errors='replace')[-3000:]}")
    return completed


# -- projects --------------------------------------------------------------------------------------------------

def sdist(work: Path, name: str, version: str) -> Path:
    """The unpacked sdist of name==version, downloaded with pip."""
    downloads = work / "sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    # Sdist names keep the project's spelling (Flask-2.0.3.tar.gz), so match any case and - or _.
    pattern = "".join("[-_]" if char == "-" else f"[{char.lower()}{char.upper()}]" if char.isalpha() else char
                      for char in name) + f"-{version}.tar.gz"
    archive = next(downloads.glob(pattern), None)
    if archive is None:
        run([str(BIN / "pip"), "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(downloads),
             f"{name}=={version}"], work, env={"PIP_CONSTRAINT": ""})
        archive = next(downloads.glob(pattern))
    unpacked = downloads / archive.name.removesuffix(".tar.gz")
    if not unpacked.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(downloads, filter="data")
    return unpacked


def git(repo: Path, *args: str) -> str:
    return run(["git", *args], repo).stdout.decode()


def release_repo(work: Path, name: str, versions: list[str],
                 message: Callable[[Path, str], str] = lambda _src, version: f"Release {version}") -> Path:
    """A git repository with one commit (and tag) per release, each commit the release's sdist as it is."""
    repo = work / name
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for number, version in enumerate(versions):
        source = sdist(work, name, version)
        for child in repo.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        shutil.copytree(source, repo, dirs_exist_ok=True)
        git(repo, "add", "-A")
        date = f"2024-0{1 + number}-1{number} 10:00:00 +0000"
        run(["git", "commit", "-q", "-m", message(source, version)], repo,
            env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        git(repo, "tag", version)
    return repo


def edit(root: Path, path: str, old: str, new: str) -> None:
    """Replace the first `old` in a file; the corpus must fail loudly if a release moved the text."""
    file = root / path
    text = file.read_text()
    if old not in text:
        raise SystemExit(f"{file}: {old!r} not found")
    file.write_text(text.replace(old, new, 1))


def changelog_message(source: Path, version: str) -> str:
    text = (source / "CHANGES.rst").read_text()
    found = re.search(rf"Version {re.escape(version)}\n-+\n(.*?)(?=\nVersion \d)", text, re.S)
    body = found.group(1).strip() if found else ""
    return f"Release {version}\n\n{body}"


def build_toolz(work: Path) -> None:
    repo = release_repo(work, "toolz", ["0.11.2", "0.12.0"])
    edit(repo, "toolz/tests/test_itertoolz.py", "{True: [2, 4], False: [1, 3]}", "{True: [2, 4], False: [1, 5]}")
    edit(repo, "toolz/tests/test_itertoolz.py", "== [1, 1, 2, 2, 3, 3]", "== [1, 1, 2, 3, 3, 2]")
    edit(repo, "toolz/tests/test_dicttoolz.py", "def test_merge(self):\n",
         "def test_merge(self):\n        raise KeyError('corpus: broken on purpose')\n")
    edit(repo, "README.rst", "Toolz", "Toolz (corpus copy)")
    (repo / "toolz" / "tests" / "test_scratch.py").write_text("def test_scratch():\n    assert True\n")
    (repo / "NOTES.md").write_text("notes\n")
    (repo / "tlz" / "__init__.py").unlink()
    git(repo, "add", "NOTES.md")


def build_more_itertools(work: Path) -> None:
    repo = release_repo(work, "more-itertools", ["10.1.0", "10.2.0"])
    edit(repo, "tests/test_more.py", "    def test_even(self):\n",
         "    def test_even(self):\n        self.assertEqual(list(range(3)), [0, 1, 3])\n")
    edit(repo, "tests/test_more.py", "    def test_odd(self):\n",
         "    def test_odd(self):\n        raise ValueError('corpus: broken on purpose')\n")


def build_click(work: Path) -> None:
    repo = release_repo(work, "click", ["8.1.3", "8.1.5", "8.1.7", "8.1.8"], changelog_message)
    for number in range(24):
        git(repo, "branch", f"feature/{['help', 'shell', 'types', 'echo'][number % 4]}-{number:02d}", "8.1.5")
    git(repo, "branch", "release/8.1.x", "8.1.7")
    edit(repo, "tests/test_basic.py", 'assert "Hello World!" in result.output',
         'assert "Hello World?" in result.output')
    edit(repo, "tests/test_basic.py", 'assert repr(command) == "<Command command>"',
         'assert repr(command) == "<Command cmd>"')
    edit(repo, "tests/test_options.py", "def test_prefixes(runner):\n",
         "def test_prefixes(runner):\n    raise RuntimeError('corpus: broken on purpose')\n")
    edit(repo, "src/click/core.py", "class Context:", "class Context:  # corpus edit")
    scratch = repo / "scratch"
    for index in range(30):
        (scratch / f"batch{index // 10}").mkdir(parents=True, exist_ok=True)
        (scratch / f"batch{index // 10}" / f"note{index:02d}.txt").write_text(f"note {index}\n")


def build_gostd(work: Path) -> None:
    """Three standard-library packages as a module of their own, so their real tests run (and can be broken)."""
    repo = work / "gostd"
    shutil.rmtree(repo, ignore_errors=True)
    goroot = Path(run(["go", "env", "GOROOT"], work).stdout.decode().strip())
    for package in ("container/list", "container/ring", "encoding/csv"):
        shutil.copytree(goroot / "src" / package, repo / package)
    (repo / "go.mod").write_text("module corpus/gostd\n\ngo 1.19\n")
    for file in repo.rglob("*_test.go"):
        text = file.read_text()
        for package in ("container/list", "container/ring", "encoding/csv"):
            text = text.replace(f'"{package}"', f'"corpus/gostd/{package}"')
        file.write_text(text)
    edit(repo, "container/list/list_test.go", "func TestRemove(t *testing.T) {\n",
         'func TestRemove(t *testing.T) {\n\tt.Errorf("corpus: broken on purpose")\n')
    edit(repo, "encoding/csv/writer_test.go", "func TestError(t *testing.T) {\n",
         'func TestError(t *testing.T) {\n\tvar m map[string]int\n\tm["corpus"] = 1\n')


def build_semver_crate(work: Path) -> None:
    repo = work / "semver-crate"
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(next(Path("/usr/share/cargo/registry").glob("semver-1.*")), repo)
    manifest = (repo / "Cargo.toml").read_text()
    manifest = re.sub(r"\[dependencies\.serde\].*?(?=\n\[)", "", manifest, flags=re.S)
    manifest = re.sub(r"\[dev-dependencies.*?(?=\n\[|\Z)", "", manifest, flags=re.S)
    manifest = re.sub(r'\nserde = \[.*?\]', "", manifest)
    (repo / "Cargo.toml").write_text(manifest)
    edit(repo, "tests/test_version.rs", "fn test_parse() {\n", "fn test_parse() {\n    assert_eq!(1 + 1, 3);\n")
    edit(repo, "tests/test_version_req.rs", "fn test_basic() {\n",
         'fn test_basic() {\n    panic!("corpus: broken on purpose");\n')
    run("cargo build --offline --tests -q", repo)


_JS_CASES = """
const valid = [
  ['1.2.3', '1.2.3'], ['v1.2.3', '1.2.3'], ['=1.2.3', '1.2.3'], ['1.2.3-beta.1', '1.2.3-beta.1'],
  ['1.2.3+build.5', '1.2.3'], ['  1.2.3  ', '1.2.3'], ['1.2', null], ['a.b.c', null], ['1.2.3.4', null],
  ['0.0.0', '0.0.0'], ['10.20.30', '10.20.30'], ['1.0.0-alpha', '1.0.0-alpha'], ['1.0.0-rc.1', '1.0.0-rc.1'],
  ['01.2.3', null], ['1.02.3', null], ['1.2.03', null], ['1.2.3-0', '1.2.3-0'], ['99999.0.0', '99999.0.0'],
];
const inc = [
  ['1.2.3', 'major', '2.0.0'], ['1.2.3', 'minor', '1.3.0'], ['1.2.3', 'patch', '1.2.4'],
  ['1.2.3-beta.1', 'prerelease', '1.2.3-beta.2'], ['1.2.3', 'premajor', '2.0.0-0'], ['1.2.3', 'preminor', '1.3.0-0'],
  ['1.2.3', 'prepatch', '1.2.4-0'], ['0.0.1', 'major', '1.0.0'], ['1.9.9', 'minor', '1.10.0'],
  ['1.2.3-rc.1', 'patch', '1.2.3'], ['1.2.3', 'patch', '1.2.5'],
];
const satisfies = [
  ['1.2.3', '^1.0.0', true], ['2.0.0', '^1.0.0', false], ['1.2.3', '~1.2.0', true], ['1.3.0', '~1.2.0', false],
  ['1.2.3', '>=1.2.3', true], ['1.2.2', '>=1.2.3', false], ['1.2.3', '1.x', true], ['2.1.0', '1.x || 2.x', true],
  ['0.2.5', '^0.2.3', true], ['0.3.0', '^0.2.3', false], ['1.2.3-beta', '^1.2.0', false], ['3.0.0', '*', true],
  ['1.0.0', '>1.0.0 <2.0.0', false], ['1.5.0', '>1.0.0 <2.0.0', true], ['2.0.0', '1.0.0 - 2.0.0', true],
  ['1.2.3', '<1.2.3', true],
];
const compare = [];
for (let major = 0; major < 6; major++) {
  for (let minor = 0; minor < 12; minor++) {
    compare.push([`${major}.${minor}.0`, `${major}.${minor}.1`, -1]);
    compare.push([`${major}.${minor + 1}.0`, `${major}.${minor}.9`, 1]);
  }
}
compare.push(['1.0.0', '1.0.0', 1]);
module.exports = { valid, inc, satisfies, compare };
"""

_JEST_TEST = """
const semver = require('semver');
const { %(table)s } = require('../cases');
describe('semver.%(fn)s', () => {
  test.each(%(table)s)('%(title)s', (...row) => {
    %(body)s
  });
});
"""

_MOCHA_TEST = """
const assert = require('assert');
const semver = require('semver');
const { %(table)s } = require('../cases');
describe('semver.%(fn)s', () => {
  for (const row of %(table)s) {
    it(`%(mtitle)s`, () => {
      %(abody)s
    });
  }
});
"""

_JS_SUITES = [
    ("valid", "valid", "valid(%s) is %s", "expect(semver.valid(row[0])).toBe(row[1]);",
     "${row[0]} is valid as ${row[1]}", "assert.strictEqual(semver.valid(row[0]), row[1]);"),
    ("inc", "inc", "inc(%s, %s) is %s", "expect(semver.inc(row[0], row[1])).toBe(row[2]);",
     "${row[0]} + ${row[1]} = ${row[2]}", "assert.strictEqual(semver.inc(row[0], row[1]), row[2]);"),
    ("satisfies", "satisfies", "%s satisfies %s: %s", "expect(semver.satisfies(row[0], row[1])).toBe(row[2]);",
     "${row[0]} in ${row[1]}: ${row[2]}", "assert.strictEqual(semver.satisfies(row[0], row[1]), row[2]);"),
    ("compare", "compare", "compare(%s, %s) is %s", "expect(semver.compare(row[0], row[1])).toBe(row[2]);",
     "compare ${row[0]} ${row[1]} = ${row[2]}", "assert.strictEqual(semver.compare(row[0], row[1]), row[2]);"),
]


def build_js(work: Path) -> None:
    repo = work / "js-semver"
    if not (repo / "node_modules" / ".bin" / "vitest").exists():
        shutil.rmtree(repo, ignore_errors=True)
        repo.mkdir(parents=True)
        (repo / "package.json").write_text(json.dumps({
            "name": "corpus-semver-tests", "version": "1.0.0", "private": True,
            "scripts": {"test": "jest --roots jest", "test:mocha": "mocha mocha"},
        }, indent=2) + "\n")
        run("npm install --no-audit --no-fund --loglevel=error semver@7.6.3 jest@29.7.0 vitest@2.1.8 "
            "mocha@10.8.2", repo)
    for folder in ("jest", "vitest", "mocha"):
        shutil.rmtree(repo / folder, ignore_errors=True)
        (repo / folder).mkdir()
    (repo / "cases.js").write_text(_JS_CASES)
    for table, fn, title, body, mtitle, abody in _JS_SUITES:
        jest = _JEST_TEST % {"table": table, "fn": fn, "title": title, "body": body}
        (repo / "jest" / f"{fn}.test.js").write_text(jest)
        (repo / "vitest" / f"{fn}.test.js").write_text("import { describe, test, expect } from 'vitest';\n"
                                                       + jest.replace("require('../cases')", "require('../cases.js')"))
        (repo / "mocha" / f"{fn}.spec.js").write_text(_MOCHA_TEST % {"table": table, "fn": fn, "mtitle": mtitle,
                                                                    "abody": abody})
    (repo / "vitest.config.mjs").write_text("export default { test: { include: ['vitest/**/*.test.js'] } };\n")


# -- failures grouped by cause: one regression failing dozens of tests, and one file with a handful ----------

def build_mi_regression(work: Path) -> None:
    """more-itertools 10.2.0 with a one-word typo in `take` (itertools' `count` for `n`): every test and doctest
    that reaches `take` fails with the same ValueError raised in more_itertools/recipes.py."""
    repo = work / "mi-regression"
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(sdist(work, "more-itertools", "10.2.0"), repo)
    edit(repo, "more_itertools/recipes.py", "    return list(islice(iterable, n))\n",
         "    return list(islice(iterable, count))\n")


def build_mi_handful(work: Path) -> None:
    """more-itertools 10.2.0 with five unrelated regressions in recipes.py, each failing a few of
    tests/test_recipes.py in its own way (wrong values, a StopIteration, a TypeError)."""
    repo = work / "mi-handful"
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(sdist(work, "more-itertools", "10.2.0"), repo)
    recipes = "more_itertools/recipes.py"
    edit(repo, recipes, "return next(islice(iterable, n, None), default)",
         "return next(islice(iterable, n + 1, None), default)")
    edit(repo, recipes, "return next(g, True) and not next(g, False)", "return next(g, True) and not next(g, True)")
    edit(repo, recipes, "return sum(map(pred, iterable))", "return sum(map(pred, iterable), start=pred)")
    edit(repo, recipes, "for r in range(len(s) + 1))", "for r in range(len(s)))")
    edit(repo, recipes, "return next(filter(pred, iterable), default)", "return next(filter(pred, iterable))")


def build_dateutil_handful(work: Path) -> None:
    """python-dateutil 2.9.0.post0 with two regressions in its parser (fractional seconds split on the wrong
    character, 12 PM taken for midnight): eleven tests of tests/test_parser.py fail through deep stacks whose
    pytest frames show whole functions. Its tests need `six`, installed beside it."""
    repo = work / "dateutil-handful"
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(sdist(work, "python-dateutil", "2.9.0.post0"), repo)
    run([str(BIN / "pip"), "install", "-q", "--target", str(repo / "deps"), "six"], repo, env={"PIP_CONSTRAINT": ""})
    parser = "src/dateutil/parser/_parser.py"
    edit(repo, parser, '            i, f = value.split(".")', '            i, f = value.split(",")')
    edit(repo, parser, "        if hour < 12 and ampm == 1:", "        if hour <= 12 and ampm == 1:")


_JS_REGRESSION_CASES = """
const compare = [];
for (let major = 0; major < 2; major++) {
  for (let minor = 0; minor < 12; minor++) {
    compare.push([`${major}.${minor}.0`, `${major}.${minor}.1`, -1]);
    compare.push([`${major}.${minor + 1}.0`, `${major}.${minor}.9`, 1]);
  }
}
"""


def build_js_regression(work: Path) -> None:
    """The semver package's own source copied into a project (lib/semver) with one typo in
    internal/identifiers.js, under the jest, vitest and mocha suites of `build_js` (whose node_modules it
    shares): every comparison throws the same TypeError from lib/semver."""
    shared = work / "js-semver"
    if not (shared / "node_modules" / ".bin" / "vitest").exists():
        build_js(work)
    repo = work / "js-regression"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    (repo / "node_modules").symlink_to(shared / "node_modules")
    shutil.copytree(shared / "node_modules" / "semver", repo / "lib" / "semver")
    edit(repo, "lib/semver/internal/identifiers.js", "const anum = numeric.test(a)", "const anum = numeric.match(a)")
    cases = (_JS_CASES.split("const compare = [];")[0] + _JS_REGRESSION_CASES
             + "module.exports = { valid, inc, satisfies, compare };\n")
    (repo / "cases.js").write_text(cases)
    for folder in ("jest", "vitest", "mocha"):
        (repo / folder).mkdir()
    for table, fn, title, body, mtitle, abody in _JS_SUITES:
        if table not in ("satisfies", "compare"):
            continue
        jest = (_JEST_TEST % {"table": table, "fn": fn, "title": title, "body": body}).replace(
            "require('semver')", "require('../lib/semver')")
        (repo / "jest" / f"{fn}.test.js").write_text(jest)
        (repo / "vitest" / f"{fn}.test.js").write_text("import { describe, test, expect } from 'vitest';\n"
                                                       + jest.replace("require('../cases')", "require('../cases.js')"))
        (repo / "mocha" / f"{fn}.spec.js").write_text((_MOCHA_TEST % {"table": table, "fn": fn, "mtitle": mtitle,
                                                                     "abody": abody}).replace(
            "require('semver')", "require('../lib/semver')"))
    (repo / "package.json").write_text(json.dumps({"name": "corpus-semver-regression", "private": True}) + "\n")
    (repo / "vitest.config.mjs").write_text("export default { test: { include: ['vitest/**/*.test.js'] } };\n")


def build_go_regression(work: Path) -> None:
    """encoding/csv from the Go standard library as a module, with the reader's quote handling broken: most
    reader tests fail with the same t.Errorf shape from one table-driven test, plus writer tests."""
    repo = work / "go-regression"
    shutil.rmtree(repo, ignore_errors=True)
    goroot = Path(run(["go", "env", "GOROOT"], work).stdout.decode().strip())
    shutil.copytree(goroot / "src" / "encoding" / "csv", repo / "csv")
    (repo / "go.mod").write_text("module corpus/goregression\n\ngo 1.19\n")
    edit(repo, "csv/reader.go", "r.numLine++", "r.numLine += 2")


def build_cargo_regression(work: Path) -> None:
    """The semver crate as Debian ships it (31 tests, so not dozens) with two regressions in its parser: `^` is
    no longer an operator, and every number of two digits or more is taken for a leading zero. Each failing
    test panics in the unwrap of tests/util/mod.rs, with one of two messages."""
    repo = work / "cargo-regression"
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(next(Path("/usr/share/cargo/registry").glob("semver-1.*")), repo)
    manifest = (repo / "Cargo.toml").read_text()
    manifest = re.sub(r"\[dependencies\.serde\].*?(?=\n\[)", "", manifest, flags=re.S)
    manifest = re.sub(r"\[dev-dependencies.*?(?=\n\[|\Z)", "", manifest, flags=re.S)
    manifest = re.sub(r'\nserde = \[.*?\]', "", manifest)
    (repo / "Cargo.toml").write_text(manifest)
    edit(repo, "src/parse.rs", "} else if bytes.first() == Some(&b'^') {", "} else if bytes.first() == Some(&b'`') {")
    edit(repo, "src/parse.rs", "if value == 0 && len > 0 {", "if value < 10 && len > 0 {")
    run("cargo build --offline --tests -q", repo)


def build_flask(work: Path) -> None:
    release_repo(work, "flask", ["2.0.3", "3.0.3"])


def build_rich(work: Path) -> None:
    release_repo(work, "rich", ["10.16.2", "13.7.1"])


def site_packages() -> Path:
    return Path(next(path for path in sys.path if path.endswith("site-packages")))


PROJECTS: dict[str, Callable[[Path], None]] = {
    "toolz": build_toolz, "more-itertools": build_more_itertools, "click": build_click, "gostd": build_gostd,
    "semver-crate": build_semver_crate, "js-semver": build_js, "mi-regression": build_mi_regression,
    "mi-handful": build_mi_handful, "js-regression": build_js_regression, "go-regression": build_go_regression,
    "cargo-regression": build_cargo_regression, "dateutil-handful": build_dateutil_handful,
    "flask": build_flask, "rich": build_rich,
}
# Projects that are not built but found where they are.
PROJECT_DIRS: dict[str, Callable[[], Path]] = {"codeoid": lambda: ROOT, "site-packages": site_packages}
# The commit codeoid's own history is read up to, so the fixture is the same from any clone.
CODEOID_COMMIT = "6d3a43c"

PYTEST_CLICK = "PYTHONPATH=src python -m pytest -p no:cacheprovider -o filterwarnings="
FIXTURE_LIST = [
    # git
    Fixture("git_status_toolz", "toolz", "git status", "git-status", "toolz repo, tests broken, files added/removed"),
    Fixture("git_status_click_untracked", "click", "git status --untracked-files=all", "git-status",
            "click repo with 30 untracked notes"),
    Fixture("git_diff_toolz_worktree", "toolz", "git diff", "git-diff", "toolz working tree vs HEAD"),
    Fixture("git_diff_toolz_releases", "toolz", "git diff 0.11.2 0.12.0", "git-diff", "toolz 0.11.2 -> 0.12.0"),
    Fixture("git_diff_click_releases", "click", "git diff 8.1.7 8.1.8 -- src tests", "git-diff",
            "click 8.1.7 -> 8.1.8, src and tests"),
    Fixture("git_diff_stat_click", "click", "git diff --stat 8.1.3 8.1.8", "git-diff", "click 8.1.3 -> 8.1.8"),
    Fixture("git_show_more_itertools", "more-itertools", "git show HEAD", "git-diff",
            "more-itertools 10.2.0 release commit"),
    Fixture("git_log_click", "click", "git log", "git-log", "click, four releases with changelog messages"),
    Fixture("git_log_stat_click", "click", "git log --stat", "git-log", "click, four releases"),
    Fixture("git_log_patch_toolz", "toolz", "git log -p -1 -- toolz", "git-diff", "toolz last release commit"),
    Fixture("git_branch_click", "click", "git branch -a", "git-branch", "click with 26 branches"),
    # tests
    Fixture("pytest_toolz", "toolz", "PYTHONPATH=. pytest -p no:cacheprovider", "tests", "toolz, 3 tests broken"),
    Fixture("pytest_toolz_verbose", "toolz", "PYTHONPATH=. pytest -p no:cacheprovider -v", "tests",
            "toolz, 3 tests broken"),
    Fixture("pytest_click", "click", f"{PYTEST_CLICK} tests", "tests", "click, 3 tests broken"),
    Fixture("pytest_click_verbose", "click", f"{PYTEST_CLICK} -v tests", "tests", "click, 3 tests broken"),
    Fixture("pytest_click_quiet", "click", "cd src && PYTHONPATH=. pytest -q -p no:cacheprovider -o "
            "filterwarnings= ../tests", "tests", "click, 3 tests broken, from src/"),
    Fixture("unittest_more_itertools_verbose", "more-itertools", "python -m unittest -v 2>&1", "tests",
            "more-itertools, 2 tests broken"),
    Fixture("unittest_more_itertools", "more-itertools", "python -m unittest 2>&1", "tests",
            "more-itertools, 2 tests broken"),
    Fixture("go_test", "gostd", "go test ./...", "tests", "3 std packages, 2 tests broken"),
    Fixture("go_test_verbose", "gostd", "go test -v ./...", "tests", "3 std packages, 2 tests broken"),
    Fixture("cargo_test", "semver-crate", "cargo test --offline", "tests", "semver crate, 2 tests broken"),
    Fixture("jest", "js-semver", "npx jest --roots jest 2>&1", "tests", "semver cases, 3 wrong"),
    Fixture("jest_verbose", "js-semver", "npx jest --roots jest --verbose 2>&1", "tests", "semver cases, 3 wrong"),
    Fixture("npm_test", "js-semver", "npm test 2>&1", "tests", "npm test runs jest"),
    Fixture("vitest", "js-semver", "npx vitest run", "tests", "semver cases, 3 wrong"),
    Fixture("vitest_verbose", "js-semver", "npx vitest run --reporter=verbose", "tests", "semver cases, 3 wrong"),
    Fixture("mocha", "js-semver", "npx mocha mocha", "tests", "semver cases, 3 wrong"),
    # tests: one regression failing dozens of tests with one cause, and one file with a handful of failures
    Fixture("pytest_regression_quiet", "mi-regression", "python -m pytest -q -p no:cacheprovider tests", "tests",
            "more-itertools, a typo in take() fails 47 tests"),
    Fixture("pytest_regression", "mi-regression", "python -m pytest -p no:cacheprovider tests", "tests",
            "more-itertools, a typo in take() fails 47 tests"),
    Fixture("pytest_regression_verbose", "mi-regression", "python -m pytest -v -p no:cacheprovider tests", "tests",
            "more-itertools, a typo in take() fails 47 tests"),
    Fixture("pytest_regression_first", "mi-regression", "python -m pytest -x -p no:cacheprovider tests", "tests",
            "more-itertools, a typo in take(), stop at the first failure"),
    Fixture("pytest_regression_all", "mi-regression", "python -m pytest -rA -p no:cacheprovider tests", "tests",
            "more-itertools, a typo in take() fails 47 tests, every outcome summarised"),
    Fixture("pytest_regression_short", "mi-regression", "python -m pytest --tb=short -p no:cacheprovider tests",
            "tests", "more-itertools, a typo in take() fails 47 tests, short tracebacks"),
    Fixture("unittest_regression", "mi-regression", "python -m unittest 2>&1", "tests",
            "more-itertools, a typo in take() fails 61 tests and doctests"),
    Fixture("unittest_regression_verbose", "mi-regression", "python -m unittest -v 2>&1", "tests",
            "more-itertools, a typo in take() fails 61 tests and doctests"),
    Fixture("pytest_handful", "mi-handful", "python -m pytest -p no:cacheprovider tests/test_recipes.py", "tests",
            "more-itertools, five regressions in recipes.py, one test file"),
    Fixture("pytest_handful_verbose", "mi-handful", "python -m pytest -v -p no:cacheprovider tests/test_recipes.py",
            "tests", "more-itertools, five regressions in recipes.py, one test file"),
    Fixture("pytest_handful_deep", "dateutil-handful", "PYTHONPATH=src:deps python -m pytest -p no:cacheprovider "
            "-o filterwarnings= tests/test_parser.py", "tests", "python-dateutil, two parser regressions, one file"),
    Fixture("unittest_handful", "mi-handful", "python -m unittest -v tests.test_recipes 2>&1", "tests",
            "more-itertools, five regressions in recipes.py, one test file"),
    Fixture("jest_regression", "js-regression", "npx jest --roots jest 2>&1", "tests",
            "semver's source with a typo in compareIdentifiers"),
    Fixture("vitest_regression", "js-regression", "npx vitest run", "tests",
            "semver's source with a typo in compareIdentifiers"),
    Fixture("vitest_regression_stderr", "js-regression", "npx vitest run 2>&1", "tests",
            "semver's source with a typo in compareIdentifiers, with vitest's report (stderr)"),
    Fixture("mocha_regression", "js-regression", "npx mocha mocha", "tests",
            "semver's source with a typo in compareIdentifiers"),
    Fixture("go_test_regression", "go-regression", "go test ./...", "tests",
            "encoding/csv with the reader's line count broken"),
    Fixture("go_test_regression_verbose", "go-regression", "go test -v ./...", "tests",
            "encoding/csv with the reader's line count broken"),
    Fixture("cargo_test_regression", "cargo-regression", "cargo test --offline --no-fail-fast", "tests",
            "semver crate, two parser regressions, RUST_BACKTRACE=1"),
    # listing
    Fixture("ls_la_usr_bin", "click", "ls -la /usr/bin", "listing", "this machine's /usr/bin"),
    Fixture("ls_la_click_tests", "click", "ls -la tests", "listing", "click tests/"),
    Fixture("ls_r_stdlib", "click", "ls -R /usr/lib/python3.11/asyncio /usr/lib/python3.11/email", "listing",
            "two Python 3.11 stdlib packages"),
    Fixture("find_click", "click", "find . -path ./.git -prune -o -type f -print", "listing", "click repo files"),
    Fixture("find_py_stdlib", "click", "find /usr/lib/python3.11 -name '*.py' -not -path '*/test/*'", "listing",
            "this machine's Python 3.11 stdlib"),
    Fixture("tree_click", "click", "tree -I .git", "listing", "click repo"),
    Fixture("tree_stdlib_l2", "click", "tree -L 2 /usr/lib/python3.11", "listing", "Python 3.11 stdlib"),
    Fixture("du_click", "click", "du -h", "listing", "click repo"),
    Fixture("du_stdlib", "click", "du -h /usr/lib/python3.11", "listing", "Python 3.11 stdlib"),
    # search
    Fixture("grep_def_toolz", "toolz", "grep -rn 'def ' toolz", "search", "toolz package"),
    Fixture("grep_import_click", "click", "grep -rn import src tests", "search", "click src and tests"),
    Fixture("grep_count_click", "click", "grep -rc 'def ' src", "search", "click src"),
    Fixture("grep_files_stdlib", "click", "grep -rl 'import re' /usr/lib/python3.11/email", "search",
            "Python 3.11 email package"),
    Fixture("rg_self_click", "click", "rg -n self src", "search", "click src"),
    Fixture("rg_return_stdlib", "click", "rg return /usr/lib/python3.11/json /usr/lib/python3.11/email",
            "search", "two stdlib packages"),
    Fixture("ag_yield_more_itertools", "more-itertools", "ag yield", "search", "more-itertools repo"),
    Fixture("grep_context_toolz", "toolz", "grep -rn -C2 'raise ' toolz", "search", "toolz package"),
    # issue 12: a many-file release diff, long default-format logs, deep trees, long listings, many hits
    Fixture("git_diff_flask_release", "flask", "git diff 2.0.3 3.0.3 -- src tests examples", "git-diff",
            "flask 2.0.3 -> 3.0.3: 87 files, about 540 KB"),
    Fixture("git_diff_rich_release", "rich", "git diff 10.16.2 13.7.1", "git-diff",
            "rich 10.16.2 -> 13.7.1: 63 files, about 460 KB"),
    Fixture("git_log_codeoid", "codeoid", f"git log -n 30 {CODEOID_COMMIT}", "git-log",
            "codeoid's own history, 30 commits with long messages"),
    Fixture("git_log_stat_codeoid", "codeoid", f"git log --stat -n 30 {CODEOID_COMMIT}", "git-log",
            "codeoid's own history, 30 commits"),
    Fixture("find_numpy", "site-packages", "find numpy -type f", "listing", "numpy as installed here"),
    Fixture("find_chromadb_py", "site-packages", "find chromadb -name '*.py'", "listing",
            "chromadb as installed here"),
    Fixture("ls_l_site_packages", "site-packages", "ls -l", "listing", "this environment's site-packages"),
    Fixture("ls_r_chromadb", "site-packages", "ls -R chromadb", "listing", "chromadb as installed here"),
    Fixture("grep_self_rich", "rich", "grep -rn 'self\\.' rich", "search", "rich 13.7.1 package"),
    Fixture("rg_import_flask", "flask", "rg -n import src tests", "search", "flask 3.0.3 src and tests"),
]


def capture(fixture: Fixture, work: Path, rtk: bool) -> dict[str, object]:
    cwd = PROJECT_DIRS[fixture.project]() if fixture.project in PROJECT_DIRS else work / fixture.project
    raw = run(fixture.command, cwd, check=False)
    if not raw.stdout:
        raise SystemExit(f"{fixture.name}: no stdout\n{raw.stderr.decode(errors='replace')[-2000:]}")
    if len(raw.stdout) > MAX_FIXTURE_BYTES:
        raise SystemExit(f"{fixture.name}: {len(raw.stdout):,} bytes is too large for a fixture")
    (FIXTURES / f"{fixture.name}.out").write_bytes(raw.stdout)
    entry: dict[str, object] = {
        "name": fixture.name, "command": fixture.command, "kind": fixture.kind, "project": fixture.project,
        "cwd": fixture.cwd_note, "exit_status": raw.returncode, "stdout_bytes": len(raw.stdout),
    }
    rtk_file = FIXTURES / f"{fixture.name}.rtk.out"
    rtk_file.unlink(missing_ok=True)
    if rtk:
        rewrite = run([str(BIN / "rtk"), "rewrite", fixture.command], cwd, check=False)
        rewritten = rewrite.stdout.decode().strip()
        entry["rtk_command"] = rewritten or None
        if rewritten and rewritten != fixture.command:
            through_rtk = run(rewritten, cwd, check=False)
            rtk_file.write_bytes(through_rtk.stdout)
            entry["rtk_exit_status"] = through_rtk.returncode
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/codeoid-compress-corpus"))
    parser.add_argument("--only", nargs="*", help="fixture names to regenerate (the manifest keeps the others)")
    parser.add_argument("--no-rtk", action="store_true", help="do not run the commands through rtk")
    parser.add_argument("--reuse", action="store_true", help="reuse projects already built under --work")
    args = parser.parse_args()
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    chosen = [f for f in FIXTURE_LIST if not args.only or f.name in args.only]
    for project in sorted({f.project for f in chosen} - set(PROJECT_DIRS)):
        if not (args.reuse and (work / project).exists()):
            print(f"building {project}", file=sys.stderr)
            PROJECTS[project](work)
    manifest_path = FIXTURES / "manifest.json"
    previous = json.loads(manifest_path.read_text()) if manifest_path.exists() and args.only else {}
    manifest = {entry["name"]: entry for entry in previous.get("fixtures", [])}
    for fixture in chosen:
        print(f"capturing {fixture.name}: {fixture.command}", file=sys.stderr)
        manifest[fixture.name] = capture(fixture, work, rtk=not args.no_rtk)
    ordered = [manifest[f.name] for f in FIXTURE_LIST if f.name in manifest]
    manifest_path.write_text(json.dumps({
        "generated_by": "benchmarks/compression/make_fixtures.py",
        # Fixtures captured without rtk have no `rtk_command`; savings.py leaves them out of rtk's side.
        "rtk": run([str(BIN / "rtk"), "--version"], work).stdout.decode().strip() if not args.no_rtk
        else previous.get("rtk"),
        "fixtures": ordered,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
