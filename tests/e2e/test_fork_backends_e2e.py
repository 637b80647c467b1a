"""A fork reaches the real Codex and Gemini CLIs intact: started through the translator's own argv against a
scripted fake API on 127.0.0.1, each CLI's first request carries the forked turns in order, tool calls and their
results included, checked turn by turn, and offers codeoid's MCP tools; a recall made in the fork finds what the
parent session stored; the interactive TUIs show the forked conversation and send it with the next prompt.
`codeoid fork --backend codex|gemini --print`, run as the installed command on a store filled through the real
hooks, sends the parent's turns (opened by the fork notice) to the real CLI, records the fork's lineage and,
once the CLI exits, stores the fork's new turn (prompt, tool call with its result, answer) from the CLI's own
record; without `--print` it starts the CLI itself on the forked conversation, and what was typed there is
stored when the user quits it.

The binaries come from `CODEOID_CODEX_BIN` / `CODEOID_GEMINI_BIN`, then the repo's `.tools/` install, then PATH;
without one, its tests are skipped. Every run has its own HOME, so nothing touches the real one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_fork import two_window_session

from codeoid.fork import codex, gemini
from codeoid.fork.canonical import session_turns
from codeoid.fork.launch import Launch, McpServer
from codeoid.fork.turns import ToolCall, Turn
from codeoid.store import capture
from codeoid.store import db as store_db
from codeoid.workspace import identify

from .fake_gemini import FakeGemini, contents
from .fake_openai import FakeOpenAI, input_items
from .rig import find_cli
from .scripted_api import CallTool, RecordedRequest, ScriptedAPI
from .tui import Terminal, wait_until

pytestmark = pytest.mark.e2e

RUN_TIMEOUT = 120
TUI_TIMEOUT = 90
#: Starts like an option, as a prompt may: each CLI must still take it as the prompt.
NEW_PROMPT = "--verbose please: what was in the notes file?"
#: Typed into the TUIs: Gemini's takes a "?" as its shortcut-help key.
TYPED_PROMPT = "Now tell me what the notes file said."
ANSWER = "scripted answer from the fake API"

#: A forked history with what a translator can get wrong: several turns, text before and after tool calls, two
#: calls in a row, a failed call, an MCP tool, quotes, newlines and non-ASCII text.
TURNS = [
    Turn(1, "List the files, please.", (
        "I'll look.",
        ToolCall("toolu_01A", "Bash", {"command": "ls -a", "description": "list files"}, ".\n..\nnotes.txt\n"),
        "There is one file: notes.txt.",
    )),
    Turn(2, 'Read notes.txt and "summarise" it — it is in Ünïcode.', (
        ToolCall("toolu_02A", "Read", {"file_path": "/work/notes.txt"}, "File does not exist.", is_error=True),
        ToolCall("toolu_02B", "Bash", {"command": "cat notes.txt"}, "ölçü: 3 kg\nline two"),
        "It says ölçü: 3 kg.",
    )),
    Turn(3, "What did we decide yesterday?", (
        ToolCall("toolu_03A", "mcp__codeoid__recall", {"query": "decision"}, "Episode 12: we chose SQLite."),
        "We chose SQLite.",
    )),
]


@pytest.fixture(scope="module")
def codex_bin() -> str:
    found = find_cli("codex", "CODEOID_CODEX_BIN")
    if found is None:
        pytest.skip("no codex binary: set CODEOID_CODEX_BIN, npm install @openai/codex into .tools/, or put it on PATH")
    return found


@pytest.fixture(scope="module")
def gemini_bin() -> str:
    found = find_cli("gemini", "CODEOID_GEMINI_BIN")
    if found is None:
        pytest.skip(
            "no gemini binary: set CODEOID_GEMINI_BIN, npm install @google/gemini-cli into .tools/, or put it on PATH"
        )
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def mcp(codeoid_home: Path) -> McpServer:
    """codeoid-mcp as `codeoid fork` would register it, on a private data dir (semantic recall off: no indexer)."""
    command = Path(sys.executable).parent / "codeoid-mcp"
    if not command.exists():
        pytest.fail(f"{command} is missing: install codeoid into this environment (pip install .)")
    return McpServer(str(command), env={"CODEOID_HOME": str(codeoid_home), "CODEOID_VECTOR": "off"})


#: What the parent session said, stored by codeoid; a recall in the fork must find it.
PARENT_MEMORY = "We settled on SQLite with WAL because the store must survive a crash mid-write."


@pytest.fixture
def parent_memory(codeoid_home: Path, workspace: Path) -> str:
    """The parent session's memory of this workspace, stored the way the hooks store it."""
    db = store_db.connect()
    try:
        with store_db.write_transaction(db):
            owner = capture.ensure_backing_session(
                db, backing_session_id="parent-claude-session", workspace=identify(str(workspace)),
                now=time.time() - 60, source="startup", claude_pid=None,
            )
            capture.add_user_turn(db, owner, prompt="Which database for the store?", prompt_id="p1",
                                  origin="user", now=time.time() - 50)
            capture.add_assistant_message(db, owner, message_id="m1", text=PARENT_MEMORY, now=time.time() - 40)
    finally:
        db.close()
    return PARENT_MEMORY


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fake Responses API with an empty script; tests add the replies they need."""
    with FakeOpenAI() as api:
        yield api


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A fake Gemini API with an empty script; tests add the replies they need."""
    with FakeGemini() as api:
        yield api


def launch_env(launch: Launch, home: Path, extra_env: dict[str, str]) -> dict[str, str]:
    """The launch's environment with a private HOME and the variables a test adds (the fake API's address)."""
    return {**os.environ, "HOME": str(home), "TERM": "xterm-256color", **launch.env, **extra_env}


def run(launch: Launch, home: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a headless launch exactly as the translator gave it."""
    return subprocess.run(
        launch.argv, cwd=launch.cwd, env=launch_env(launch, home, extra_env), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=RUN_TIMEOUT,
    )


def type_into_forked_session(argv: Sequence[str], env: Mapping[str, str], cwd: str, api: ScriptedAPI, ready: str,
                             turns: Sequence[Turn] = TURNS, after_quit: str | None = None,
                             idle: str | None = None, ready_after_history: bool = False,
                             quit_command: str | None = None) -> RecordedRequest:
    """Start the interactive CLI, wait until it shows every forked prompt and then `ready`, type the new prompt,
    and wait for the scripted answer on screen; return the model request the prompt caused. With `after_quit`,
    then quit as a user does (`quit_command`, else Ctrl-C) once the CLI's own record holds the answer and
    `idle` (what the CLI shows when the turn is over) is on screen, and wait for the program to exit showing
    that text. `ready_after_history`: the CLI hides its prompt while it loads the forked history (Gemini's
    "Resuming session..."), and keys typed then are lost, so `ready` counts only once drawn after the history."""
    terminal = Terminal(argv, env=env, cwd=cwd)
    try:
        for turn in turns:
            terminal.wait_for(turn.user, timeout=TUI_TIMEOUT)
        if ready_after_history:
            terminal.wait_for(ready, after=turns[-1].user, timeout=TUI_TIMEOUT)
        else:
            terminal.wait_for(ready, timeout=TUI_TIMEOUT)
        mark = terminal.mark()
        terminal.type_line(TYPED_PROMPT, timeout=TUI_TIMEOUT)
        found = wait_until(lambda: api.model_requests, timeout=TUI_TIMEOUT, message=terminal.screen_text)
        assert isinstance(found, list)
        terminal.wait_for(ANSWER, since=mark, timeout=TUI_TIMEOUT)
        if after_quit is not None:
            if idle is not None:
                # On the screen as it is now: Codex draws "Worked for" by overwriting "Working" in place.
                terminal.wait_for(idle, on_screen=True, timeout=TUI_TIMEOUT)
            wait_until(lambda: recorded(Path(env["HOME"]), ANSWER), timeout=TUI_TIMEOUT,
                       message="the answer in the CLI's own record")
            mark = terminal.mark()
            quit_as_a_user(terminal, quit_command)
            terminal.wait_for(after_quit, since=mark, timeout=TUI_TIMEOUT)
    finally:
        terminal.close()
    return found[0]


def recorded(home: Path, text: str) -> bool:
    """Whether the CLI's own record under `home` (Codex's rollout, Gemini's chat, both JSON lines) holds `text`.
    The CLI writes there meanwhile: a file or folder gone between listing and reading is simply not it."""
    try:
        paths = list(home.rglob("*.jsonl"))
    except OSError:
        return False
    for path in paths:
        try:
            if text in path.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def quit_as_a_user(terminal: Terminal, command: str | None) -> None:
    """Quit as a user does, by `command` (typed) or else by Ctrl-C. An idle Codex quits at the first Ctrl-C;
    Gemini's Ctrl-C only asks for a second press within 3 s, a window a loaded machine can let lapse between the
    question on screen and the key reaching Gemini, so Gemini is quit with its `/quit` command."""
    if command is None:
        terminal.write("\x03")
    else:
        terminal.type_line(command, timeout=TUI_TIMEOUT)
    terminal.wait_exit(TUI_TIMEOUT)


# -- Codex -------------------------------------------------------------------------------------------------------

#: Offline as well as pointed at the fake: without `analytics` Codex looks up ab.chatgpt.com, without `plugins`
#: github.com and chatgpt.com (docs/backends/codex.md).
CODEX_CONFIG = """\
model = "gpt-5-codex"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
wire_api = "responses"
env_key = "CODEOID_FAKE_OPENAI_KEY"
"""


def codex_expected(turn: Turn) -> list[tuple[Any, ...]]:
    """What one turn must look like as Responses API input items, written out independently of the translator:
    an MCP tool (`mcp__codeoid__recall`) becomes tool `recall` in namespace `mcp__codeoid`, as Codex calls it."""
    expected: list[tuple[Any, ...]] = [("user", turn.user)]
    for step in turn.steps:
        if isinstance(step, ToolCall):
            output = codex.ERROR_PREFIX + step.output if step.is_error else step.output
            mcp, server, tool = step.name.split("__") if step.name.startswith("mcp__") else ("", "", "")
            name, namespace = (tool, f"{mcp}__{server}") if mcp else (step.name, None)
            expected += [("call", step.call_id, name, namespace, step.input), ("output", step.call_id, output)]
        else:
            expected.append(("assistant", step))
    return expected


def codex_observed(item: dict[str, Any]) -> tuple[Any, ...]:
    kind = item.get("type")
    if kind == "function_call":
        return ("call", item["call_id"], item["name"], item.get("namespace"), json.loads(item["arguments"]))
    if kind == "function_call_output":
        return ("output", item["call_id"], item["output"])
    texts = [part.get("text") for part in item.get("content", [])]
    return (item.get("role"), *texts)


def assert_codex_history(request: RecordedRequest, new_prompt: str, turns: Sequence[Turn] = TURNS) -> None:
    """The forked turns, turn by turn, between Codex's instructions and the new prompt; codeoid's tools offered."""
    observed = [codex_observed(item) for item in input_items(request)]
    # Only Codex's own instructions come before the history; its skills and environment messages come after.
    start = observed.index(("user", turns[0].user))
    assert {item[0] for item in observed[:start]} == {"developer"}
    for turn in turns:
        expected = codex_expected(turn)
        assert observed[start: start + len(expected)] == expected, f"turn {turn.number}"
        start += len(expected)
    assert observed[-1] == ("user", new_prompt)
    namespaces = {tool.get("name"): tool for tool in request.body["tools"]}
    recall_tools = {tool["name"] for tool in namespaces["mcp__codeoid"]["tools"]}
    assert {"recall", "recall_file", "timeline", "get_episode"} <= recall_tools


@pytest.fixture
def codex_home(tmp_path: Path, fake_openai: FakeOpenAI) -> Path:
    """A CODEX_HOME whose config sends the model to the fake API, as a user's would send it to OpenAI."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(CODEX_CONFIG.format(base_url=fake_openai.base_url))
    return home


CODEX_ENV = {"CODEOID_FAKE_OPENAI_KEY": "sk-fake"}


def test_codex_first_request_carries_the_forked_turns_in_order(
    codex_bin: str, fake_openai: FakeOpenAI, codex_home: Path, tmp_path: Path, workspace: Path, mcp: McpServer
) -> None:
    fake_openai.add(ANSWER)

    launch = codex.prepare(TURNS, cwd=workspace, mcp=mcp, home=codex_home, prompt=NEW_PROMPT, binary=codex_bin)
    done = run(launch, tmp_path, CODEX_ENV)

    assert done.returncode == 0, done.stderr[-3000:]
    assert ANSWER in done.stdout
    assert_codex_history(fake_openai.model_requests[0], NEW_PROMPT)


def test_codex_fork_keeps_the_written_history_and_appends_the_new_turn(
    codex_bin: str, fake_openai: FakeOpenAI, codex_home: Path, tmp_path: Path, workspace: Path, mcp: McpServer
) -> None:
    fake_openai.add(ANSWER)

    launch = codex.prepare(TURNS, cwd=workspace, mcp=mcp, home=codex_home, prompt=NEW_PROMPT, binary=codex_bin)
    (rollout,) = launch.files
    written = rollout.read_text().splitlines()
    done = run(launch, tmp_path, CODEX_ENV)

    assert done.returncode == 0, done.stderr[-3000:]
    after = rollout.read_text().splitlines()
    assert after[: len(written)] == written, "codex rewrote the forked history instead of appending to it"
    appended = "\n".join(after[len(written):])
    assert NEW_PROMPT in appended and ANSWER in appended


def test_codex_fork_recalls_the_parent_sessions_memory_through_codeoid(
    codex_bin: str, fake_openai: FakeOpenAI, codex_home: Path, tmp_path: Path, workspace: Path, mcp: McpServer,
    parent_memory: str,
) -> None:
    fake_openai.add(CallTool("mcp__codeoid__recall", {"query": "database store SQLite"}), ANSWER)

    launch = codex.prepare(TURNS, cwd=workspace, mcp=mcp, home=codex_home, prompt=NEW_PROMPT, binary=codex_bin)
    done = run(launch, tmp_path, CODEX_ENV)

    assert done.returncode == 0, done.stderr[-3000:]
    assert ANSWER in done.stdout
    last = input_items(fake_openai.model_requests[1])[-1]
    assert last["type"] == "function_call_output" and last["call_id"] == "call_scripted_1"
    assert parent_memory in json.dumps(last["output"], ensure_ascii=False)


@pytest.mark.slow
def test_interactive_codex_shows_the_forked_conversation_and_sends_it_with_the_next_prompt(
    codex_bin: str, fake_openai: FakeOpenAI, codex_home: Path, tmp_path: Path, workspace: Path, mcp: McpServer
) -> None:
    fake_openai.add(ANSWER)

    launch = codex.prepare(TURNS, cwd=workspace, mcp=mcp, home=codex_home, binary=codex_bin)
    request = type_into_forked_session(launch.argv, launch_env(launch, tmp_path, CODEX_ENV), str(launch.cwd),
                                       fake_openai, ready="Ask Codex to do anything")
    assert_codex_history(request, TYPED_PROMPT)


# -- Gemini ------------------------------------------------------------------------------------------------------

GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    # Without it every run sends usage statistics to play.googleapis.com.
    "privacy": {"usageStatisticsEnabled": False},
    # A fixed model: with the default ("auto") Gemini first asks a router model which one to use.
    "model": {"name": "gemini-2.5-pro"},
    # The interactive CLI asks the npm registry for a newer version, and may install it, unless told not to.
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def gemini_expected(turn: Turn) -> list[tuple[Any, ...]]:
    """What one turn must look like as Gemini `contents`, written out independently of the translator: calls
    that follow each other share a model content, their results share the user content after it, and an MCP
    tool (`mcp__codeoid__recall`) is named as Gemini names it (`mcp_codeoid_recall`)."""
    expected: list[tuple[Any, ...]] = [("user", ("text", turn.user))]
    model: list[tuple[Any, ...]] = []
    results: list[tuple[Any, ...]] = []
    for step in turn.steps:
        if not isinstance(step, ToolCall) and results:
            expected += [("model", *model), ("user", *results)]
            model, results = [], []
        if isinstance(step, ToolCall):
            name = "mcp_" + step.name.removeprefix("mcp__").replace("__", "_")
            name = name if step.name.startswith("mcp__") else step.name
            model.append(("call", step.call_id, name, step.input))
            response = {"error": step.output} if step.is_error else {"output": step.output}
            results.append(("result", step.call_id, name, response))
        else:
            model.append(("text", step))
    expected.append(("model", *model))
    if results:
        expected.append(("user", *results))
    return expected


def gemini_observed(content: dict[str, Any]) -> tuple[Any, ...]:
    parts: list[tuple[Any, ...]] = []
    for part in content.get("parts", []):
        if "functionCall" in part:
            call = part["functionCall"]
            parts.append(("call", call.get("id"), call["name"], call.get("args")))
        elif "functionResponse" in part:
            response = part["functionResponse"]
            parts.append(("result", response.get("id"), response["name"], response["response"]))
        elif not part.get("text", "").startswith("<session_context>"):
            # Gemini folds its own session context into the first user content, ahead of the prompt.
            parts.append(("text", part.get("text")))
    return (content.get("role"), *parts)


def assert_gemini_history(request: RecordedRequest, new_prompt: str, turns: Sequence[Turn] = TURNS) -> None:
    """The forked turns, turn by turn, then the new prompt; codeoid's tools offered."""
    observed = [gemini_observed(content) for content in contents(request)]
    position = 0
    for turn in turns:
        expected = gemini_expected(turn)
        assert observed[position: position + len(expected)] == expected, f"turn {turn.number}"
        position += len(expected)
    assert observed[position:] == [("user", ("text", new_prompt))]
    declared = {d["name"] for tool in request.body["tools"] for d in tool.get("functionDeclarations", [])}
    assert {"mcp_codeoid_recall", "mcp_codeoid_recall_file", "mcp_codeoid_timeline"} <= declared


@pytest.fixture
def gemini_env(tmp_path: Path, fake_gemini: FakeGemini) -> dict[str, str]:
    """User settings and variables that send the model to the fake API, as a user's would send it to Google."""
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    return {
        "GEMINI_API_KEY": "fake-key",
        "GOOGLE_GEMINI_BASE_URL": fake_gemini.base_url,
        # Gemini refuses to run headless in an untrusted folder, and starts no stdio MCP server in one.
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }


def test_gemini_first_request_carries_the_forked_turns_in_order(
    gemini_bin: str, fake_gemini: FakeGemini, gemini_env: dict[str, str], tmp_path: Path, workspace: Path,
    mcp: McpServer,
) -> None:
    fake_gemini.add(ANSWER)

    launch = gemini.prepare(TURNS, cwd=workspace, mcp=mcp, home=tmp_path, prompt=NEW_PROMPT, binary=gemini_bin)
    done = run(launch, tmp_path, gemini_env)

    assert done.returncode == 0, done.stderr[-3000:]
    assert ANSWER in done.stdout
    assert len(fake_gemini.requests) == 1, [r.path for r in fake_gemini.requests]
    assert_gemini_history(fake_gemini.model_requests[0], NEW_PROMPT)
    kept = json.loads((tmp_path / ".gemini" / "settings.json").read_text())
    assert kept["privacy"] == GEMINI_SETTINGS["privacy"], "registering the MCP server lost the user's settings"


def test_gemini_fork_recalls_the_parent_sessions_memory_through_codeoid(
    gemini_bin: str, fake_gemini: FakeGemini, gemini_env: dict[str, str], tmp_path: Path, workspace: Path,
    mcp: McpServer, parent_memory: str,
) -> None:
    fake_gemini.add(CallTool("mcp_codeoid_recall", {"query": "database store SQLite"}), ANSWER)

    launch = gemini.prepare(TURNS, cwd=workspace, mcp=mcp, home=tmp_path, prompt=NEW_PROMPT, binary=gemini_bin)
    done = run(launch, tmp_path, gemini_env)

    assert done.returncode == 0, done.stderr[-3000:]
    assert ANSWER in done.stdout
    (result,) = contents(fake_gemini.model_requests[1])[-1]["parts"]
    assert result["functionResponse"]["id"] == "call_scripted_1"
    assert parent_memory in result["functionResponse"]["response"]["output"]


@pytest.mark.slow
def test_interactive_gemini_shows_the_forked_conversation_and_sends_it_with_the_next_prompt(
    gemini_bin: str, fake_gemini: FakeGemini, gemini_env: dict[str, str], tmp_path: Path, workspace: Path,
    mcp: McpServer,
) -> None:
    fake_gemini.add(ANSWER)

    launch = gemini.prepare(TURNS, cwd=workspace, mcp=mcp, home=tmp_path, binary=gemini_bin)
    request = type_into_forked_session(launch.argv, launch_env(launch, tmp_path, gemini_env), str(launch.cwd),
                                       fake_gemini, ready="Type your message", ready_after_history=True)
    assert_gemini_history(request, TYPED_PROMPT)


# -- `codeoid fork` itself ---------------------------------------------------------------------------------------

CODEOID = str(Path(sys.executable).parent / "codeoid")


def parent_session(project: Path) -> list[Turn]:
    """The parent, stored through the real hooks as tests/test_fork.py stores it, as the turns a fork carries."""
    two_window_session(project)
    connection = store_db.connect()
    try:
        return session_turns(connection, "durable-1")
    finally:
        connection.close()


def fork_command(project: Path, backend: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CODEOID, "fork", "durable-1", "--backend", backend, "--name", f"on-{backend}", f"--print={NEW_PROMPT}"],
        cwd=project, env={**os.environ, "CODEOID_VECTOR": "off", **env}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=RUN_TIMEOUT,
    )


def noticed(turns: list[Turn], first_prompt: str, recall: str) -> list[Turn]:
    """The parent's turns as the fork must send them, once the first prompt is checked to be the fork notice
    (naming the memory tools as this backend names them) followed by the parent's first prompt."""
    notice, _, prompt = first_prompt.rpartition("\n\n")
    assert prompt == turns[0].user
    assert notice.startswith("<fork_context>\nThis session is a fork of codeoid session durable-1 at turn 2")
    assert notice.endswith("</fork_context>") and f"- {recall}(query)" in notice
    assert "mcp__codeoid__" not in notice, "Claude Code's tool names, which this backend does not use"
    return [replace(turns[0], user=first_prompt), *turns[1:]]


def fork_episodes(name: str) -> list[tuple[Any, ...]]:
    """The episodes stored in the fork's own session, oldest first: (turn, kind, tool name, text, is_error)."""
    connection = store_db.connect()
    try:
        return [tuple(row) for row in connection.execute(
            "SELECT e.turn, e.kind, e.tool_name, e.text, e.is_error FROM episodes e JOIN sessions s"
            " ON s.id = e.session_id WHERE s.name = ? ORDER BY e.id", (name,))]
    finally:
        connection.close()


def assert_fork_turn_stored(name: str, prompt: str, recall: bool) -> None:
    """The fork's new turn, read back from the CLI's record, is turn 3 of the fork (it forked at turn 2): the
    prompt, codeoid's recall with the parent's answer in its result, the answer."""
    stored = fork_episodes(name)
    assert [row[:3] for row in stored] == [
        (3, "user", None), *([(3, "tool", "mcp__codeoid__recall")] if recall else []), (3, "assistant", None)]
    assert stored[0][3] == prompt and stored[-1][3] == ANSWER
    if recall:
        assert "42 words." in stored[1][3] and stored[1][4] == 0


def lineage(name: str) -> tuple[Any, ...]:
    connection = store_db.connect()
    try:
        return tuple(connection.execute("SELECT forked_from, at_turn FROM sessions WHERE name = ?", (name,)).fetchone())
    finally:
        connection.close()


def test_codeoid_fork_onto_codex_sends_the_parents_turns_and_recalls_its_memory(
    codex_bin: str, fake_openai: FakeOpenAI, codex_home: Path, tmp_path: Path, project: Path, codeoid_home: Path
) -> None:
    turns = parent_session(project)
    fake_openai.add(CallTool("mcp__codeoid__recall", {"query": "words"}), ANSWER)

    done = fork_command(project, "codex", {"HOME": str(tmp_path), "CODEX_HOME": str(codex_home),
                                           "CODEOID_CODEX_BIN": codex_bin, **CODEX_ENV})

    assert done.returncode == 0, done.stderr[-3000:]
    assert ANSWER in done.stdout and "codeoid has no hooks in codex" in done.stderr
    assert "Stored 3 new episodes from codex's record" in done.stderr
    assert_fork_turn_stored("on-codex", NEW_PROMPT, recall=True)
    first = fake_openai.model_requests[0]
    prompt = next(item for item in input_items(first) if item.get("role") == "user")["content"][0]["text"]
    assert_codex_history(first, NEW_PROMPT, noticed(turns, prompt, "mcp__codeoid.recall"))
    recalled = input_items(fake_openai.model_requests[1])[-1]
    assert "42 words." in json.dumps(recalled["output"]), "codeoid's MCP server read another store"
    assert lineage("on-codex") == ("durable-1", 2)


def test_a_shell_command_that_fails_in_a_codex_fork_is_stored_as_failed(
    codex_bin: str, fake_openai: FakeOpenAI, codex_home: Path, tmp_path: Path, project: Path, codeoid_home: Path
) -> None:
    """Codex's rollout has no exit code of its own for a command; its report, before `Output:`, does."""
    parent_session(project)
    printing = "echo 'Process exited with code 9'; echo Output:"  # the command's own output says it too
    fake_openai.add(CallTool("exec_command", {"cmd": "echo out; echo err >&2; exit 3"}, "call_fails"),
                    CallTool("exec_command", {"cmd": printing}, "call_passes"), ANSWER)

    done = fork_command(project, "codex", {"HOME": str(tmp_path), "CODEX_HOME": str(codex_home),
                                           "CODEOID_CODEX_BIN": codex_bin, **CODEX_ENV})

    assert done.returncode == 0, done.stderr[-3000:]
    tools = [row for row in fork_episodes("on-codex") if row[1] == "tool"]
    assert [(name, is_error) for _, _, name, _, is_error in tools] == [("exec_command", 1), ("exec_command", 0)]
    # Codex merges the command's stdout and stderr as they arrive: both lines are promised, their order is not.
    report, _, output = tools[0][3].partition("Output:\n")
    assert "Process exited with code 3" in report and sorted(output.splitlines()) == ["err", "out"]


def test_codeoid_fork_onto_gemini_sends_the_parents_turns_and_recalls_its_memory(
    gemini_bin: str, fake_gemini: FakeGemini, gemini_env: dict[str, str], tmp_path: Path, project: Path,
    codeoid_home: Path,
) -> None:
    turns = parent_session(project)
    fake_gemini.add(CallTool("mcp_codeoid_recall", {"query": "words"}), ANSWER)

    done = fork_command(project, "gemini", {"HOME": str(tmp_path), "CODEOID_GEMINI_BIN": gemini_bin, **gemini_env})

    assert done.returncode == 0, done.stderr[-3000:]
    assert ANSWER in done.stdout and "codeoid has no hooks in gemini" in done.stderr
    assert "Stored 3 new episodes from gemini's record" in done.stderr
    assert_fork_turn_stored("on-gemini", NEW_PROMPT, recall=True)
    first = fake_gemini.model_requests[0]
    texts = [part["text"] for part in contents(first)[0]["parts"] if "text" in part]
    prompt = next(text for text in texts if not text.startswith("<session_context>"))
    assert_gemini_history(first, NEW_PROMPT, noticed(turns, prompt, "mcp_codeoid_recall"))
    (result,) = contents(fake_gemini.model_requests[1])[-1]["parts"]
    assert "42 words." in result["functionResponse"]["response"]["output"], "codeoid's MCP server read another store"
    assert lineage("on-gemini") == ("durable-1", 2)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["codex", "gemini"])
def test_codeoid_fork_starts_the_cli_itself_on_the_forked_conversation_by_default(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, project: Path, codeoid_home: Path
) -> None:
    turns = parent_session(project)
    if backend == "codex":
        api: ScriptedAPI = request.getfixturevalue("fake_openai")
        home: Path = request.getfixturevalue("codex_home")
        # The user has worked in this repository with Codex before; else its TUI first asks to trust the folder.
        with (home / "config.toml").open("a") as config:
            config.write(f'\n[projects."{project}"]\ntrust_level = "trusted"\n')
        env = {"CODEX_HOME": str(home),
               "CODEOID_CODEX_BIN": request.getfixturevalue("codex_bin"), **CODEX_ENV}
        ready = "Ask Codex to do anything"
    else:
        api = request.getfixturevalue("fake_gemini")
        env = {"CODEOID_GEMINI_BIN": request.getfixturevalue("gemini_bin"), **request.getfixturevalue("gemini_env")}
        ready = "Type your message"
    api.add(ANSWER)
    argv = [CODEOID, "fork", "durable-1", "--backend", backend, "--name", f"tui-{backend}"]
    sent = type_into_forked_session(argv, {**os.environ, "HOME": str(tmp_path), "TERM": "xterm-256color",
                                           "CODEOID_VECTOR": "off", **env}, str(project), api, ready, turns,
                                    after_quit=f"Stored 2 new episodes from {backend}'s record",
                                    idle="Worked for" if backend == "codex" else None,
                                    ready_after_history=backend == "gemini",
                                    quit_command="/quit" if backend == "gemini" else None)
    assert_fork_turn_stored(f"tui-{backend}", TYPED_PROMPT, recall=False)
    if backend == "codex":
        shown = next(item for item in input_items(sent) if item.get("role") == "user")["content"][0]["text"]
        assert_codex_history(sent, TYPED_PROMPT, noticed(turns, shown, "mcp__codeoid.recall"))
    else:
        texts = [part["text"] for part in contents(sent)[0]["parts"] if "text" in part]
        shown = next(text for text in texts if not text.startswith("<session_context>"))
        assert_gemini_history(sent, TYPED_PROMPT, noticed(turns, shown, "mcp_codeoid_recall"))
