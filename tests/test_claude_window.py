"""The model of Claude Code's window against what the real CLI (2.1.332) put in the model's requests: each case
in tests/fixtures/claude_window.json is a `tool_result` read back from the scripted API, for the output below."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeoid import claude_window

SEEN = json.loads((Path(__file__).parent / "fixtures" / "claude_window.json").read_text())


def _seq(count: int) -> str:
    return "".join(f"{number}\n" for number in range(1, count + 1))


# What each command printed (stdout and stderr merged, as the Bash tool reads it).
OUTPUTS = {
    "seq-20000": _seq(20000),
    "seq-7000": _seq(7000),
    "e-acute-40000-newline": "é" * 40000 + "\n",
    "abc-3-newlines": "abc\n\n\n",
    "empty": "",
    "hi-newline": "hi\n",
    **{f"a-{count}": "a" * count for count in (9988, 9989, 15000, 29999, 30001)},
    **{f"e-acute-{count}": "é" * count for count in (15000, 15001, 20000)},
}


def _output(name: str) -> str:
    return OUTPUTS[name.rsplit("-exit-", 1)[0]]


@pytest.mark.parametrize("name", sorted(SEEN))
def test_the_window_is_what_the_model_read(name: str) -> None:
    seen = SEEN[name]
    text = claude_window.window(_output(name), seen["exit_code"],
                                saved_to=seen["saved_to"] or claude_window.TYPICAL_SAVED_PATH)
    assert text == seen["window"]


@pytest.mark.parametrize("name", sorted(name for name in SEEN if _output(name).isascii()))
def test_the_size_alone_gives_the_window_size(name: str) -> None:
    """The store keeps an output's size, not its shape: the size model is exact for ASCII output, and within a
    few characters (the preview's line end) for a persisted one. (It counts a byte as a character.)"""
    seen = SEEN[name]
    size = len(_output(name).rstrip())
    estimated = claude_window.window_size(size, seen["exit_code"],
                                          saved_to=seen["saved_to"] or claude_window.TYPICAL_SAVED_PATH)
    assert abs(estimated - len(seen["window"])) <= 2, (estimated, len(seen["window"]))


def test_a_long_failure_keeps_neither_its_middle_nor_anything_past_30000_characters() -> None:
    window = claude_window.window(_seq(7000) + "FAILED tests/test_x.py::test_end\n", 1)
    assert window.startswith("Exit code 1\n1\n2\n") and "characters truncated" in window
    assert "test_end" not in window and len(window) == 10040


def test_a_persisted_output_shows_only_its_head() -> None:
    output = _seq(20000)
    assert claude_window.persisted(output, 0) and not claude_window.persisted(output, 1)
    assert "20000" not in claude_window.window(output, 0).split("Preview")[1]
