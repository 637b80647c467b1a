"""Which commands the rewrite treats as read-only commands Claude Code runs unasked.

Every "yes" here was seen running under the real CLI with no allow rule (the e2e test replays a corpus of them
with and without codeoid); every "no" is something Claude Code asks about or that this model cannot judge.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codeoid.hooks import read_only, shell_facts


def unasked(command: str, project: Path, cwd: Path | None = None) -> bool:
    simple = shell_facts.read(command).simple_commands
    assert simple is not None, command
    where = cwd or project
    return read_only.runs_unasked([each.words for each in simple], str(where), str(project))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("hi\n")
    return root


RUN_UNASKED = [
    "git status", "git status -sb", "git status --porcelain src", "git diff", "git diff --stat",
    "git diff --cached --name-only", "git diff HEAD~1 -- src", "git diff --diff-filter=M", "git log --oneline -n 5",
    "git log -3 --stat", "git log --max-count=2 --author=n --since=2020-01-01", "git log HEAD~1..HEAD -- src",
    "git show HEAD", "git show --stat HEAD~2", "git branch", "git branch -vv", "git branch --show-current",
    "ls", "ls -la", "ls -lhS src", "ls --color=never src/a.py", "ls ./src",
    "find . -name '*.py' -type f", "find src -maxdepth 2 -not -path './.git/*'", "find . -newer src/a.py",
    "find . -path ./.git -prune -o -print",
    "grep -rn hi .", "grep -rn --include='*.py' hi src", "grep -rn -A 2 hi .", "grep -C2 hi src/a.py",
    "grep -rn /etc/passwd src",  # the pattern is not a path
    "rg hi", "rg -n -t py hi src", "rg --type py -g '*.py' hi", "rg -C 2 hi",
    "tree -L 2", "tree -a -I .git src", "du -sh src", "du -d 1", "du --max-depth=1 .",
    "git status && git diff", "git diff --stat; git status", "ls 2>/dev/null", "git status 2>&1",
    "git status\ngit diff", "git log --author n --since 2020-01-01", "grep -rn -B1 hi src", "rg -n -- -x",
    "ls -la -- src", "git status --short --branch",
]


@pytest.mark.parametrize("command", RUN_UNASKED)
def test_read_only_commands_inside_the_project_run_unasked(project: Path, command: str) -> None:
    assert unasked(command, project)


ASKED = {
    "option not known to be safe": "git diff -U1",
    "attached git count": "git log -n3",
    "attached rg type": "rg -tpy hi",
    "option with a value Claude Code refuses": "git diff --stat=80",
    "git status -uno": "git status -uno",
    "git diff --output writes a file": "git diff --output=x.txt",
    "git global option": "git -C src status",
    "git subcommand that writes": "git commit -m x",
    "git branch creates": "git branch newbranch",
    "git blob path": "git show HEAD:src/a.py",
    "find -delete": "find . -name x -delete",
    "find -exec": "find . -exec ls {} ;",
    "find -L": "find -L .",
    "outside the project": "ls /etc",
    "outside through find": "find /etc -maxdepth 1",
    "outside through grep": "grep -r root /etc/passwd",
    "parent directory": "ls ..",
    "dot-dot inside a path": "ls src/../src",
    "home": "ls ~",
    "expansion": "ls \"$PWD\"",
    "glob": "ls src/*",
    "brace expansion": "ls {src,x}",
    "assignment prefix": "GIT_PAGER=cat git log",
    "program without a rule": "cat src/a.py",
    "grep -e": "grep -e hi -r .",
    "grep -f reads a file": "grep -f patterns.txt src",
    "rg --pre runs a program": "rg --pre cat hi",
    "valued option without a value": "grep -rn hi -A",
    "cd": "cd src && ls",
    "one asked part of a chain": "git status && git diff -U1",
}


@pytest.mark.parametrize("command", ASKED.values(), ids=ASKED.keys())
def test_anything_else_is_not_taken_for_read_only(project: Path, command: str) -> None:
    assert not unasked(command, project)


def test_paths_are_judged_from_the_shells_current_directory(project: Path) -> None:
    assert unasked("ls a.py", project, cwd=project / "src")
    assert unasked(f"ls {project / 'src'}", project, cwd=project / "src")
    assert not unasked("ls", project, cwd=project.parent)
    assert not unasked(f"ls {project}-other", project)


def test_a_symlink_out_of_the_project_is_outside(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / "escape").symlink_to(elsewhere)
    assert not unasked("ls escape", project)
    assert not unasked("grep -rn hi escape/x", project)
    assert unasked("ls src", project)


def test_no_current_directory_means_no(project: Path) -> None:
    assert not read_only.runs_unasked([("git", "status")], None, str(project))
    assert not read_only.runs_unasked([None], str(project), str(project))
    assert not read_only.runs_unasked([], str(project), str(project))
