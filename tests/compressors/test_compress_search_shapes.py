"""Outputs a model misread. A search of one file prints `12:hit`, with no file name to take a line number for
("143 hits in 143 files: 19: 1 hits, 23: 1 hits ..."); a commit's body count read like changed lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from detectors import lines_of, output_lines

from codeoid.compressors import compress_bytes, load_rules

FIXTURES = Path(__file__).parents[1] / "fixtures" / "compress"
RULES = load_rules(user_dir="/nonexistent/codeoid-user-rules")
ONE_FILE = (FIXTURES / "grep_n_one_file_sqlparse.out").read_bytes()


@pytest.mark.parametrize(("command", "rule"), [
    ("grep -n 'def ' sqlparse/sql.py", "search-one-file"),
    ("cat sqlparse/sql.py | grep -n 'def '", "search-one-file"),
    ("grep -n -A 2 'def ' sqlparse/sql.py", "search-one-file"),
    ("grep -rn 'def ' sqlparse", "search"),
    ("grep -n 'def ' sqlparse/sql.py sqlparse/lexer.py", "search"),
    ("grep -n 'def ' sqlparse/*.py", "search"),
    ("grep -Hn 'def ' sqlparse/sql.py", "search"),
    ("grep -n -e def sqlparse/sql.py sqlparse/lexer.py", "search"),
    ("rg -n 'def ' sqlparse/sql.py", "search"),
])
def test_a_search_of_one_file_is_told_from_a_search_of_many(command: str, rule: str) -> None:
    found = RULES.for_command(command)
    assert found is not None and found.name == rule


@pytest.mark.parametrize("command", ["grep -n 'def \\|self\\.' sqlparse/sql.py",
                                     "rg -n 'def |self\\.' sqlparse/sql.py"])
def test_line_numbers_are_never_taken_for_file_names(command: str) -> None:
    rule = RULES.for_command(command)
    assert rule is not None
    out = compress_bytes(rule, ONE_FILE)[0]
    kept, notes = output_lines(out)
    assert not any(" files:" in note or " 1 hits" in note for note in notes), notes
    raw = lines_of(ONE_FILE)
    cut = len(raw) - len(kept)
    assert cut > 0 and len(out) < len(ONE_FILE) / 2
    # every hit is shown or counted in a marker that names its raw lines
    assert sum(int(note.split()[1]) for note in notes if " lines cut" in note) == cut
    assert kept[0] == raw[0] and kept[-1] == raw[-1]


def test_git_log_says_each_commit_body_was_cut_and_where_it_is() -> None:
    raw = (FIXTURES / "git_log_click.out").read_bytes()
    rule = RULES.for_command("git log")
    assert rule is not None
    notes = output_lines(compress_bytes(rule, raw)[0])[1]
    assert notes[0] == ("[codeoid] 742fb60ce Apr 13 2024 codeoid corpus: Release 8.1.8 (body of 25 lines cut), "
                        "raw lines 1-32")
    assert ("[codeoid] 016b0e970 Mar 12 2024 codeoid corpus: Release 8.1.7 (body of 4 lines cut), "
            "raw lines 34-44") in notes
