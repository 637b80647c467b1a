"""Fixtures for end-to-end tests: a running fake Anthropic API and a `ClaudeRig` wired to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .fake_anthropic import FakeAnthropic
from .rig import ClaudeRig, find_claude


@pytest.fixture(scope="session")
def claude_bin() -> str:
    """The claude binary, or a skip that says how to provide one."""
    found = find_claude()
    if found is None:
        pytest.skip("no claude binary: set CODEOID_CLAUDE_BIN, install into .tools/, or put claude on PATH")
    return found


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    """A fake API with an empty script; the server is always shut down, even when the test fails."""
    with FakeAnthropic() as api:
        yield api


@pytest.fixture
def rig(tmp_path: Path, fake_api: FakeAnthropic, claude_bin: str) -> Iterator[ClaudeRig]:
    """An isolated HOME, project and CODEOID_HOME wired to `fake_api`; leftover processes die at teardown."""
    world = ClaudeRig(tmp_path, fake_api, claude_bin)
    try:
        yield world
    finally:
        world.close()
