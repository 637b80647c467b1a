"""Acceptance: the real `claude` TUI under `codeoid run`, against the scripted API reporting usage.

Each scenario types prompts as a person would and reads the supervisor's `state.json` to know when it has seen a
reply's usage (a person, too, types the next prompt only after reading the answer).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from codeoid.rotation.seed import split_seeded

from .fake_anthropic import RecordedRequest, Reply, Text, ToolUse, Usage, bash, block_text
from .rig import ClaudeRig
from .tui import Terminal, wait_until

AUTO = {"CODEOID_AUTO_ROTATE": "1"}


def small(text: str, tokens: int = 20_000) -> Reply:
    return Reply([Text(text)], usage=Usage(input_tokens=tokens, cache_creation=0, cache_read=0))


def filled(text: str, tokens: int) -> Reply:
    """A reply whose usage says the window holds `tokens` (mostly cache reads, as in a long session)."""
    return Reply([Text(text)], usage=Usage(input_tokens=2_000, cache_creation=1_000, cache_read=tokens - 3_000))


def usage_of(reply: Reply) -> int:
    return reply.usage.input_tokens + reply.usage.cache_creation + reply.usage.cache_read


def turn(rig: ClaudeRig, term: Terminal, prompt: str, *replies: Reply) -> None:
    """One user turn: script its replies, type the prompt, and wait until the answer is on screen and the
    supervisor has read the last reply's usage (a person, too, types the next prompt after reading the answer)."""
    before = (rig.supervisor_state() or {}).get("prompts", 0)
    rig.api.add(*replies)
    mark = term.mark()
    term.type_line(prompt)
    answer = next(block.text for block in reversed(replies[-1].blocks) if isinstance(block, Text))
    term.wait_for(answer, since=mark, timeout=60)
    rig.wait_for_state(lambda state: state["prompts"] == before + 1 and state["tokens"] == usage_of(replies[-1]))


def new_prompt(request: RecordedRequest) -> str | None:
    """The prompt a request asks the model to answer (seed removed), or None for a tool-result round trip."""
    last = request.messages[-1] if request.messages else {}
    content = last.get("content")
    if last.get("role") != "user":
        return None
    if isinstance(content, list):
        if any(isinstance(block, dict) and block.get("type") == "tool_result" for block in content):
            return None
        texts = [block.get("text", "") for block in content if isinstance(block, dict) and block.get("type") == "text"]
        content = texts[-1] if texts else ""
    return split_seeded(block_text(content))[1]


def store(rig: ClaudeRig, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(rig.codeoid_home / "store.db")
    try:
        return connection.execute(sql, params).fetchall()
    finally:
        connection.close()


def one_claude(rig: ClaudeRig) -> None:
    """Only the current window's claude is left. The old window's may still be exiting, and Claude Code may run a
    short-lived helper `claude` of its own; both go, so this waits for it rather than counting at one instant."""
    wait_until(lambda: len(rig.own_processes("claude")) == 1, timeout=60,
               message=lambda: f"one claude process; there are {rig.own_processes('claude')}")


def ready(rig: ClaudeRig, term: Terminal) -> None:
    term.wait_for("codeoid ctx", timeout=60)
    rig.wait_for_state(lambda state: state["window_source"] == "statusline")


@pytest.mark.e2e
def test_crossing_90_percent_on_turn_6_rotates_at_the_7th_prompt_and_recall_finds_turn_2(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    fact = bash("echo 'deploy key label: quartz-falcon-4417'")
    recall = ToolUse("mcp__codeoid__recall", {"query": "deploy key label quartz"})
    term = rig.supervise(env=AUTO)
    ready(rig, term)
    prompts = ["prompt one", "prompt two: what is the deploy key label?", "prompt three", "prompt four",
               "prompt five", "prompt six: the last before rotation"]

    turn(rig, term, prompts[0], small("answer one"))
    turn(rig, term, prompts[1], Reply([fact], usage=Usage(input_tokens=21_000)), small("answer two", 22_000))
    for prompt, answer in zip(prompts[2:5], ("answer three", "answer four", "answer five"), strict=True):
        turn(rig, term, prompt, small(answer))
    turn(rig, term, prompts[5], filled("answer six", 182_000))
    before = rig.wait_for_state(lambda state: state["due"] == "soft")
    assert (before["tokens"], before["window"], before["prompts"]) == (182_000, 200_000, 6)
    old_requests = len(rig.api.main_requests)
    rig.api.add(Reply([Text("Checking memory."), recall], usage=Usage(input_tokens=4_000)),
                small("answer seven from the fresh window", 5_000))
    term.type_line("prompt seven: rotate the deploy key")
    term.wait_for("answer seven from the fresh window", timeout=90)

    fresh = rig.api.main_requests[old_requests]
    texts = [block.get("text", "") for block in fresh.messages[-1]["content"] if isinstance(block, dict)]
    seed, rest = split_seeded(next(text for text in texts if text.startswith("<rotation_context>")))
    assert seed is not None and rest == "prompt seven: rotate the deploy key"
    assert "<last_user_turn>\nprompt six: the last before rotation\n</last_user_turn>" in seed
    assert "mcp__codeoid__recall(query)" in seed and "rotation 1" in seed
    asked = [prompt for prompt in map(new_prompt, rig.api.main_requests) if prompt is not None]
    assert asked == [*prompts, "prompt seven: rotate the deploy key"]  # nothing answered is ever asked again
    recalled = rig.api.tool_results()[recall.id]
    assert not recalled.is_error and "deploy key label: quartz-falcon-4417" in recalled.text
    rig.api.assert_script_consumed()

    state = rig.wait_for_state(lambda state: state["rotation_count"] == 1 and state["ending_windows"] == 0)
    assert store(rig, "SELECT DISTINCT session_id FROM episodes") == [(state["session_id"],)]
    assert store(rig, "SELECT rotation_count FROM sessions") == [(1,)]
    (rotation,) = store(rig, "SELECT number, reason, occupancy_tokens, window_tokens FROM rotations")
    assert rotation == (1, "threshold:soft", 182_000, 200_000)
    backing = store(rig, "SELECT id, end_reason FROM backing_sessions ORDER BY started_at")
    assert len(backing) == 2 and backing[0][1] == "rotation" and backing[1][0] == state["backing_session_id"]
    states = dict(store(rig, "SELECT text, state FROM episodes WHERE kind = 'user' AND origin = 'user'"))
    assert states["prompt six: the last before rotation"] == "archived"
    assert states["prompt seven: rotate the deploy key"] == "live"
    one_claude(rig)


@pytest.mark.e2e
def test_without_auto_rotation_nothing_happens_at_90_percent_and_97_rotates(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    term = rig.supervise()
    ready(rig, term)

    for n in range(1, 6):
        turn(rig, term, f"p{n}", small(f"reply {n}"))
    turn(rig, term, "p6", filled("reply 6", 185_000))
    turn(rig, term, "p7", filled("reply 7 at 92 percent, same window", 185_500))
    assert store(rig, "SELECT count(*) FROM rotations") == [(0,)]
    turn(rig, term, "p8", filled("reply 8", 195_000))
    rig.wait_for_state(lambda state: state["due"] == "hard")
    rig.api.add(small("fresh reply 9"))
    term.type_line("p9")
    term.wait_for("fresh reply 9", timeout=90)

    assert store(rig, "SELECT reason, occupancy_tokens FROM rotations") == [("threshold:hard", 195_000)]
    assert [prompt for prompt in map(new_prompt, rig.api.main_requests) if prompt] == [f"p{n}" for n in range(1, 10)]
    assert not [request for request in rig.api.requests if request.kind == "compaction"]


@pytest.mark.e2e
def test_fewer_than_5_prompts_since_the_last_rotation_never_rotate(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    term = rig.supervise(env=AUTO)
    ready(rig, term)

    turn(rig, term, "p1", small("r1"))
    turn(rig, term, "p2", small("r2"))
    turn(rig, term, "p3", filled("r3 at 98 percent", 196_000))
    turn(rig, term, "p4", filled("r4 still the same window", 196_500))

    state = rig.supervisor_state()
    assert state is not None and state["due"] is None and state["rotation_count"] == 0
    assert store(rig, "SELECT count(*) FROM rotations") == [(0,)]


@pytest.mark.e2e
def test_a_subagent_reporting_huge_usage_causes_no_rotation(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    agent = ToolUse("Agent", {"description": "survey", "prompt": "read everything", "run_in_background": False})
    # Claude Code runs the agent in the background and reports its end as a turn of its own, which nobody typed.
    # When the agent ends before the main turn's next request, Claude Code folds the report into that request
    # instead (seen under load), so the agent answers only once the main turn has gone on without it.
    main_went_on = threading.Event()

    def subagent_after_the_main_turn(body: dict[str, Any]) -> Reply:
        main_went_on.wait(timeout=300)
        return filled("the subagent read a lot", 199_000)

    def main_goes_on(body: dict[str, Any]) -> Reply:
        main_went_on.set()
        return small("r5 after the agent", 31_000)

    rig.api.add_subagent(subagent_after_the_main_turn)
    term = rig.supervise(env=AUTO)
    ready(rig, term)

    for n in range(1, 5):
        turn(rig, term, f"p{n}", small(f"r{n}"))
    rig.api.add(Reply([agent], usage=Usage(input_tokens=30_000)), main_goes_on,
                small("r5 the survey is back", 31_500))
    term.type_line("p5")
    term.wait_for("r5 the survey is back", timeout=60)
    rig.wait_for_state(lambda state: state["prompts"] == 5 and state["tokens"] == 31_500)
    turn(rig, term, "p6", small("r6", 32_000))
    turn(rig, term, "p7", small("r7 in the same window", 33_000))

    assert rig.api.subagent_requests, "the subagent never ran"
    state = rig.supervisor_state()
    assert state is not None and state["due"] is None and state["prompts"] == 7
    assert store(rig, "SELECT count(*) FROM rotations") == [(0,)]
    rig.api.assert_script_consumed()
    users = store(rig, "SELECT origin, text FROM episodes WHERE kind = 'user' ORDER BY id")
    assert [text for origin, text in users if origin == "user"] == [f"p{n}" for n in range(1, 8)]
    assert [origin for origin, text in users if "<result>the subagent read a lot</result>" in text] \
        == ["task-notification"]


@pytest.mark.e2e
def test_the_window_is_read_so_a_1m_model_does_not_rotate_at_180k(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    term = rig.supervise(model=None, env=AUTO)  # Claude Code's default model: it reports a 1M window
    ready(rig, term)

    for n in range(1, 6):
        turn(rig, term, f"p{n}", small(f"r{n}"))
    turn(rig, term, "p6", filled("r6", 180_000))
    turn(rig, term, "p7", filled("r7 same window", 181_000))

    state = rig.supervisor_state()
    assert state is not None and (state["window"], state["window_source"]) == (1_000_000, "statusline")
    assert state["due"] is None and store(rig, "SELECT count(*) FROM rotations") == [(0,)]


@pytest.mark.e2e
def test_slash_rotate_rotates_at_once_and_the_fresh_window_waits_for_the_user(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    term = rig.supervise()
    ready(rig, term)
    turn(rig, term, "p1", small("r1"))
    requests_before = len(rig.api.requests)

    mark = term.mark()
    term.type_line("/rotate")
    state = rig.wait_for_state(lambda state: state["rotation_count"] == 1 and state["phase"] == "running")
    term.wait_for("codeoid ctx", since=mark, timeout=60)
    rig.api.add(small("r2 in the fresh window"))
    term.type_line("p2")
    term.wait_for("r2 in the fresh window", timeout=60)

    # It waited for the user: the fresh window's only request is the one p2 caused (one sent on its own would
    # also have taken the scripted answer, which would then never have reached the screen).
    (fresh,) = [r for r in rig.api.requests[requests_before:] if r.kind == "main"]
    sent = json.dumps(fresh.messages)
    assert new_prompt(fresh) == "p2"
    assert "<rotation_context>" in sent and "<last_user_turn>\\np1\\n</last_user_turn>" in sent
    assert store(rig, "SELECT reason FROM rotations") == [("request:/rotate",)]
    assert store(rig, "SELECT count(*) FROM episodes WHERE text = '/rotate'") == [(0,)]
    assert state["backing_session_id"] == store(rig, "SELECT to_backing_session_id FROM rotations")[0][0]


@pytest.mark.e2e
def test_codeoid_rotate_from_another_terminal(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    term = rig.supervise()
    ready(rig, term)
    turn(rig, term, "p1", small("r1"))

    done = subprocess.run([str(Path(sys.executable).parent / "codeoid"), "rotate"], cwd=rig.project, env=rig.env,
                          capture_output=True, text=True, timeout=30)

    assert done.returncode == 0, done.stderr
    rig.wait_for_state(lambda state: state["rotation_count"] == 1 and state["ending_windows"] == 0)
    assert store(rig, "SELECT reason FROM rotations") == [("request:codeoid rotate",)]
    one_claude(rig)


@pytest.mark.e2e
def test_under_the_supervisor_the_users_status_line_is_kept_and_codeoids_row_added(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    rig.write_settings({"statusLine": {"type": "command", "command": "echo my-own-status-row"}})
    term = rig.supervise()

    term.wait_for("my-own-status-row", timeout=60)
    term.wait_for("codeoid ctx", timeout=30)
    state = rig.wait_for_state(lambda state: state["window_source"] == "statusline")
    assert state["window"] == 200_000


@pytest.mark.e2e
def test_native_auto_compaction_waits_for_the_hard_threshold_as_a_last_resort(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    term = rig.supervise(model=None)  # the default model's 1M window: Claude Code compacts from 96.7% on
    ready(rig, term)

    turn(rig, term, "p1", filled("r1 at 96.8 percent", 968_000))
    turn(rig, term, "p2", filled("r2 not compacted", 968_500))
    assert [request.kind for request in rig.api.requests if request.kind == "compaction"] == []
    turn(rig, term, "p3", filled("r3 at 97.5 percent", 975_000))
    mark = term.mark()
    rig.api.add(small("r4 after the backstop"))
    term.type_line("p4")  # only 3 prompts in this window: the guard holds rotation back, the backstop acts
    term.wait_for("r4 after the backstop", since=mark, timeout=90)

    assert [request.kind for request in rig.api.requests if request.kind == "compaction"] == ["compaction"]
    assert store(rig, "SELECT count(*) FROM rotations") == [(0,)]
    notes = store(rig, "SELECT trigger, applied_at IS NOT NULL FROM compactions ORDER BY id")
    assert notes[0] == ("auto", 0) and notes[-1] == ("auto", 1)  # held back at 96.8%, then let through


@pytest.mark.e2e
def test_a_turn_that_fills_the_window_is_asked_to_finish_even_on_non_bash_tools(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    notes = rig.project / "notes.txt"
    notes.write_text("a note\n")
    term = rig.supervise()
    ready(rig, term)
    wait = bash("sleep 2")
    read = ToolUse(name="Read", input={"file_path": str(notes)})
    fill = Usage(input_tokens=2_000, cache_creation=1_000, cache_read=193_000)
    rig.api.add(Reply([Text("working"), wait], usage=fill), Reply([read], usage=fill))
    turn(rig, term, "one long turn", filled("done with the long turn", 196_500))

    after_read = next(request for request in rig.api.main_requests
                      if any(result.tool_use_id == read.id for result in request.tool_results))
    last = json.dumps(after_read.messages[-1])
    assert "PreToolUse:Read hook additional context" in last and "Finish the current turn now" in last
    assert "98% full" in last
