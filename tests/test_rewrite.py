"""The PreToolUse Bash rewrite: the wrapper means what the command means, and it never widens permissions.

Wrapped and unwrapped commands run the way Claude Code 2.1.332 runs them (`eval '<cmd>' < /dev/null && pwd -P >|
<cwd file>` under `bash -c`, stdout and stderr into one output file), through the real `codeoid-compress`, and
must agree on that merged output (what Claude Code shows), the exit status and the working directory the next
call starts in.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import executable, run_hook

from codeoid.compressors import bash_wrapper
from codeoid.hooks import bash_shell, permissions, shell_facts
from codeoid.hooks.permissions import Rules

SEQ_RULE = """
[[rule]]
name = "test-seq"
match = { program = ["seq", "echo", "printf", "cat", "pwd", "ls", "false", "exit", "sort", "f", "git"] }
head = 5
tail = 3
"""


class Outcome(NamedTuple):
    exit_status: int
    output: bytes  # stdout and stderr in one file, as Claude Code reads them
    cwd_after: str | None  # where Claude Code's next call starts; None when the command ended the shell


def run_like_claude_code(command: str, cwd: Path, env: dict[str, str] | None = None) -> Outcome:
    cwd_file = cwd.parent / "cwd-after"
    cwd_file.unlink(missing_ok=True)
    script = f"eval {shlex.quote(command)} < /dev/null && pwd -P >| {shlex.quote(str(cwd_file))}"
    output_file = cwd.parent / "output"
    with output_file.open("wb") as output:
        completed = subprocess.run(["/bin/bash", "-c", script], stdout=output, stderr=output, cwd=cwd, timeout=60,
                                   env={**os.environ, **(env or {})})
    after = cwd_file.read_text().strip() if cwd_file.exists() else None
    return Outcome(completed.returncode, output_file.read_bytes(), after)


@pytest.fixture
def workdir(tmp_path: Path, codeoid_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a rule that compresses long outputs of the commands below, and a subdirectory."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    project = tmp_path / "work"
    (project / "sub").mkdir(parents=True)
    (project / ".codeoid" / "rules").mkdir(parents=True)
    (project / ".codeoid" / "rules" / "test.toml").write_text(SEQ_RULE)
    return project.resolve()


def wrapped(command: str, project: Path, tool_use_id: str = "toolu_test") -> str:
    return bash_wrapper.wrap(command, tool_use_id=tool_use_id, compressor=executable("codeoid-compress"),
                             project_dir=str(project))


ROUND_TRIPS = {
    "cd then pwd": "cd sub && pwd",
    "failing command with stderr": "echo partial; ls /no/such/dir; echo after",
    "exit N with stdout and stderr": "echo out; echo err >&2; exit 3",
    "bare exit keeps the last status": "echo a; false; exit",
    "pipeline": "printf 'b\\na\\nc\\n' | sort -r | cat",
    "heredoc, quoted delimiter": "cat <<'EOF'\nhello $HOME\n  indented\nEOF",
    "heredoc, expanded": "x=42; cat <<EOF\nx is $x\nEOF",
    "function definition and call": "f() { echo in-f; return 4; }; f; echo status=$?",
    "function that exits": "f() { echo leaving; exit 6; }; f; echo never",
    "subshell": "(cd /tmp && pwd; exit 5); echo after=$?",
    "false": "false",
    "set -e inside": "set -e; false; echo after-false",
    "quotes and newlines": "echo \"a 'b' c\"\necho 'x\ny'; printf '%s\\n' \"tab\tand \\\\ backslash\"",
    "cd then exit": "cd sub; echo moved; exit 0",
    "no newline at the end": "printf 'no newline'",
    "binary bytes": "printf '\\x00\\xff\\xfe\\n'",
    "comment on the last line": "echo hi # a comment",
    "long output with a failure": "seq 1 3000; echo oops >&2; exit 2",
}


@pytest.mark.parametrize("command", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_wrapper_means_what_the_command_means(workdir: Path, command: str) -> None:
    plain = run_like_claude_code(command, workdir)
    through = run_like_claude_code(wrapped(command, workdir), workdir)

    assert (through.exit_status, through.cwd_after) == (plain.exit_status, plain.cwd_after)
    if plain.output.count(b"\n") < 40:
        assert through.output == plain.output


# Commands whose merged output, line numbers, descriptors or status a careless rewrite would change; each is
# either wrapped and shows exactly what a plain run shows, or the hook steps aside (stepping aside is always safe).
HOSTILE = {
    "stderr between stdout lines": ("echo out1; ls missing; echo out2", True),
    "builtins alternating streams": ("echo o1; echo e1 1>&2; echo o2; echo e2 >&2; echo o3", True),
    "a program alternating streams": (
        "printf 'a\\n'; python3 -c 'import sys; print(1, flush=True); print(2, file=sys.stderr, flush=True); "
        "print(3)'; printf 'b\\n' 1>&2", True),
    "partial line, then stderr": ("printf partial; echo err 1>&2; printf '%s\\n' end", True),
    "set -e": ("set -e; echo a; false; echo b", True),
    "set -u stops the shell": ("set -u; echo a; echo $undefined_variable; echo b", True),
    "exit code with both streams": ("echo out; echo err 1>&2; exit 3", True),
    "command not found": ("echo a; no_such_command_xyz; echo status $?", True),
    "LINENO": ("echo $LINENO\necho $LINENO\n\necho $LINENO", True),
    "bash's line N": ("echo a\nls /no/such/path\nno_such_command_xyz\necho b", True),
    "LINENO in a function": ("f() {\n  echo in f at $LINENO\n}\nf\necho $LINENO", True),
    "a runtime syntax error": ("echo a; x=$(( 1 / 0 )); echo b", True),
    "a syntax error": ("echo a\nif then fi\necho b", False),
    "heredoc with expansions": ("x=2; cat <<EOF\nline $x $LINENO\nEOF\necho after $LINENO", True),
    "heredoc last": ("cat <<'EOF'\n$HOME }\nEOF", True),
    "trailing comment": ("echo hi # } done", True),
    "a backslash at the very end": ("echo a \\", False),
    "stdout onto stderr": ("seq 1 3 >&2; echo after", True),
    "subshell exit": ("(echo in; exit 4); echo status $?", True),
    "stdin is /dev/null": ("cat; echo done", True),
    "$_ and $?": ("echo $_ $?", True),
    "descriptors the command sees": ("ls -l /proc/self/fd", True),
    "trap": ("trap 'echo bye' EXIT; echo hi", False),
    "background job": ("sleep 0.1 & echo started", False),
    "exec 3>": ("exec 3>/dev/null; echo x 1>&3; echo y", False),
}


def _comparable(output: bytes) -> bytes:
    """`ls -l /proc/self/fd` lines as descriptor numbers only: the targets (a pipe instead of the output file)
    and times are the only things the rewrite may change there."""
    import re

    return re.sub(rb"(?m)^l\S+ .*? (\d+) -> .*$", rb"fd \1", output)


@pytest.mark.parametrize(("command", "wraps"), HOSTILE.values(), ids=HOSTILE.keys())
def test_the_rewrite_shows_what_a_plain_run_shows(hook_world: dict[str, Any], command: str, wraps: bool) -> None:
    answer = pre_tool_use(hook_world, command)
    assert (answer is not None) is wraps
    if answer is None:
        return
    text = answer["hookSpecificOutput"]["updatedInput"]["command"]
    plain = run_like_claude_code(command, hook_world["project"])
    through = run_like_claude_code(text, hook_world["project"])

    assert through._replace(output=_comparable(through.output)) == plain._replace(output=_comparable(plain.output))
    assert plain.output  # every command here prints something


def test_a_long_output_keeps_its_error_lines_where_they_were(workdir: Path) -> None:
    """stderr goes through the rule with stdout: the merged lines are cut as one output, an error line never."""
    command = "seq 1 500; ls /no/such/dir; seq 501 1000; echo done 1>&2"
    plain = run_like_claude_code(command, workdir)
    through = run_like_claude_code(wrapped(command, workdir, tool_use_id="toolu_merged"), workdir)

    lines = through.output.decode().splitlines()
    error = next(index for index, line in enumerate(lines) if line.startswith("ls: cannot access"))
    assert lines[:5] == ["1", "2", "3", "4", "5"] and "done" in lines[error + 1:]
    assert any(line.startswith("[codeoid] ") and "cut" in line for line in lines[:error])
    assert len(lines) < 30 and through.exit_status == plain.exit_status == 0
    shown = subprocess.run([executable("codeoid"), "show", "raw-toolu_merged", "--raw"], capture_output=True,
                           check=True)
    assert shown.stdout == plain.output  # the archive holds the merged bytes in order


FIXTURES = Path(__file__).parent / "fixtures" / "compress"


def test_a_report_printed_on_stderr_is_compressed_by_its_rule(hook_world: dict[str, Any], tmp_path: Path) -> None:
    """jest prints its whole report on stderr: it goes through the jest rule like a report on stdout would."""
    report = (FIXTURES / "jest_verbose.out").read_bytes()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "jest").write_text(f"#!/bin/sh\ncat {shlex.quote(str(FIXTURES / 'jest_verbose.out'))} >&2\nexit 1\n")
    (bin_dir / "jest").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    answer = pre_tool_use(hook_world, "jest --ci")
    assert answer is not None
    plain = run_like_claude_code("jest --ci", hook_world["project"], env)
    through = run_like_claude_code(answer["hookSpecificOutput"]["updatedInput"]["command"], hook_world["project"],
                                   env)

    assert plain.output == report and through.exit_status == plain.exit_status == 1
    assert len(through.output) < len(report) / 2
    lines = through.output.decode().splitlines()
    assert lines[-1].startswith("[codeoid] rule jest: ") and "raw-toolu_hook" in lines[-1]
    for line in report.decode().splitlines():
        if line.lstrip().startswith(("✕", "FAIL", "Tests:", "Test Suites:")):
            assert line in lines, line  # every failing test and the summary, from stderr


def test_long_output_is_compressed_and_archived_byte_exact_even_when_the_command_exits(
        workdir: Path, codeoid_home: Path) -> None:
    command = "seq 1 3000; exit 7"
    plain = run_like_claude_code(command, workdir)
    through = run_like_claude_code(wrapped(command, workdir, tool_use_id="toolu_exit"), workdir)

    assert through.exit_status == plain.exit_status == 7
    lines = through.output.decode().splitlines()
    assert lines[:5] == ["1", "2", "3", "4", "5"] and lines[-4:-1] == ["2998", "2999", "3000"]
    assert lines[-1].startswith("[codeoid] rule test-seq: 2,992 of 3,000 lines removed")
    assert "raw-toolu_exit" in lines[-1]
    shown = subprocess.run([executable("codeoid"), "show", "raw-toolu_exit", "--raw"], capture_output=True,
                           check=True)
    assert shown.stdout == plain.output


def test_a_missing_compressor_leaves_stdout_unchanged(workdir: Path) -> None:
    command = "seq 1 100; echo err >&2; exit 1"
    text = bash_wrapper.wrap(command, tool_use_id="toolu_x", compressor="/no/such/codeoid-compress",
                             project_dir=str(workdir))

    assert run_like_claude_code(text, workdir) == run_like_claude_code(command, workdir)


def test_user_aliases_cannot_change_the_wrapper(workdir: Path, tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.sh"
    snapshot.write_text("shopt -s expand_aliases\nalias trap='echo TRAPPED'\nalias cat='echo CAT'\n"
                        "alias exec='echo EXEC'\n")
    command = "seq 1 2"
    script = f"source {shlex.quote(str(snapshot))}\n{wrapped(command, workdir)}"

    assert run_like_claude_code(script, workdir).output == b"1\n2\n"


# -- the wrapper text -----------------------------------------------------------------------------------------


TRICKY = ["echo hi", "a\\nb\n'c' \\\\ $'d\\n'\n",
          "echo 'it'\"'\"'s'", "cat <<'EOF'\n}; __codeoid_finish\nEOF", "echo $'\\n' `x` \"$(y)\"",
          "a=1\n\n  b=2 ", "printf '%s' \"--command 'x'\""]


@pytest.mark.parametrize("command", TRICKY)
def test_unwrap_returns_exactly_what_was_wrapped(command: str) -> None:
    text = bash_wrapper.wrap(command, tool_use_id="toolu_01", compressor="/opt/my venv/bin/codeoid-compress",
                             project_dir="/p q", codeoid_home="/data dir")

    assert bash_wrapper.unwrap(text) == bash_wrapper.Unwrapped(command, "toolu_01")


def test_unwrap_refuses_anything_but_an_exact_wrapper() -> None:
    text = bash_wrapper.wrap("echo hi", tool_use_id="toolu_01", compressor="/c", project_dir="/p")

    assert bash_wrapper.unwrap(text.replace("; echo hi", "; echo HI")) is None
    assert bash_wrapper.unwrap(text.replace("'echo hi'", "$'echo hi'")) is None
    assert bash_wrapper.unwrap(text + "\nrm -rf x") is None
    assert bash_wrapper.unwrap("echo __codeoid_finish") is None
    assert bash_wrapper.unwrap("echo hi") is None


def test_wrapper_text_for_echo_hi() -> None:
    text = bash_wrapper.wrap("echo hi", tool_use_id="X", compressor="/venv/bin/codeoid-compress", project_dir="/p")

    assert text == (
        "__codeoid_last=$_; \\exec > >(/venv/bin/codeoid-compress --tool-use-id X --project-dir /p "
        "--command 'echo hi' 2>/dev/null || \\command cat) 2>&1; __codeoid_filter=$!; "
        "\\builtin trap '__codeoid_status=$?; \\builtin trap - EXIT; \\exec >/dev/null 2>&1; "
        "\\builtin wait \"$__codeoid_filter\"; \\builtin exit \"$__codeoid_status\"' EXIT; "
        "\\builtin : \"$__codeoid_last\"; echo hi"
    )


# -- permission decisions -------------------------------------------------------------------------------------


def facts(command: str) -> shell_facts.ShellFacts:
    return shell_facts.read(command)


# Read-only commands are judged against a project directory; this one need not exist.
PROJECT = "/nonexistent/codeoid-project"


def decide(command: str, mode: str | None = "default", allow: tuple[str, ...] = (), deny: tuple[str, ...] = (),
           ask: tuple[str, ...] = (), cwd: str | None = PROJECT) -> bool:
    return permissions.may_allow(command, facts(command), mode, Rules(allow, deny, ask), cwd=cwd,
                                 project_dir=PROJECT)


@pytest.mark.parametrize(("rule", "command", "allowed"), [
    ("git status", "git status", True),
    ("git status", "git status -s", False),
    ("git diff:*", "git diff", True),
    ("git diff:*", "git diff --stat", True),
    ("git diff:*", "git diffx", False),
    ("ls *", "ls -la", True),
    ("ls *", "ls", False),
    ("ls*", "lsof", True),
    ("git * main", "git checkout main", False),  # an inner wildcard is not trusted for allow
    ("*", "anything at all", True),
    ("pytest:*", "pytest -q\n", True),
    ("cat:*", "cat <<EOF\nx\nEOF", False),  # spans lines
])
def test_allow_rules_match_no_more_than_claude_code_would(rule: str, command: str, allowed: bool) -> None:
    assert decide(command, allow=(rule,), mode="dontAsk") is allowed  # a mode where only rules allow


def test_every_simple_command_of_a_chain_must_be_allowed() -> None:
    allow = ("git status:*", "pytest:*")
    assert decide("git status && pytest -q", allow=allow)
    assert decide("git status | pytest", allow=allow)
    assert not decide("git status && curl evil.example", allow=allow)
    assert not decide("git status; $(curl x)", allow=allow)
    assert not decide("pytest `curl x`", allow=allow)
    assert not decide("git status > out.txt", allow=allow)
    assert decide("git status 2>&1", allow=allow)
    assert not decide("(git status)", allow=allow)
    assert not decide("x=1; pytest", allow=allow)


def test_a_prefix_allow_rule_keeps_claude_codes_own_check_of_paths_outside_the_project() -> None:
    """Under `Bash(ls:*)` Claude Code still blocks `ls /etc`; only a bare `Bash` rule lets it through."""
    assert not decide("ls /etc", allow=("ls:*",), mode="dontAsk")
    assert decide("ls /etc", allow=("*",), mode="dontAsk")
    assert decide("ls src", allow=("ls:*",), mode="dontAsk")
    assert decide(f"ls {PROJECT}/src", allow=("ls:*",), mode="dontAsk")
    assert not decide("cat ../notes", allow=("cat:*",), mode="dontAsk")
    assert not decide("cat src/../../notes", allow=("cat:*",), mode="dontAsk")
    assert not decide("pytest --rootdir=/etc", allow=("pytest:*",), mode="dontAsk")
    assert not decide("ls ~/x", allow=("ls:*",), mode="dontAsk")
    assert not decide("ls $HOME", allow=("ls:*",), mode="dontAsk")
    assert decide("grep -rn 'a/b' src", allow=("grep:*",), mode="dontAsk")
    assert decide("ls /etc", allow=("ls:*",), mode="bypassPermissions")


@pytest.mark.parametrize("command", [
    "find . -name x -delete && git diff", "find . -exec grep -l x {} + ; git diff", "find . -dxf x; git diff",
    "xargs ls < list.txt; git diff", "let n=1; git diff", "awk 1 notes.txt; git diff", "jq . a.json; git diff",
])
def test_what_claude_code_never_allows_under_a_prefix_rule_is_never_allowed(command: str) -> None:
    everything = ("find:*", "git diff:*", "xargs:*", "let:*", "awk:*", "jq:*")
    assert not decide(command, allow=everything, mode="dontAsk")
    assert decide("find . -name '*.py' && git diff", allow=everything, mode="dontAsk")


def test_deny_and_ask_rules_win_over_allow_rules_and_over_bypass_mode() -> None:
    assert not decide("git status && rm -rf build", allow=("*",), deny=("rm:*",))
    assert not decide("git status && r\"\"m -rf build", allow=("*",), deny=("rm:*",))
    assert not decide("git status", mode="bypassPermissions", ask=("git push:*",))
    assert not decide("find . -exec rm {} +", mode="bypassPermissions", deny=("rm:*",))
    assert not decide("$tool status", mode="bypassPermissions", deny=("rm:*",))
    assert not decide("ls", mode="bypassPermissions", deny=("*",))
    assert decide("git status", mode="bypassPermissions", deny=("rm:*",))
    assert decide("git commit -m 'format it'", mode="bypassPermissions", deny=("rm:*",))


@pytest.mark.parametrize(("mode", "allowed"), [
    ("default", True), ("acceptEdits", True), ("dontAsk", True), ("bypassPermissions", True),
    ("plan", False), ("auto", False), (None, False), ("something-new", False),
])
def test_modes(mode: str | None, allowed: bool) -> None:
    assert decide("seq 1 3", mode=mode, allow=("seq 1 3",)) is allowed


@pytest.mark.parametrize(("mode", "allowed"), [
    ("default", True), ("acceptEdits", True), ("dontAsk", False), ("bypassPermissions", True), ("plan", False),
    ("auto", False), (None, False),
])
def test_without_rules_read_only_commands_are_allowed_where_claude_code_runs_them_unasked(
        mode: str | None, allowed: bool) -> None:
    assert decide("git status", mode=mode) is allowed
    assert not decide("seq 1 3", mode=mode) or mode == "bypassPermissions"
    assert decide("(cd sub && ls) | sort", mode=mode) is (mode == "bypassPermissions")


def test_a_chain_may_mix_allow_rules_and_read_only_commands() -> None:
    assert decide("seq 1 3 && git status", allow=("seq:*",))
    assert not decide("seq 1 3 && git status", allow=("seq:*",), mode="dontAsk")
    assert not decide("seq 1 3 && git status")
    assert not decide("git status && ls", deny=("ls:*",))
    assert not decide("git status", cwd=None)


def test_programs_claude_code_may_check_itself_are_never_auto_allowed() -> None:
    assert not decide("cd /elsewhere && git status", allow=("*",))
    assert not decide("rm -rf build; ls", allow=("*",))
    assert not decide("$tool -rf build; ls", allow=("*",))  # the command word is known only when it runs


# -- reading the user's settings ------------------------------------------------------------------------------


@pytest.fixture
def stand_in_claude() -> Iterator[Any]:
    """A process standing in for `claude`: the rewrite reads its arguments through CLAUDE_PID."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*arguments: str, cwd: Path | None = None) -> str:
        process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *arguments], cwd=cwd)
        started.append(process)
        cmdline = Path(f"/proc/{process.pid}/cmdline")
        deadline = time.monotonic() + 10
        while b"time.sleep" not in cmdline.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)  # until the exec has replaced the forked copy's arguments
        return str(process.pid)

    yield start
    for process in started:
        process.kill()
        process.wait()


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_rules_come_from_user_project_local_and_settings_flag_layers(tmp_path: Path, stand_in_claude: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(permissions, "_MANAGED_PATHS", ())
    config, project = tmp_path / "config", tmp_path / "project"
    write_json(config / "settings.json", {"permissions": {"allow": ["Bash(git status)", "Read"]}})
    write_json(project / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(rm:*)"]}})
    write_json(project / ".claude" / "settings.local.json", {"permissions": {"ask": ["Bash(git push:*)"]}})
    write_json(tmp_path / "extra.json", {"permissions": {"allow": ["Bash"]}})
    pid = stand_in_claude("-p", "hi", "--settings", "extra.json", cwd=tmp_path)

    rules = permissions.load_rules(str(project), {"CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PID": pid})

    assert rules == Rules(("git status", "*"), ("rm:*",), ("git push:*",))


@pytest.mark.parametrize(("entries", "patterns"), [
    ({"deny": ["Read(./.env)"]}, ("./.env",)), ({"ask": ["Edit(./src/**)"]}, ("./src/**",)),
    ({"deny": ["Grep"]}, ("**",)), ({"deny": ["Read()"]}, ("**",)),
    ({"deny": ["mcp__github", "WebFetch(domain:example.com)", "Bash(rm:*)"]}, ()),
    ({"allow": ["Read(./**)"]}, ()),
])
def test_deny_and_ask_rules_of_file_tools_are_noticed(tmp_path: Path, stand_in_claude: Any,
                                                      monkeypatch: pytest.MonkeyPatch, entries: dict[str, Any],
                                                      patterns: tuple[str, ...]) -> None:
    monkeypatch.setattr(permissions, "_MANAGED_PATHS", ())
    config = tmp_path / "config"
    write_json(config / "settings.json", {"permissions": entries})
    rules = permissions.load_rules(str(tmp_path), {"CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PID": stand_in_claude()})
    assert rules.file_rules == patterns


MODES_THAT_ALLOW = ("default", "acceptEdits", "dontAsk", "bypassPermissions")


def allowed_with_file_rule(command: str, pattern: str, cwd: str = PROJECT) -> bool:
    """Whether `command` is allowed, in every mode alike, under a bare `Bash` allow rule and one file rule."""
    rules = Rules(("*",), (), (), file_rules=(pattern,))
    answers = {permissions.may_allow(command, facts(command), mode, rules, cwd=cwd, project_dir=PROJECT)
               for mode in MODES_THAT_ALLOW}
    assert len(answers) == 1, (command, pattern)
    return answers.pop()


@pytest.mark.parametrize(("command", "pattern", "allowed"), [
    ("ls src", "./src/**", False),  # denied by Claude Code, seen with the real CLI
    ("grep -rn x src", "./src/**", False),
    ("find src -name '*.py'", "./src/**", False),
    ("git diff", "./src/**", True),
    ("grep -rn x .", "./src/**", True),  # Claude Code checks the path it is given, not what grep reads under it
    ("cat .env", "./.env", False),
    ("cat .ENV", "./.env", False),  # case folded: never fewer matches than a case-insensitive file system
    ("git status", "./.env", True),
    ("git diff", "**", False),  # no literal part: it could match anything
    ("git diff", "{build,dist}/**", False),  # alternatives are not literal parts either
    ("ls src", "**/*.py", True),
    ("ls src/app.py", "**/*.py", False),
    ("ls src/a", "src/[ab]", False),
    ("ls $DIR", "./.env", False),  # a word known only when it runs
    ("cat /home/me/.env", "~/.env", False),
    (f"ls {PROJECT}/lib", "./codeoid-project/**", True),  # the directories above the project match no rule
    (f"ls {PROJECT}/lib", "./lib/**", False),
])
def test_a_file_rule_stops_the_rewrite_wherever_it_could_concern_the_command(command: str, pattern: str,
                                                                          allowed: bool) -> None:
    assert allowed_with_file_rule(command, pattern) is allowed


def test_a_file_rule_is_matched_against_where_a_symlink_leads(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "innocent").symlink_to(tmp_path / "secrets")
    assert not allowed_with_file_rule("ls innocent", "./secrets/**", cwd=str(tmp_path))
    assert allowed_with_file_rule("ls other", "./secrets/**", cwd=str(tmp_path))


def test_blocking_reads_outside_the_working_directories_checks_paths_in_every_mode(
        tmp_path: Path, stand_in_claude: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(permissions, "_MANAGED_PATHS", ())
    config = tmp_path / "config"
    write_json(config / "settings.json", {"permissions": {"allow": ["Bash"],
                                                          "blockReadsOutsideWorkingDirectories": True}})
    rules = permissions.load_rules(str(tmp_path), {"CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PID": stand_in_claude()})
    assert rules.contained
    for mode in ("default", "bypassPermissions"):
        assert not permissions.may_allow("ls /etc", facts("ls /etc"), mode, rules, cwd=PROJECT, project_dir=PROJECT)
        assert permissions.may_allow("ls src", facts("ls src"), mode, rules, cwd=PROJECT, project_dir=PROJECT)
    assert not permissions.may_allow("(ls src)", facts("(ls src)"), "bypassPermissions", rules, cwd=PROJECT,
                                     project_dir=PROJECT)
    assert permissions.may_allow("ls /etc", facts("ls /etc"), "default", rules._replace(contained=False), cwd=PROJECT,
                                 project_dir=PROJECT)


def test_setting_sources_limit_which_allow_rules_count(tmp_path: Path, stand_in_claude: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(permissions, "_MANAGED_PATHS", ())
    config, project = tmp_path / "config", tmp_path / "project"
    write_json(config / "settings.json", {"permissions": {"allow": ["Bash(ls)"], "deny": ["Bash(rm:*)"]}})
    write_json(project / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(pwd)"]}})
    pid = stand_in_claude("--setting-sources", "project")

    rules = permissions.load_rules(str(project), {"CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PID": pid})

    assert rules == Rules(("pwd",), ("rm:*",), ())


def test_managed_settings_can_make_their_rules_the_only_allow_rules(tmp_path: Path, stand_in_claude: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    managed = tmp_path / "managed.json"
    write_json(managed, {"permissions": {"allow": ["Bash(ls)"], "allowManagedPermissionRulesOnly": True}})
    monkeypatch.setattr(permissions, "_MANAGED_PATHS", (str(managed),))
    config = tmp_path / "config"
    write_json(config / "settings.json", {"permissions": {"allow": ["Bash"]}})

    rules = permissions.load_rules(str(tmp_path), {"CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PID": stand_in_claude()})

    assert rules.allow == ("ls",)


@pytest.mark.parametrize("problem", ["invalid json", "unseen flags", "no claude pid", "odd rule", "sandbox"])
def test_whatever_cannot_be_read_for_certain_means_no_rewrite(tmp_path: Path, stand_in_claude: Any, problem: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(permissions, "_MANAGED_PATHS", ())
    config = tmp_path / "config"
    config.mkdir()
    env = {"CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PID": stand_in_claude()}
    if problem == "invalid json":
        (config / "settings.json").write_text("{not json")
    elif problem == "unseen flags":
        env["CLAUDE_PID"] = stand_in_claude("--disallowedTools", "Bash(rm:*)")
    elif problem == "no claude pid":
        del env["CLAUDE_PID"]
    elif problem == "sandbox":
        write_json(config / "settings.json", {"sandbox": {"enabled": True}})
    else:
        write_json(config / "settings.json", {"permissions": {"deny": ["Bash(rm:*"]}})

    with pytest.raises(permissions.Unsure):
        permissions.load_rules(str(tmp_path), env)


# -- the hook, as Claude Code runs it -------------------------------------------------------------------------


@pytest.fixture
def hook_world(workdir: Path, tmp_path: Path, stand_in_claude: Any) -> dict[str, Any]:
    config = tmp_path / "claude-config"
    config.mkdir()
    env = {"CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PID": stand_in_claude(), "CLAUDE_PROJECT_DIR": str(workdir),
           "SHELL": "/bin/bash", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    return {"env": env, "project": workdir, "config": config}


def pre_tool_use(world: dict[str, Any], command: str, mode: str = "bypassPermissions",
                 **tool_input: Any) -> dict[str, Any] | None:
    payload = {"session_id": "s", "cwd": str(world["project"]), "hook_event_name": "PreToolUse",
               "permission_mode": mode, "tool_name": "Bash", "tool_use_id": "toolu_hook",
               "tool_input": {"command": command, "description": "d", **tool_input}}
    result = run_hook("PreToolUse", payload, env=world["env"], cwd=world["project"])
    assert (result.returncode, result.stderr) == (0, b"")
    return json.loads(result.stdout) if result.stdout else None


def test_hook_allows_a_rewrite_echoing_every_other_input_field(hook_world: dict[str, Any]) -> None:
    answer = pre_tool_use(hook_world, "seq 1 100", timeout=5000)

    assert answer is not None
    output = answer["hookSpecificOutput"]
    assert (output["hookEventName"], output["permissionDecision"]) == ("PreToolUse", "allow")
    assert output["updatedInput"]["description"] == "d" and output["updatedInput"]["timeout"] == 5000
    assert bash_wrapper.unwrap(output["updatedInput"]["command"]) == ("seq 1 100", "toolu_hook")


def test_hook_allows_under_the_users_allow_rule_and_steps_aside_without_one(hook_world: dict[str, Any]) -> None:
    assert pre_tool_use(hook_world, "seq 1 100", mode="default") is None
    write_json(hook_world["config"] / "settings.json", {"permissions": {"allow": ["Bash(seq:*)"]}})
    assert pre_tool_use(hook_world, "seq 1 100", mode="default") is not None
    write_json(hook_world["project"] / ".claude" / "settings.local.json", {"permissions": {"ask": ["Bash(seq 1:*)"]}})
    assert pre_tool_use(hook_world, "seq 1 100", mode="default") is None


def test_hook_allows_a_read_only_command_claude_code_runs_unasked_without_any_rule(
        hook_world: dict[str, Any]) -> None:
    answer = pre_tool_use(hook_world, "git diff", mode="default")
    assert answer is not None
    assert bash_wrapper.unwrap(answer["hookSpecificOutput"]["updatedInput"]["command"]) == ("git diff", "toolu_hook")
    assert pre_tool_use(hook_world, "git diff -U1", mode="default") is None  # Claude Code asks about -U
    assert pre_tool_use(hook_world, "grep -rn x /etc", mode="default") is None  # outside the project
    assert pre_tool_use(hook_world, "git diff", mode="plan") is None
    write_json(hook_world["config"] / "settings.json", {"permissions": {"ask": ["Bash(git diff:*)"]}})
    assert pre_tool_use(hook_world, "git diff", mode="default") is None
    write_json(hook_world["config"] / "settings.json", {"permissions": {"deny": ["Read(./.env)"]}})
    assert pre_tool_use(hook_world, "git diff", mode="default") is not None  # a rule about another path
    assert pre_tool_use(hook_world, "grep -rn KEY .env", mode="default") is None


def test_hook_logs_a_broken_rule_file_and_still_rewrites_with_the_other_rules(hook_world: dict[str, Any],
                                                                              codeoid_home: Path) -> None:
    (hook_world["project"] / ".codeoid" / "rules" / "bad.toml").write_text('[[rule]]\nname = "unterminated\n')

    assert pre_tool_use(hook_world, "git diff", mode="default") is not None  # stderr stays empty (checked there)
    assert pre_tool_use(hook_world, "seq 1 100") is not None

    log = (codeoid_home / "logs" / "codeoid.log").read_text()
    assert log.count("bad.toml:2: invalid TOML") == 1 and "this file is skipped" in log


PASS_THROUGH = {
    "background run": ("seq 1 100", {"run_in_background": True}),
    "backgrounded inside": ("seq 1 100 &", {}),
    "stdout to a file": ("seq 1 100 > out.txt", {}),
    "stdout and stderr to a file": ("seq 1 100 &> out.txt", {}),
    "already wrapped": ("codeoid-compress -- seq 1 100", {}),
    "no rule for it": ("uname -a", {}),
    "does not parse": ("seq 1 100 'unterminated", {}),
    "exec": ("exec seq 1 100", {}),
    "trap": ("trap 'echo bye' EXIT; seq 1 100", {}),
    "wait": ("wait; seq 1 100", {}),
    "eval": ("eval 'seq 1 100'", {}),
    "source": ("source env.sh && seq 1 100", {}),
    "set -x": ("set -x; seq 1 100", {}),
    "alias": ("alias s=seq; seq 1 100", {}),
    "follows a file": ("tail -f log | cat", {}),
    "watch flag": ("cat --watch", {}),
    "editor": ("vim x; ls", {}),
    "function named like a wrapper word": ("cat() { :; }; seq 1 100", {}),
}


def test_hook_steps_aside_in_a_project_the_user_excluded(hook_world: dict[str, Any]) -> None:
    assert pre_tool_use(hook_world, "seq 1 100") is not None
    hook_world["env"]["CODEOID_EXCLUDE_PROJECTS"] = str(hook_world["project"].parent)
    assert pre_tool_use(hook_world, "seq 1 100") is None


@pytest.mark.parametrize(("command", "extra"), PASS_THROUGH.values(), ids=PASS_THROUGH.keys())
def test_hook_steps_aside_when_it_cannot_be_sure(hook_world: dict[str, Any], command: str,
                                                  extra: dict[str, Any]) -> None:
    assert pre_tool_use(hook_world, command, **extra) is None


def test_hook_wraps_only_under_bash(hook_world: dict[str, Any], tmp_path: Path) -> None:
    hook_world["env"]["SHELL"] = fake_shell(tmp_path / "zsh-bin", "zsh")
    assert pre_tool_use(hook_world, "seq 1 100") is None
    hook_world["env"]["CLAUDE_CODE_SHELL"] = "/bin/bash"
    assert pre_tool_use(hook_world, "seq 1 100") is not None


def test_hook_ignores_other_tools_and_broken_payloads(hook_world: dict[str, Any]) -> None:
    for payload in (b"", b"not json", b"[]", json.dumps({"tool_name": "Read", "tool_input": {}}).encode(),
                    json.dumps({"tool_name": "Bash", "tool_input": {"command": 5}}).encode()):
        result = run_hook("PreToolUse", payload, env=hook_world["env"])
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_the_rewrite_decides_without_loading_the_compression_engine(tmp_path: Path) -> None:
    """The hook runs before every Bash call: it must not pay for the engine, the store or the grammar's extras,
    and once the rule cache exists a command naming no rule's program is turned away before the parser loads."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(*)"]}}))
    env = {**os.environ, "HOME": str(home), "CODEOID_HOME": str(tmp_path / "codeoid"), "SHELL": "/bin/bash",
           "CLAUDE_PROJECT_DIR": str(project), "CLAUDE_PID": str(os.getpid()), "XDG_CONFIG_HOME": str(home / "cfg")}

    def decide(command: str) -> tuple[bool, set[str]]:
        payload = {"session_id": "s", "cwd": str(project), "permission_mode": "default",
                   "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_modules",
                   "tool_input": {"command": command}}
        # Only what the decision loads counts: an editable install's import hook loads more at start-up (site).
        probe = ("import sys\n"
                 "before = set(sys.modules)\n"
                 "import json\n"
                 "from codeoid.hooks import pre_tool_use\n"
                 f"answer = pre_tool_use.run({json.dumps(payload)!r}.encode())\n"
                 "print(json.dumps({'rewritten': bool(answer), 'modules': sorted(set(sys.modules) - before)}))\n")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=project)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        return report["rewritten"], set(report["modules"])

    never = {"codeoid.compressors.engine", "codeoid.compressors.pipeline", "codeoid.store.db", "sqlite3",
             "tree_sitter_bash", "importlib.resources", "tempfile"}
    rewritten, loaded = decide("git diff")  # first call: no rule cache yet, the full path writes it
    assert rewritten and {"codeoid.compressors.command", "codeoid.compressors.loader"} <= loaded
    assert not loaded & never
    # With the cache a rewritten command pays for neither typing (records are collections.namedtuple, the
    # tree-sitter binding is loaded without its package's typing import) nor shlex, fnmatch or contextlib. `re`
    # and `enum` stay: `json` imports them, and so does pip's console-script wrapper.
    heavy = {"typing", "shlex", "fnmatch", "contextlib", "tree_sitter", "tomllib"}
    for command in ("git diff", "FOO=1 python -m pytest -x", "npx --yes jest --ci", "git log -n 3"):
        rewritten, loaded = decide(command)
        assert rewritten, command  # with the cache: still rewritten
        assert "tree_sitter._binding" in loaded and not loaded & (never | heavy), (command, loaded & heavy)
    rewritten, loaded = decide("echo hi && mkdir -p build")
    assert not rewritten
    assert not loaded & (never | {"tree_sitter", "codeoid.compressors.command", "codeoid.hooks.permissions",
                                  "typing"})
    assert not decide("echo \\\n hi")[0]  # a backslash: the full path decides (and finds no rule)


def fake_bash(directory: Path, script: str) -> str:
    """An executable named `bash` that answers the version question with `script` (a /bin/sh body)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "bash"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return str(path)


def test_a_bash_older_than_4_4_is_not_wrapped_and_that_is_remembered(tmp_path: Path) -> None:
    shell = fake_bash(tmp_path / "old", 'echo "3 2"')
    cache = tmp_path / "cache"
    assert not bash_shell.wrappable_bash({"SHELL": shell}, str(cache))
    assert [marker.read_text() for marker in cache.iterdir()] == ["too old"]
    assert bash_shell.wrappable_bash({"SHELL": "/bin/bash"}, str(cache))


def test_a_bash_that_does_not_answer_is_not_wrapped_this_time_only(tmp_path: Path) -> None:
    shell = fake_bash(tmp_path / "mute", "exit 1")
    cache = tmp_path / "cache"
    assert not bash_shell.wrappable_bash({"SHELL": shell}, str(cache))
    assert not cache.exists() or list(cache.iterdir()) == []


def test_the_shell_is_found_the_way_claude_code_finds_it(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    zsh, bash = fake_shell(fake, "zsh"), fake_bash(fake, 'echo "5 2"')
    # Neither variable names a usable bash or zsh: zsh on PATH comes first, as in Claude Code 2.1.332.
    assert bash_shell.claude_code_shell({"PATH": str(fake)}) == zsh
    assert bash_shell.claude_code_shell({"PATH": str(fake), "SHELL": "/usr/bin/fish"}) == zsh
    assert not bash_shell.wrappable_bash({"PATH": str(fake)}, str(tmp_path / "cache"))
    # A SHELL that names bash is taken as it is; an override that does not exist is passed over.
    assert bash_shell.claude_code_shell({"PATH": str(fake), "SHELL": bash}) == bash
    assert bash_shell.claude_code_shell({"CLAUDE_CODE_SHELL": "/nowhere/zsh", "SHELL": "/bin/bash"}) == "/bin/bash"
    assert bash_shell.wrappable_bash({"CLAUDE_CODE_SHELL": "/nowhere/zsh", "SHELL": "/bin/bash"},
                                     str(tmp_path / "cache"))


def fake_shell(directory: Path, name: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)
