"""`./install.sh` as a script, a container or CI runs it: no terminal. It installs, registers codeoid with the real
Claude Code, says what to do next and exits 0, instead of starting an interactive `claude` that cannot run; and
pip's own progress lines show while it works, instead of a minute of silence."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_install_sh_without_a_terminal_installs_registers_and_says_how_to_start_claude(tmp_path: Path) -> None:
    claude = os.environ.get("CODEOID_CLAUDE_BIN") or shutil.which("claude")
    if not claude:
        pytest.skip("no claude binary: set CODEOID_CLAUDE_BIN (./test.sh does)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(claude)
    home = tmp_path / "home"
    home.mkdir()
    # The test's own venv: already holding every dependency, so pip reinstalls codeoid alone (the same source).
    env = {**os.environ, "HOME": str(home), "CODEOID_HOME": str(tmp_path / "codeoid-home"),
           "CODEOID_VENV": sys.prefix, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([str(REPO / "install.sh")], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env, timeout=600)

    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Installing codeoid and its dependencies" in out
    assert "Successfully installed codeoid" in out  # pip's own report, not silenced
    assert "codeoid is set up for Claude Code (settings route)" in out
    linked = home / ".local" / "bin" / "codeoid"
    assert linked.is_symlink() and linked.resolve() == (Path(sys.prefix) / "bin" / "codeoid").resolve()
    # That folder is not on this PATH: the installer says so, and says how, and its next steps name the full path.
    assert f"{home}/.local/bin is not on your PATH" in out and 'export PATH="$HOME/.local/bin:$PATH"' in out
    assert f"{linked} run" in out
    assert "No terminal here, so Claude Code is not started: run `claude` in a terminal." in out
    assert "Input must be provided" not in out + done.stderr
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "SessionStart" in settings["hooks"]
    assert (home / ".claude" / "commands" / "gain.md").is_file()
