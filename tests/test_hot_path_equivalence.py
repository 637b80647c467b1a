"""The rewrite hook's hot path does without `re`, `shlex`, `fnmatch` and `typing`; each replacement is checked here
against the code it replaced, over generated inputs, so any difference in a decision shows up as a failure."""

from __future__ import annotations

import itertools
import random
import re
import shlex
import typing
from fnmatch import fnmatchcase

import pytest

from codeoid.compressors import bash_wrapper
from codeoid.compressors.rules import glob_match
from codeoid.hooks import permissions, pre_tool_use
from codeoid.records import NamedTuple

# The expressions the hot path used before, verbatim.
OLD_FOLLOWS = re.compile(r"(?<!\S)(?:--watch(?:All|-all)?|--follow|--looponfail|--serve)(?:=\S*)?(?!\S)")
OLD_TAIL_FOLLOW = re.compile(r"(?<!\S)(?:-[a-zA-Z]*[fF][a-zA-Z]*|--follow(?:=\S*)?)(?!\S)")

# Whitespace of every kind `\s` and `str.split` know (and characters that are not whitespace but look close).
SPACES = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u2028", "\u3000",
          "\u200b", "\ufeff"]
PIECES = ["--watch", "--watchAll", "--watch-all", "--watchall", "--follow", "--follows", "--looponfail", "--serve",
          "--server", "-watch", "=", "=x", "=1=2", "-f", "-F", "-n", "-nf", "-n5f", "-fq", "-Ff", "-", "--", "-é",
          "-ﬀ", "f", "tail", "npm", "run", "'--watch'", '"-f"', "x--watch", "--watch;", ";", "&&", "|", "$!", "é",
          "\\", "-\u0130f", "-fÅ", "--follow=name", "-f=1"]


def generated_commands(count: int, seed: int) -> list[str]:
    chooser = random.Random(seed)
    commands = []
    for _ in range(count):
        parts = []
        for _ in range(chooser.randint(1, 7)):
            parts.append(chooser.choice(PIECES))
            parts.append(chooser.choice(SPACES) if chooser.random() < 0.7 else "")
        commands.append("".join(parts))
    return commands


EXISTING_CASES = ["npm test -- --watch", "jest --watchAll", "vitest --watch=false", "pytest --looponfail",
                  "mkdocs serve --serve", "kubectl logs --follow pod", "tail -f log", "tail -F log", "tail -n 5 log",
                  "tail -qf log", "tail --follow=name log", "tail -n5f log", "git log --follow -- x", "echo --watched"]


@pytest.mark.parametrize("command", EXISTING_CASES + generated_commands(600, 1))
def test_the_follow_checks_decide_as_the_regexes_did(command: str) -> None:
    words = command.split()
    assert any(pre_tool_use._follows(word) for word in words) == bool(OLD_FOLLOWS.search(command))
    assert any(pre_tool_use._tail_follows(word) for word in words) == bool(OLD_TAIL_FOLLOW.search(command))


WORDS = ["git", "rm", "curl", "git-lfs", "x", "a.b", "c++", "-f", "_", "é", "npm", "./run", "[x]", "$HOME", "ab", "aba"]
FILLERS = ["", " ", "-", "_", "a", "é", "1", "²", ";", "/", ".", "\n", "\u0660", "ß", "'", "ab", "\udcff", "\u2167"]


def word_cases() -> list[tuple[str, str]]:
    chooser = random.Random(2)
    cases = []
    for word in WORDS:
        for before, after in itertools.product(FILLERS, repeat=2):
            cases.append((word, before + word + after))
        for _ in range(40):
            text = "".join(chooser.choice(FILLERS + [word, word[:1], word[1:]]) for _ in range(chooser.randint(0, 8)))
            cases.append((word, text))
    return cases


def test_a_deny_rule_word_is_found_where_the_regex_found_it() -> None:
    cases = word_cases()
    assert len(cases) > 5000
    for word, text in cases:
        old = re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None
        assert permissions.appears_as_word(word, text) == old, (word, text)


def test_every_unicode_character_is_a_word_character_exactly_when_the_regex_says_so() -> None:
    word_character = re.compile(r"[\w-]")
    for code in range(0x110000):
        character = chr(code)
        assert permissions._word_character(character) == bool(word_character.match(character)), hex(code)


def test_every_unicode_character_is_whitespace_to_split_exactly_when_it_is_to_the_regex() -> None:
    space = re.compile(r"\s")
    for code in range(0x110000):
        character = chr(code)
        assert (len(f"a{character}b".split()) == 2) == bool(space.match(character)), hex(code)


QUOTE_CASES = ["", "a", "plain-word_1.2/x:y,z@%+=", "with space", "it's", "''", "\"", "$HOME", "é", "\n", "a\tb",
               "-", "~", "*", "!", "\udcff", "a'b'c", "ǅ", "١", "x" * 50]


@pytest.mark.parametrize("word", QUOTE_CASES + ["".join(chars) for chars in itertools.product("a'é /$", repeat=3)])
def test_quote_is_shlex_quote(word: str) -> None:
    assert bash_wrapper.quote(word) == shlex.quote(word)


def test_every_character_is_quoted_as_shlex_quotes_it() -> None:
    for code in range(0x110000):
        character = chr(code)
        assert bash_wrapper.quote(character) == shlex.quote(character), hex(code)
        assert bash_wrapper.quote("a" + character) == shlex.quote("a" + character), hex(code)


GLOBS = ["*", "?", "test", "test*", "run test*", "*:*", "a*b*c", "**", "*?", "?*?", "", "a?c", "x*", "*\\", "\\*",
         ".*", "(a)", "+", "$", "^a", "a|b", "{a,b}", "[ab]", "[!a]*", "[]]", "[a-", "*[0-9]"]
SUBJECTS = ["", "a", "abc", "test", "testing", "test:unit", "run", "x\ny", "\n", "aXbYc", "ab", "a\\", "\\x", "*",
            "?", "a|b", "(a)", "é", "tést", "T", "TEST", "xx"]


def test_glob_match_is_fnmatchcase() -> None:
    chooser = random.Random(3)
    globs = GLOBS + ["".join(chooser.choice("ab*?\n.\\") for _ in range(chooser.randint(0, 6))) for _ in range(300)]
    subjects = SUBJECTS + ["".join(chooser.choice("ab*?\n.\\") for _ in range(chooser.randint(0, 7)))
                           for _ in range(300)]
    for glob in globs:
        for subject in subjects:
            assert glob_match(subject, glob) == fnmatchcase(subject, glob), (subject, glob)


def test_a_record_is_the_named_tuple_typing_would_make() -> None:
    class Mine(NamedTuple):
        """Doc."""

        name: str
        args: tuple[str, ...] = ()
        size: int = 2

        def double(self) -> int:
            return self.size * 2

        @classmethod
        def make(cls, name: str) -> Mine:
            return cls(name=name)

    class Theirs(typing.NamedTuple):
        """Doc."""

        name: str
        args: tuple[str, ...] = ()
        size: int = 2

    mine, theirs = Mine("x", ("a",)), Theirs("x", ("a",))
    assert mine == theirs and hash(mine) == hash(theirs) and tuple(mine) == tuple(theirs)
    assert repr(mine).removeprefix("Mine") == repr(theirs).removeprefix("Theirs")
    assert Mine._fields == Theirs._fields and Mine._field_defaults == Theirs._field_defaults
    assert list(Mine.__annotations__) == list(Theirs.__annotations__)
    assert Mine.__doc__ == "Doc." and Mine.__module__ == __name__ and Mine.__name__ == "Mine"
    assert mine.double() == 4 and Mine.make("y") == ("y", (), 2) and mine._replace(size=3).size == 3
    assert isinstance(mine, tuple) and getattr(Mine, "__slots__", None) == ()
    with pytest.raises(TypeError):
        Mine()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        class Wrong(NamedTuple):
            a: int = 1
            b: int  # type: ignore[misc]
