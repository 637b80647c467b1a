"""The MCP server as Claude Code meets it: the real `codeoid-mcp` process over stdio, driven by the `mcp` SDK's
own stdio client, answering from a store filled through the capture API.

The server's parent is this test process, so a backing session whose `claude_pid` is `os.getpid()` is the
caller whose own live episodes `recall` skips.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from codeoid.service import lifecycle
from codeoid.store import capture, raw
from codeoid.store import db as store_db
from codeoid.workspace import identify

SERVER = os.path.join(os.path.dirname(sys.executable), "codeoid-mcp")
TOOL_NAMES = {"recall", "recall_file", "timeline", "get_episode"}


class Result:
    """One tool result: its text and whether the server flagged it as an error."""

    def __init__(self, text: str, is_error: bool) -> None:
        self.text = text
        self.is_error = is_error

    def __repr__(self) -> str:
        return f"Result(is_error={self.is_error}, text={self.text[:400]!r})"


class Memory:
    """A temp data dir and project, and the capture calls the hooks would make, with a steady clock."""

    def __init__(self, home: Path, project: Path) -> None:
        self.home = home
        self.project = project
        self.db = store_db.connect()
        self.clock = time.time()
        self.counter = 0

    def now(self) -> float:
        self.clock += 0.01
        return self.clock

    def backing(self, backing_id: str, *, project: Path | None = None, claude_pid: int | None = None
                ) -> capture.Owner:
        with store_db.write_transaction(self.db):
            return capture.ensure_backing_session(
                self.db, backing_session_id=backing_id, workspace=identify(str(project or self.project)),
                now=self.now(), source="startup", claude_pid=claude_pid,
            )

    def user(self, owner: capture.Owner, prompt: str) -> int:
        with store_db.write_transaction(self.db):
            found = capture.add_user_turn(self.db, owner, prompt=prompt, prompt_id=self._key("prompt"),
                                          origin="user", now=self.now())
        assert found is not None
        return found

    def assistant(self, owner: capture.Owner, text: str) -> int:
        with store_db.write_transaction(self.db):
            found = capture.add_assistant_message(self.db, owner, message_id=self._key("msg"), text=text,
                                                  now=self.now())
        assert found is not None
        return found

    def tool(self, owner: capture.Owner, tool_name: str, tool_input: dict[str, Any], response: Any, *,
             error: str | None = None, raw_output_id: str | None = None) -> int:
        with store_db.write_transaction(self.db):
            found = capture.add_tool_call(
                self.db, owner, tool_name=tool_name, tool_use_id=self._key("toolu"), tool_input=tool_input,
                response=response, error=error, agent_id=None, now=self.now(), raw_output_id=raw_output_id,
            )
        assert found is not None
        return found

    def bash(self, owner: capture.Owner, command: str, stdout: str, **kwargs: Any) -> int:
        return self.tool(owner, "Bash", {"command": command}, {"stdout": stdout, "stderr": "",
                                                               "interrupted": False}, **kwargs)

    def read(self, owner: capture.Owner, path: Path, *, offset: int | None = None, limit: int | None = None) -> int:
        """A Read call as Claude Code reports it: the lines asked for, joined by newlines."""
        text = path.read_text()
        lines = text.split("\n")
        start = offset or 1
        chosen = lines[start - 1:start - 1 + limit] if limit else lines[start - 1:]
        tool_input: dict[str, Any] = {"file_path": str(path)}
        if offset is not None:
            tool_input["offset"] = offset
        if limit is not None:
            tool_input["limit"] = limit
        response = {"type": "text", "file": {"filePath": str(path), "content": "\n".join(chosen),
                                             "numLines": len(chosen), "startLine": start, "totalLines": len(lines)}}
        return self.tool(owner, "Read", tool_input, response)

    def set_state(self, episode_id: int, state: str) -> None:
        self.db.execute("UPDATE episodes SET state = ? WHERE id = ?", (state, episode_id))

    def _key(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.counter}"


def git_project(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    found = Memory(home, git_project(tmp_path / "project"))
    try:
        yield found
    finally:
        found.db.close()
        lifecycle.stop_service()  # started by the tests that leave semantic memory on


def serve(memory: Memory, *calls: tuple[str, dict[str, Any]], env: dict[str, str] | None = None) -> list[Result]:
    """Start `codeoid-mcp` in the project, make the calls in order over one connection, and stop it."""
    async def session() -> list[Result]:
        params = StdioServerParameters(command=SERVER, cwd=str(memory.project),
                                       env={"CODEOID_HOME": str(memory.home), "CODEOID_VECTOR": "off", **(env or {})})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            results = []
            for name, arguments in calls:
                answer = await client.call_tool(name, arguments)
                text = "\n".join(getattr(block, "text", "") for block in answer.content)
                results.append(Result(text, bool(answer.is_error)))
            return results

    return anyio.run(session)


def call(memory: Memory, name: str, env: dict[str, str] | None = None, **arguments: Any) -> Result:
    return serve(memory, (name, arguments), env=env)[0]


def episode_ids(text: str) -> list[int]:
    return [int(found) for found in re.findall(r"^=== episode (\d+)", text, re.MULTILINE)]


def shown_lines(text: str) -> list[str]:
    """The verbatim lines between the first pair of `-----` rules."""
    body = text.split("\n-----\n", 1)[1]
    return body.split("\n-----", 1)[0].split("\n")


def test_initialize_and_tools_list_answer_with_read_only_tools(memory: Memory) -> None:
    # How fast is a benchmark's question (benchmarks/memory_service.py, first `tools/list`), not a timed assertion
    # that a loaded machine would fail.
    async def session() -> Any:
        params = StdioServerParameters(command=SERVER, cwd=str(memory.project), env={"CODEOID_HOME": str(memory.home)})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return await client.list_tools()

    listed = anyio.run(session)
    assert {tool.name for tool in listed.tools} == TOOL_NAMES
    for tool in listed.tools:
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.output_schema is None  # plain text results, not structured JSON


def test_recall_returns_compact_hits_with_their_fields_and_the_lines_that_matched(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    prompt = memory.user(owner, "why does the flux capacitor overheat?")
    run = memory.bash(owner, "pytest tests/test_flux.py", "FAILED tests/test_flux.py::test_capacitor - "
                                                           "OverheatError: 1.21 gigawatts\n1 failed in 0.12s")
    lunch = memory.assistant(owner, "The lunch menu has soup today.")

    found = call(memory, "recall", query="flux capacitor overheat")

    assert not found.is_error, found
    # The episodes holding the words come first; the turn after them matches only through its neighbours (BM25
    # indexes each episode with its session neighbours), so it may follow, never ahead of them.
    assert set(episode_ids(found.text)[:2]) == {prompt, run}
    assert episode_ids(found.text)[2:] in ([], [lunch])
    # The run's count line is shown as an answer too: what a reader of a test run looks at first.
    assert "\n1: FAILED tests/test_flux.py::test_capacitor - OverheatError: 1.21 gigawatts\n2: 1 failed in 0.12s" in (
        found.text)
    assert "\n1: why does the flux capacitor overheat?" in found.text
    assert "command: pytest tests/test_flux.py" in found.text
    header = next(line for line in found.text.splitlines() if line.startswith(f"=== episode {run} "))
    assert "tool Bash" in header and "score " in header and "live" not in header and "agent" not in header
    assert f"session {owner.session_id[:8]} turn 1" in header and "2 lines, ~31 tokens" in header
    assert f'lines 1-2 match by query words and an error or count line (best: get_episode("{run}", lines="1-2"))' in (
        found.text)


def test_recall_finds_archived_episodes_and_never_retracted_ones(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    archived = memory.assistant(owner, "The wombat migration script lives in tools/wombat.py.")
    retracted = memory.assistant(owner, "The wombat password is hunter2.")
    memory.set_state(archived, "archived")
    memory.set_state(retracted, "retracted")

    found = call(memory, "recall", query="wombat")

    assert episode_ids(found.text) == [archived]
    assert "archived" in found.text and "hunter2" not in found.text


def test_recall_never_returns_an_episode_of_another_workspace(memory: Memory, tmp_path: Path) -> None:
    other_project = git_project(tmp_path / "other-project")
    ours = memory.assistant(memory.backing("bs-ours"), "Our axolotl notes.")
    theirs = memory.assistant(memory.backing("bs-theirs", project=other_project), "Their axolotl secrets.")

    recalled, fetched = serve(memory, ("recall", {"query": "axolotl"}), ("get_episode", {"episode_id": str(theirs)}))

    assert episode_ids(recalled.text) == [ours]
    assert "secrets" not in recalled.text
    assert fetched.is_error and f"No episode {theirs} in this workspace" in fetched.text


def test_a_200kb_episode_costs_recall_a_few_lines_and_get_episode_pages_the_rest(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    big_text = "\n".join(f"line {number:06d} " + ("needle " if number in (700, 1500) else "") + "x" * 90
                         for number in range(2000))
    assert len(big_text) > 200_000
    big = memory.bash(owner, "python dump.py", big_text)
    small = memory.assistant(owner, "A short needle note.")

    recalled = call(memory, "recall", query="needle")

    assert not recalled.is_error
    assert len(recalled.text.encode()) / 3 <= 2_000  # the default answer budget, estimated conservatively
    assert set(episode_ids(recalled.text)) == {big, small}
    assert "\n1: A short needle note." in recalled.text
    assert "lines 701, 1501 hold query words" in recalled.text  # line numbers count from 1
    assert f"\n701: line 000700 needle {'x' * 90}" in recalled.text and "\n702- line 000701" in recalled.text
    pointer = re.search(rf'get_episode\("{big}", lines="(\d+)-(\d+)"\)', recalled.text)
    assert pointer is not None, recalled.text
    first, last = int(pointer.group(1)), int(pointer.group(2))

    page, rest = serve(memory, ("get_episode", {"episode_id": str(big), "lines": f"{first}-{last}"}),
                       ("get_episode", {"episode_id": str(big), "lines": "1990-"}))

    assert shown_lines(page.text) == big_text.split("\n")[first - 1:last]
    assert f"text: lines {first}-{last} of 2000" in page.text
    assert shown_lines(rest.text) == big_text.split("\n")[1989:]


def test_the_cap_follows_max_mcp_output_tokens(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    big = memory.bash(owner, "seq", "\n".join(f"row {number} pelican" for number in range(20_000)))

    found = call(memory, "get_episode", env={"MAX_MCP_OUTPUT_TOKENS": "2000"}, episode_id=str(big))

    assert len(found.text.encode()) <= 2000 * 3
    assert shown_lines(found.text)[0] == "row 0 pelican"
    pointer = re.search(rf'next: get_episode\("{big}", lines="(\d+)-20000"\)', found.text)
    assert pointer is not None, found.text[-300:]
    assert shown_lines(call(memory, "get_episode", episode_id=str(big), lines=f"{pointer.group(1)}-{pointer.group(1)}")
                       .text) == [f"row {int(pointer.group(1)) - 1} pelican"]


def test_many_hits_and_a_giant_line_stay_within_a_small_limit(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    hits = [memory.bash(owner, f"echo {number}", f"heron {number}\n" + "payload line\n" * 150) for number in range(12)]
    minified = memory.bash(owner, "cat bundle.min.js", "var heron=1;" + "a" * 100_000)

    recalled, giant = serve(memory, ("recall", {"query": "heron", "limit": 13}),
                            ("get_episode", {"episode_id": str(minified)}), env={"MAX_MCP_OUTPUT_TOKENS": "1000"})

    assert len(recalled.text.encode()) <= 1000 * 3
    assert "more hits did not fit the answer budget" in recalled.text
    named = set(episode_ids(recalled.text)) | {int(found) for found in re.findall(
        r"(\d+) \(tool Bash", recalled.text.rsplit("did not fit the answer budget:", 1)[-1])}
    assert set(hits) | {minified} <= named  # every hit is shown or named
    assert len(giant.text.encode()) <= 1000 * 3
    assert shown_lines(giant.text)[0].startswith("var heron=1;aaaa")
    assert "line 1 is longer than the output limit and only its head is shown" in giant.text


def test_get_episode_shows_fields_and_pages_by_line_range(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    failing = memory.tool(owner, "Bash", {"command": "make test"}, None,
                          error="Exit code 2\n" + "\n".join(f"out {number}" for number in range(1, 40)))

    page = call(memory, "get_episode", episode_id=failing, start_line=10, end_line=12)  # a number is fine too

    assert not page.is_error
    assert "tool Bash" in page.text and "command: make test" in page.text and "exit status: 2 (error)" in page.text
    assert "live" in page.text
    assert shown_lines(page.text) == ["out 9", "out 10", "out 11"]
    assert "lines 10-12 of 40" in page.text


def test_get_episode_errors_are_clear_tool_errors(memory: Memory) -> None:
    short = memory.assistant(memory.backing("bs-1"), "one\ntwo\nthree")

    unknown, not_an_id, past_end, backwards, raw_unknown = serve(
        memory,
        ("get_episode", {"episode_id": "999999"}),
        ("get_episode", {"episode_id": "latest"}),
        ("get_episode", {"episode_id": str(short), "start_line": 50}),
        ("get_episode", {"episode_id": str(short), "start_line": 3, "end_line": 2}),
        ("get_episode", {"episode_id": "raw-nothing-here"}),
    )

    assert unknown.is_error and "No episode 999999 in this workspace" in unknown.text
    assert not_an_id.is_error and "is not an episode id" in not_an_id.text
    assert past_end.is_error and "has 3 lines; start_line 50 is past the end" in past_end.text
    assert backwards.is_error and "end_line 2 is before start_line 3" in backwards.text
    assert raw_unknown.is_error and "No raw output raw-nothing-here" in raw_unknown.text
    for result in (unknown, not_an_id, past_end, backwards, raw_unknown):
        assert "Traceback" not in result.text


def test_bad_arguments_get_a_sentence_not_a_bare_error_and_are_never_echoed_whole(memory: Memory) -> None:
    short = memory.assistant(memory.backing("bs-1"), "one\ntwo\nthree")
    raw.store_raw_output(memory.db, "raw-toolu_few", command="ls", stdout=b"a\nb\n", exit_status=0)

    asked = [
        ("get_episode", {"episode_id": 10**30}),
        ("get_episode", {"episode_id": "\u00b2"}),  # "²".isdigit() is true, int("²") fails
        ("get_episode", {"episode_id": "9" * 40}),
        ("get_episode", {"episode_id": "raw-" + "x" * 100_000}),
        ("get_episode", {"episode_id": str(short), "lines": "9" * 40}),
        ("get_episode", {"episode_id": str(short), "lines": "1-" + "9" * 30}),
        ("get_episode", {"episode_id": str(short), "lines": "9" * 5_000}),  # past int()'s 4,300 digits
        ("get_episode", {"episode_id": "raw-toolu_few", "start_line": 10**30}),
        ("recall_file", {"path": "notes\x00.txt"}),
        ("recall_file", {"path": "x" * 100_000}),
        ("recall", {"query": "walrus " * 15_000}),
    ]
    answers = serve(memory, *asked)

    for (tool, arguments), answer in zip(asked, answers, strict=True):
        assert answer.is_error, (tool, arguments)
        said = answer.text.removeprefix(f"Error executing tool {tool}").removeprefix(": ")
        assert said and "Traceback" not in said, (tool, arguments, answer.text)
        assert len(answer.text) < 600, (tool, len(answer.text))
    (huge_id, superscript, past_sqlite, long_raw, many_digits, far_end, too_many_digits, raw_far, nul, long_path,
     long_query) = answers
    assert "is not an episode id" in huge_id.text and "is not an episode id" in superscript.text
    assert "is not an episode id" in past_sqlite.text and "at most 200 characters" in long_raw.text
    assert "past the end" in many_digits.text and "past the end" in far_end.text and "past the end" in raw_far.text
    assert "is not a line range" in too_many_digits.text
    assert "NUL character" in nul.text and "100,000 characters" in long_path.text
    assert "at most 10,000" in long_query.text


def test_a_long_query_within_the_bound_is_echoed_clipped(memory: Memory) -> None:
    memory.assistant(memory.backing("bs-1"), "the walrus operator in comprehensions")

    found = call(memory, "recall", query="walrus " + "comprehension " * 700)

    assert not found.is_error and "walrus operator" in found.text
    assert len(found.text) < 4_000 and "characters)" in found.text


def test_raw_output_bytes_that_are_not_utf8_are_shown_escaped(memory: Memory, tmp_path: Path) -> None:
    owner = memory.backing("bs-1")
    raw.store_raw_output(memory.db, "raw-toolu_bin", command="cat blob.bin", stdout=b"header ok\nbad \xff\xfe bytes\n",
                         exit_status=0, duration_ms=5, cwd=str(memory.project), tool_use_id="toolu_bin",
                         session_id=owner.session_id, workspace_id=owner.workspace_id)
    elsewhere = memory.backing("bs-other", project=git_project(tmp_path / "elsewhere"))
    raw.store_raw_output(memory.db, "raw-toolu_far", command="ls", stdout=b"far\n", exit_status=0,
                         session_id=elsewhere.session_id, workspace_id=elsewhere.workspace_id)

    shown, foreign = serve(memory, ("get_episode", {"episode_id": "raw-toolu_bin"}),
                           ("get_episode", {"episode_id": "raw-toolu_far"}))

    assert not shown.is_error, shown
    assert "command: cat blob.bin" in shown.text
    assert shown_lines(shown.text) == ["header ok", "bad \\xff\\xfe bytes"]
    assert "not UTF-8" in shown.text and "codeoid show --raw" in shown.text
    assert foreign.is_error and "No raw output raw-toolu_far in this workspace" in foreign.text


def test_recall_file_returns_the_latest_whole_read_and_notices_a_change_on_disk(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    source = memory.project / "src" / "app.py"
    source.parent.mkdir()
    source.write_text("def main():\n    return 41\n")
    memory.read(owner, source)
    source.write_text("def main():\n    return 42\n")
    latest = memory.read(owner, source)

    unchanged = call(memory, "recall_file", path="src/app.py")
    source.write_text("def main():\n    return 43\n")
    changed = call(memory, "recall_file", path=str(source))

    assert not unchanged.is_error, unchanged
    assert f"episode {latest}" in unchanged.text and "Read of the whole file" in unchanged.text
    assert "Unchanged on disk since this read (same sha256)" in unchanged.text
    assert shown_lines(unchanged.text) == ["def main():", "    return 42"]
    assert "Changed on disk since this read: content differs" in changed.text
    assert "sha256 now" in changed.text


def test_recall_file_says_which_lines_a_partial_read_returned(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    notes = memory.project / "notes.txt"
    notes.write_text("".join(f"note {number}\n" for number in range(1, 101)))
    partial = memory.read(owner, notes, offset=10, limit=5)

    same_lines = call(memory, "recall_file", path="notes.txt")
    notes.write_text(notes.read_text().replace("note 12\n", "note twelve\n"))
    changed_lines = call(memory, "recall_file", path="notes.txt")

    assert f"episode {partial}, Read, lines 10-14 of 101 (a partial read)" in same_lines.text
    assert "Line 10 of the file comes first below." in same_lines.text
    assert shown_lines(same_lines.text) == [f"note {number}" for number in range(10, 15)]
    assert "Unchanged on disk since this read (lines 10-14 are the same)" in same_lines.text
    assert "Changed on disk since this read: lines 10-14 differ" in changed_lines.text


def test_recall_file_takes_a_cat_that_printed_the_file_whole(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    config = memory.project / "config.toml"
    config.write_text("[server]\nport = 8080\n")
    memory.read(owner, config)
    shown = memory.bash(owner, "cat config.toml", "[server]\nport = 8080")
    memory.bash(owner, "cat config.toml | grep port", "port = 8080")  # not the whole file

    found = call(memory, "recall_file", path="config.toml")

    assert f"episode {shown}, `cat config.toml`, which printed the whole file" in found.text
    assert "Unchanged on disk" in found.text
    assert shown_lines(found.text) == ["[server]", "port = 8080"]


def test_recall_file_rejects_paths_outside_the_workspace_and_answers_when_nothing_was_read(memory: Memory) -> None:
    memory.backing("bs-1")
    (memory.project / "never-read.txt").write_text("x\n")

    absolute, climbing, empty, unread = serve(
        memory,
        ("recall_file", {"path": "/etc/passwd"}),
        ("recall_file", {"path": "../outside.txt"}),
        ("recall_file", {"path": " "}),
        ("recall_file", {"path": "never-read.txt"}),
    )

    assert absolute.is_error and "/etc/passwd is outside the workspace" in absolute.text
    assert climbing.is_error and "../outside.txt is outside the workspace" in climbing.text
    assert empty.is_error and "The path is empty" in empty.text
    assert not unread.is_error and "No stored read of never-read.txt" in unread.text


def test_recall_rejects_an_empty_query(memory: Memory) -> None:
    memory.assistant(memory.backing("bs-1"), "anything")

    blank, punctuation = serve(memory, ("recall", {"query": "   "}), ("recall", {"query": "?!"}))

    assert blank.is_error and "The query is empty" in blank.text
    assert punctuation.is_error and "no words to search for" in punctuation.text


def test_recall_skips_only_the_callers_own_live_episodes(memory: Memory) -> None:
    caller = memory.backing("bs-caller", claude_pid=os.getpid())  # the server's parent is this process
    in_window = memory.assistant(caller, "quokka plan, still in the caller's window")
    rotated_out = memory.assistant(caller, "quokka plan, compacted out of the caller's window")
    memory.set_state(rotated_out, "archived")
    other_window = memory.assistant(memory.backing("bs-elsewhere", claude_pid=1), "quokka plan from another window")

    skipping = call(memory, "recall", query="quokka")
    with store_db.write_transaction(memory.db):
        capture.end_backing_session(memory.db, "bs-caller", reason="exit", now=memory.now())
    unknown_caller = call(memory, "recall", query="quokka")

    assert set(episode_ids(skipping.text)) == {rotated_out, other_window}
    assert "still in your current window are skipped" in skipping.text
    assert set(episode_ids(unknown_caller.text)) == {in_window, rotated_out, other_window}


def test_recall_falls_back_to_claude_code_session_id_to_find_the_caller(memory: Memory) -> None:
    caller = memory.backing("bs-env", claude_pid=None)
    in_window = memory.assistant(caller, "narwhal draft in this window")
    other = memory.assistant(memory.backing("bs-other"), "narwhal draft elsewhere")

    with_env = call(memory, "recall", env={"CLAUDE_CODE_SESSION_ID": "bs-env"}, query="narwhal")
    without_env = call(memory, "recall", query="narwhal")

    assert episode_ids(with_env.text) == [other]
    assert set(episode_ids(without_env.text)) == {in_window, other}


def test_recall_sees_episodes_written_while_the_server_runs(memory: Memory) -> None:
    owner = memory.backing("bs-1")

    async def session() -> tuple[Result, Result]:
        params = StdioServerParameters(command=SERVER, cwd=str(memory.project), env={"CODEOID_HOME": str(memory.home)})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            before = await client.call_tool("recall", {"query": "platypus"})
            memory.assistant(owner, "platypus written after the server started")
            after = await client.call_tool("recall", {"query": "platypus"})
        return (Result(before.content[0].text, bool(before.is_error)),  # type: ignore[union-attr]
                Result(after.content[0].text, bool(after.is_error)))  # type: ignore[union-attr]

    before, after = anyio.run(session)

    assert "No stored episode" in before.text
    assert "platypus written after the server started" in after.text


def test_timeline_pages_from_the_newest_and_lists_oldest_first_within_a_page(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    ids = [memory.assistant(owner, f"step {number}") for number in range(1, 8)]
    hidden = memory.assistant(owner, "retracted step")
    memory.set_state(hidden, "retracted")
    memory.set_state(ids[0], "archived")

    newest, older, oldest, past = serve(
        memory,
        ("timeline", {"limit": 3}),
        ("timeline", {"offset": 3, "limit": 3}),
        ("timeline", {"offset": 6, "limit": 3}),
        ("timeline", {"offset": 7}),
    )

    def listed(text: str) -> list[int]:
        return [int(line.split()[0]) for line in text.splitlines()[1:]]

    assert listed(newest.text) == ids[4:7]
    assert "episodes 5-7 of 7" in newest.text and "older: timeline(offset=3, limit=3)" in newest.text
    assert listed(older.text) == ids[1:4]
    assert listed(oldest.text) == ids[:1] and "[archived]" in oldest.text and "this is the oldest page" in oldest.text
    assert "assistant: step 7" in newest.text
    assert past.is_error and "past the start of the history" in past.text


def test_an_unknown_workspace_gets_plain_answers_not_errors(memory: Memory) -> None:
    recalled, listed = serve(memory, ("recall", {"query": "anything"}), ("timeline", {}))

    assert not recalled.is_error and "Nothing is stored for this workspace" in recalled.text
    assert not listed.is_error and "Nothing is stored for this workspace" in listed.text

