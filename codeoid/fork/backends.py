"""The agent CLIs a session can be forked onto: their binaries, and the npm package that installs each."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Backend:
    name: str
    binary: str
    env_override: str  # names a binary to use instead of the one on PATH
    npm_package: str


BACKENDS = {
    "claude": Backend("claude", "claude", "CODEOID_CLAUDE_BIN", "@anthropic-ai/claude-code"),
    "codex": Backend("codex", "codex", "CODEOID_CODEX_BIN", "@openai/codex"),
    "gemini": Backend("gemini", "gemini", "CODEOID_GEMINI_BIN", "@google/gemini-cli"),
}


class BackendMissing(LookupError):
    """The backend's CLI is not installed; the message names the package that installs it."""


def find_binary(name: str) -> str:
    """The backend CLI to run: the override variable's value, else the binary on PATH."""
    backend = BACKENDS[name]
    found = os.environ.get(backend.env_override) or shutil.which(backend.binary)
    if found is None:
        raise BackendMissing(f"{backend.binary} is not on PATH: install it (npm install -g {backend.npm_package}) "
                             f"or set {backend.env_override}.")
    return found
