"""Acceptance: in a later session the model pages back an earlier session's verbatim tool output over MCP."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_anthropic import Reply, Text, ToolUse, bash
from .rig import ClaudeRig


@pytest.mark.e2e
def test_a_later_session_recalls_an_earlier_tool_output_and_pages_its_lines_verbatim(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    marker = "zebra-quartz-7731 calibration table"
    earlier = bash(f"printf 'header\\n{marker}\\nfooter\\n'")
    rig.api.add(Reply([earlier]), "Printed the calibration table.")
    first = rig.run("print the calibration table")
    assert first.exit_code == 0, first.describe()

    recall = ToolUse(name="mcp__codeoid__recall", input={"query": "zebra quartz calibration"})
    holder: dict[str, str] = {}

    def open_the_lines(body: dict) -> Reply:
        """Step two, as the tool descriptions teach it: the lines the hit named, through get_episode."""
        text = rig.api.tool_results()[recall.id].text
        found = re.search(r'best: get_episode\("(\d+)", lines="([\d-]+)"\)', text)
        assert found is not None, text
        holder["id"], holder["lines"] = found.groups()
        return Reply([ToolUse(name="mcp__codeoid__get_episode",
                              input={"episode_id": holder["id"], "lines": holder["lines"]})])

    rig.api.add(Reply([Text("Let me check memory."), recall]), open_the_lines, "Found it.")
    second = rig.run("what did the calibration table say?")

    assert second.exit_code == 0, second.describe()
    rig.api.assert_script_consumed()
    tool_names = {tool["name"] for tool in second.main_requests[0].body["tools"]}
    assert {"mcp__codeoid__recall", "mcp__codeoid__get_episode", "mcp__codeoid__timeline",
            "mcp__codeoid__recall_file"} <= tool_names
    results = rig.api.tool_results()
    recalled = results[recall.id]
    assert not recalled.is_error and f"\n1- header\n2: {marker}\n3- footer" in recalled.text
    assert holder["lines"] == "1-3"
    opened = [result for tool_id, result in results.items() if tool_id not in (recall.id, earlier.id)]
    assert len(opened) == 1 and not opened[0].is_error
    assert f"episode {holder['id']}" in opened[0].text and "text: lines 1-3 of 3" in opened[0].text
    assert f"\n-----\nheader\n{marker}\nfooter\n-----" in opened[0].text


def request_texts(body: dict) -> list[str]:
    """Every text a request carries: the system prompt's blocks and each message's text blocks."""
    system = body.get("system") or []
    texts = [system] if isinstance(system, str) else [block.get("text", "") for block in system]
    for message in body["messages"]:
        content = message["content"]
        texts += [content] if isinstance(content, str) else [block.get("text", "") for block in content]
    return texts


@pytest.mark.e2e
def test_a_new_session_starts_with_the_workspace_index(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    rig.api.add(Reply([bash("cat README.md")]), "It is the e2e project.")
    assert rig.run("what is this project about?").exit_code == 0
    built = subprocess.run([str(Path(sys.executable).parent / "codeoid"), "index"], cwd=rig.project, env=rig.env,
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    index = built.stdout.strip()
    assert '"what is this project about?"' in index

    rig.api.add("I remember the README.")
    second = rig.run("what do you remember?")
    assert second.exit_code == 0, second.describe()
    texts = request_texts(second.main_requests[0].body)
    assert any(index in text for text in texts), texts
