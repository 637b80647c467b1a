"""The one contract `create_fork` drives every backend through, and the three backends that fill it.

The translators themselves (`claude`, `codex`, `gemini`) write a starting history in their backend's own format.
What `create_fork` needs besides is small and differs per backend: how the backend names codeoid's memory tools
(the fork notice names them), which window to assume when none is given, and what the start it gets back wrote.
Claude Code resumes a transcript that opens with the notice as a block of its own and is started by codeoid
(under the supervisor, or `claude -p`); Codex and Gemini get the notice at the head of the first prompt and are
started by running the `Launch` they return. codeoid has no hooks in Codex or Gemini: their own new turns are
read back from the CLI's session record after it exits (`codeoid.fork.capture`), and they can recall codeoid's
memory through its MCP server.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from codeoid.fork import claude, codex, gemini
from codeoid.fork.launch import Launch, McpServer
from codeoid.fork.seed import with_notice
from codeoid.fork.turns import Turn
from codeoid.rotation.occupancy import fallback_window
from codeoid.rotation.supervisor import SESSION_ENV
from codeoid.setup.claude_files import locate_claude_files
from codeoid.setup.hook_table import MCP_EXECUTABLE, MCP_SERVER_NAME, installed_executable

Start = claude.ClaudeStart | Launch

# The window assumed for Codex and Gemini without --window: below their default models' (gpt-5-codex takes 272k
# tokens of input, Gemini 2.5 and later 1M), so the history (at most half of it, 100k tokens) leaves room to work
# even on a smaller model the user has configured.
AGENT_DEFAULT_WINDOW = 200_000


@dataclass(frozen=True)
class Target:
    """Where and how the fork starts, the same for every backend."""

    project_dir: str
    binary: str
    parent_model: str | None  # the model the parent ran (Claude Code's transcript names one on its answers)
    prompt: str | None  # --print: a headless start with this prompt
    # The user's home, for Claude Code's files (None: the real one). Codex and Gemini find theirs themselves
    # (CODEX_HOME, GEMINI_CLI_HOME), as the CLIs the fork starts do.
    home: Path | None


class Translator(Protocol):
    def tool_prefix(self, wired: str) -> str:
        """What precedes a memory tool's bare name (`recall`) in this backend; `wired` is Claude Code's."""

    def default_window(self, model: str | None) -> int:
        """The window to assume when --window is not given."""

    def prepare(self, kept: list[Turn], notice: str, target: Target) -> Start:
        """Write what the backend starts from; the start lists what it wrote."""


def written_files(start: Start) -> tuple[Path, ...]:
    """What a start wrote for this fork alone: removed again if the fork cannot be recorded."""
    if isinstance(start, Launch):
        return start.files
    return () if start.transcript_path is None else (start.transcript_path,)


class ClaudeTranslator:
    def tool_prefix(self, wired: str) -> str:
        return wired

    def default_window(self, model: str | None) -> int:
        return fallback_window(model)

    def prepare(self, kept: list[Turn], notice: str, target: Target) -> Start:
        config_dir = locate_claude_files(target.home or Path.home()).config_dir
        return claude.prepare(kept, notice, config_dir=config_dir, project_dir=target.project_dir,
                              model=target.parent_model)


@dataclass(frozen=True)
class AgentTranslator:
    """Codex or Gemini: a translator whose `prepare` writes the history and returns the `Launch` that starts it."""

    write: Callable[..., Launch]  # codex.prepare or gemini.prepare
    mcp_prefix: str

    def tool_prefix(self, wired: str) -> str:
        return self.mcp_prefix

    def default_window(self, model: str | None) -> int:
        return AGENT_DEFAULT_WINDOW

    def prepare(self, kept: list[Turn], notice: str, target: Target) -> Start:
        return self.write(with_notice(notice, kept), cwd=Path(target.project_dir), mcp=codeoid_mcp(),
                          prompt=target.prompt, binary=target.binary)


def codeoid_mcp() -> McpServer:
    """codeoid's MCP server from this installation, with the codeoid settings of the command that forks
    (`CODEOID_HOME`, `CODEOID_VECTOR`, ...): Codex passes its servers only an allow-list of its environment, so
    they go in explicitly. Left out: the id of a session codeoid's supervisor runs (not the fork's) and the agent
    CLI overrides (`CODEOID_*_BIN`), which the server never reads and Gemini would keep in the user's settings."""
    settings = {name: value for name, value in os.environ.items()
                if name.startswith("CODEOID_") and name != SESSION_ENV and not name.endswith("_BIN")}
    return McpServer(installed_executable(MCP_EXECUTABLE), env=settings)


TRANSLATORS: dict[str, Translator] = {
    "claude": ClaudeTranslator(),
    # Codex offers an MCP server's tools as a namespace, `mcp__codeoid`, and its models address a namespaced tool
    # as `namespace.tool`; Gemini names them `mcp_<server>_<tool>`.
    "codex": AgentTranslator(codex.prepare, f"mcp__{MCP_SERVER_NAME}."),
    "gemini": AgentTranslator(gemini.prepare, f"mcp_{MCP_SERVER_NAME}_"),
}
