"""Acceptance for the Bash rewrite, through the real `claude` CLI: the same results with codeoid as without it,
the same permission decisions, and a large failing test run compressed with its raw stdout kept byte-exact.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codeoid.compressors import bash_wrapper

from .fake_anthropic import Reply, Text, ToolResult, ToolUse, bash
from .rig import ClaudeRig, RunResult

CODEOID = str(Path(sys.executable).parent / "codeoid")
# A project rule so that every scenario command has one (no rule: no rewrite); it removes nothing from outputs
# this small, so what the model sees must be exactly what it sees without codeoid.
SCENARIO_RULES = """
[[rule]]
name = "e2e-scenario"
match = { program = ["pwd", "ls", "exit", "sort", "cat", "echo", "false", "wc", "seq"] }
"""
SEQ_RULES = """
[[rule]]
name = "e2e-seq"
match = { program = ["seq"] }
head = 5
tail = 3
"""

SCENARIO = [
    "mkdir -p sub && cd sub && pwd",
    "pwd",
    "cd .. && echo back; pwd",
    "ls /no/such/dir",
    "echo out; ls /no/such/dir; exit 3",
    "printf 'c\\nb\\na\\n' | sort",
    "cat <<'EOF'\n$HOME stays as typed\nEOF",
    "x=6; cat <<EOF\nsix times seven is $((x*7))\nEOF",
    "f() { echo in-f \"$1\"; return 4; }; f arg; echo status=$?",
    "(cd /tmp && pwd); echo after-subshell",
    "false",
    "set -e; false; echo after-false",
    "echo \"a 'quoted' \\\"word\\\"\"\necho 'multi\nline'",
    "seq 1 30 | wc -l",
    "echo bye; exit 0",
    "echo to-stderr >&2; echo to-stdout",
    "echo out1; ls missing; echo out2",
    "echo $LINENO\nls /no/such/path\necho $LINENO; exit 2",
]
# Moving stdout into a file is a reason for the rewrite to step aside; the result is the same.
PASSED_THROUGH = ["echo to-file > out.txt; cat out.txt"]


def write_rules(rig: ClaudeRig, text: str) -> None:
    rules = rig.project / ".codeoid" / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    (rules / "e2e.toml").write_text(text)


def run_scenario(rig: ClaudeRig, commands: list[str], **run_args: Any) -> tuple[list[ToolUse], RunResult]:
    calls = [bash(command) for command in commands]
    rig.api.add(*(Reply([call]) for call in calls), Reply([Text("done")]))
    run = rig.run("run the scenario", timeout=300, **run_args)
    assert run.exit_code == 0, run.describe()
    rig.api.assert_script_consumed()
    return calls, run


def results_by_id(run: RunResult) -> dict[str, ToolResult]:
    """Each tool result as the model first received it (Claude Code may append a reminder to the newest one)."""
    found: dict[str, ToolResult] = {}
    for request in run.main_requests:
        for result in request.tool_results:
            found.setdefault(result.tool_use_id, result)
    return found


def model_text(result: ToolResult) -> str:
    return result.text.split("<system-reminder>")[0].rstrip("\n")


def episodes(rig: ClaudeRig) -> dict[str, dict[str, Any]]:
    connection = sqlite3.connect(rig.codeoid_home / "store.db")
    connection.row_factory = sqlite3.Row
    try:
        rows = connection.execute("SELECT * FROM episodes WHERE kind = 'tool'")
        return {row["tool_use_id"]: dict(row) for row in rows}
    finally:
        connection.close()


def assert_codeoid_decides_as_claude_code(rig: ClaudeRig, expected: dict[str, bool]) -> None:
    """Run `expected`'s commands without any permission flag, first without codeoid and then with it: every
    result (run or refused) must be the same, Claude Code itself must have run exactly the commands marked True,
    and codeoid must have rewritten exactly those."""
    commands = list(expected)
    plain_calls, plain_run = run_scenario(rig, commands, allow_all=False)
    rig.install_codeoid()
    codeoid_calls, codeoid_run = run_scenario(rig, commands, allow_all=False)

    plain, through = results_by_id(plain_run), results_by_id(codeoid_run)
    stored = episodes(rig)
    for command, before_call, after_call in zip(commands, plain_calls, codeoid_calls, strict=True):
        before, after = plain[before_call.id], through[after_call.id]
        assert (after.is_error, model_text(after)) == (before.is_error, model_text(before)), command
        assert before.is_error is not expected[command], (command, model_text(before))  # Claude Code's own call
        episode = stored.get(after_call.id)  # a refused call never ran: no hook stores it
        rewritten = episode is not None and bash_wrapper.unwrap(episode["wrapper"] or "") is not None
        assert rewritten is expected[command], (command, rig.codeoid_log())


@pytest.mark.e2e
def test_every_tool_result_is_the_same_with_codeoid_as_without_it(rig: ClaudeRig) -> None:
    rig.env["SHELL"] = "/bin/bash"
    write_rules(rig, SCENARIO_RULES)
    commands = SCENARIO + PASSED_THROUGH
    plain_calls, plain_run = run_scenario(rig, commands)
    rig.install_codeoid()
    codeoid_calls, codeoid_run = run_scenario(rig, commands)

    plain, through = results_by_id(plain_run), results_by_id(codeoid_run)
    stored = episodes(rig)
    for command, before_call, after_call in zip(commands, plain_calls, codeoid_calls, strict=True):
        before, after = plain[before_call.id], through[after_call.id]
        # stdout and stderr merged in the same order, line numbers the same, failures included
        assert (after.is_error, model_text(after)) == (before.is_error, model_text(before)), command
        episode = stored[after_call.id]
        assert episode["original_command"] == episode["command"] == command  # as typed; the wrapper kept apart
        expected = (command, after_call.id) if command in SCENARIO else None
        assert bash_wrapper.unwrap(episode["wrapper"] or "") == expected, command
    assert model_text(through[codeoid_calls[1].id]) == str(rig.project.resolve() / "sub")


@pytest.mark.e2e
def test_without_shell_set_codeoid_wraps_exactly_when_claude_code_settles_on_bash(rig: ClaudeRig) -> None:
    """CI jobs and containers often have no SHELL: Claude Code then picks a shell itself, and codeoid must agree
    with its choice (wrap under bash, step aside under zsh) rather than give up."""
    rig.env.pop("SHELL", None)
    write_rules(rig, SEQ_RULES)
    rig.install_codeoid()
    (which, listing), run = run_scenario(rig, ["readlink /proc/$$/exe", "seq 1 3000"])

    results = results_by_id(run)
    shell = model_text(results[which.id]).strip()
    assert shell.startswith("/"), shell
    compressed = "[codeoid]" in model_text(results[listing.id])
    assert compressed == (Path(shell).name == "bash"), (shell, rig.codeoid_log())


@pytest.mark.e2e
def test_without_allow_rules_codeoid_refuses_what_claude_code_refuses(rig: ClaudeRig) -> None:
    rig.env["SHELL"] = "/bin/bash"
    write_rules(rig, SEQ_RULES)
    outside = rig.root / "outside-the-project.txt"
    command = f"touch {outside} && seq 1 3000"
    (plain_call,), plain_run = run_scenario(rig, [command], allow_all=False)
    rig.install_codeoid()
    (codeoid_call,), codeoid_run = run_scenario(rig, [command], allow_all=False)

    before, after = results_by_id(plain_run)[plain_call.id], results_by_id(codeoid_run)[codeoid_call.id]
    assert before.is_error and after.is_error
    assert model_text(after) == model_text(before)
    assert not outside.exists()


PROJECT_PLACEHOLDER = "{project}"
# With no allow rule at all: read-only commands Claude Code runs unasked (rewritten: True) and commands it asks
# about or blocks (False), each with a built-in rule, so only the permission decision keeps codeoid out.
READ_ONLY_CORPUS = {
    "git status": True, "git status src": True, "git diff": True, "git diff HEAD~1 -- src": True,
    "git log -n 5": True, "git log -2 --stat": True, "git show HEAD": True, "git branch -vv": True,
    "ls -la src": True, "ls -ltr": True, "find . -name '*.py' -not -path './.git/*'": True,
    "grep -rn --include='*.py' hello .": True, "grep -RH hello src": True, "rg -n hello src": True,
    "tree -L 2 src": True, "du -sh src": True, "git status && git diff": True, "git diff --cached 2>&1": True,
    f"ls -la {PROJECT_PLACEHOLDER}/src": True,
    "git diff -U1": False, "git status -uno": False, "git branch topic": False, "ls /etc": False,
    "grep -r root /etc/passwd": False, "find /etc -name passwd": False, "ls src/../src": False,
    "git -C src status": False, f"ls -la {PROJECT_PLACEHOLDER}/..": False,
}


@pytest.mark.e2e
def test_without_allow_rules_read_only_commands_are_rewritten_exactly_where_claude_code_runs_them(
        rig: ClaudeRig) -> None:
    """Claude Code runs some commands unasked in default mode; codeoid may compress those, and must decide
    nothing else: every result (run or refused) is the same as without codeoid."""
    rig.env["SHELL"] = "/bin/bash"
    (rig.project / "src").mkdir()
    (rig.project / "src" / "app.py").write_text("print('hello')\n")
    git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@codeoid.invalid"]
    subprocess.run([*git, "add", "src"], cwd=rig.project, check=True, env=rig.env)
    subprocess.run([*git, "commit", "-qm", "app"], cwd=rig.project, check=True, env=rig.env)
    (rig.project / "src" / "app.py").write_text("print('hello, world')\n")
    assert_codeoid_decides_as_claude_code(rig, {
        command.replace(PROJECT_PLACEHOLDER, str(rig.project)): rewrite for command, rewrite in READ_ONLY_CORPUS.items()
        if shutil.which(command.split()[0])})  # rg and tree are not everywhere
    assert (rig.project / "src" / "app.py").read_text() == "print('hello, world')\n"


@pytest.mark.e2e
def test_a_read_deny_rule_keeps_its_paths_refused_even_where_an_allow_rule_matches(rig: ClaudeRig) -> None:
    """Claude Code checks the paths a Bash command names against Read rules: `ls src` is denied by
    `Read(./src/**)` although `Bash(ls:*)` allows it. codeoid must not turn that into a run, and still
    compresses `ls -la`, which names no path under the rule."""
    rig.env["SHELL"] = "/bin/bash"
    (rig.project / "src").mkdir()
    (rig.project / "src" / "secret.txt").write_text("hello\n")
    rig.write_settings({"permissions": {"allow": ["Bash(ls:*)", "Bash(grep:*)"], "deny": ["Read(./src/**)"]}},
                       path=rig.project / ".claude" / "settings.local.json")
    assert_codeoid_decides_as_claude_code(rig, {"ls src": False, "grep -rn hello src": False, "ls -la": True})


@pytest.mark.e2e
def test_a_prefix_allow_rule_keeps_claude_codes_own_checks(rig: ClaudeRig) -> None:
    """Claude Code blocks `ls /etc` under `Bash(ls:*)` and `find -delete` under `Bash(find:*)` (only a bare
    `Bash` rule lets them through); a rewrite that said `allow` would run them."""
    rig.env["SHELL"] = "/bin/bash"
    (rig.project / "src").mkdir()
    (rig.project / "src" / "app.py").write_text("hello\n")
    rig.write_settings({"permissions": {"allow": ["Bash(ls:*)", "Bash(grep:*)", "Bash(find:*)", "Bash(git status:*)"]}},
                       path=rig.project / ".claude" / "settings.local.json")
    outside = rig.root / "outside"
    outside.mkdir()
    (outside / "elsewhere.txt").write_text("hello\n")
    assert_codeoid_decides_as_claude_code(rig, {
        f"ls -la {outside}": False, f"grep -rn hello {outside}": False, "ls -la ../": False,
        f"find {outside} -name '*.txt'": False, "find . -name nothing -delete && git status": False,
        "ls -la src": True, "grep -rn hello src": True})


@pytest.mark.e2e
def test_a_command_an_allow_rule_permits_is_rewritten_and_runs_compressed(rig: ClaudeRig) -> None:
    rig.env["SHELL"] = "/bin/bash"
    write_rules(rig, SEQ_RULES)
    rig.install_codeoid()
    rig.write_settings({"permissions": {"allow": ["Bash(seq:*)"], "deny": ["Bash(rm:*)"]}},
                       path=rig.project / ".claude" / "settings.local.json")
    allowed, denied = "seq 1 3000", "seq 1 3000 && rm -f nothing-here"
    (allowed_call, denied_call), run = run_scenario(rig, [allowed, denied], allow_all=False)

    results = results_by_id(run)
    text = model_text(results[allowed_call.id])
    assert not results[allowed_call.id].is_error
    assert text.splitlines()[:5] == ["1", "2", "3", "4", "5"]
    assert f"raw-{allowed_call.id}" in text.splitlines()[-1]
    refusal = results[denied_call.id]
    assert refusal.is_error and "__codeoid_" not in refusal.text, refusal.text  # judged as typed, not rewritten
    assert episodes(rig)[allowed_call.id]["raw_output_id"] == f"raw-{allowed_call.id}"
    shown = subprocess.run([CODEOID, "show", f"raw-{allowed_call.id}", "--raw"], capture_output=True, check=True,
                           env=rig.env)
    assert shown.stdout == "".join(f"{i}\n" for i in range(1, 3001)).encode()


FAILING_TESTS = [f"test_many.py::test_broken_{n}" for n in (17, 101, 255, 399)]


@pytest.mark.e2e
def test_a_large_failing_pytest_run_shows_every_failure_and_keeps_the_raw_stdout(rig: ClaudeRig) -> None:
    from codeoid.compressors.loader import load_rules

    command = f"{sys.executable} -m pytest -v -p no:cacheprovider test_many.py"
    if load_rules(project_dir=rig.project).for_command(command) is None:
        pytest.skip("no built-in rule compresses pytest yet (compression part A)")
    rig.env["SHELL"] = "/bin/bash"
    tests = ["import pytest", ""]
    for n in range(400):
        broken = f"test_many.py::test_broken_{n}" in FAILING_TESTS
        name = f"test_broken_{n}" if broken else f"test_ok_{n}"
        tests += [f"def {name}():", f"    assert {n} == {n + 1 if broken else n}, 'value {n} is off'", ""]
    (rig.project / "test_many.py").write_text("\n".join(tests))
    rig.install_codeoid()
    (call,), run = run_scenario(rig, [command])

    result = results_by_id(run)[call.id]
    assert result.is_error and model_text(result).startswith("Exit code 1")
    for test_id in FAILING_TESTS:
        assert test_id in result.text
    raw_id = f"raw-{call.id}"
    assert raw_id in result.text
    shown = subprocess.run([CODEOID, "show", raw_id, "--raw"], capture_output=True, check=True, env=rig.env)
    direct = subprocess.run(command, shell=True, capture_output=True, cwd=rig.project, env=rig.env)
    assert normalize_timing(shown.stdout) == normalize_timing(direct.stdout)
    assert len(result.text) < len(shown.stdout) / 2
    connection = sqlite3.connect(rig.codeoid_home / "store.db")
    try:
        (exit_status,) = connection.execute("SELECT exit_status FROM raw_outputs WHERE id = ?", (raw_id,)).fetchone()
    finally:
        connection.close()
    assert exit_status == 1


def normalize_timing(stdout: bytes) -> bytes:
    """The one thing that differs between two runs of the same tests: how long they took."""
    return re.sub(rb"in \d+\.\d+s", b"in Ns", stdout)

