"""A new user's first session, with the real CLI: from a fresh copy of the checkout and a private HOME,
`./install.sh`, then Claude Code in the checkout itself and in another project, both with codeoid's four memory
tools and a recall that answers; `codeoid --version` from any folder; `codeoid uninstall` leaving no codeoid,
Chroma or memory-service process and the user's files as they were. And the plugin route: a marketplace install
copies the plugin and nothing else, and the plugin still works, from that copy too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from codeoid.setup import processes

from .fake_anthropic import Reply, ToolUse, bash
from .rig import REPO_ROOT, ClaudeRig, RunResult

MEMORY_TOOLS = ("recall", "recall_file", "timeline", "get_episode")


def fresh_checkout(destination: Path) -> Path:
    """The checkout as a clone would have it, with this work tree's edits: its tracked and unignored files (no
    .venv, no .tools), in a git repository of its own."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if not source.is_file():
            continue  # deleted in the work tree, not yet committed
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@codeoid.invalid", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "clone"]):
        subprocess.run([*git, *args], cwd=destination, check=True, capture_output=True)
    return destination


def memory_tool_names(run: RunResult, prefix: str) -> set[str]:
    offered = {tool["name"] for tool in run.main_requests[0].body.get("tools", [])}
    return {name for name in offered if name.startswith(prefix)}


def remember_then_recall(rig: ClaudeRig, folder: Path, marker: str, *extra_args: str,
                         prefix: str = "mcp__codeoid__", env: dict[str, str] | None = None) -> RunResult:
    """One session prints `marker`; the next asks recall for it. Returns the second run."""
    rig.api.add(Reply([bash(f"echo '{marker}'")]), "Printed it.")
    first = rig.run("print the marker", *extra_args, cwd=folder, env=env)
    assert first.exit_code == 0, first.describe()
    recall = ToolUse(name=f"{prefix}recall", input={"query": marker.replace("-", " ")})
    rig.api.add(Reply([recall]), "Found it.")
    second = rig.run("what was the marker?", *extra_args, cwd=folder, env=env)
    assert second.exit_code == 0, second.describe()
    assert memory_tool_names(second, prefix) == {prefix + tool for tool in MEMORY_TOOLS}, second.describe()
    answer = rig.api.tool_results()[recall.id]
    assert not answer.is_error and marker in answer.text, answer.text
    return second


def _codeoid_state(home: Path) -> dict[str, Any]:
    """What of the user's own files codeoid may touch: settings, the MCP servers in ~/.claude.json, the bin dir
    and the commands folder (Claude Code itself writes the rest of ~/.claude.json and ~/.claude)."""
    settings = home / ".claude" / "settings.json"
    state = json.loads((home / ".claude.json").read_text())
    folders = [home / ".local" / "bin", home / ".claude" / "commands"]
    user_settings = json.loads(settings.read_text()) if settings.exists() else None
    if user_settings is not None:
        user_settings.pop("skipDangerousModePermissionPrompt", None)  # Claude Code's, for the rig's flag
    return {
        "settings": user_settings,
        "user servers": state.get("mcpServers"),
        "local servers": {key: value.get("mcpServers") for key, value in state.get("projects", {}).items()},
        "files": {str(folder): sorted(path.name for path in folder.iterdir()) if folder.exists() else None
                  for folder in folders},
    }


@pytest.mark.e2e
@pytest.mark.slow
def test_install_sh_then_claude_in_the_checkout_and_elsewhere_has_memory_and_uninstall_leaves_nothing(
        rig: ClaudeRig, tmp_path: Path) -> None:
    checkout = fresh_checkout(tmp_path / "codeoid")
    rig.trust(checkout)
    # The user's world before: another tool's allow rule, hook and MCP server.
    rig.write_settings({"permissions": {"allow": ["Bash(git status:*)"]},
                        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}})
    state = json.loads((rig.home / ".claude.json").read_text())
    state["mcpServers"] = {"github": {"type": "stdio", "command": "/nonexistent/gh-mcp", "args": []}}
    (rig.home / ".claude.json").write_text(json.dumps(state, indent=2))
    before = _codeoid_state(rig.home)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "claude").symlink_to(rig.claude_bin)
    # No venv on this PATH, as in a new user's shell; the test's own venv takes the install (it holds every
    # dependency already, so pip reinstalls codeoid alone, from the copy).
    user_env = {**rig.env, "CODEOID_VENV": sys.prefix,
                "PATH": os.pathsep.join([str(tools), "/usr/local/bin", "/usr/bin", "/bin"])}

    installed = subprocess.run([str(checkout / "install.sh")], cwd=checkout, env=user_env, capture_output=True,
                               text=True, timeout=900, stdin=subprocess.DEVNULL)

    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    assert "[fail]" not in installed.stdout, installed.stdout
    linked = rig.home / ".local" / "bin" / "codeoid"
    for folder in (checkout, rig.project, Path("/")):
        shown = subprocess.run([str(linked), "--version"], cwd=folder, env=user_env, capture_output=True,
                               text=True, timeout=60)
        assert shown.returncode == 0 and shown.stdout.split()[-1] == version("codeoid"), shown.stderr

    remember_then_recall(rig, checkout, "walrus-quartz-4417 in the checkout", env=user_env)
    remember_then_recall(rig, checkout / "codeoid" / "memory", "heron-basalt-2290 below it", env=user_env)
    remember_then_recall(rig, rig.project, "otter-gneiss-8803 in another project", env=user_env)
    doctor = subprocess.run([str(linked), "doctor"], cwd=checkout, env=user_env, capture_output=True, text=True,
                            timeout=120)
    assert "[fail]" not in doctor.stdout and "hides codeoid's" in doctor.stdout, doctor.stdout
    assert processes.background_processes(str(rig.codeoid_home)), "recall started no memory service"

    removed = subprocess.run([str(linked), "uninstall"], cwd=checkout, env=user_env, capture_output=True, text=True,
                             timeout=120)

    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "no codeoid background process is left" in removed.stdout
    assert processes.background_processes(str(rig.codeoid_home)) == []
    left = [(process.pid, process.cmdline()) for process in rig.own_processes()]
    assert left == [], left
    assert _codeoid_state(rig.home) == before
    assert f"Still here: the data dir {rig.codeoid_home}" in removed.stdout


@pytest.mark.e2e
@pytest.mark.slow
def test_a_marketplace_install_copies_only_the_plugin_which_works_from_that_copy(rig: ClaudeRig,
                                                                                 tmp_path: Path) -> None:
    checkout = fresh_checkout(tmp_path / "codeoid")
    (checkout / ".venv" / "bin").mkdir(parents=True)  # a checkout that ran ./install.sh has these
    (checkout / ".tools").mkdir()

    def plugin(*args: str) -> str:
        done = subprocess.run([rig.claude_bin, "plugin", *args], cwd=rig.project, env=rig.env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    plugin("marketplace", "add", str(checkout))
    plugin("install", "codeoid@codeoid")
    (record,) = json.loads((rig.home / ".claude" / "plugins" / "installed_plugins.json").read_text())[
        "plugins"]["codeoid@codeoid"]
    cache = Path(record["installPath"])
    copied = sorted(str(path.relative_to(cache)) for path in cache.rglob("*") if path.is_file())
    assert copied == [".claude-plugin/plugin.json", "commands/gain.md", "commands/recall.md", "commands/rotate.md",
                      "hooks/hooks.json", "hooks/launch"]
    assert sum((cache / name).stat().st_size for name in copied) < 64 * 1024

    # Installed from a local folder, the plugin runs from it (Claude Code's plugin root is the source folder):
    # its hooks store the session and its server answers under the plugin's names.
    prefix = "mcp__plugin_codeoid_codeoid__"
    remember_then_recall(rig, rig.project, "lynx-schist-5150 through the plugin", prefix=prefix)

    # The cache copy alone, as a marketplace from a remote repository runs it: no venv beside it and none on
    # PATH, the package reached only through the links `codeoid install --links-only` put in ~/.local/bin.
    plugin("uninstall", "codeoid@codeoid")
    copy = shutil.copytree(cache, tmp_path / "slim" / "codeoid")
    links = subprocess.run([str(Path(sys.executable).parent / "codeoid"), "install", "--links-only"],
                           env=rig.env, capture_output=True, text=True, timeout=60)
    assert links.returncode == 0, links.stderr
    bare = {**rig.env, "PATH": os.pathsep.join(["/usr/local/bin", "/usr/bin", "/bin"])}
    remember_then_recall(rig, rig.project, "ibis-marble-7002 from the slim copy", "--plugin-dir", str(copy),
                         prefix=prefix, env=bare)
