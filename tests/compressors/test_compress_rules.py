"""Rule files: the built-in packs, user and project layers, errors that name file and line, the cache."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from codeoid.compressors import load_rules
from codeoid.compressors import loader as loader_module
from codeoid.compressors.loader import BUILTIN_DIR

NO_USER_RULES = "/nonexistent/codeoid-user-rules"


@pytest.mark.parametrize(("command", "rule"), [
    ("git status", "git-status"),
    ("git -C repo --no-pager diff HEAD~1", "git-diff"),
    ("git show HEAD", "git-diff"),
    ("git log -p -3", "git-diff"),
    ("git log -n 30", "git-log"),
    ("git log --stat", "git-log"),
    ("git branch -a", "git-branch"),
    ("pytest -q", "pytest"),
    ("python -m pytest tests", "pytest"),
    ("python -m unittest -v", "unittest"),
    ("npx jest", "jest"),
    ("npx vitest run", "vitest"),
    ("npx mocha", "mocha"),
    ("go test ./...", "go-test"),
    ("cargo test", "cargo-test"),
    ("npm test", "test-script"),
    ("npm run test:unit", "test-script"),
    ("yarn test", "test-script"),
    ("pnpm test", "test-script"),
    ("ls -la", "ls"),
    ("find . -name '*.py'", "find"),
    ("tree -L 2", "tree"),
    ("du -h", "du"),
    ("grep -rn foo .", "search"),
    ("rg foo", "search"),
    ("ag foo", "search"),
    ("git grep -n foo", "search"),
])
def test_builtin_packs_cover_the_commands_the_design_names(command: str, rule: str) -> None:
    rules = load_rules(user_dir=NO_USER_RULES)
    assert rules.errors == ()
    found = rules.for_command(command)
    assert found is not None and found.name == rule


@pytest.mark.parametrize("command", [
    "git status --short", "git status --porcelain=v2", "git diff --stat", "git diff --name-only",
    "grep -rl foo .", "grep -c foo f", "rg --files", "go test -json ./...", "find . -delete", "git branch -D x",
    "python script.py", "nl file", "git log --oneline", "git log --format=%H", "git log --pretty=fuller",
])
def test_commands_whose_output_is_already_compact_or_unknown_get_no_rule(command: str) -> None:
    assert load_rules(user_dir=NO_USER_RULES).for_command(command) is None


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


SIMPLE_RULE = """
[[rule]]
name = "{name}"
head = {head}

[rule.match]
program = "{program}"
"""


def test_a_user_rule_with_a_builtin_name_replaces_it(tmp_path: Path) -> None:
    write(tmp_path / "user", "mine.toml", SIMPLE_RULE.format(name="ls", head=3, program="ls"))
    rules = load_rules(user_dir=tmp_path / "user")
    rule = rules.for_command("ls -la")
    assert rule is not None and rule.head == 3 and rule.group is None
    assert [r.name for r in rules.rules].count("ls") == 1


def test_a_new_project_rule_goes_before_user_and_builtin_rules(tmp_path: Path) -> None:
    write(tmp_path / "user", "mine.toml", SIMPLE_RULE.format(name="my-ls", head=3, program="ls"))
    write(tmp_path / "proj" / ".codeoid" / "rules", "p.toml", SIMPLE_RULE.format(name="proj-ls", head=5,
                                                                                  program="ls"))
    rules = load_rules(user_dir=tmp_path / "user", project_dir=tmp_path / "proj")
    rule = rules.for_command("ls")
    assert rule is not None and rule.name == "proj-ls"
    assert [r.name for r in rules.rules][:2] == ["proj-ls", "my-ls"]


def test_a_disabled_rule_switches_off_the_builtin_of_the_same_name(tmp_path: Path) -> None:
    write(tmp_path / "user", "off.toml", '[[rule]]\nname = "pytest"\nenabled = false\n')
    assert load_rules(user_dir=tmp_path / "user").for_command("pytest") is None


@pytest.mark.parametrize(("text", "line", "words"), [
    ('[[rule]]\nname = "x"\nhead = \n', 3, "invalid TOML"),
    ('[[rule]]\nname = "a"\n[rule.match]\nprogram = "a"\n\n[[rule]]\nname = "x"\nkeep = ["(unclosed"]\n'
     '[rule.match]\nprogram = "x"\n', 8, "bad regular expression"),
    ('[[rule]]\nname = "x"\nheadd = 3\n[rule.match]\nprogram = "x"\n', 3, "unknown key 'headd'"),
    ('[[rule]]\nname = "x"\n[rule.match]\nprogram = "x"\n[rule.item]\nstart = "a"\nhead = -1\n', 7,
     "item.head must be a whole number"),
    ('[[rule]]\nname = "x"\nmin_bytes = "8k"\n[rule.match]\nprogram = "x"\n', 3, "min_bytes must be a whole number"),
    ('[[rule]]\nname = "x"\n', 1, "needs a [rule.match] table"),
])
def test_a_bad_file_is_reported_with_its_line_and_the_builtins_keep_working(
        tmp_path: Path, text: str, line: int, words: str) -> None:
    bad = write(tmp_path / "user", "bad.toml", text)
    write(tmp_path / "user", "good.toml", SIMPLE_RULE.format(name="mine", head=3, program="mytool"))
    rules = load_rules(user_dir=tmp_path / "user")
    assert len(rules.errors) == 1
    error = rules.errors[0]
    assert (error.path, error.line) == (str(bad), line)
    assert words in error.message and str(error).startswith(f"{bad}:{line}: ")
    assert rules.for_command("pytest") is not None and rules.for_command("mytool") is not None


def test_cached_rules_are_the_rules_parsed_afresh(tmp_path: Path) -> None:
    fresh = load_rules(user_dir=NO_USER_RULES)
    load_rules(user_dir=NO_USER_RULES, cache_dir=tmp_path)
    cached = load_rules(user_dir=NO_USER_RULES, cache_dir=tmp_path)
    assert cached == fresh._replace(rebuilt=False) and fresh.rebuilt and not cached.rebuilt


def test_the_cache_is_rebuilt_only_when_a_rule_file_changes(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "user"
    mine = write(user, "mine.toml", SIMPLE_RULE.format(name="mine", head=3, program="mytool"))
    reads: list[Path] = []
    original = loader_module.read_rule_file

    def counting_read(path: Path) -> list[dict[str, object]]:
        reads.append(path)
        return original(path)

    monkeypatch.setattr(loader_module, "read_rule_file", counting_read)

    load_rules(user_dir=user, cache_dir=tmp_path / "cache")
    first = len(reads)
    assert first == len([name for name in os.listdir(BUILTIN_DIR) if name.endswith(".toml")]) + 1
    load_rules(user_dir=user, cache_dir=tmp_path / "cache")
    assert len(reads) == first

    mine.write_text(SIMPLE_RULE.format(name="mine", head=9, program="mytool"))
    os.utime(mine, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    rule = load_rules(user_dir=user, cache_dir=tmp_path / "cache").for_command("mytool")
    assert len(reads) == 2 * first and rule is not None and rule.head == 9

    write(user, "more.toml", SIMPLE_RULE.format(name="more", head=1, program="other"))
    assert load_rules(user_dir=user, cache_dir=tmp_path / "cache").for_command("other") is not None


def test_an_unreadable_cache_only_costs_a_rebuild(tmp_path: Path) -> None:
    load_rules(user_dir=NO_USER_RULES, cache_dir=tmp_path)
    for cache in tmp_path.iterdir():
        cache.write_bytes(b"not marshal data")
    assert load_rules(user_dir=NO_USER_RULES, cache_dir=tmp_path) == load_rules(user_dir=NO_USER_RULES)


def test_subcommand_matching_skips_options_and_their_values(tmp_path: Path) -> None:
    rules = load_rules(user_dir=NO_USER_RULES)
    rule = rules.for_command("git -C /some/repo -c color.ui=never status")
    assert rule is not None and rule.name == "git-status"


def test_short_flags_are_found_inside_clusters() -> None:
    rules = load_rules(user_dir=NO_USER_RULES)
    assert rules.for_command("grep -rln foo .") is None
    rule = rules.for_command("grep -rn foo .")
    assert rule is not None and rule.name == "search"
