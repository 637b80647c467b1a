"""One memory for every agent: sessions started directly in the real Codex and Gemini CLIs, with codeoid installed
into them by `codeoid install --agent ...`, are captured live through their own hooks, against the scripted fake
APIs on 127.0.0.1.

"Live" is checked at the moment it matters: the fake API looks into the store when the CLI asks for the model's
final answer, which the CLI does only once the tool call is over and its hooks have run, so a tool call's whole
result is shown to be stored before the CLI exits (no sleeps: the CLI's own next request is the clock). A Codex
shell command with a compression rule runs through `codeoid-compress` (the model sees the compressed text, the
store keeps the raw bytes); recall through the real `codeoid-mcp` over stdio, as a Claude Code session in the
same workspace would call it, returns the Codex turn's result and names its agent. With the real `codex`, install
trusts codeoid's hooks (no `--dangerously-bypass-hook-trust` anywhere here) and uninstall restores the config.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from codeoid.setup import agents
from codeoid.store import db as store_db

from .fake_gemini import FakeGemini
from .fake_openai import FakeOpenAI, input_items
from .rig import find_cli
from .scripted_api import CallTool, ScriptItem
from .test_fork_backends_e2e import CODEX_CONFIG, CODEX_ENV, GEMINI_SETTINGS

pytestmark = pytest.mark.e2e

RUN_TIMEOUT = 180
BIN = Path(sys.executable).parent
ANSWER = "scripted final answer"
PROMPT = "Count to three thousand, then read the ledger."
#: A line no rule compresses: what recall must find, verbatim, in the Codex turn's result.
LEDGER = "quokka ledger balance 42"
SEQ_RULE = '[[rule]]\nname = "e2e-seq"\nmatch = { program = ["seq"] }\nhead = 5\ntail = 3\n'


class Gate:
    """What the store held when the CLI asked for the model's final answer (after its tool calls and hooks)."""

    def __init__(self) -> None:
        self.seen: list[list[dict[str, Any]]] = []

    def look(self) -> None:
        connection = store_db.connect()
        try:
            cursor = connection.execute("SELECT * FROM episodes ORDER BY id")
            names = [column[0] for column in cursor.description]
            self.seen.append([dict(zip(names, row, strict=True)) for row in cursor.fetchall()])
        finally:
            connection.close()


def gated(api_type: type[FakeOpenAI] | type[FakeGemini], gate: Gate) -> Any:
    class GatedAPI(api_type):  # type: ignore[valid-type,misc]
        def answer(self, item: ScriptItem) -> tuple[int, str, bytes]:
            if item == ANSWER:
                gate.look()
            return super().answer(item)

    return GatedAPI()


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".codeoid" / "rules").mkdir(parents=True)
    (path / ".codeoid" / "rules" / "e2e.toml").write_text(SEQ_RULE)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def codex_bin() -> str:
    found = find_cli("codex", "CODEOID_CODEX_BIN")
    if found is None:
        pytest.skip("no codex binary: set CODEOID_CODEX_BIN, npm install @openai/codex into .tools/, or put it on PATH")
    return found


@pytest.fixture
def gemini_bin() -> str:
    found = find_cli("gemini", "CODEOID_GEMINI_BIN")
    if found is None:
        pytest.skip("no gemini binary: set CODEOID_GEMINI_BIN or npm install @google/gemini-cli into .tools/")
    return found


def codeoid(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(BIN / "codeoid"), *args], env=env, capture_output=True, text=True, cwd=cwd,
                          timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def recall(workspace: Path, codeoid_home: Path, query: str) -> str:
    """codeoid's recall as a Claude Code session in `workspace` calls it: the real server over stdio."""
    async def session() -> str:
        params = StdioServerParameters(command=str(BIN / "codeoid-mcp"), cwd=str(workspace), env={
            "CODEOID_HOME": str(codeoid_home), "CODEOID_VECTOR": "off", "CLAUDE_PROJECT_DIR": str(workspace)})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            answer = await client.call_tool("recall", {"query": query})
            return "\n".join(getattr(block, "text", "") for block in answer.content)

    return anyio.run(session)


@pytest.fixture
def codex_api(gate: Gate) -> Iterator[FakeOpenAI]:
    api = gated(FakeOpenAI, gate)
    with api:
        yield api


@pytest.fixture
def codex_env(home: Path, codex_api: FakeOpenAI, codeoid_home: Path, codex_bin: str) -> dict[str, str]:
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CODEX_CONFIG.format(base_url=codex_api.base_url))
    return {**os.environ, "HOME": str(home), "CODEX_HOME": str(codex_home), "CODEOID_HOME": str(codeoid_home),
            "CODEOID_CODEX_BIN": codex_bin, "CODEOID_VECTOR": "off", "SHELL": "/bin/bash", **CODEX_ENV}


def test_a_session_started_in_codex_is_captured_live_compressed_and_recalled_from_claude_code(
    codex_bin: str, codex_api: FakeOpenAI, codex_env: dict[str, str], workspace: Path, codeoid_home: Path,
    gate: Gate,
) -> None:
    installed = codeoid("install", "--agent", "codex", env=codex_env)
    assert "Trusted codeoid's 6 hooks in Codex" in installed.stdout
    codex_api.add(CallTool("exec_command", {"cmd": "seq 1 3000"}, "call_seq"),
                  CallTool("exec_command", {"cmd": f"echo '{LEDGER}'"}, "call_ledger"), ANSWER)

    # Codex asks nothing under exec (approval `never`), the one mode codeoid rewrites in; full access lets
    # codeoid-compress archive the raw bytes in the store, outside the workspace.
    done = subprocess.run([codex_bin, "exec", "--skip-git-repo-check", "-s", "danger-full-access", PROMPT],
                          cwd=workspace, env=codex_env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL)

    assert done.returncode == 0, done.stderr[-3000:]
    assert ANSWER in done.stdout
    (before_answer,) = gate.seen
    tools = {row["tool_use_id"]: row for row in before_answer if row["kind"] == "tool"}
    assert set(tools) == {"call_seq", "call_ledger"}, "tool calls missing from the store before the CLI's last turn"
    assert {row["agent"] for row in before_answer} == {"codex"}
    assert [row["text"] for row in before_answer if row["kind"] == "user"] == [PROMPT]
    assert LEDGER in tools["call_ledger"]["text"] and tools["call_ledger"]["raw_output_id"] is None
    compressed = tools["call_seq"]
    assert compressed["original_command"] == "seq 1 3000" and compressed["raw_output_id"] == "raw-call_seq"
    assert "[codeoid]" in compressed["text"] and compressed["command"] == "seq 1 3000" != compressed["wrapper"]
    sent = json.dumps(input_items(codex_api.model_requests[-1]))
    assert "[codeoid] rule e2e-seq" in sent, "the model did not see the compressed output"

    raw = codeoid("show", "raw-call_seq", "--raw", env=codex_env).stdout
    assert raw == "".join(f"{n}\n" for n in range(1, 3001)), "the raw bytes were not kept"
    stored = episodes()
    answers = [row for row in stored if row["kind"] == "assistant"]
    assert [(row["text"], row["agent"], row["turn"]) for row in answers] == [(ANSWER, "codex", 1)], \
        "the final text, read from the rollout and given by Stop, must be stored once"

    found = recall(workspace, codeoid_home, "quokka ledger balance")
    assert LEDGER in found and "agent codex" in found, found
    (header, line) = codeoid("sessions", env=codex_env, cwd=workspace).stdout.splitlines()
    assert header.split()[:2] == ["session", "agent"] and line.split()[1] == "codex"


class TextThenCall(FakeOpenAI):
    """Answers the first request with assistant text and a tool call in one response, as models do; no hook
    carries that text, so only Codex's rollout has it."""

    def answer(self, item: ScriptItem) -> tuple[int, str, bytes]:
        if not isinstance(item, CallTool):
            return super().answer(item)
        call = {"type": "function_call", "name": item.name, "arguments": json.dumps(item.arguments),
                "call_id": item.call_id}
        text = {"type": "message", "role": "assistant", "id": "msg_before",
                "content": [{"type": "output_text", "text": "Let me read the ledger first."}]}
        events = [{"type": "response.created", "response": {"id": "resp_fake"}},
                  *({"type": "response.output_item.done", "item": output} for output in (text, call)),
                  {"type": "response.completed", "response": {"id": "resp_fake", "usage": {
                      "input_tokens": 100, "output_tokens": 10, "total_tokens": 110}}}]
        return 200, "text/event-stream", "".join(
            f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def test_codex_text_between_tool_calls_is_stored_from_its_rollout_once(
    codex_bin: str, codex_env: dict[str, str], workspace: Path, codeoid_home: Path
) -> None:
    with TextThenCall() as api:
        (Path(codex_env["CODEX_HOME"]) / "config.toml").write_text(CODEX_CONFIG.format(base_url=api.base_url))
        codeoid("install", "--agent", "codex", env=codex_env)
        api.add(CallTool("exec_command", {"cmd": f"echo '{LEDGER}'"}, "call_ledger"), ANSWER)
        done = subprocess.run([codex_bin, "exec", "--skip-git-repo-check", PROMPT], cwd=workspace, env=codex_env,
                              capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)

    assert done.returncode == 0, done.stderr[-3000:]
    stored = sorted(episodes(), key=lambda row: (row["created_at"], row["id"]))
    assert [(row["kind"], row["text"] if row["kind"] != "tool" else row["tool_use_id"]) for row in stored] == [
        ("user", PROMPT), ("assistant", "Let me read the ledger first."), ("tool", "call_ledger"),
        ("assistant", ANSWER)]


def test_codex_install_trusts_the_hooks_codex_lists_and_uninstall_restores_the_config(
    codex_bin: str, codex_env: dict[str, str], home: Path, codeoid_home: Path
) -> None:
    codex_home = Path(codex_env["CODEX_HOME"])
    before = (codex_home / "config.toml").read_bytes()

    codeoid("install", "--agent", "codex", env=codex_env)
    listed = agents._app_server_hooks(codex_bin, home, codex_home)
    codeoid("uninstall", "--agent", "codex", env=codex_env)

    ours = [hook for hook in listed if "--agent=codex" in str(hook.get("command"))]
    assert len(ours) == len(agents.CODEX_HOOKS) and {hook["trustStatus"] for hook in ours} == {"trusted"}
    assert (codex_home / "config.toml").read_bytes() == before
    assert not (codex_home / "hooks.json").exists()


@pytest.fixture
def gemini_api(gate: Gate) -> Iterator[FakeGemini]:
    api = gated(FakeGemini, gate)
    with api:
        yield api


def test_a_session_started_in_gemini_is_captured_live_and_recalled(
    gemini_bin: str, gemini_api: FakeGemini, home: Path, workspace: Path, codeoid_home: Path, gate: Gate
) -> None:
    (home / ".gemini").mkdir()
    settings = home / ".gemini" / "settings.json"
    settings.write_text(json.dumps(GEMINI_SETTINGS))
    before = settings.read_bytes()
    env = {**os.environ, "HOME": str(home), "CODEOID_HOME": str(codeoid_home), "CODEOID_VECTOR": "off",
           "GEMINI_API_KEY": "fake-key", "GOOGLE_GEMINI_BASE_URL": gemini_api.base_url,
           "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    codeoid("install", "--agent", "gemini", env=env)
    gemini_api.add(CallTool("run_shell_command", {"command": f"echo '{LEDGER}'"}, "call_ledger"), ANSWER)

    # Headless Gemini runs a shell command only with every tool approved.
    done = subprocess.run([gemini_bin, "--approval-mode", "yolo", "-p", PROMPT], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)

    assert done.returncode == 0, done.stderr[-3000:]
    assert ANSWER in done.stdout
    (before_answer,) = gate.seen
    assert [(row["kind"], row["agent"]) for row in before_answer] == [("user", "gemini"), ("tool", "gemini")]
    assert before_answer[0]["text"] == PROMPT
    tool = before_answer[1]
    assert tool["tool_name"] == "run_shell_command" and LEDGER in tool["text"] and not tool["is_error"]
    stored = episodes()
    assert (stored[-1]["kind"], stored[-1]["text"]) == ("assistant", ANSWER)
    found = recall(workspace, codeoid_home, "quokka ledger balance")
    assert LEDGER in found and "agent gemini" in found, found

    codeoid("uninstall", "--agent", "gemini", env=env)
    assert settings.read_bytes() == before


def episodes() -> list[dict[str, Any]]:
    connection = store_db.connect()
    try:
        cursor = connection.execute("SELECT * FROM episodes ORDER BY id")
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        connection.close()
