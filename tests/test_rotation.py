"""Rotation's pieces on their own: the occupancy sensor, the thresholds, the seed, claude's arguments, the hooks'
side of the handoff, the status line, the store's record, and ending a process tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import run_hook

from codeoid.memory_tools import PLUGIN_TOOL_PREFIX, SETTINGS_TOOL_PREFIX
from codeoid.rotation import claude_args, handoff, notice, rundir, statusline
from codeoid.rotation.command import ROTATE_COMMAND
from codeoid.rotation.config import ConfigError, RotationConfig, load_config
from codeoid.rotation.occupancy import TranscriptSensor, fallback_window
from codeoid.rotation.process_tree import SPARE_ENV, end_process_tree
from codeoid.rotation.seed import (
    MAX_LAST_TURN_CHARS,
    LastTurn,
    SeedFacts,
    build_seed,
    seeded_prompt,
    split_seeded,
)
from codeoid.store import rotations
from codeoid.workspace import identify

REPO = Path(__file__).resolve().parent.parent


# -- the occupancy sensor --------------------------------------------------------------------------------------

def _assistant(message_id: str, tokens: int, *, sidechain: bool = False, text: str = "x",
               model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    usage = {"input_tokens": tokens - 300, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 200,
             "output_tokens": 999_999}
    return {"type": "assistant", "isSidechain": sidechain, "message": {
        "id": message_id, "model": model, "content": [{"type": "text", "text": text}], "usage": usage}}


def _prompt(prompt_id: str, text: str) -> dict[str, Any]:
    return {"type": "user", "isSidechain": False, "promptId": prompt_id, "message": {"role": "user", "content": text}}


def _write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("a") as file:
        for record in records:
            file.write(json.dumps(record) + "\n")


def test_occupancy_is_the_input_side_of_the_last_main_chain_message(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write_lines(path, [_prompt("p1", "hi"), _assistant("m1", 1_000), _assistant("m1", 1_000),
                        _prompt("p2", "more"), _assistant("m2", 50_000)])
    sensor = TranscriptSensor(str(path))

    assert sensor.poll()
    assert sensor.reading.tokens == 50_000  # output tokens are not in the window
    assert sensor.reading.prompts == 2 and sensor.reading.last_prompt == "more"
    assert sensor.reading.model == "claude-sonnet-4-5"


def test_a_late_block_of_an_earlier_message_does_not_replace_the_newer_one(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write_lines(path, [_assistant("m1", 10_000), _assistant("m2", 20_000), _assistant("m1", 10_000)])
    sensor = TranscriptSensor(str(path))
    sensor.poll()
    assert sensor.reading.tokens == 20_000


def test_subagent_and_error_lines_never_count(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    error = _assistant("m3", 190_000)
    error["isApiErrorMessage"] = True
    synthetic = _assistant("m4", 190_000, model="<synthetic>")
    _write_lines(path, [_assistant("m1", 5_000), _assistant("m2", 199_000, sidechain=True), error, synthetic,
                        {**_assistant("m5", 199_000), "agentId": "a1"}])
    sensor = TranscriptSensor(str(path))
    sensor.poll()
    assert sensor.reading.tokens == 5_000


def test_only_what_follows_the_last_compact_boundary_counts(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    boundary = {"type": "system", "subtype": "compact_boundary", "compactMetadata": {"postTokens": 2_744}}
    _write_lines(path, [_assistant("m1", 150_000), boundary])
    sensor = TranscriptSensor(str(path))
    sensor.poll()
    assert sensor.reading.tokens == 2_744
    _write_lines(path, [_assistant("m1", 150_000), _assistant("m2", 9_000)])
    sensor.poll()
    assert sensor.reading.tokens == 9_000


def test_the_sensor_reads_appended_lines_only_once_they_are_complete(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write_lines(path, [_assistant("m1", 1_000)])
    sensor = TranscriptSensor(str(path))
    sensor.poll()
    with path.open("a") as file:
        file.write(json.dumps(_assistant("m2", 7_000))[:40])
    assert not sensor.poll()
    with path.open("a") as file:
        file.write(json.dumps(_assistant("m2", 7_000))[40:] + "\n")
    assert sensor.poll() and sensor.reading.tokens == 7_000


def test_a_seeded_first_message_counts_as_one_prompt_whose_text_is_the_users(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write_lines(path, [_prompt("p1", seeded_prompt(_seed(), "the new prompt"))])
    sensor = TranscriptSensor(str(path))
    sensor.poll()
    assert sensor.reading.prompts == 1 and sensor.reading.last_prompt == "the new prompt"


NOTIFICATION = ("<task-notification>\n<task-id>a91d</task-id>\n<status>completed</status>\n"
                "<result>the survey found 3 files</result>\n</task-notification>")


def test_a_background_agents_notification_is_no_prompt_of_the_user(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    told = {**_prompt("p2", NOTIFICATION), "origin": {"kind": "task-notification"}, "promptSource": "system"}
    _write_lines(path, [_prompt("p1", "survey the repo"), _assistant("m1", 1_000), told, _assistant("m2", 2_000),
                        _prompt("p3", NOTIFICATION.replace("a91d", "b22e"))])  # an older format, text alone
    sensor = TranscriptSensor(str(path))
    sensor.poll()
    assert (sensor.reading.prompts, sensor.reading.last_prompt, sensor.reading.tokens) == (1, "survey the repo", 2_000)


def test_a_turn_is_open_until_its_stop_hooks_have_run(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write_lines(path, [_prompt("p1", "go"), _assistant("m1", 1_000)])
    sensor = TranscriptSensor(str(path))
    sensor.poll()
    assert sensor.reading.turn_open
    _write_lines(path, [{"type": "system", "subtype": "stop_hook_summary", "hookCount": 1}])
    sensor.poll()
    assert not sensor.reading.turn_open


def test_the_window_table_is_only_a_fallback() -> None:
    assert fallback_window("claude-sonnet-4-5") == 200_000
    assert fallback_window("claude-opus-5-5") == 1_000_000
    assert fallback_window("claude-sonnet-4-5[1m]") == 1_000_000
    assert fallback_window("some-future-model") == 200_000
    assert fallback_window(None) == 200_000


# -- thresholds ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("tokens", "prompts", "auto", "expected"), [
    (179_999, 6, True, None),
    (180_000, 6, True, "soft"),
    (180_000, 6, False, None),
    (194_000, 6, False, "hard"),
    (199_000, 4, True, None),  # the guard holds both thresholds back
    (199_000, 5, False, "hard"),
])
def test_rotation_is_due_by_threshold_and_guard(tokens: int, prompts: int, auto: bool, expected: str | None) -> None:
    assert RotationConfig(auto_rotate=auto).due(tokens, 200_000, prompts) == expected


def test_a_1m_window_is_nowhere_near_due_at_180k() -> None:
    assert RotationConfig(auto_rotate=True).due(180_000, 1_000_000, 50) is None


def test_config_comes_from_the_file_and_the_environment_wins(tmp_path: Path) -> None:
    config_file = tmp_path / "config.toml"
    config_file.write_text("[rotation]\nsoft = 85\nhard = 0.95\nmin_turns = 3\nauto_rotate = true\n")
    config = load_config({}, str(config_file))
    assert (config.soft, config.hard, config.min_turns, config.auto_rotate) == (0.85, 0.95, 3, True)
    config = load_config({"CODEOID_AUTO_ROTATE": "0", "CODEOID_ROTATE_MIN_TURNS": "7"}, str(config_file))
    assert (config.auto_rotate, config.min_turns) == (False, 7)
    assert load_config({}, str(tmp_path / "absent.toml")) == RotationConfig()


def test_a_soft_threshold_above_the_hard_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="must not be above"):
        load_config({"CODEOID_ROTATE_SOFT": "0.99"}, "/nonexistent")


# -- the seed --------------------------------------------------------------------------------------------------

def _seed(prefix: str | None = SETTINGS_TOOL_PREFIX, last: LastTurn | None = None) -> str:
    return build_seed(SeedFacts(workspace="/work/project", session_id="abc123", session_name="parser refactor",
                                rotation=2, tool_prefix=prefix, last_turn=last or LastTurn("fix the flaky test", 41)))


def test_the_seed_names_workspace_session_rotation_tools_and_the_last_turn() -> None:
    seed = _seed()
    assert seed.startswith("<rotation_context>\n") and seed.endswith("\n</rotation_context>")
    assert "workspace: /work/project" in seed
    assert "session: parser refactor (abc123) · rotation 2" in seed
    for tool in ("recall", "recall_file", "timeline", "get_episode"):
        assert f"- mcp__codeoid__{tool}(" in seed
    assert "<last_user_turn>\nfix the flaky test\n</last_user_turn>" in seed
    assert "not as a new request" in seed
    assert _seed() == seed  # the same state gives the same bytes


def test_the_plugin_route_gets_the_plugin_tool_names() -> None:
    seed = _seed(PLUGIN_TOOL_PREFIX)
    assert "- mcp__plugin_codeoid_codeoid__recall(query)" in seed and "mcp__codeoid__" not in seed


def test_without_memory_the_seed_is_a_generic_continuation() -> None:
    seed = _seed(None)
    assert "not available" in seed and "recall" not in seed
    assert "<last_user_turn>\nfix the flaky test\n</last_user_turn>" in seed


def test_a_long_last_turn_is_cut_at_2000_characters_with_a_pointer_to_the_whole() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(5_000))
    seed = _seed(last=LastTurn(text, 77))
    quoted = seed.split("<last_user_turn>\n")[1].split("\n</last_user_turn>")[0]
    assert quoted.startswith(text[:MAX_LAST_TURN_CHARS])
    assert text[:MAX_LAST_TURN_CHARS + 1] not in quoted
    assert "3000 more characters; the whole turn is episode 77 (get_episode)" in quoted


def test_a_seeded_prompt_splits_back_into_seed_and_the_users_prompt() -> None:
    seed = _seed()
    assert split_seeded(seeded_prompt(seed, "now add tests\n\nplease")) == (seed, "now add tests\n\nplease")
    assert split_seeded("an ordinary prompt") == (None, "an ordinary prompt")
    assert split_seeded("<rotation_context> but never closed") == (None, "<rotation_context> but never closed")


# -- claude's arguments ----------------------------------------------------------------------------------------

def test_options_values_and_the_prompt_are_told_apart() -> None:
    parsed = claude_args.parse(["--model", "sonnet", "--add-dir", "a", "b", "-r", "--verbose", "fix it"])
    assert parsed.options == [["--model", "sonnet"], ["--add-dir", "a", "b"], ["-r"], ["--verbose"]]
    assert parsed.prompt == ["fix it"]
    assert claude_args.parse(["--resume", "abc", "go"]).prompt == ["go"]
    assert claude_args.parse(["--model=opus", "--", "-literal prompt"]).prompt == ["-literal prompt"]


@pytest.mark.parametrize("flag", ["--bare", "--safe-mode", "--restricted", "-p", "--print"])
def test_flags_that_defeat_supervision_are_refused(flag: str) -> None:
    with pytest.raises(claude_args.ArgsError, match=flag):
        claude_args.parse([flag])


def test_the_first_window_keeps_the_users_conversation_and_a_rotated_one_starts_fresh() -> None:
    user = claude_args.parse(["--resume", "old-id", "--model", "opus", "--settings", '{"theme": "dark"}', "hello"])
    layer = {"statusLine": {"type": "command", "command": "codeoid statusline"}}
    first = claude_args.backing_argv("claude", user, first=True, session_id="new", settings=layer, prompt=None)
    assert first[:5] == ["claude", "--resume", "old-id", "--model", "opus"]
    assert "--session-id" not in first and first[-2:] == ["--", "hello"]
    assert json.loads(first[first.index("--settings") + 1]) == {"theme": "dark", **layer}
    rotated = claude_args.backing_argv("claude", user, first=False, session_id="new", settings=layer,
                                       prompt="SEED\n\nnext")
    assert "--resume" not in rotated and "old-id" not in rotated and "hello" not in rotated
    assert rotated[rotated.index("--session-id") + 1] == "new" and rotated[-2:] == ["--", "SEED\n\nnext"]


def test_settings_layers_merge_lists_and_objects() -> None:
    merged = claude_args.merge_settings({"permissions": {"allow": ["Bash(ls)"]}, "model": "a"},
                                        {"permissions": {"allow": ["mcp__codeoid"]}, "model": "b"})
    assert merged == {"permissions": {"allow": ["Bash(ls)", "mcp__codeoid"]}, "model": "b"}


# -- the hooks' side -------------------------------------------------------------------------------------------

@pytest.fixture
def run_dir(codeoid_home: Path) -> str:
    directory = rundir.create("run-test")
    rundir.write(directory, rundir.SUPERVISOR, {"pid": os.getpid(), "session_id": "s1", "workspace": "/w"})
    return directory


def _state(run_dir: str, **fields: Any) -> None:
    state = {"phase": "running", "backing_session_id": "b1", "tokens": 182_000, "window": 200_000, "due": "soft",
             "hard": 0.97, **fields}
    rundir.write(run_dir, rundir.STATE, state)


def _payload(prompt: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": "b1", "prompt_id": "p7", "prompt": prompt, "hook_event_name": "UserPromptSubmit",
            "cwd": "/w", **fields}


def test_a_due_rotation_takes_the_prompt_and_blocks_it(run_dir: str) -> None:
    _state(run_dir)
    answer = handoff.on_user_prompt(_payload("the seventh prompt"), {rundir.RUN_DIR_ENV: run_dir})
    assert answer is not None and json.loads(answer)["decision"] == "block"
    (request,) = rundir.take_inbox(run_dir)
    assert (request["kind"], request["prompt"], request["backing_session_id"]) == ("prompt", "the seventh prompt", "b1")
    assert rundir.take_inbox(run_dir) == []


def test_a_slash_command_is_never_handed_over(run_dir: str) -> None:
    _state(run_dir)
    assert handoff.on_user_prompt(_payload("/compact keep the plan"), {rundir.RUN_DIR_ENV: run_dir}) is None
    assert rundir.take_inbox(run_dir) == []


@pytest.mark.parametrize("state", [{"due": None}, {"backing_session_id": "another"}, {"phase": "rotating"}])
def test_a_prompt_goes_through_when_no_rotation_is_due_here(run_dir: str, state: dict[str, Any]) -> None:
    _state(run_dir, **state)
    assert handoff.on_user_prompt(_payload("go on"), {rundir.RUN_DIR_ENV: run_dir}) is None
    assert rundir.take_inbox(run_dir) == []


def test_a_background_agents_notification_is_never_handed_over(run_dir: str) -> None:
    _state(run_dir)
    assert handoff.on_user_prompt(_payload(NOTIFICATION), {rundir.RUN_DIR_ENV: run_dir}) is None
    assert rundir.take_inbox(run_dir) == []


def test_a_dead_supervisor_is_never_handed_a_prompt(run_dir: str) -> None:
    _state(run_dir)
    rundir.write(run_dir, rundir.SUPERVISOR, {"pid": 2**22 + 12345})
    assert handoff.on_user_prompt(_payload("go on"), {rundir.RUN_DIR_ENV: run_dir}) is None


def test_slash_rotate_outside_the_supervisor_says_how_to_get_rotation(codeoid_home: Path) -> None:
    answer = handoff.on_user_prompt(_payload("/rotate"), {})
    assert answer is not None and "codeoid run" in json.loads(answer)["reason"]


def test_the_hard_threshold_asks_the_model_to_finish_the_turn(run_dir: str) -> None:
    env = {rundir.RUN_DIR_ENV: run_dir}
    tool_call = {"session_id": "b1", "tool_name": "Bash", "tool_input": {"command": "ls"}}
    _state(run_dir, tokens=190_000)
    assert notice.finish_turn_notice(tool_call, env) is None
    _state(run_dir, tokens=194_000)
    text = notice.finish_turn_notice(tool_call, env)
    assert text is not None and "97% full" in text and "Finish the current turn" in text
    assert notice.finish_turn_notice({**tool_call, "agent_id": "a1"}, env) is None
    assert notice.finish_turn_notice(tool_call, {}) is None


def test_native_auto_compaction_is_held_back_below_the_hard_threshold_only(run_dir: str) -> None:
    env = {rundir.RUN_DIR_ENV: run_dir}
    _state(run_dir, tokens=967_500, window=1_000_000)
    blocked = notice.compaction_block({"session_id": "b1", "trigger": "auto"}, env)
    assert blocked is not None and json.loads(blocked)["decision"] == "block"
    assert notice.compaction_block({"session_id": "b1", "trigger": "manual"}, env) is None
    _state(run_dir, tokens=975_000, window=1_000_000)
    assert notice.compaction_block({"session_id": "b1", "trigger": "auto"}, env) is None


def test_the_real_hook_hands_the_prompt_over_and_does_not_store_it(run_dir: str, store: Any) -> None:
    _state(run_dir)
    result = run_hook("UserPromptSubmit", _payload("handed over"), env={rundir.RUN_DIR_ENV: run_dir})
    assert result.returncode == 0 and json.loads(result.stdout)["decision"] == "block"
    assert store.execute("SELECT count(*) FROM episodes").fetchone()[0] == 0
    assert [request["prompt"] for request in rundir.take_inbox(run_dir)] == ["handed over"]


def test_the_real_hook_stores_a_seeded_prompt_as_the_users_turn_plus_a_seed(codeoid_home: Path, store: Any) -> None:
    seed = _seed()
    result = run_hook("UserPromptSubmit", _payload(seeded_prompt(seed, "the seventh prompt")))
    assert result.returncode == 0 and result.stdout == b""
    rows = store.execute("SELECT text, origin, turn FROM episodes ORDER BY id").fetchall()
    assert rows == [("the seventh prompt", "user", 1), (seed, "seed", 1)]


def test_slash_rotate_under_the_supervisor_posts_a_request(run_dir: str) -> None:
    result = run_hook("UserPromptSubmit", _payload("/rotate"), env={rundir.RUN_DIR_ENV: run_dir})
    assert json.loads(result.stdout)["decision"] == "block"
    assert [request["kind"] for request in rundir.take_inbox(run_dir)] == ["rotate"]


def test_a_window_started_by_rotate_gets_its_seed_at_session_start(run_dir: str, store: Any) -> None:
    rundir.write(run_dir, rundir.SEED, {"backing_session_id": "b2", "text": "<rotation_context>x</rotation_context>"})
    payload = {"session_id": "b2", "source": "startup", "hook_event_name": "SessionStart", "cwd": "/w"}
    result = run_hook("SessionStart", payload, env={rundir.RUN_DIR_ENV: run_dir})
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer == {"hookEventName": "SessionStart", "additionalContext": "<rotation_context>x</rotation_context>"}
    assert store.execute("SELECT origin FROM episodes").fetchall() == [("seed",)]
    other = run_hook("SessionStart", {**payload, "session_id": "b3"}, env={rundir.RUN_DIR_ENV: run_dir})
    assert other.stdout == b""


# -- status line -----------------------------------------------------------------------------------------------

def test_the_status_line_shows_occupancy_and_the_counter(run_dir: str) -> None:
    _state(run_dir, tokens=91_000, window=1_000_000, rotation_count=3, due=None)
    stdin = json.dumps({"session_id": "b1", "context_window": {"context_window_size": 1_000_000}}).encode()
    assert statusline.run(stdin, None, {rundir.RUN_DIR_ENV: run_dir}) == "codeoid ctx 9% of 1M · rotations 3\n"
    assert rundir.read(run_dir, rundir.STATUSLINE) == json.loads(stdin)


def test_the_status_line_chains_the_users_own_first(codeoid_home: Path) -> None:
    stdin = json.dumps({"session_id": "x", "context_window": {"context_window_size": 200_000, "current_usage": {
        "input_tokens": 1_000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 19_000}}}).encode()
    rows = statusline.run(stdin, "printf 'mine:%s\\n' \"$(head -c 15)\"", {})
    assert rows == 'mine:{"session_id": \ncodeoid ctx 10% of 200k · rotations 0\n'


# -- the store ---------------------------------------------------------------------------------------------------

def test_a_rotation_archives_the_old_window_and_counts_on_the_session(codeoid_home: Path, project: Path,
                                                                       store: Any) -> None:
    for prompt_id, text in (("p1", "first"), ("p2", "second")):
        run_hook("UserPromptSubmit", {"session_id": "old", "prompt_id": prompt_id, "prompt": text, "cwd": str(project)},
                 env={"CODEOID_SESSION_ID": "S"})
    number = rotations.record_rotation(store, session_id="S", workspace=identify(str(project)),
                                       from_backing_session_id="old", to_backing_session_id="new", reason="request",
                                       occupancy_tokens=5, window_tokens=200_000, now=time.time())
    store.commit()
    assert number == 1
    assert rotations.session_info(store, "S").rotation_count == 1  # type: ignore[union-attr]
    assert {row[0] for row in store.execute("SELECT state FROM episodes")} == {"archived"}
    assert store.execute("SELECT end_reason FROM backing_sessions WHERE id = 'old'").fetchone() == ("rotation",)
    last = rotations.last_user_turn(store, "S")
    assert last is not None and last.text == "second"


# -- ending a process tree ---------------------------------------------------------------------------------------

_TREE = """
import os, subprocess, sys, time
marker = os.environ["TREE_MARKER"]
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
env = dict(os.environ, CODEOID_DETACHED_SERVICE="1")
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], env=env, start_new_session=True)
print("ready", flush=True)
time.sleep(300)
"""


def test_ending_a_tree_leaves_no_orphan_but_spares_a_detached_service() -> None:
    marker = os.urandom(8).hex()
    root = subprocess.Popen([sys.executable, "-c", _TREE], env={**os.environ, "TREE_MARKER": marker},
                            stdout=subprocess.PIPE, text=True)
    assert root.stdout is not None and root.stdout.readline().strip() == "ready"
    family = [process for process in psutil.process_iter() if _env_of(process).get("TREE_MARKER") == marker]
    service = [process for process in family if SPARE_ENV in _env_of(process)]
    assert len(family) == 4 and len(service) == 1
    try:
        leftovers = end_process_tree(root.pid, marker=("TREE_MARKER", marker))
        root.wait(5)
        assert leftovers == []
        survivors = [process for process in family if process.is_running() and process.status() != "zombie"]
        assert survivors == service
    finally:
        for process in service:
            process.kill()


def _env_of(process: psutil.Process) -> dict[str, str]:
    try:
        return process.environ()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return {}


def test_the_plugin_command_file_is_the_one_install_writes() -> None:
    assert (REPO / "plugin" / "commands" / "rotate.md").read_text() == ROTATE_COMMAND


def test_a_seed_is_stored_but_never_recalled(codeoid_home: Path, store: Any) -> None:
    from codeoid.memory import retrieval

    run_hook("UserPromptSubmit", _payload(seeded_prompt(_seed(), "zeppelin question")))
    workspace_id = store.execute("SELECT id FROM workspaces").fetchone()[0]
    found = retrieval.recall(store, "flaky zeppelin", workspace_id=workspace_id)
    assert [row["text"] for row in found] == ["zeppelin question"]


def test_codeoids_own_installed_status_line_is_not_chained_twice(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".claude").mkdir(parents=True)
    project.mkdir()
    installed = {"statusLine": {"type": "command", "command": "CODEOID_HOME=/x /venv/bin/codeoid statusline"}}
    (home / ".claude" / "settings.json").write_text(json.dumps(installed))
    assert statusline.user_status_line({}, project, home) is None
    mine = {"statusLine": {"type": "command", "command": "~/bin/mine", "padding": 2}}
    assert statusline.user_status_line(mine, project, home) == mine["statusLine"]
    setting = statusline.status_line_setting(mine["statusLine"])
    assert setting["command"].endswith("statusline --chain '~/bin/mine'") and setting["padding"] == 2
