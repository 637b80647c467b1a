"""Every file codeoid writes is private, after a session like a real one and under an ordinary umask.

The run goes through the real entry points in fresh processes: `codeoid install`, the hooks (with a Bash call
that the PreToolUse rewrite compresses, which writes the rule cache and the bash-version marker), the rewritten
command under real bash (so `codeoid-compress` archives its raw output), the capture of its result, and the MCP
server answering `timeline` and `recall` over the SDK's stdio client. Then the data dir is walked: any mode wider
than 0600 for a file or 0700 for a directory fails, and `codeoid doctor` must stay green.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import executable
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


@pytest.fixture
def session_env(tmp_path: Path, codeoid_home: Path, project: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    (project / "notes.txt").write_text("".join(f"line {index} of the notes\n" for index in range(400)))
    subprocess.run(["git", "-C", str(project), "add", "notes.txt"], check=True)
    subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "n"],
                   check=True)
    (project / "notes.txt").write_text("".join(f"line {index} changed\n" for index in range(400)))
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CLAUDE_PID": str(os.getpid()),
            "CLAUDE_PROJECT_DIR": str(project), "SHELL": "/bin/bash", "CODEOID_VECTOR": "off"}


def under_umask(argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b"") -> bytes:
    """Run `argv` as a user with the common umask 022 would, returning its stdout; it must succeed quietly."""
    result = subprocess.run(["sh", "-c", 'umask 022; exec "$@"', "sh", *argv], input=stdin, capture_output=True,
                            timeout=120, env=env, cwd=cwd)
    assert result.returncode == 0, (argv, result.stderr[-2000:])
    return result.stdout


def hook(event: str, payload: dict[str, Any], env: dict[str, str], cwd: Path) -> bytes:
    body = {"session_id": "cc-1", "cwd": str(cwd), "hook_event_name": event, **payload}
    return under_umask([executable("codeoid-hook"), event], env, cwd, json.dumps(body).encode())


async def ask_the_server(env: dict[str, str], cwd: Path) -> list[str]:
    parameters = StdioServerParameters(command=executable("codeoid-mcp"), env=env, cwd=str(cwd))
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        answers = []
        for name, arguments in (("timeline", {}), ("recall", {"query": "notes changed"})):
            result = await session.call_tool(name, arguments)
            answers.append("".join(getattr(part, "text", "") for part in result.content))
        return answers


def wider_than_private(root: Path) -> list[str]:
    problems = []
    for path in [root, *root.rglob("*")]:
        status = path.lstat()
        wanted = 0o700 if stat.S_ISDIR(status.st_mode) else 0o600
        if stat.S_IMODE(status.st_mode) & ~wanted:
            problems.append(f"{path.relative_to(root)}: {stat.S_IMODE(status.st_mode):04o}")
    return problems


def test_a_session_with_a_compressed_bash_call_leaves_only_private_files(codeoid_home: Path, project: Path,
                                                                        session_env: dict[str, str]) -> None:
    env = session_env
    under_umask([executable("codeoid"), "install"], env, project)
    hook("SessionStart", {"source": "startup"}, env, project)
    hook("UserPromptSubmit", {"prompt": "what changed in the notes?", "prompt_id": "p-1"}, env, project)
    answer = json.loads(hook("PreToolUse", {"permission_mode": "bypassPermissions", "tool_name": "Bash",
                                            "tool_use_id": "toolu_1", "tool_input": {"command": "git diff"}},
                             env, project))
    rewritten = answer["hookSpecificOutput"]["updatedInput"]["command"]
    shown = under_umask(["bash", "-c", rewritten], env, project).decode()
    assert "[codeoid]" in shown  # compressed: the raw output went into the archive first
    hook("PostToolUse", {"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": rewritten},
                         "tool_response": {"stdout": shown, "stderr": "", "interrupted": False}}, env, project)
    under_umask([executable("codeoid-compress"), "--command", "git diff"], env, project,
                subprocess.run(["git", "diff"], cwd=project, capture_output=True, check=True).stdout)
    timeline, recall = anyio.run(ask_the_server, env, project)
    assert "toolu_1" in timeline or "git diff" in timeline
    assert "notes" in recall

    cache = sorted(path.name for path in (codeoid_home / "cache").iterdir())
    assert any(name.startswith("rules-") for name in cache) and any(name.startswith("bash-") for name in cache)
    assert wider_than_private(codeoid_home) == []
    doctor = subprocess.run([executable("codeoid"), "doctor"], capture_output=True, text=True, env=env, cwd=project,
                            timeout=120)
    assert "readable by others" not in doctor.stdout, doctor.stdout
    assert doctor.returncode == 0, doctor.stdout
