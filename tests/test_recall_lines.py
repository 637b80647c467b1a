"""A hit shows the lines that answer: a long run's summary line, the sentence of a long explanation that holds the
query's words (past the first 240 bytes), and, of the lines holding query words, those of the chunk matched by
meaning first; all within the answer's budget. The renderer recall and `codeoid search` both use."""

from __future__ import annotations

from codeoid.memory import hits
from codeoid.pages import byte_size


def row(episode_id: int, kind: str, text: str, **extra: object) -> dict[str, object]:
    return {"id": episode_id, "kind": kind, "text": text, "created_at": 1_790_000_000.0, "session_id": "s" * 36,
            "turn": 1, "agent": None, "state": "live", "score": 1.0, "tool_name": None, "is_error": 0,
            "exit_status": None, "original_command": None, "command": None, "paths": None, "raw_output_id": None,
            "input": None, **extra}


def page(item: str, lines: str) -> str:
    return f'get_episode("{item}", lines="{lines}")'


def test_a_long_failing_run_shows_its_summary_line() -> None:
    failures = [f"FAILED tests/test_format.py::test_case_{n} - AssertionError: assert 'a b' == 'a\\nb'"
                for n in range(60)]
    text = "\n".join(["Exit code 1", *failures, "47 failed, 41 passed, 2 xfailed in 5.65s"])
    run = row(7, "tool", text, tool_name="Bash", is_error=1, exit_status=1, command="python -m pytest -q")

    shown = hits.render_hits("recall", [run], query="how many tests failed in that run?", budget=1500,
                             page_call=page)

    assert "47 failed, 41 passed" in shown
    assert byte_size(shown) <= 1500


def test_a_long_explanation_shows_the_sentence_that_holds_the_words() -> None:
    text = ("Found it. In the splitting helper the loop walks the pieces between line breaks. When a piece is a line"
            " break the function must start a new output line by appending an empty string. The latest commit"
            " replaced that append with continue, so the break is skipped and the next piece is added to the same"
            " line. That is why every line after the first is glued onto it.")
    answer = row(9, "assistant", text)

    shown = hits.render_hits("recall", [answer, row(10, "user", "ok")], query="why were the lines glued together?",
                             budget=900, page_call=page)

    assert "glued onto it" in shown
    assert text[:40] in shown  # the head stays, for context
    assert byte_size(shown) <= 900


def test_of_the_lines_holding_query_words_those_matched_by_meaning_come_first() -> None:
    # every line names an option and a value; the one the vector index matched (line 31) names the margin in
    # other words
    text = "\n".join([*(f"config option {n}: default value" for n in range(30)),
                      "the option for the right edge wraps lines at 79 columns", "end"])
    read = row(11, "tool", text, tool_name="Read", paths='["docs/options.txt"]', matched_lines=(31, 31))

    shown = hits.render_hits("recall", [read], query="which option value sets the margin", budget=700,
                             page_call=page)

    assert "wraps lines at 79 columns" in shown
