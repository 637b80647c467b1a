"""The `codeoid` commands that do not search stay light: the installed console script, run as Claude Code and a user
run it, never loads the search stack, Chroma, an HTTP client or psutil (`codeoid --version` and the status line run
all the time; the status line on every prompt). Each command runs in a fresh interpreter under `-X importtime`,
which names every module the process imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import executable

HEAVY = ("codeoid.memory.retrieval", "codeoid.memory.vector_index", "codeoid.memory.chroma_server",
         "codeoid.memory.embedding", "codeoid.memory.hits", "chromadb", "http.client", "httpx", "psutil",
         "onnxruntime", "tokenizers", "numpy")


def imported(tmp_path: Path, *args: str, stdin: str = "") -> set[str]:
    """Every module `codeoid ARGS` imported, by name."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    done = subprocess.run([sys.executable, "-X", "importtime", executable("codeoid"), *args], input=stdin,
                          capture_output=True, text=True, cwd=project, timeout=60,
                          env={**os.environ, "CODEOID_HOME": str(tmp_path / "home"), "CODEOID_VECTOR": "off"})
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def heavy(modules: set[str]) -> set[str]:
    return {name for name in modules if any(name == bad or name.startswith(bad + ".") for bad in HEAVY)}


@pytest.mark.parametrize("args", [
    ("--version",), ("statusline",), ("sessions", "--all-workspaces"), ("timeline", "--all-workspaces"),
    ("gain", "--all-workspaces"), ("exclude", "--list"), ("show", "--help"),
])
def test_commands_that_do_not_search_import_no_search_stack_chroma_http_or_psutil(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    modules = imported(tmp_path, *args, stdin="{}")

    assert "codeoid.cli" in modules  # the measurement sees the command's own imports
    assert heavy(modules) == set()


def test_version_and_status_line_do_not_even_open_the_capture_layer(tmp_path: Path) -> None:
    for args in (("--version",), ("statusline",)):
        assert not {name for name in imported(tmp_path, *args, stdin="{}") if name.startswith("codeoid.capture")}


def test_a_search_does_load_retrieval(tmp_path: Path) -> None:
    """The control: the same measurement sees the search stack when a command needs it."""
    modules = imported(tmp_path, "search", "anything", "--all-workspaces")

    assert {"codeoid.memory.retrieval", "codeoid.memory.hits"} <= modules
