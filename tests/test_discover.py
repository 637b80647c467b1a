"""`codeoid discover`: over a store filled through the real hooks, the Bash output that reached the window
uncompressed is put down to the right reason, with exact byte counts, and the allow rule it names really makes
the rewrite compress that command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import executable, run_hook
from test_gain import git_repo_with_changes

from codeoid.claude_window import window_size

SESSION = "cc-discover"


class Session:
    """A Claude Code session as the hooks see it: PreToolUse decides, bash runs what it decided, PostToolUse
    stores what Claude Code would show."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.project, self.env, self.calls = project, env, 0
        assert run_hook("SessionStart", {"session_id": SESSION, "source": "startup", "cwd": str(project)},
                        env=env, cwd=project).returncode == 0

    def decide(self, command: str) -> str:
        payload = {"session_id": SESSION, "cwd": str(self.project), "hook_event_name": "PreToolUse",
                   "permission_mode": "default", "tool_name": "Bash", "tool_use_id": f"toolu_d{self.calls}",
                   "tool_input": {"command": command}}
        result = run_hook("PreToolUse", payload, env=self.env, cwd=self.project)
        assert (result.returncode, result.stderr) == (0, b"")
        return str(json.loads(result.stdout)["hookSpecificOutput"]["updatedInput"]["command"]) if result.stdout \
            else command

    def bash(self, command: str, env: dict[str, str] | None = None) -> tuple[bool, int]:
        """Run one call; whether the hook wrapped it, and the bytes the window received: stdout and stderr merged
        with the final newline dropped, replaced by the PostToolUse answer if there is one, or for a command
        that failed, `Exit code N` and the output (PostToolUseFailure, which takes no replacement)."""
        env = {**self.env, **(env or {})}
        ran = self.decide(command)
        done = subprocess.run(["/bin/bash", "-c", ran], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              cwd=self.project, env={**os.environ, **env}, timeout=300)
        output = done.stdout.decode().rstrip("\n")
        payload: dict[str, Any] = {
            "session_id": SESSION, "cwd": str(self.project), "permission_mode": "default", "tool_name": "Bash",
            "tool_use_id": f"toolu_d{self.calls}", "tool_input": {"command": ran}}
        if done.returncode:
            event, payload["error"] = "PostToolUseFailure", f"Exit code {done.returncode}\n{output}"
            shown = payload["error"]
        else:
            event, payload["tool_response"] = "PostToolUse", {"stdout": output, "stderr": "", "interrupted": False,
                                                              "isImage": False}
        answered = run_hook(event, {**payload, "hook_event_name": event}, env=env, cwd=self.project)
        assert answered.returncode == 0
        if event == "PostToolUse":
            shown = json.loads(answered.stdout)["hookSpecificOutput"]["updatedToolOutput"]["stdout"] \
                if answered.stdout else output
        self.calls += 1
        return ran != command, len(shown.encode())


@pytest.fixture
def world(tmp_path: Path, codeoid_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    project = git_repo_with_changes(tmp_path / "repo")
    tests = "".join(f"def test_ok_{index}():\n    assert True\n\n\n" for index in range(200))
    (project / "test_suite.py").write_text(tests + "def test_broken():\n    assert 1 + 1 == 3\n")
    (project / "app.log").write_text("".join(f"2026-12-01 12:00:{index % 60:02d} INFO request {index} served\n"
                                             for index in range(400)))
    home, config = tmp_path / "home", tmp_path / "claude-config"
    home.mkdir()
    config.mkdir()
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PROJECT_DIR": str(project),
           "SHELL": "/bin/bash", "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "CODEOID_HOME": str(codeoid_home),
           "CLAUDE_PID": str(os.getpid())}
    return {"project": project, "env": env, "config": config, "session": Session(project, env)}


def discover(world: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([executable("codeoid"), "discover", *args], capture_output=True, text=True,
                          cwd=world["project"], env={**os.environ, **world["env"]}, timeout=120)


def test_discover_names_each_missed_command_with_its_reason_and_bytes(world: dict[str, Any]) -> None:
    session: Session = world["session"]
    pytest_command = f"{sys.executable} -m pytest -q -p no:cacheprovider test_suite.py"
    wrapped_diff, diff_bytes = session.bash("git diff")  # read-only: compressed with no allow rule at all
    wrapped_pytest, pytest_bytes = session.bash(pytest_command)  # fails, and needs an allow rule to be wrapped
    wrapped_cat, cat_bytes = session.bash("sort app.log")  # no rule compresses sort
    wrapped_stat, stat_bytes = session.bash("set -x; git diff --stat")  # a construct, and a small output
    wrapped_status, status_bytes = session.bash("git log")  # wrapped, but one commit is too small to compress
    # Not wrapped (Claude Code would ask about -U1; `set -x` would trace the wrapper), compressed after the fact.
    wrapped_u1, u1_bytes = session.bash("git diff -U1")
    wrapped_traced, traced_bytes = session.bash("set -x; git diff")
    assert (wrapped_diff, wrapped_pytest, wrapped_cat, wrapped_stat, wrapped_status, wrapped_u1, wrapped_traced) == (
        True, False, False, False, True, False, False)

    done = discover(world, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)

    missed = pytest_bytes + cat_bytes + stat_bytes + status_bytes
    assert (report["calls"], report["compressed_calls"]) == (7, 3)
    # Within a character for the wrapped call: `codeoid-compress` counts the last newline Claude Code drops.
    assert 0 <= report["compressed_window_chars"] - (diff_bytes + u1_bytes + traced_bytes) <= 1
    assert report["window_chars"] == report["compressed_window_chars"] + missed
    assert report["missed_chars"] == missed
    failed = "not allowed by the permission rules; failed: no replacement after the fact"
    assert report["by_reason"] == dict(sorted({
        failed: pytest_bytes, "no rule": cat_bytes, "under the size floor": stat_bytes + status_bytes,
    }.items(), key=lambda item: -item[1]))
    shapes = {(shape["reason"], shape["shape"]): shape for shape in report["shapes"]}
    assert set(shapes) == {(failed, "pytest"), ("no rule", "sort"), ("under the size floor", "git diff"),
                           ("under the size floor", "git log")}
    assert [shape["bytes"] for shape in report["shapes"]] == sorted((shape["bytes"] for shape in report["shapes"]),
                                                                    reverse=True)
    not_allowed = shapes[(failed, "pytest")]
    assert not_allowed["allow_rule"] == f"Bash({sys.executable} -m pytest:*)"
    assert not_allowed["example"] == pytest_command

    # The rule it names is the one that works: with it in the user's settings, the hook compresses the command.
    (world["config"] / "settings.json").write_text(json.dumps({"permissions": {"allow": [not_allowed["allow_rule"]]}}))
    assert session.decide(pytest_command) != pytest_command


def test_discover_leaves_a_persisted_output_out_of_the_missed_and_names_what_ran_before_the_after_the_fact_one(
        world: dict[str, Any]) -> None:
    session: Session = world["session"]
    tests = "".join(f"def test_ok_{index}():\n    assert True\n\n\n" for index in range(600))
    (world["project"] / "test_many.py").write_text(tests)
    verbose = f"{sys.executable} -m pytest -v -p no:cacheprovider test_many.py"
    _, verbose_bytes = session.bash(verbose)  # passes, but over Claude Code's 30,000-character cap
    _, u1_bytes = session.bash("git diff -U1", env={"CODEOID_COMPRESS": "rewrite"})  # after the fact: off

    report = json.loads(discover(world, "--json").stdout)
    # Over Claude Code's cap: it saved the output to a file and showed the model a preview, so it is not missed.
    assert verbose_bytes >= 30_000 and report["compressed_calls"] == 0
    assert (report["persisted_calls"], report["persisted_window_chars"]) == (1, window_size(30_001))
    assert report["by_reason"] == {"compressed after the fact under today's settings": u1_bytes}
    assert report["window_chars"] == window_size(30_001) + u1_bytes
    assert report["missed_chars"] == u1_bytes

    switched = subprocess.run([executable("codeoid"), "discover", "--json"], capture_output=True, text=True,
                              cwd=world["project"], env={**os.environ, **world["env"], "CODEOID_COMPRESS": "off"},
                              timeout=120)
    assert json.loads(switched.stdout)["by_reason"] == {"switched off by CODEOID_COMPRESS": u1_bytes}
    table = discover(world).stdout
    assert "1 over Claude Code's cap it saved to a file itself, showing only a preview" in table


def test_discover_prints_a_table_a_person_reads_and_gain_points_at_it(world: dict[str, Any]) -> None:
    session: Session = world["session"]
    for _ in range(3):
        session.bash("sort app.log test_suite.py")

    table = discover(world)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("3 Bash calls put ") and "0 went through compression" in lines[0]
    assert "(100%) reached it uncompressed" in lines[1]
    row = next(line for line in lines if line.startswith("sort "))
    assert row.split()[:2] == ["sort", "3"] and row.endswith("no rule")

    gain = subprocess.run([executable("codeoid"), "gain"], capture_output=True, text=True, cwd=world["project"],
                          env={**os.environ, **world["env"]}, timeout=60)
    assert gain.returncode == 0
    assert "reached it uncompressed: `codeoid discover` says which commands and why." in gain.stdout


def test_discover_with_nothing_stored_says_so(world: dict[str, Any]) -> None:
    done = discover(world)
    assert (done.returncode, done.stdout.strip()) == (0, "No Bash call is stored here yet.")
