"""The savings ledger: `codeoid gain` adds up what real `codeoid-compress` runs kept out of the window, and charges
back every read of a raw output the model makes through the MCP server.

Every number is checked against something a user can measure: the bytes the real command prints without
codeoid, the bytes `codeoid-compress` printed, the text `get_episode` returned.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import executable
from test_compress_cli import Output, seq_bytes, seq_rule_project, terminated_after_reading
from test_mcp_server import Memory, serve

from codeoid import paths
from codeoid.claude_window import window_size
from codeoid.compressors.loader import load_rules
from codeoid.compressors.relay import RawOutputSpec, Relay
from codeoid.store import db
from codeoid.store.migrations import migrate

GIT = ["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev"]


def compress(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([executable("codeoid-compress"), *args], capture_output=True, cwd=cwd, timeout=120)


def gain(*args: str, cwd: Path) -> Any:
    done = subprocess.run([executable("codeoid"), "gain", "--json", *args], capture_output=True, cwd=cwd,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def by_key(accounts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {account["key"]: account for account in accounts}


def tokens(size: int) -> int:
    """Four bytes a token, rounded up, as `codeoid gain` states it estimates."""
    return (size + 3) // 4


def git_repo_with_changes(root: Path) -> Path:
    """A real repository: 40 committed files, each then changed in a few lines, and an untracked tree."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for index in range(40):
        (root / f"module_{index}.py").write_text("".join(f"value_{line} = {line}\n" for line in range(150)))
    subprocess.run([*GIT, "add", "."], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "initial"], cwd=root, check=True)
    for index in range(40):
        path = root / f"module_{index}.py"
        path.write_text(path.read_text().replace("value_75 = 75", "value_75 = 'changed'"))
    for directory in range(12):
        (root / "assets" / f"set_{directory}").mkdir(parents=True)
        for name in range(40):
            (root / "assets" / f"set_{directory}" / f"icon_{name}.svg").touch()
    return root


def failing_test_suite(root: Path) -> None:
    tests = "".join(f"def test_ok_{index}():\n    assert True\n\n\n" for index in range(300))
    (root / "test_suite.py").write_text(tests + "def test_broken():\n    assert 1 + 1 == 3\n")


def plain(*command: str, cwd: Path) -> bytes:
    return subprocess.run(command, capture_output=True, cwd=cwd, check=False).stdout


def test_gain_adds_up_real_compressed_runs_per_rule_per_session_and_in_total(
        tmp_path: Path, codeoid_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # the pytest run must not add to `git status`
    repo = git_repo_with_changes(tmp_path / "repo")
    failing_test_suite(repo)
    runs = {
        "git-diff": ["git", "diff"],
        "ls-recursive": ["ls", "-lR", "assets"],
        "find": ["find", "assets", "-type", "f"],
        "pytest": [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_suite.py"],
    }
    shown = {}
    for rule, command in runs.items():
        done = compress("--tool-use-id", f"toolu_{rule}", "--", *command, cwd=repo)
        assert done.returncode == (1 if rule == "pytest" else 0), done.stderr
        assert f"rule {rule}:".encode() in done.stdout.splitlines()[-1]
        shown[rule] = len(done.stdout)
    raw_size = {rule: len(plain(executable("codeoid"), "show", f"raw-toolu_{rule}", "--raw", cwd=repo))
                for rule in runs}
    for rule in ("git-diff", "ls-recursive", "find"):  # deterministic: the command alone prints the same bytes
        assert raw_size[rule] == len(plain(*runs[rule], cwd=repo))

    accounts = gain(cwd=repo)

    rules = by_key(accounts["by_rule"])
    assert set(rules) == set(runs)
    # Against the window Claude Code alone would have shown: the pytest run failed, so without codeoid the model
    # would have read its first and last 5,000 characters, not its raw size.
    exits = {"pytest": 1}
    saved_of = {rule: window_size(raw_size[rule], exits.get(rule, 0)) - window_size(shown[rule], exits.get(rule, 0))
                for rule in runs}
    assert window_size(raw_size["pytest"], 1) < raw_size["pytest"]
    for rule in runs:
        saved = saved_of[rule]
        assert saved > 0
        assert {field: rules[rule][field] for field in ("runs", "raw_bytes", "shown_bytes", "saved_chars",
                                                        "raw_saved_bytes", "saved_tokens", "reads", "net_chars")} == {
            "runs": 1, "raw_bytes": raw_size[rule], "shown_bytes": shown[rule], "saved_chars": saved,
            "raw_saved_bytes": raw_size[rule] - shown[rule], "saved_tokens": tokens(saved), "reads": 0,
            "net_chars": saved}
    total_saved = sum(saved_of.values())
    assert (accounts["total"]["runs"], accounts["total"]["saved_chars"]) == (4, total_saved)
    assert accounts["by_session"] == [{**accounts["total"], "key": "(by hand)"}]
    assert [account["key"] for account in accounts["by_rule"]] == sorted(runs, key=lambda rule: -saved_of[rule])

    table = subprocess.run([executable("codeoid"), "gain"], capture_output=True, cwd=repo, text=True).stdout
    diff_row = next(line for line in table.splitlines() if line.startswith("git-diff "))
    saved = saved_of["git-diff"]
    alone = window_size(raw_size["git-diff"])
    assert diff_row.split() == ["git-diff", "1", f"{alone:,}", f"{window_size(shown['git-diff']):,}",
                                f"{saved:,}", f"{100 * saved / alone:.1f}%", f"{tokens(saved):,}", "0",
                                "0", "0", f"{saved:,}", f"{tokens(saved):,}", f"{raw_size['git-diff']:,}",
                                f"{shown['git-diff']:,}"]


def test_a_pass_through_saves_nothing_and_codeoids_own_lines_count_against_it(tmp_path: Path,
                                                                               codeoid_home: Path) -> None:
    project = tmp_path / "web"
    project.mkdir()
    (project / "bundle.min.js").write_text("var a=" + "1+" * 600_000 + "1;\n")  # one 1.2 MB line
    (project / "README").write_text("".join(f"line {index}\n" for index in range(20)))

    small = compress("--", "cat", "README", cwd=project)  # no rule, and small: unchanged, nothing archived
    big = compress("--", "grep", "var", "bundle.min.js", cwd=project)  # a line over 1 MB: passed through
    accounts = gain("--all-workspaces", cwd=project)

    assert small.stdout == (project / "README").read_bytes()
    raw_grep = plain("grep", "var", "bundle.min.js", cwd=project)
    codeoid_lines = [line for line in big.stdout.splitlines(keepends=True) if line.startswith(b"[codeoid] ")]
    assert b"".join(line for line in big.stdout.splitlines(keepends=True)
                    if not line.startswith(b"[codeoid] ")) == raw_grep
    (account,) = accounts["by_rule"]
    assert account["key"] == "(passed through)"
    assert (account["runs"], account["raw_bytes"], account["shown_bytes"]) == (1, len(raw_grep), len(big.stdout))
    assert account["raw_saved_bytes"] == -sum(len(line) for line in codeoid_lines) < 0
    # Over Claude Code's cap either way: the model reads the same 2 KB preview with codeoid or without.
    assert account["saved_chars"] == 0 and account["alone_chars"] == window_size(len(raw_grep)) < 2500
    assert accounts["total"]["saved_chars"] == account["saved_chars"]


@pytest.fixture
def seq_project(tmp_path: Path, codeoid_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return seq_rule_project(tmp_path, monkeypatch)


def test_a_run_cut_short_by_sigterm_counts_only_what_was_archived_and_printed(seq_project: Path) -> None:
    out, status = terminated_after_reading(seq_bytes(200_000), "--tool-use-id", "toolu_term", "--command", "seq")
    assert status == 128 + signal.SIGTERM

    (account,) = gain("--all-workspaces", cwd=seq_project)["by_rule"]
    archived = len(plain(executable("codeoid"), "show", "raw-toolu_term", "--raw", cwd=seq_project))
    assert account["key"] == "test-seq" and b"interrupted" in out.splitlines()[-1]
    assert (account["raw_bytes"], account["shown_bytes"]) == (archived, len(out))
    assert account["saved_chars"] == window_size(archived) - len(out) > 0


def test_a_run_whose_ledger_entry_cannot_be_written_claims_no_saving(seq_project: Path) -> None:
    output = Output(seq_project / "relay-output")
    rule = load_rules(project_dir=seq_project).named("test-seq")
    assert rule is not None
    relay = Relay(rule, RawOutputSpec("raw-locked", "seq", str(seq_project), str(seq_project), None),
                  sink=output.write_end, open_store=lambda: db.connect(busy_ms=50))
    data = seq_bytes(100_000)  # past the engine's hold: archived while it streams
    for start in range(0, len(data), 64 * 1024):
        relay.feed(data[start:start + 64 * 1024])
    locker = db.connect()
    locker.execute("BEGIN EXCLUSIVE")
    try:
        relay.finish(exit_status=0)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    out = output.read()

    assert out.startswith(b"1\n2\n3\n4\n5\n") and b"raw-locked" in out.splitlines()[-1]
    (account,) = gain("--all-workspaces", cwd=seq_project)["by_rule"]
    assert account["key"] == "(not recorded)"
    assert (account["runs"], account["raw_bytes"], account["saved_chars"]) == (1, len(data), 0)


@pytest.fixture
def memory(tmp_path: Path, codeoid_home: Path) -> Iterator[Memory]:
    project = git_repo_with_changes(tmp_path / "project")
    found = Memory(codeoid_home, project)
    try:
        yield found
    finally:
        found.db.close()


def test_reads_of_a_raw_output_through_mcp_are_charged_back_each_time_and_the_cli_is_free(memory: Memory) -> None:
    done = compress("--tool-use-id", "toolu_diff", "--", "git", "diff", cwd=memory.project)
    owner = memory.backing("bs-1")
    memory.tool(owner, "Bash", {"command": "git diff"}, {"stdout": done.stdout.decode(), "stderr": "",
                                                         "interrupted": False}, raw_output_id="raw-toolu_diff")
    first, again, lines = serve(memory, ("get_episode", {"episode_id": "raw-toolu_diff"}),
                                ("get_episode", {"episode_id": "raw-toolu_diff"}),
                                ("get_episode", {"episode_id": "raw-toolu_diff", "start_line": 10, "end_line": 40}))
    assert not (first.is_error or again.is_error or lines.is_error) and "value_75 = 'changed'" in first.text
    subprocess.run([executable("codeoid"), "show", "raw-toolu_diff", "--raw"], capture_output=True, check=True,
                   cwd=memory.project)

    accounts = gain("--session", owner.session_id, cwd=memory.project)

    read_bytes = [len(result.text.encode()) for result in (first, again, lines)]
    read_tokens = [tokens(len(result.text)) for result in (first, again, lines)]
    raw_size = len(plain("git", "diff", cwd=memory.project))
    saved = raw_size - len(done.stdout)
    (session,) = accounts["by_session"]
    assert session["key"] == owner.session_id and accounts["by_rule"][0]["key"] == "git-diff"
    assert {field: session[field] for field in ("runs", "raw_bytes", "shown_bytes", "saved_chars", "reads",
                                                "charged_bytes", "charged_tokens", "net_chars", "net_tokens")} == {
        "runs": 1, "raw_bytes": raw_size, "shown_bytes": len(done.stdout), "saved_chars": saved, "reads": 3,
        "charged_bytes": sum(read_bytes), "charged_tokens": sum(read_tokens), "net_chars": saved - sum(read_bytes),
        "net_tokens": tokens(saved) - sum(read_tokens)}
    unknown = subprocess.run([executable("codeoid"), "gain", "--session", "someone-else"], capture_output=True,
                             text=True, cwd=memory.project, timeout=60)
    assert unknown.returncode == 2 and "No codeoid session 'someone-else'" in unknown.stderr


def test_a_recall_file_answered_from_a_raw_output_is_charged_back_too(memory: Memory) -> None:
    rules = memory.project / ".codeoid" / "rules"
    rules.mkdir(parents=True)
    rules.joinpath("logs.toml").write_text('[[rule]]\nname = "long-logs"\nmatch = { program = ["cat"] }\n'
                                           'head = 20\ntail = 5\n')
    (memory.project / "build.log").write_text("".join(f"step {index}: compiled unit_{index}.o\n"
                                                      for index in range(2000)))
    done = compress("--tool-use-id", "toolu_cat", "--", "cat", "build.log", cwd=memory.project)
    owner = memory.backing("bs-1")
    memory.tool(owner, "Bash", {"command": "cat build.log"}, {"stdout": done.stdout.decode(), "stderr": "",
                                                              "interrupted": False}, raw_output_id="raw-toolu_cat")

    (found,) = serve(memory, ("recall_file", {"path": "build.log"}))
    accounts = gain(cwd=memory.project)

    assert not found.is_error and "Shown from raw output raw-toolu_cat" in found.text
    assert "step 1000: compiled unit_1000.o" in found.text  # the raw bytes, not the compressed view
    (account,) = accounts["by_rule"]
    assert (account["key"], account["reads"], account["charged_bytes"], account["charged_tokens"]) == (
        "long-logs", 1, len(found.text.encode()), tokens(len(found.text)))
    assert account["net_chars"] == account["saved_chars"] - len(found.text.encode())


def test_paging_a_raw_output_by_lines_charges_exactly_what_each_page_returned(memory: Memory) -> None:
    rules = memory.project / ".codeoid" / "rules"
    rules.mkdir(parents=True)
    rules.joinpath("logs.toml").write_text('[[rule]]\nname = "long-logs"\nmatch = { program = ["cat"] }\n'
                                           'head = 20\ntail = 5\n')
    (memory.project / "build.log").write_text("".join(f"step {index}: compiled unit_{index}.o\n"
                                                      for index in range(2000)))
    done = compress("--tool-use-id", "toolu_cat", "--", "cat", "build.log", cwd=memory.project)
    owner = memory.backing("bs-1")
    memory.tool(owner, "Bash", {"command": "cat build.log"}, {"stdout": done.stdout.decode(), "stderr": "",
                                                              "interrupted": False}, raw_output_id="raw-toolu_cat")

    recalled, first, second, one, bad, past, from_file = serve(
        memory, ("recall", {"query": "compiled unit_1000"}),
        ("get_episode", {"episode_id": "raw-toolu_cat", "lines": "990-1010"}),
        ("get_episode", {"episode_id": "raw-toolu_cat", "lines": "1011-"}),
        ("get_episode", {"episode_id": "raw-toolu_cat", "start_line": 5, "end_line": 5}),
        ("get_episode", {"episode_id": "raw-toolu_cat", "lines": "ten"}),
        ("get_episode", {"episode_id": "raw-toolu_cat", "lines": "5000-5001"}),
        ("recall_file", {"path": "build.log", "lines": "1500-1502"}))
    accounts = gain(cwd=memory.project)

    assert "raw output raw-toolu_cat (2,000 lines" in recalled.text  # a hit names the raw output: not a read of it
    assert bad.is_error and past.is_error
    assert "step 1000: compiled unit_1000.o" in first.text and "step 1999: compiled unit_1999.o" in second.text
    assert "step 1499: compiled unit_1499.o" in from_file.text and "step 1502" not in from_file.text
    reads = [first, second, one, from_file]
    connection = db.connect()
    charged = connection.execute("SELECT reader, start_line, end_line, bytes FROM raw_output_reads ORDER BY id"
                                 ).fetchall()
    connection.close()
    assert charged == [("get_episode", 990, 1010, len(first.text.encode())),
                       ("get_episode", 1011, None, len(second.text.encode())),
                       ("get_episode", 5, 5, len(one.text.encode())),
                       ("recall_file", 1500, 1502, len(from_file.text.encode()))]
    (account,) = accounts["by_rule"]
    assert (account["reads"], account["charged_bytes"], account["charged_tokens"]) == (
        4, sum(len(read.text.encode()) for read in reads), sum(tokens(len(read.text)) for read in reads))
    assert account["net_chars"] == account["saved_chars"] - sum(len(read.text.encode()) for read in reads)


def test_a_store_from_the_m004_schema_upgrades_and_its_old_outputs_claim_no_saving(seq_project: Path) -> None:
    paths.ensure_private_dir(os.path.dirname(paths.database_path()))
    old = sqlite3.connect(paths.database_path(), isolation_level=None)
    migrate(old, upto="m004_vector_index")
    # Written as that version wrote it (today's writer needs today's schema).
    old.execute("INSERT INTO raw_outputs (id, command, exit_status, stdout_size, complete, created_at)"
                " VALUES ('raw-before-ledger', 'git diff', 0, 10000, 1, 1.0)")
    old.execute("INSERT INTO raw_chunks (raw_output_id, seq, data) VALUES ('raw-before-ledger', 0, ?)",
                (b"x\n" * 5000,))
    old.close()

    done = compress("--", "seq", "1", "3000", cwd=seq_project)
    accounts = gain("--all-workspaces", cwd=seq_project)

    rules = by_key(accounts["by_rule"])
    assert (rules["(not recorded)"]["raw_bytes"], rules["(not recorded)"]["saved_chars"]) == (10_000, 0)
    assert rules["test-seq"]["saved_chars"] == len(seq_bytes(3000)) - len(done.stdout) > 0
    assert accounts["total"]["saved_chars"] == rules["test-seq"]["saved_chars"]
    upgraded = db.connect()
    try:
        assert upgraded.execute("SELECT 1 FROM _migrations WHERE name = 'm005_savings_ledger'").fetchone()
    finally:
        upgraded.close()
