"""The rig itself, proven against the real `claude` CLI: if these fail, no other e2e test can be trusted."""

from __future__ import annotations

import json
import shlex
import urllib.request
from typing import Any

import psutil
import pytest

from .fake_anthropic import EXHAUSTED_TEXT, FakeAnthropic, Reply, Text, ToolUse, bash, tool_results_in
from .rig import ClaudeRig, ClaudeRunTimeout


@pytest.mark.e2e
def test_scripted_text_answer_comes_back_as_the_result(rig: ClaudeRig) -> None:
    rig.api.add("hello from the fake API")

    run = rig.run("say hello")

    assert run.exit_code == 0, run.describe()
    assert run.text == "hello from the fake API"
    assert [r.kind for r in run.requests] == ["main"]
    rig.api.assert_script_consumed()


@pytest.mark.e2e
def test_scripted_bash_call_runs_and_its_output_reaches_the_next_request(rig: ClaudeRig) -> None:
    call = bash("echo hello-rig")

    def echo_tool_result(body: dict[str, Any]) -> str:
        return "saw: " + tool_results_in(body)[-1].text

    rig.api.add(Reply([Text("running it"), call]), echo_tool_result)

    run = rig.run("run the echo")

    assert run.exit_code == 0, run.describe()
    assert "hello-rig" in rig.api.tool_results()[call.id].text
    assert rig.api.tool_results()[call.id].is_error is False
    assert run.text.startswith("saw: hello-rig")
    rig.api.assert_script_consumed()


@pytest.mark.e2e
def test_settings_hook_fires_on_post_tool_use_with_the_tool_response(rig: ClaudeRig) -> None:
    log = rig.root / "post-tool-use.jsonl"
    append_stdin = f"cat >> {shlex.quote(str(log))}; echo >> {shlex.quote(str(log))}"
    rig.write_settings(
        {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": append_stdin}]}]}}
    )
    call = bash("echo hooked-output")
    rig.api.add(Reply([call]), "done")

    run = rig.run("run it")

    assert run.exit_code == 0, run.describe()
    payloads = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert len(payloads) == 1
    assert payloads[0]["hook_event_name"] == "PostToolUse"
    assert payloads[0]["tool_use_id"] == call.id
    assert payloads[0]["tool_response"]["stdout"] == "hooked-output"
    assert [e["exit_code"] for e in run.hook_responses("PostToolUse")] == [0]
    rig.api.assert_script_consumed()


@pytest.mark.e2e
def test_two_parallel_tool_uses_in_one_reply_both_run(rig: ClaudeRig) -> None:
    first, second = bash("echo first-call"), bash("echo second-call")
    rig.api.add(Reply([first, second]), "both done")

    run = rig.run("run both")

    assert run.exit_code == 0, run.describe()
    # Both results come back in one request, in the order the calls finished (not the order they were made).
    follow_up = {t.tool_use_id: t.text for t in run.main_requests[1].tool_results}
    assert set(follow_up) == {first.id, second.id}
    assert "first-call" in follow_up[first.id]
    assert "second-call" in follow_up[second.id]
    rig.api.assert_script_consumed()


@pytest.mark.e2e
def test_subagent_requests_use_their_own_script(rig: ClaudeRig) -> None:
    agent = ToolUse("Agent", {"description": "sub", "prompt": "do the sub task", "run_in_background": False})
    rig.api.add(Reply([agent]), "main done")
    rig.api.add_subagent("sub report")

    run = rig.run("delegate")

    assert run.exit_code == 0, run.describe()
    assert run.text == "main done"
    assert [r.kind for r in run.requests] == ["main", "subagent", "main"]
    assert "sub report" in rig.api.tool_results()[agent.id].text
    rig.api.assert_script_consumed()


@pytest.mark.e2e
def test_compaction_request_is_answered_without_consuming_the_script(rig: ClaudeRig) -> None:
    rig.api.add("first answer")
    first = rig.run("remember this")

    compacted = rig.run("/compact", "--resume", first.session_id)

    assert compacted.exit_code == 0, compacted.describe()
    assert [r.kind for r in compacted.requests] == ["compaction"]
    assert any(e.get("subtype") == "compact_boundary" for e in compacted.events)
    rig.api.assert_script_consumed()


@pytest.mark.e2e
def test_running_past_the_script_is_recorded(rig: ClaudeRig) -> None:
    run = rig.run("nothing scripted")

    assert run.text == EXHAUSTED_TEXT
    with pytest.raises(AssertionError, match="script exhausted"):
        rig.api.assert_script_consumed()


@pytest.mark.e2e
def test_a_run_past_its_timeout_is_killed_with_the_shell_it_started(rig: ClaudeRig) -> None:
    pid_file = rig.root / "shell.pid"
    rig.api.add(Reply([bash(f"echo $$ > {shlex.quote(str(pid_file))}; sleep 600")]))

    # The timeout must outlast claude's start and the shell's: 3 s did not on a loaded machine (no pid file).
    with pytest.raises(ClaudeRunTimeout, match="did not finish within 30s"):
        rig.run("hang", timeout=30)

    assert pid_file.exists(), "the shell never started: the run timed out before it could"
    assert is_gone(int(pid_file.read_text()))


def is_gone(pid: int) -> bool:
    """Dead or a zombie: in a container whose init does not reap, a killed orphan stays a zombie."""
    try:
        return psutil.Process(pid).status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return True


def post(api: FakeAnthropic, path: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    request = urllib.request.Request(
        api.base_url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.load(response))


def test_fake_api_answers_non_streaming_count_tokens_and_unknown_paths(fake_api: FakeAnthropic) -> None:
    call = bash("true")
    fake_api.add(Reply([call]))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

    message = post(fake_api, "/v1/messages", body, **{"anthropic-beta": "claude-code-20250219"})

    assert message["content"] == [{"type": "tool_use", "id": call.id, "name": "Bash", "input": call.input}]
    assert message["stop_reason"] == "tool_use"
    assert post(fake_api, "/v1/messages/count_tokens", {"messages": []}) == {"input_tokens": 100}
    assert post(fake_api, "/v1/unknown", {}) == {}
    assert [r.kind for r in fake_api.requests] == ["main", "count_tokens", "other"]
    fake_api.assert_script_consumed()


def test_a_broken_script_step_is_answered_and_recorded(fake_api: FakeAnthropic) -> None:
    def broken(body: dict[str, Any]) -> str:
        raise KeyError("no such tool result")

    fake_api.add(broken)

    message = post(fake_api, "/v1/messages", {"messages": []}, **{"anthropic-beta": "claude-code-20250219"})

    assert message["content"][0]["text"].startswith("(script error:")
    with pytest.raises(AssertionError, match="no such tool result"):
        fake_api.assert_script_consumed()
