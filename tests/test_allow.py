"""`codeoid allow`: the one route to compressing a command Claude Code asks about (a failing test run too), taken
on the user's word. `codeoid discover` and `codeoid doctor` name the rule and the share of the window it would let
codeoid compress; `codeoid allow` validates it, asks, keeps a backup, and adds it once."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import test_discover
from conftest import executable
from test_discover import Session

world = test_discover.world  # the fixture: real hooks filling a real store


def codeoid(world: dict[str, Any], *args: str, answer: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([executable("codeoid"), *args], capture_output=True, text=True, input=answer,
                          cwd=world["project"], env={**os.environ, **world["env"]}, timeout=180)


def test_a_failing_run_the_user_allows_is_compressed_in_the_default_mode(world: dict[str, Any]) -> None:
    session: Session = world["session"]
    command = f"{sys.executable} -m pytest -v -p no:cacheprovider test_suite.py"
    rule = f"Bash({sys.executable} -m pytest:*)"
    wrapped, raw_bytes = session.bash(command)
    assert not wrapped  # Claude Code would ask: codeoid leaves it alone, and a failure takes no later replacement

    report = json.loads(codeoid(world, "discover", "--json").stdout)
    (named,) = report["allow_rules"]
    assert (named["rule"], named["calls"], named["failed_calls"], named["bytes"]) == (rule, 1, 1, raw_bytes)
    assert named["share"] == round(raw_bytes / report["window_bytes"], 4)
    assert f"codeoid allow {shlex.quote(rule)}" in codeoid(world, "discover").stdout
    doctor = json.loads(codeoid(world, "doctor", "--json").stdout)
    assert any(rule in finding["sentence"] and "codeoid allow" in finding["sentence"] for finding in doctor)

    settings = world["config"] / "settings.json"
    settings.write_text(json.dumps({"model": "opus", "permissions": {"allow": ["Bash(git status)"]}}))
    declined = codeoid(world, "allow", rule, answer="n\n")
    assert declined.returncode == 0 and "Nothing changed." in declined.stdout
    assert json.loads(settings.read_text())["permissions"]["allow"] == ["Bash(git status)"]

    added = codeoid(world, "allow", rule, answer="y\n")
    assert added.returncode == 0, added.stderr
    assert json.loads(settings.read_text()) == {"model": "opus",
                                                "permissions": {"allow": ["Bash(git status)", rule]}}
    (backup,) = world["config"].glob("settings.json.codeoid-backup-*")
    assert json.loads(backup.read_text())["permissions"]["allow"] == ["Bash(git status)"]
    again = codeoid(world, "allow", rule, "--yes")
    assert "already allowed" in again.stdout and len(list(world["config"].glob("settings.json.*"))) == 1

    wrapped, compressed_bytes = session.bash(command)
    assert wrapped and compressed_bytes < raw_bytes / 2  # the failure itself now reaches the window compressed


@pytest.mark.parametrize("rule", ["Bash", "Bash(*)", "Read(./src/**)", "Bash(git * main)", "pytest", "Bash()"])
def test_rules_codeoid_does_not_add_are_refused(world: dict[str, Any], rule: str) -> None:
    refused = codeoid(world, "allow", rule, "--yes")
    assert refused.returncode == 2 and "RULE" in refused.stderr
    assert not (world["config"] / "settings.json").exists()


def test_the_project_scopes_write_the_projects_files(world: dict[str, Any]) -> None:
    for scope, name in (("project", "settings.json"), ("local", "settings.local.json")):
        done = codeoid(world, "allow", "Bash(npm test:*)", "--yes", "--scope", scope)
        assert done.returncode == 0, done.stderr
        path: Path = world["project"] / ".claude" / name
        assert json.loads(path.read_text()) == {"permissions": {"allow": ["Bash(npm test:*)"]}}
