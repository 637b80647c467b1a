"""Acceptance: in a later session the model pages back an earlier session's verbatim tool output over MCP."""

from __future__ import annotations

import re

import pytest

from .fake_anthropic import Reply, Text, ToolUse, bash
from .rig import ClaudeRig


@pytest.mark.e2e
def test_a_later_session_recalls_and_opens_an_earlier_tool_output_verbatim(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    marker = "zebra-quartz-7731 calibration table"
    earlier = bash(f"printf 'header\\n{marker}\\nfooter\\n'")
    rig.api.add(Reply([earlier]), "Printed the calibration table.")
    first = rig.run("print the calibration table")
    assert first.exit_code == 0, first.describe()

    recall = ToolUse(name="mcp__codeoid__recall", input={"query": "zebra quartz calibration"})
    holder: dict[str, str] = {}

    def open_the_episode(body: dict) -> Reply:
        text = rig.api.tool_results()[recall.id].text
        holder["id"] = re.search(r"=== episode (\d+)", text).group(1)  # type: ignore[union-attr]
        return Reply([ToolUse(name="mcp__codeoid__get_episode", input={"episode_id": holder["id"]})])

    rig.api.add(Reply([Text("Let me check memory."), recall]), open_the_episode, "Found it.")
    second = rig.run("what did the calibration table say?")

    assert second.exit_code == 0, second.describe()
    rig.api.assert_script_consumed()
    tool_names = {tool["name"] for tool in second.main_requests[0].body["tools"]}
    assert {"mcp__codeoid__recall", "mcp__codeoid__get_episode", "mcp__codeoid__timeline",
            "mcp__codeoid__recall_file"} <= tool_names
    results = rig.api.tool_results()
    recalled = results[recall.id]
    assert not recalled.is_error and "header\nzebra-quartz-7731 calibration table\nfooter" in recalled.text
    opened = [result for tool_id, result in results.items() if tool_id not in (recall.id, earlier.id)]
    assert len(opened) == 1 and not opened[0].is_error
    assert f"episode {holder['id']}" in opened[0].text and marker in opened[0].text
