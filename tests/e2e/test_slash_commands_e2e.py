"""codeoid's slash commands in the real Claude Code: `/gain` runs `codeoid gain` through the command file's `!`
expansion and `/recall` asks for the recall tool, on the settings route (`codeoid install`) and the plugin route
(`--plugin-dir plugin/`, whose launcher finds the installed package)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fake_anthropic import last_user_text
from .rig import ClaudeRig

REPO = Path(__file__).resolve().parents[2]


def prompt_sent(rig: ClaudeRig, prompt: str, *extra_args: str) -> str:
    """What the model received as the user's message for `prompt` (a slash command, expanded by Claude Code)."""
    rig.api.add("Done.")
    done = rig.run(prompt, *extra_args, allow_all=False)
    assert done.exit_code == 0, done.describe()
    return last_user_text(done.main_requests[0].body)


@pytest.mark.e2e
def test_gain_and_recall_on_the_settings_route(rig: ClaudeRig) -> None:
    rig.install_codeoid()
    sent = prompt_sent(rig, "/gain")
    # `codeoid gain` ran without asking (allowed-tools), and its answer is in the message, not the command text.
    assert "codeoid's savings ledger" in sent and "No compressed output is recorded here since then." in sent, sent
    assert "!`" not in sent

    sent = prompt_sent(rig, "/recall walrus migration")
    assert "mcp__codeoid__recall" in sent and "for: walrus migration" in sent


@pytest.mark.e2e
def test_gain_on_the_plugin_route_runs_the_installed_codeoid_through_the_launcher(rig: ClaudeRig) -> None:
    sent = prompt_sent(rig, "/codeoid:gain", "--plugin-dir", str(REPO / "plugin"))
    assert "codeoid's savings ledger" in sent and "No compressed output is recorded here since then." in sent, sent
