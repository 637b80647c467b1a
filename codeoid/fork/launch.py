"""What a backend translator hands back (how to start the forked session, which files it wrote), and the small
pieces the Codex and Gemini translators share.

The translators (`codeoid.fork.codex`, `codeoid.fork.gemini`) write the starting history in the backend's own
format and return a `Launch`; the `codeoid fork` command runs it. Nothing is started here, so a translator can be
tested without the agent CLI installed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path


@dataclass(frozen=True)
class McpServer:
    """codeoid's stdio MCP server as the forked session must start it (`command` is an absolute path)."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Launch:
    """Run `argv` in `cwd` with `env` added to the caller's environment.

    `session_id` is the backend's id for the new session where codeoid chose it (Codex); None where the backend
    mints its own at start (Gemini imports the history under a fresh id). `files` lists what was written for this
    fork alone (removed again if the fork cannot be recorded); `edited`, the user's settings changed to register
    codeoid's MCP server, which are kept: the registration serves every later fork too.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    files: tuple[Path, ...]
    session_id: str | None
    edited: tuple[Path, ...] = ()


def timestamp(when: datetime) -> str:
    """`when` the way both Codex and Gemini stamp their records: UTC, milliseconds, a `Z` suffix."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def mcp_tool(name: str) -> tuple[str, str] | None:
    """`(server, tool)` for a Claude Code MCP tool name (`mcp__codeoid__recall`), None for any other tool.

    Each backend names MCP tools its own way (Codex: tool `recall` in namespace `mcp__codeoid`; Gemini:
    `mcp_codeoid_recall`); a forked call written the backend's way matches the tool that backend now offers.
    """
    prefix, _, rest = name.partition("__")
    server, _, tool = rest.rpartition("__")
    if prefix != "mcp" or not server or not tool:
        return None
    return server, tool
