"""Which program a shell command resolves to, and the facts the Bash rewrite reads from the same parse."""

from __future__ import annotations

import pytest

from codeoid.compressors import parse, resolve


@pytest.mark.parametrize(("command", "program", "args"), [
    ("git status", "git", ("status",)),
    ("FOO=1 BAR='a b' pytest -x tests", "pytest", ("-x", "tests")),
    ("cd sub && python -m pytest -q", "pytest", ("-q",)),
    ("cd sub && python3 -m unittest discover -v", "unittest", ("discover", "-v")),
    (".venv/bin/python -X dev -m pytest", "pytest", ()),
    ("npx jest --ci", "jest", ("--ci",)),
    ("npx --yes -p vitest vitest run", "vitest", ("run",)),
    ("uv run --with rich pytest -k 'a or b'", "pytest", ("-k", "a or b")),
    ("poetry run python -m pytest", "pytest", ()),
    ("pnpm exec vitest run", "vitest", ("run",)),
    ("env -i PATH=/bin ls -la", "ls", ("-la",)),
    ("time go test ./...", "go", ("test", "./...")),
    ("timeout 60 cargo test", "cargo", ("test",)),
    ("find . -name '*.py' | xargs grep -n import", "grep", ("-n", "import")),
    ("git status; git diff", "git", ("diff",)),
    ("make build || true && rg TODO", "rg", ("TODO",)),
    ("! grep -q x f", "grep", ("-q", "x", "f")),
    ("pytest 2>&1", "pytest", ()),
    ("cat <<'EOF' | grep -n x\nhello\nEOF\n", "grep", ("-n", "x")),
    ('echo a\\ b "c\\"d" \'e\'', "echo", ("a b", 'c"d', "e")),
])
def test_prefixes_launchers_and_last_stage_resolve_to_the_program(command: str, program: str,
                                                                  args: tuple[str, ...]) -> None:
    invocation = resolve(command)
    assert invocation is not None
    assert (invocation.program, invocation.args) == (program, args)


def test_stripped_launchers_are_reported_outermost_first() -> None:
    invocation = resolve("env A=1 uv run python -m pytest")
    assert invocation is not None
    assert invocation.launchers == ("env", "uv run", "python -m")


@pytest.mark.parametrize("command", [
    "(cd sub; pytest)",
    "for f in *.py; do grep -n x $f; done",
    "if true; then ls; fi",
    "f() { ls; }; f",
    "pytest &",
    "$RUNNER tests",
    "ls && (pytest)",
    "ls && echo \"unterminated",
    "",
    "VAR=1",
])
def test_commands_without_one_final_program_resolve_to_nothing(command: str) -> None:
    assert resolve(command) is None


def test_a_script_or_inline_code_is_the_interpreter_not_a_module() -> None:
    assert resolve("python manage.py test") == ("python", ("manage.py", "test"), ())
    assert resolve("python -c 'import x'") == ("python", ("-c", "import x"), ())


@pytest.mark.parametrize(("command", "fact"), [
    ("sleep 10 &", "background"),
    ("make & wait", "background"),
    ("pytest > log.txt", "stdout_redirected"),
    ("pytest >> log.txt 2>&1", "stdout_redirected"),
    ("pytest &> log.txt", "stdout_redirected"),
    ("echo oops >&2", "stdout_redirected"),
    ("ls 1>/dev/null", "stdout_redirected"),
    ("cat <<EOF\nx\nEOF\n", "heredoc"),
    ("grep x <<< 'text'", "heredoc"),
    ("pytest; exit 3", "calls_exit"),
    ("f() { ls; }; f", "defines_function"),
    ("(cd sub && make)", "subshell"),
    ("echo $(git rev-parse HEAD)", "substitution"),
    ("diff <(ls a) <(ls b)", "substitution"),
    ("for i in 1 2; do echo $i; done", "compound"),
    ("[[ -f x ]] && cat x", "compound"),
])
def test_parse_reports_what_the_rewrite_must_respect(command: str, fact: str) -> None:
    shell = parse(command)
    assert shell.understood
    assert getattr(shell, fact) is True


@pytest.mark.parametrize("command", ["pytest 2>&1", "ls 2>/dev/null", "git status >&1", "cd x && make"])
def test_stderr_redirections_leave_stdout_alone(command: str) -> None:
    shell = parse(command)
    assert not shell.stdout_redirected and not shell.background


def test_programs_lists_every_command_with_launchers_stripped() -> None:
    assert parse("time vim x; echo $(git status) | env A=1 uv run less").programs == ("vim", "echo", "git", "less")


@pytest.mark.parametrize("command", ["\udcff\x00\x1b[31m", "'''\"\"\"", "((((", "case x in", "a |", "} {"])
def test_parse_never_raises_on_malformed_input(command: str) -> None:
    shell = parse(command)
    assert shell.invocation is None or shell.understood
