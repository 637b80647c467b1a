"""Recall answers with compact hits and the model pages exact lines: the real `codeoid-mcp` over the SDK's stdio
client (and the installed `codeoid` for the CLI's side), against a store filled through the capture API.

A hit names its lines (`82:` chosen, `81-` context), of the episode's text or, under a line naming it, of the raw
output behind a compressed one; `get_episode(id, lines="a-b")` must return exactly those lines of the stored text,
and a raw output's lines exactly as stored (bytes that are not UTF-8 as `\\xNN`). The lines shown are those that
answer: the rare words of the question, a run's count line when it asks how many, a commit body compression cut.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import executable
from test_mcp_server import Memory, call, episode_ids, git_project, serve, shown_lines

from codeoid.memory import line_choice
from codeoid.store import raw

# The line that says which lines of a source follow (`best: get_episode("42", ...)`), whichever source comes first.
SAY_LINE = re.compile(r'\(best: (?:get_episode\("|codeoid show )([^"\s]+)')
HIT_LINE = re.compile(r"^(\d+)([:-]) (.*)$")
CLIPPED = re.compile(r"… \[\+[\d,]+ bytes\]$")
LEAD = re.compile(r"^(.*?)\[\+([\d,]+) bytes\] …")
GAP = re.compile(r"…? ?\[\+([\d,]+) bytes\](?: …)?")
RAW_STDOUT = b"".join(b"zeppelin hangar \xff\xfe door log\n" if n == 7
                     else f"raw line {n} ballast {'é' if n % 3 else '日本'}\n".encode() for n in range(1, 1201))


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Memory:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    found = Memory(home, git_project(tmp_path / "project"))
    yield found  # type: ignore[misc]
    found.db.close()


def five_long_hits(memory: Memory) -> dict[str, int]:
    """Five matching episodes of every shape, all long, and one that does not match."""
    owner = memory.backing("bs-1")
    source = memory.project / "airship.py"
    source.write_text("".join(("BALLAST_KG = 420  # tuned for the zeppelin\n" if n == 321 else f"x_{n} = {n}\n")
                              for n in range(1, 501)))
    raw.store_raw_output(memory.db, "raw-toolu_diff", command="git diff", stdout=RAW_STDOUT, exit_status=0,
                         tool_use_id="toolu_diff", session_id=owner.session_id, workspace_id=owner.workspace_id)
    compressed = "\n".join([*(f"+kept line {n}" for n in range(1, 40)), "+zeppelin hangar door log",
                            "[codeoid] raw output raw-toolu_diff: rule git-diff: 1,159 of 1,200 lines removed"])
    return {
        "prompt": memory.user(owner, "Why do the zeppelins lose ballast overnight?"),
        "answer": memory.assistant(owner, "\n".join(
            ("The ballast valve leaks — déjà vu, 日本語 notes included." if n == 17 else f"Reasoning step {n}.")
            for n in range(1, 31))),
        "diff": memory.bash(owner, "git diff", compressed, raw_output_id="raw-toolu_diff"),
        "read": memory.read(owner, source),
        "tests": memory.bash(owner, "pytest -x", "\n".join(
            ("FAILED test_zeppelin_ballast - AssertionError: " + "expected 420 got 0; " * 30) if n == 1500
            else f"tests/test_{n}.py . [{n // 20}%]" for n in range(1, 2001))),
        "unrelated": memory.assistant(owner, "Lunch is at noon."),
    }


def hit_blocks(text: str) -> dict[int, str]:
    blocks = text.split("\n\n=== episode ")[1:]
    return {int(block.split(" ", 1)[0]): block for block in blocks}


def numbered(block: str) -> dict[int, str]:
    """The numbered lines a hit shows of its episode's text: line number -> text as shown."""
    return {number: text for (item, number), text in sources(block).items() if not item.startswith("raw-")}


def sources(block: str) -> dict[tuple[str, int], str]:
    """Every numbered line a hit shows, by what pages it: (the episode's id or the raw output's, number) -> text."""
    item = block.split(" ", 1)[0]
    found: dict[tuple[str, int], str] = {}
    for line in block.split("\n"):
        if (section := SAY_LINE.search(line)) is not None:
            item = section.group(1)
        elif (hit := HIT_LINE.match(line)) is not None:
            found[(item, int(hit.group(1)))] = hit.group(3)
    return found


def paged_exactly(shown: str, full: str) -> bool:
    """A shown line is the stored line, or parts of it in order, each gap between them named by its size in bytes
    (`Opening. [+120 bytes] …middle… [+80 bytes]`)."""
    if shown == full:
        return True
    data, at = full.encode(), 0
    pieces = GAP.split(shown)  # text, bytes left out, text, ...
    for number, piece in enumerate(pieces):
        if number % 2:
            at += int(piece.replace(",", ""))
        elif not data[at:].startswith(piece.encode()):
            return False
        else:
            at += len(piece.encode())
    return at == len(data)


def assert_every_line_pages_back(memory: Memory, blocks: dict[int, str]) -> None:
    """Each run of lines a hit shows comes back byte-exact from the call that pages it."""
    asked = [(item, first, last) for block in blocks.values()
             for item in dict.fromkeys(key for key, _ in sources(block))
             for first, last in runs([number for (where, number) in sources(block) if where == item])]
    pages = serve(memory, *[("get_episode", {"episode_id": item, "lines": f"{first}-{last}"})
                            for item, first, last in asked])
    shown = {key: text for block in blocks.values() for key, text in sources(block).items()}
    for (item, first, last), page in zip(asked, pages, strict=True):
        assert not page.is_error, page
        got = shown_lines(page.text)
        assert len(got) == last - first + 1 and f"lines {first}-{last} of" in page.text, page.text
        for number in range(first, last + 1):
            assert paged_exactly(shown[(item, number)], got[number - first]), (item, number, shown[(item, number)])


def runs(numbers: list[int]) -> list[tuple[int, int]]:
    found: list[list[int]] = []
    for number in sorted(numbers):
        if found and number == found[-1][1] + 1:
            found[-1][1] = number
        else:
            found.append([number, number])
    return [(first, last) for first, last in found]


def test_five_hits_fit_2k_tokens_name_their_lines_and_get_episode_returns_those_lines_exactly(memory: Memory) -> None:
    ids = five_long_hits(memory)

    recalled = call(memory, "recall", query="zeppelins ballast", limit=5)

    assert not recalled.is_error, recalled
    assert -(-len(recalled.text.encode()) // 3) <= 2_000  # tokens, estimated at three bytes a token
    blocks = hit_blocks(recalled.text)
    assert set(blocks) == set(ids.values()) - {ids["unrelated"]}
    for block in blocks.values():
        assert re.search(r"\d+ lines?, ~[\d,]+ tokens", block.split("\n", 1)[0])
    assert "1500: FAILED test_zeppelin_ballast" in blocks[ids["tests"]]  # "zeppelins" found it: stemmed
    assert "321: BALLAST_KG = 420  # tuned for the zeppelin" in blocks[ids["read"]]
    assert "17: The ballast valve leaks — déjà vu, 日本語 notes included." in blocks[ids["answer"]]
    assert f"path: {memory.project / 'airship.py'}" in blocks[ids["read"]]
    assert "command: git diff" in blocks[ids["diff"]]
    raw_named = re.search(r"the exact stdout is raw output (raw-\S+) \(([\d,]+) lines, ([\d,]+) bytes\)",
                          blocks[ids["diff"]])
    assert raw_named is not None, blocks[ids["diff"]]
    assert raw_named.group(1) == "raw-toolu_diff" and raw_named.group(2) == "1,200"
    assert raw_named.group(3) == f"{len(RAW_STDOUT):,}"

    assert all(numbered(block) for block in blocks.values())
    assert_every_line_pages_back(memory, blocks)
    asked_raw = [(5, 9), (1199, 1200)]
    pages = serve(memory, *[("get_episode", {"episode_id": "raw-toolu_diff", "lines": f"{first}-{last}"})
                            for first, last in asked_raw])
    raw_lines = RAW_STDOUT.split(b"\n")
    for (first, last), page in zip(asked_raw, pages, strict=True):
        assert not page.is_error, page
        expected = [line.decode("utf-8", "backslashreplace") for line in raw_lines[first - 1:last]]
        assert shown_lines(page.text) == expected
        assert f"lines {first}-{last} of 1200" in page.text
    assert "zeppelin hangar \\xff\\xfe door log" in pages[0].text and "not UTF-8" in pages[0].text


def test_a_bigger_budget_shows_more_and_the_output_cap_still_holds(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    for number in range(16):
        memory.bash(owner, f"grep -rn albatross part{number}", "\n".join(
            f"part{number}/file_{line}.py:{line}: albatross = {line}  # " + "y" * 150 for line in range(1, 60)))

    default, bigger, capped = serve(
        memory, ("recall", {"query": "albatross", "limit": 16}),
        ("recall", {"query": "albatross", "limit": 16, "budget_tokens": 4000}),
        ("recall", {"query": "albatross", "limit": 16, "budget_tokens": 100_000}),
        env={"MAX_MCP_OUTPUT_TOKENS": "5000"})

    assert len(default.text.encode()) <= 1_800 * 3 < len(bigger.text.encode()) <= 5_000 * 3
    assert len(capped.text.encode()) <= 5_000 * 3
    assert "more hits did not fit the answer budget" in default.text and "budget_tokens=" in default.text
    assert len(episode_ids(default.text)) < len(episode_ids(bigger.text)) <= len(episode_ids(capped.text)) == 16
    assert len(re.findall(r"^\d+: ", bigger.text, re.MULTILINE)) > len(re.findall(r"^\d+: ", default.text,
                                                                                   re.MULTILINE))


def test_get_episode_lines_are_checked_with_clear_errors(memory: Memory) -> None:
    short = str(memory.assistant(memory.backing("bs-1"), "one\ntwo\nthree"))

    one, number, to_end, words, zero, backwards, both, past = serve(
        memory,
        ("get_episode", {"episode_id": short, "lines": "2"}),
        ("get_episode", {"episode_id": short, "lines": 3}),
        ("get_episode", {"episode_id": short, "lines": " 2- "}),
        ("get_episode", {"episode_id": short, "lines": "two to three"}),
        ("get_episode", {"episode_id": short, "lines": "0-2"}),
        ("get_episode", {"episode_id": short, "lines": "3-2"}),
        ("get_episode", {"episode_id": short, "lines": "1-2", "start_line": 1}),
        ("get_episode", {"episode_id": short, "lines": "9-12"}),
    )

    assert shown_lines(one.text) == ["two"] and shown_lines(to_end.text) == ["two", "three"]
    assert shown_lines(number.text) == ["three"]
    assert words.is_error and "lines='two to three' is not a line range" in words.text and '"82-120"' in words.text
    assert zero.is_error and "lines are numbered from 1" in zero.text
    assert backwards.is_error and "the last line (2) is before the first (3)" in backwards.text
    assert both.is_error and "either lines='1-2' or start_line/end_line" in both.text
    assert past.is_error and "has 3 lines; start_line 9 is past the end" in past.text
    for result in (words, zero, backwards, both, past):
        assert "Traceback" not in result.text


def test_recall_file_pages_by_the_files_own_line_numbers(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    notes = memory.project / "notes.txt"
    notes.write_text("".join(f"note {number}\n" for number in range(1, 101)))
    memory.read(owner, notes, offset=10, limit=20)

    inside, before, after = serve(memory, ("recall_file", {"path": "notes.txt", "lines": "12-14"}),
                                  ("recall_file", {"path": "notes.txt", "lines": "3-5"}),
                                  ("recall_file", {"path": "notes.txt", "lines": "40-"}))

    assert shown_lines(inside.text) == ["note 12", "note 13", "note 14"]
    assert "Line 12 of the file comes first below." in inside.text
    assert before.is_error and "begins at line 10; line 3 was not read" in before.text
    assert after.is_error and "holds lines 10-29; line 40 is past its end" in after.text


def test_recall_file_cut_at_the_output_limit_names_the_next_lines_in_file_numbers(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    log = memory.project / "big.log"
    log.write_text("".join(f"entry {number} " + "z" * 60 + "\n" for number in range(1, 3001)))
    memory.read(owner, log, offset=101, limit=2500)

    first = call(memory, "recall_file", env={"MAX_MCP_OUTPUT_TOKENS": "2000"}, path="big.log")
    pointer = re.search(r'next: recall_file\("big.log", lines="(\d+)-2600"\)', first.text)
    assert pointer is not None, first.text[-300:]
    following = call(memory, "recall_file", env={"MAX_MCP_OUTPUT_TOKENS": "2000"}, path="big.log",
                     lines=f"{pointer.group(1)}-{pointer.group(1)}")

    assert shown_lines(first.text)[0].startswith("entry 101 ")
    assert shown_lines(following.text) == [f"entry {pointer.group(1)} " + "z" * 60]


def test_codeoid_search_prints_the_same_hits_and_show_lines_pages_exactly(memory: Memory) -> None:
    ids = five_long_hits(memory)

    searched = subprocess.run([executable("codeoid"), "search", "zeppelins ballast", "--limit", "5"],
                              capture_output=True, text=True, cwd=memory.project, check=True)
    lines = subprocess.run([executable("codeoid"), "show", str(ids["tests"]), "--lines", "1499-1500"],
                           capture_output=True, cwd=memory.project, check=True)
    raw_bytes = subprocess.run([executable("codeoid"), "show", "raw-toolu_diff", "--lines", "7"],
                               capture_output=True, cwd=memory.project, check=True)
    bad = subprocess.run([executable("codeoid"), "show", "raw-toolu_diff", "--lines", "7-x"],
                         capture_output=True, text=True, cwd=memory.project)

    assert set(episode_ids(searched.stdout)) == set(ids.values()) - {ids["unrelated"]}
    assert "1500: FAILED test_zeppelin_ballast" in searched.stdout
    assert f"best: codeoid show {ids['tests']} --lines 1499-1501" in searched.stdout
    assert "the exact stdout is raw output raw-toolu_diff (1,200 lines" in searched.stdout
    assert "`codeoid show ID --lines A-B` pages any episode or raw output" in searched.stdout.splitlines()[0]
    assert lines.stdout == b"tests/test_1499.py . [74%]\nFAILED test_zeppelin_ballast - AssertionError: " + (
        b"expected 420 got 0; " * 30) + b"\n"
    assert raw_bytes.stdout == b"zeppelin hangar \xff\xfe door log\n"
    assert bad.returncode != 0 and "is not a line range" in bad.stderr


def test_the_line_with_the_stores_rare_word_is_the_best_not_one_with_a_word_every_session_uses(memory: Memory) -> None:
    """The common word's line may still be shown where the room allows (it holds a query word), but the hit's
    best lines, and its page call, are the rare word's."""
    owner = memory.backing("bs-1")
    for number in range(30):  # "deploy" is in every session's talk; "rollback" only in the runbook below
        memory.assistant(owner, f"Deploy {number} went out at noon; the deploy log is clean.")
    runbook = memory.project / "RUNBOOK.md"
    runbook.write_text("".join(("Deploy from main after the checks pass.\n" if n == 5 else
                                "Rollback: rerun the previous tag's pipeline and flip the router back.\n" if n == 120
                                else "A rollback keeps the database; only the app goes back.\n" if n == 121
                                else "The rollback takes about four minutes.\n" if n == 122
                                else f"Step {n}: follow the checklist.\n") for n in range(1, 201)))
    read = memory.read(owner, runbook)

    recalled = call(memory, "recall", query="deploy rollback", limit=1, budget_tokens=300)

    block = hit_blocks(recalled.text)[read]
    best = re.search(r'best: get_episode\("\d+", lines="(\d+)(?:-(\d+))?"\)', block)
    assert best is not None and int(best.group(1)) <= 120 <= int(best.group(2) or best.group(1)), block
    for line in ("120: Rollback: rerun the previous tag's pipeline", "121: A rollback keeps the database",
                 "122: The rollback takes about four minutes."):
        assert line in block, block


def test_the_parts_of_a_camel_case_name_are_words_of_its_line(memory: Memory) -> None:
    """"The time delta class" is the line of `class TimeDelta`, not the lines that hold "time" alone."""
    owner = memory.backing("bs-1")
    listing = [f"{7 * n}:class Field{n}(Base):" for n in range(1, 150)]
    listing[20:20] = ["141:import time", "142:    time.sleep(delay)", "143:    started = time.monotonic()"]
    listing.insert(120, "1437:class TimeDelta(Field):")
    run = memory.bash(owner, "grep -n 'class \\|time' src/fields.py", "\n".join(listing))

    recalled = call(memory, "recall", query="on which line does the time delta class begin?", limit=1,
                    budget_tokens=300)

    block = hit_blocks(recalled.text)[run]
    best = re.search(r'best: get_episode\("\d+", lines="(\d+)(?:-(\d+))?"\)', block)
    assert best is not None and int(best.group(1)) <= 121 <= int(best.group(2) or best.group(1)), block
    assert "121: 1437:class TimeDelta(Field):" in block, block


def test_a_question_of_how_many_shows_the_runs_count_line_though_it_holds_none_of_its_words(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    report = [f"tests/test_billing.py::test_invoice_{n} PASSED" for n in range(1, 281)]
    report += [f"FAILED tests/test_billing.py::test_refund_{n} - AssertionError: refund total off by {n} cents"
               for n in range(1, 21)]
    report.append("20 failed, 280 passed in 12.31s")
    run = memory.bash(owner, "pytest -v tests/test_billing.py", "\n".join(report))

    recalled = call(memory, "recall", query="how many of the billing checks broke?", limit=1)

    block = hit_blocks(recalled.text)[run]
    assert "301: 20 failed, 280 passed in 12.31s" in block, block
    assert_every_line_pages_back(memory, {run: block})


def test_a_question_about_a_failure_shows_the_failing_tests_ids_before_assertion_details(memory: Memory) -> None:
    """The assertion lines share the question's ordinary words ("field", "name"); the ids name the failures."""
    owner = memory.backing("bs-1")
    tests = ("test_data_key_as_empty_string", "test_partial_nested_prefix", "test_merge_two_dicts")
    report = ["=================================== FAILURES ==================================="]
    for name in tests:
        report += [f"___ {name} ___", "    def test(self):", "        errors = load(payload)",
                   "E   AssertionError: assert ['Unknown field name.'] == []",
                   "E     Left contains one more item: 'Unknown field name.'"]
    report += ["=========================== short test summary info ============================",
               *(f"FAILED tests/test_schema.py::{name} - AssertionError" for name in tests),
               "3 failed, 410 passed in 4.02s"]
    run = memory.tool(owner, "Bash", {"command": "pytest tests/test_schema.py"}, None,
                      error="Exit code 1\n" + "\n".join(report))
    report.insert(0, "Exit code 1")

    recalled = call(memory, "recall", query="among the failures, was one about a field whose name is left blank?",
                    limit=1)

    block = hit_blocks(recalled.text)[run]
    best = re.search(r'best: get_episode\("\d+", lines="(\d+)-(\d+)', block)
    assert best is not None, block
    best_lines = report[int(best.group(1)) - 1:int(best.group(2))]
    assert any(line.startswith("FAILED ") for line in best_lines), block
    assert not any(line.startswith("E ") for line in best_lines), block
    assert_every_line_pages_back(memory, {run: block})


def test_a_question_about_a_failure_it_names_shows_the_assertion_not_the_ids(memory: Memory) -> None:
    """"In the failing refund test, what amount ..." knows which test failed; the assertion's lines say the amount,
    and the summary's ids (which hold the question's words "failing", "refund", "test") are not what it asks."""
    owner = memory.backing("bs-1")
    report = ["=================================== FAILURES ==================================="]
    for number in range(1, 4):
        report += [f"___ test_refund_{number} ___", "    def test(self):", "        total = refund(order)",
                   f"E   AssertionError: assert Decimal('{number}0.05') == Decimal('{number}0.00')",
                   f"E    +  where Decimal('{number}0.05') = refund(order)"]
    report += ["=========================== short test summary info ============================",
               *(f"FAILED tests/test_refunds.py::test_refund_{number} - AssertionError" for number in range(1, 4)),
               "3 failed, 97 passed in 1.20s"]
    run = memory.tool(owner, "Bash", {"command": "pytest tests/test_refunds.py"}, None,
                      error="Exit code 1\n" + "\n".join(report))
    report.insert(0, "Exit code 1")

    recalled = call(memory, "recall", query="in the failing refund test, what amount came back instead?", limit=1)

    block = hit_blocks(recalled.text)[run]
    best = re.search(r'best: get_episode\("\d+", lines="(\d+)(?:-(\d+))?', block)
    assert best is not None, block
    best_lines = report[int(best.group(1)) - 1:int(best.group(2) or best.group(1))]
    assert any(line.startswith("E ") for line in best_lines), block
    assert not any(line.startswith("FAILED ") for line in best_lines), block
    assert_every_line_pages_back(memory, {run: block})


def test_a_question_about_the_error_code_gives_shows_the_line_that_raises_it(memory: Memory) -> None:
    """The raise holds none of the question's words; the lines around the parser's pattern hold several."""
    source = ["import re", "", "PATTERN = re.compile(r'^P(?:(\\d+)D)?$')  # the input pattern of a duration", ""]
    for number in range(1, 6):
        source += [f"def helper_{number}(value):", f"    # the duration input pattern, step {number}",
                   f"    return PATTERN.pattern + str({number})", ""]
    source += ["def parse_duration(value):", "    found = PATTERN.match(value)", "    if found is None:",
               "        raise ValueError('not an ISO 8601 span')", "    return int(found.group(1) or 0)"]
    run = memory.bash(memory.backing("bs-1"), "cat durations.py", "\n".join(source))

    recalled = call(memory, "recall", query="when the input does not fit the duration pattern, what does the parser "
                    "complain with?", limit=1)

    block = hit_blocks(recalled.text)[run]
    assert re.search(r"^\d+: +raise ValueError\('not an ISO 8601 span'\)$", block, re.MULTILINE), block
    assert_every_line_pages_back(memory, {run: block})


@pytest.mark.parametrize("stderr", ["", "warning: the billing fixtures are deprecated"])
def test_compressions_footer_is_never_shown_as_an_answer(memory: Memory, stderr: str) -> None:
    """The footer ("rule pytest: 300 of 322 lines removed (280 passed/skipped tests ...). Exact output: raw-...")
    holds a count and the question's words, but the header names the raw output already: the run's own count line
    and the failures take the room. It ends stdout; the command's stderr is stored after it."""
    report = [f"tests/test_billing.py::test_invoice_{n} PASSED" for n in range(1, 281)]
    report += [f"FAILED tests/test_billing.py::test_refund_{n} - AssertionError: refund total off by {n} cents"
               for n in range(1, 21)]
    report.append("========== 20 failed, 280 passed in 12.31s ==========")
    shown = subprocess.run([executable("codeoid-compress"), "--command", "pytest -v tests/test_billing.py",
                            "--tool-use-id", "toolu_run"], input="\n".join(report).encode() + b"\n",
                           capture_output=True, check=True, cwd=memory.project).stdout.decode()
    footer = shown.rstrip("\n").split("\n")[-1]
    assert "Exact output: raw-toolu_run" in footer and "passed" in footer, shown  # what could be picked
    run = memory.tool(memory.backing("bs-1"), "Bash", {"command": "pytest -v tests/test_billing.py"},
                      {"stdout": shown.rstrip("\n"), "stderr": stderr, "interrupted": False},
                      raw_output_id="raw-toolu_run")

    recalled = call(memory, "recall", query="how many billing tests passed, and how many lines of the run were "
                    "removed?", limit=1)

    block = hit_blocks(recalled.text)[run]
    assert "the exact stdout is raw output raw-toolu_run" in block, block
    assert "20 failed, 280 passed in 12.31s" in block, block
    assert not any("Exact output:" in line for line in sources(block).values()), block
    assert_every_line_pages_back(memory, {run: block})


def compressed_history(memory: Memory, tmp_path: Path, messages: list[str], *log_args: str,
                       tool_use_id: str = "toolu_log") -> tuple[bytes, str]:
    """A repository with a commit for each message: its `git log` (with `log_args`) and what `codeoid-compress`
    made of it, the raw output archived as `raw-<tool_use_id>`."""
    repository = git_project(tmp_path / "repository")
    git = ["git", "-C", str(repository), "-c", "user.name=Dana", "-c", "user.email=dana@example.org"]
    (repository / "app.py").write_text("VALUE = 0\n")
    subprocess.run([*git, "add", "app.py"], check=True)
    for number, message in enumerate(messages, 1):
        (repository / "app.py").write_text(f"VALUE = {number}\n")
        subprocess.run([*git, "commit", "-qam", message], check=True)
    log = subprocess.run(["git", "-C", str(repository), "log", *log_args], capture_output=True, check=True).stdout
    shown = subprocess.run([executable("codeoid-compress"), "--command", " ".join(["git log", *log_args]),
                            "--tool-use-id", tool_use_id], input=log, capture_output=True, check=True,
                           cwd=memory.project).stdout.decode()
    return log, shown


def test_a_commit_body_compression_cut_is_found_and_shown_from_the_raw_output(memory: Memory, tmp_path: Path) -> None:
    messages = [f"Bump the version to {number}\n\n" + (
        "The payment sandbox refuses payloads over 64 KiB, so the invoice export\n"
        "now sends its attachments in a second request." if number == 4
        else f"Routine change number {number} to the application version.") for number in range(1, 13)]
    log, shown = compressed_history(memory, tmp_path, messages)
    assert "sandbox" not in shown and raw.get_raw_output(memory.db, "raw-toolu_log") is not None  # the body was cut
    owner = memory.backing("bs-1")
    history = memory.bash(owner, "git log", shown.rstrip("\n"), raw_output_id="raw-toolu_log")
    memory.assistant(owner, "The history is a run of version bumps.")

    recalled = call(memory, "recall", query="why did the sandbox refuse the export?", limit=3)

    block = hit_blocks(recalled.text)[history]
    section = re.search(r'^lines compression cut: line (\d+) holds query words '
                        r'\(best: get_episode\("raw-toolu_log", lines="[\d-]+"\)\):$', block, re.MULTILINE)
    assert section is not None, block
    raw_number = int(section.group(1))
    assert log.split(b"\n")[raw_number - 1].decode().strip().startswith("The payment sandbox refuses payloads")
    assert sources(block)[("raw-toolu_log", raw_number)].strip().startswith("The payment sandbox refuses")
    assert_every_line_pages_back(memory, {history: block})


def test_a_long_line_shows_the_part_that_holds_the_question(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    filler = " ".join(f"clause {n} of the long explanation" for n in range(1, 60))
    answer = memory.assistant(owner, f"{filler}; the real cause was a stale quokka cache in the resolver. {filler}")

    recalled = call(memory, "recall", query="quokka cache cause", limit=1)

    block = hit_blocks(recalled.text)[answer]
    shown = sources(block)[(str(answer), 1)]
    assert LEAD.match(shown) and CLIPPED.search(shown) and "stale quokka cache" in shown, shown
    assert_every_line_pages_back(memory, {answer: block})


def test_a_long_answer_shows_the_two_sentences_that_hold_the_question_though_far_apart(memory: Memory) -> None:
    """The question's words are in the first sentence and in the fourth; a window of the line's width holds one of
    them, the sentences shown hold both, and the bytes between are named."""
    owner = memory.backing("bs-1")
    detail = " ".join(f"detail {n} of the replay" for n in range(1, 17))
    answer = memory.assistant(owner, f"Quokka rerere makes git remember how you resolved each conflicted hunk, "
                                     f"{detail}. It is off in this clone. {detail}. It only pays off when the same "
                                     f"conflict comes back; for a one-off clash like ours it would have saved "
                                     f"nothing. {detail}.")
    assert len(answer_text := memory.db.execute("SELECT text FROM episodes WHERE id = ?", (answer,)).fetchone()[0]) \
        > 1200, answer_text

    recalled = call(memory, "recall", query="would quokka rerere remembering conflicts have helped with our clash?",
                    limit=1)

    block = hit_blocks(recalled.text)[answer]
    shown = sources(block)[(str(answer), 1)]
    assert shown.startswith("Quokka rerere makes git remember") and "it would have saved nothing." in shown, shown
    assert "bytes] …It only pays off" in shown, shown
    assert_every_line_pages_back(memory, {answer: block})


def test_a_long_answer_shown_from_its_middle_keeps_its_opening_verdict(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    filler = " ".join(f"clause {n} of the long explanation" for n in range(1, 40))
    answer = memory.assistant(owner, f"Not a bug, it is the default policy. {filler}; the stray keys come from the "
                                     f"quokka webhook payloads. {filler}")

    recalled = call(memory, "recall", query="were the quokka webhook payloads a bug on our side?", limit=1)

    block = hit_blocks(recalled.text)[answer]
    shown = sources(block)[(str(answer), 1)]
    assert shown.startswith("Not a bug, it is the default policy. [+") and "quokka webhook payloads" in shown, shown
    assert_every_line_pages_back(memory, {answer: block})


def test_the_best_hit_shows_an_explanation_of_800_characters_whole_and_a_lower_hit_cuts_it(memory: Memory) -> None:
    """An explanation says its conclusion last ("... little to win there anyway"); the likeliest answer keeps it."""
    owner = memory.backing("bs-1")
    filler = " ".join(f"step {n} of the quokka merge" for n in range(1, 26))
    best = memory.assistant(owner, f"The quokka merge speed-up replaced the recursion. {filler}; so there was little "
                                   "to win there anyway.")
    lower = memory.assistant(owner, f"Quokka notes. {filler}; nothing else to add.")
    assert 700 < len(memory.db.execute("SELECT text FROM episodes WHERE id = ?", (best,)).fetchone()[0]) < 960

    recalled = call(memory, "recall", query="was the quokka merge speed-up worth it?", limit=2)

    blocks = hit_blocks(recalled.text)
    assert list(blocks) == [best, lower], recalled.text
    assert sources(blocks[best])[(str(best), 1)].endswith("little to win there anyway.")
    assert CLIPPED.search(sources(blocks[lower])[(str(lower), 1)])
    assert_every_line_pages_back(memory, blocks)


def test_an_answer_that_fits_the_budget_with_a_few_bytes_to_spare_is_shown_whole(memory: Memory) -> None:
    """A one-line answer's say-line takes the bytes it says, not a fixed reserve: an answer that fits is not cut."""
    owner = memory.backing("bs-1")
    filler = " ".join(f"step {n} of the quokka merge" for n in range(1, 20))
    answer = memory.assistant(owner, f"The quokka merge was replayed by hand. {filler}; so rerere would have saved "
                                     "nothing.")
    query = {"query": "would rerere have helped with the quokka merge?", "limit": 1}

    whole, = serve(memory, ("recall", query))
    fitted, = serve(memory, ("recall", {**query, "budget_tokens": (len(whole.text.encode()) + 30) // 3}))

    assert fitted.text == whole.text
    assert sources(hit_blocks(fitted.text)[answer])[(str(answer), 1)].endswith("would have saved nothing.")


def test_a_cut_just_after_the_matched_line_shows_what_that_line_went_on_to_say(memory: Memory) -> None:
    """"3. Install the hooks" was kept and the command under it cut: the raw line shown is that command, not a line
    that holds the same words elsewhere in the guide."""
    guide = [f"Paragraph {n} of the guide." for n in range(1, 121)]
    guide[99] = "Installing the docs build: the guide says to pass no flag; commit the generated pages."
    guide[59] = "3. Install the quokka commit hooks, which lint your staged files."
    guide[61] = "    $ quokka install --allow-missing-config"
    raw.store_raw_output(memory.db, "raw-toolu_guide", command="cat GUIDE.rst",
                         stdout="\n".join(guide).encode() + b"\n", exit_status=0)
    shown = "\n".join([*guide[:60], "", "[codeoid] 58 lines cut, raw lines 61-118", *guide[118:]])
    read = memory.bash(memory.backing("bs-1"), "cat GUIDE.rst", shown, raw_output_id="raw-toolu_guide")

    recalled = call(memory, "recall", query="which flag does the guide pass when installing the commit hooks?",
                    limit=1)

    block = hit_blocks(recalled.text)[read]
    raw_shown = {number: line for (where, number), line in sources(block).items() if where == "raw-toolu_guide"}
    assert any("--allow-missing-config" in line for line in raw_shown.values()), block
    assert_every_line_pages_back(memory, {read: block})


def test_a_third_matching_line_is_shown_before_the_long_context_of_the_first(memory: Memory) -> None:
    """The best line's context (past a blank line) is a long paragraph; a line that answers takes its place."""
    owner = memory.backing("bs-1")
    filler = " ".join(f"detail {n} of the approach" for n in range(1, 16))
    review = memory.assistant(owner, "\n".join([
        "Review of the quokka branch (the feature, then a changelog entry):", "", f"- The approach is sound. {filler}.",
        "- The pattern covers weeks.", "- Her tests pass on the quokka branch.", "- Nits: float rounding.",
        "- The changelog entry opens a new section, which will collide with whatever we write next.", "",
        "My suggestion: approve."]))

    recalled = call(memory, "recall", query="what was the problem with the changelog on the quokka branch?", limit=1,
                    budget_tokens=300)

    block = hit_blocks(recalled.text)[review]
    shown = sources(block)
    assert "will collide" in shown.get((str(review), 7), ""), block
    assert_every_line_pages_back(memory, {review: block})


def test_a_line_repeated_word_for_word_is_shown_once_and_the_next_answer_gets_its_room(memory: Memory) -> None:
    """A workflow's `steps:` line recurs under every job and holds the question's word "step"; shown six times it
    would crowd out the step that publishes."""
    jobs = []
    for job in ("lint", "docs", "tests", "build", "typing", "coverage"):
        jobs += [f"  {job}:", "    runs-on: ubuntu-latest", "    steps:", "      - uses: actions/checkout@v4",
                 f"      - run: tox -e {job}"]
    jobs += ["  publish:", "    steps:", "      - name: Publish distribution",
             "        uses: pypa/gh-action-pypi-publish@release/v1"]
    workflow = memory.bash(memory.backing("bs-1"), "cat .github/workflows/build.yml",
                           "\n".join(["name: build", "jobs:", *jobs]))

    recalled = call(memory, "recall", query="which ready-made step uploads a release?", limit=1)

    block = hit_blocks(recalled.text)[workflow]
    chosen = [line for line in block.split("\n") if HIT_LINE.match(line) and HIT_LINE.match(line)[2] == ":"]
    assert sum(line.endswith(" steps:") for line in chosen) == 1, block
    assert any("gh-action-pypi-publish@release" in line for line in chosen), block
    assert_every_line_pages_back(memory, {workflow: block})


def test_the_commit_body_shown_is_the_one_under_the_commit_the_question_named(memory: Memory, tmp_path: Path
                                                                              ) -> None:
    """Every commit body speaks of uploads; the one shown is under the subject the question matched (its digest
    line names its raw lines), not the newest."""
    messages = [f"Tidy module {n}\n\nNo behaviour change in module {n}; its upload tests pass." for n in range(1, 8)]
    messages.insert(3, "Raise the upload proxy limit\n\nSeen on the reporting job first.\n\nThen by two customers.\n\n"
                       "Uploads over two gigabytes ran past the old ceiling.")
    _, shown = compressed_history(memory, tmp_path, messages)
    assert "gigabytes" not in shown and "raw lines" in shown  # the bodies were cut, each digest names its lines
    owner = memory.backing("bs-1")
    history = memory.bash(owner, "git log", shown.rstrip("\n"), raw_output_id="raw-toolu_log")

    recalled = call(memory, "recall", query="why did we raise the upload proxy limit?", limit=1)

    block = hit_blocks(recalled.text)[history]
    raw_shown = {number: line for (where, number), line in sources(block).items() if where == "raw-toolu_log"}
    assert any("Uploads over two gigabytes" in line for line in raw_shown.values()), block
    assert_every_line_pages_back(memory, {history: block})


def test_a_hit_found_by_the_questions_leading_clause_shows_the_line_that_holds_what_is_asked(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    padding = " ".join(str(n) for n in range(1000, 1090))  # each line alone fills the room the hit has
    lines = [f"step {n}: ok" for n in range(1, 61)]
    lines[9] = f"nightly quokka export ran: {padding}"
    lines[49] = f"write the output file to /srv/exports/quokka.csv: {padding}"
    run = memory.bash(owner, "./export.sh", "\n".join(lines))

    recalled = call(memory, "recall", query="the last time the nightly quokka export ran, which file did it write?",
                    limit=1, budget_tokens=300)

    shown = numbered(hit_blocks(recalled.text)[run])
    assert 50 in shown and 10 not in shown, shown


def test_a_long_answer_is_shown_from_the_sentence_that_holds_the_question(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    filler = " ".join(f"clause {n} of the long explanation" for n in range(1, 30))
    answer = memory.assistant(owner, f"Reproduced and fixed. {filler}. Since the March upgrade the resolver builds "
                                     "its prefix from the attribute name rather than the key the payload uses, so no "
                                     f"quokka path matched and the loader ignored them. {filler}.")

    recalled = call(memory, "recall", query="why did no quokka path match in the loader?", limit=1)

    block = hit_blocks(recalled.text)[answer]
    shown = sources(block)[(str(answer), 1)]
    assert "Since the March upgrade the resolver" in shown and "quokka path matched" in shown, shown
    assert_every_line_pages_back(memory, {answer: block})


def test_a_git_log_stat_digest_is_not_an_answer_for_its_diffstat_alone(memory: Memory, tmp_path: Path) -> None:
    """Every commit of `git log --stat` has a "1 file changed" count; only a "how many" question wants one."""
    messages = [f"Change the limit to {number}\n\n" + ("The quokka profile spent 18% of its load time in the merge."
                                                       if number == 6 else f"Routine change number {number}.")
                for number in range(1, 13)]
    _, shown = compressed_history(memory, tmp_path, messages, "--stat", tool_use_id="toolu_stat")
    assert "quokka" not in shown and "1 file changed" in shown
    owner = memory.backing("bs-1")
    history = memory.bash(owner, "git log --stat", shown.rstrip("\n"), raw_output_id="raw-toolu_stat")

    recalled = call(memory, "recall", query="what share of the quokka load time went to the merge?", limit=1)

    block = hit_blocks(recalled.text)[history]
    answers = [line for line in block.split("\n") if re.match(r"^\d+: ", line)]
    assert any("18% of its load time" in line for line in answers), block
    assert not any("file changed" in line and "quokka" not in line.lower() for line in answers), block


def test_an_edit_found_by_its_path_shows_the_lines_it_changed(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    context = [f" LIMIT_{n} = {n}" for n in range(1, 8)]
    patch = [{"oldStart": 10, "oldLines": 8, "newStart": 10, "newLines": 8,
              "lines": [*context[:3], "-MAX_GROUPING_TOKENS = 100", "+MAX_GROUPING_TOKENS = 10000", *context[3:]]}]
    path = str(memory.project / "quokka_sizes.py")
    edit = memory.tool(owner, "Edit", {"file_path": path, "old_string": "100", "new_string": "10000"},
                       {"filePath": path, "oldString": "100", "newString": "10000", "structuredPatch": patch,
                        "userModified": False, "replaceAll": False})

    recalled = call(memory, "recall", query="what did we change in quokka_sizes.py?", limit=1)

    block = hit_blocks(recalled.text)[edit]
    assert "the lines it changed, 5-6" in block, block
    assert "\n5: -MAX_GROUPING_TOKENS = 100\n6: +MAX_GROUPING_TOKENS = 10000\n" in block, block
    assert_every_line_pages_back(memory, {edit: block})



def test_a_short_script_found_by_its_path_shows_its_lines_past_the_fifth(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    content = "\n".join(["from marshmallow import Schema, fields", "", "",
                         "class AddressSchema(Schema):", "    street = fields.Str(required=True)",
                         "    city = fields.Str(required=True)", "", "",
                         "class CustomerSchema(Schema):", "    name = fields.Str(required=True)", "", "",
                         'payload = {"name": "Ada", "billingAddress": {"street": "1 Main St"}}',
                         "print(CustomerSchema().load(payload))"]) + "\n"
    path = str(memory.project / "wombat_repro.py")
    write = memory.tool(owner, "Write", {"file_path": path, "content": content},
                        {"type": "create", "filePath": path, "content": content})

    recalled = call(memory, "recall", query="what was the wombat_repro script for?", limit=1)

    # No line holds a word of the question (it matched the path): the hit shows the script's first lines as far as
    # its room goes, down to the payload it feeds in, not only the first five.
    block = hit_blocks(recalled.text)[write]
    assert "its first lines" in block, block
    assert numbered(block)[13].startswith('payload = {"name": "Ada"'), block
    assert_every_line_pages_back(memory, {write: block})


def test_cut_lines_come_before_a_kept_line_only_when_nearer_the_question_than_the_kept_text(memory: Memory) -> None:
    """Compression kept the line that answers; the lines it cut share the question's rarer word. Found as near the
    question as the kept text, they do not displace it; found nearer, they gain what they are nearer by."""
    owner = memory.backing("bs-1")
    answer = "the bot bumped the docs builder from 8.1.0 to 8.1.3"
    stdout = "\n".join([answer, "updated-dependencies:", "- dependency-name: docs-builder, bumped by the bot",
                        "  dependency-type: direct"]).encode() + b"\n"
    raw.store_raw_output(memory.db, "raw-toolu_bump", command="cat bump.log", stdout=stdout, exit_status=0,
                         tool_use_id="toolu_bump", session_id=owner.session_id, workspace_id=owner.workspace_id)
    log = memory.bash(owner, "cat bump.log", f"{answer}\n[codeoid] 3 lines cut", raw_output_id="raw-toolu_bump")
    found = memory.db.execute("SELECT * FROM episodes WHERE id = ?", (log,))
    row = dict(zip([column[0] for column in found.description], found.fetchone(), strict=True))
    terms = line_choice.question_terms(memory.db, "what did the dependency bot bump the docs builder to?")

    def best(text_cosine: float, cut_cosine: float) -> tuple[str, int]:
        chosen = line_choice.choose(memory.db, terms, {**row, "chunks": [(1, 2, text_cosine)],
                                                       "raw_chunks": [(2, 4, cut_cosine)]})
        return chosen.picks[0].source, chosen.picks[0].number

    assert best(0.45, 0.45) == ("text", 1)
    assert best(0.2, 0.5) == ("raw", 3)
