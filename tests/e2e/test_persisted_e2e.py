"""Acceptance for results Claude Code saves to a file, through the real `claude` CLI: a success of 30,000
characters or more reaches the model as a `<persisted-output>` note with a 2 KB preview, and PostToolUse is handed
its first 30,000 characters and the file's path. codeoid stores the whole file: a needle in the middle of a 200 KB
output no rule compresses is found by recall and paged back byte-exact; and the after-the-fact compression shows
the model a view of the whole file (its counts right), never of the preview.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .fake_anthropic import Reply, Text, ToolUse, bash
from .rig import ClaudeRig
from .test_after_compression_e2e import raw_outputs, show_raw
from .test_compression_e2e import episodes, model_text, results_by_id

NEEDLE = "FATAL needle-7f3a: disk quota exceeded on /var/lib/zeppelin"
LINES = 4000


def service_log() -> str:
    return "".join((NEEDLE if n == LINES // 2 else f"2026-12-02T10:{n % 60:02d} worker {n} heartbeat ok {'.' * 20}")
                   + "\n" for n in range(1, LINES + 1))


@pytest.mark.e2e
def test_a_needle_in_the_middle_of_a_200_kb_output_is_recalled_and_paged_back_exactly(rig: ClaudeRig) -> None:
    log = service_log()
    assert len(log) > 190_000
    (rig.project / "service.log").write_text(log)
    rig.install_codeoid()
    call = bash("tail -n +1 service.log")
    found: dict[str, Any] = {}

    def recall(body: dict[str, Any]) -> Reply:
        return Reply([ToolUse(name="mcp__codeoid__recall", input={"query": "disk quota exceeded zeppelin"})])

    def page_the_needle(body: dict[str, Any]) -> Reply:
        """As recall teaches: the hit's episode and line, through get_episode."""
        text = next(result.text for tool_id, result in rig.api.tool_results().items()
                    if tool_id not in (call.id,) and "=== episode" in result.text)
        hit = re.search(r"=== episode (\d+).*?\n(?:.*\n)*?(\d+): " + re.escape(NEEDLE), text)
        assert hit is not None, text
        found.update(episode=int(hit.group(1)), line=int(hit.group(2)))
        wanted = f"{found['line'] - 1}-{found['line'] + 1}"
        return Reply([ToolUse(name="mcp__codeoid__get_episode",
                              input={"episode_id": found["episode"], "lines": wanted})])

    rig.api.add(Reply([call]), recall, page_the_needle, Reply([Text("done")]))
    run = rig.run("why did the service stop?", timeout=300)
    assert run.exit_code == 0, run.describe()
    rig.api.assert_script_consumed()

    shown = results_by_id(run)[call.id]
    assert "<persisted-output>" in shown.text and NEEDLE not in shown.text  # Claude Code's own note, unchanged
    stored = episodes(rig)[call.id]
    assert stored["text"] == log and stored["cut"] is None
    assert show_raw(rig, f"raw-{call.id}") == log.encode()
    assert found == {"episode": stored["id"], "line": LINES // 2}
    paged = [result for result in rig.api.tool_results().values() if "text: lines" in result.text]
    assert len(paged) == 1, paged
    lines = log.split("\n")
    assert "\n-----\n" + "\n".join(lines[LINES // 2 - 2:LINES // 2 + 1]) + "\n-----" in paged[0].text


@pytest.mark.e2e
def test_the_model_reads_a_compressed_view_of_the_whole_persisted_file(rig: ClaudeRig) -> None:
    """A 240 KB grep, 7,500 hits in 300 files, with the rewrite switched off: Claude Code alone shows a 2 KB preview
    of its head; the after-the-fact compression replaces that with the count of the whole file."""
    rig.env["CODEOID_COMPRESS"] = "after"
    source = rig.project / "src"
    source.mkdir()
    for index in range(1, 301):
        (source / f"m{index:03d}.py").write_text("".join(f"needle_value = {n}\n" for n in range(1, 26)))
    rig.install_codeoid()
    call = bash("grep -rn needle_ src")
    rig.api.add(Reply([call]), Reply([Text("done")]))
    run = rig.run("where is needle_value set?", timeout=300)
    assert run.exit_code == 0, run.describe()
    rig.api.assert_script_consumed()

    shown = model_text(results_by_id(run)[call.id])
    assert "<persisted-output>" not in shown, shown[:500]
    assert shown.startswith("[codeoid] 7500 hits in 300 files:"), shown[:500]
    assert len(shown) < 20_000
    stored = raw_outputs(rig)[f"raw-{call.id}"]
    whole = sum(len(f"src/m{index:03d}.py:{n}:needle_value = {n}\n") for index in range(1, 301) for n in range(1, 26))
    assert (stored["rule"], stored["stdout_size"]) == ("search", whole)  # the whole file, final newline included
    assert show_raw(rig, f"raw-{call.id}").count(b"\n") == 7500
