"""`codeoid-compress`: raw stdout archived before anything derived is printed, and the command's output never lost.

The executable runs as a person or the rewrite runs it; the failure paths (store gone, engine or archive failing
mid-stream, a reader that goes away) are driven through the `Relay` directly, with the fault injected.
"""

from __future__ import annotations

import array
import fcntl
import os
import signal
import sqlite3
import subprocess
import termios
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import executable

from codeoid.compressors import relay as relay_module
from codeoid.compressors.engine import MARKER
from codeoid.compressors.loader import load_rules
from codeoid.compressors.relay import RawOutputSpec, Relay
from codeoid.compressors.rules import Rule
from codeoid.store import db, raw

RULES = """
[[rule]]
name = "test-seq"
match = { program = ["seq"] }
head = 5
tail = 3
"""


def seq_rule_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with the `test-seq` rule (and no user rules), as the current directory."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = tmp_path / "project"
    (root / ".codeoid" / "rules").mkdir(parents=True)
    (root / ".codeoid" / "rules" / "test.toml").write_text(RULES)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def project(tmp_path: Path, codeoid_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return seq_rule_project(tmp_path, monkeypatch)


def seq_bytes(count: int) -> bytes:
    return "".join(f"{i}\n" for i in range(1, count + 1)).encode()


def compress(*args: str, stdin: bytes | None = None, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([executable("codeoid-compress"), *args], input=stdin, capture_output=True, timeout=120,
                          **kwargs)


def raw_outputs() -> list[dict[str, Any]]:
    connection = db.connect()
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute("SELECT * FROM raw_outputs")]
    finally:
        connection.close()


def archived_stdout(raw_id: str) -> bytes:
    connection = db.connect()
    try:
        return raw.read_raw_stdout(connection, raw_id)
    finally:
        connection.close()


def test_running_a_command_archives_it_first_and_prints_it_compressed_with_a_footer(project: Path) -> None:
    done = compress("--rule", "test-seq", "--", "sh", "-c", "seq 1 2000; echo on-stderr >&2; exit 3")

    assert done.returncode == 3 and done.stderr == b"on-stderr\n"
    (row,) = raw_outputs()
    assert archived_stdout(row["id"]) == seq_bytes(2000)
    assert (row["command"], row["cwd"], row["exit_status"], row["complete"]) == (
        "sh -c 'seq 1 2000; echo on-stderr >&2; exit 3'", str(project), 3, 1)
    assert row["duration_ms"] is not None and row["workspace_id"] is not None
    lines = done.stdout.decode().splitlines()
    assert lines[:5] == ["1", "2", "3", "4", "5"] and lines[-4:-1] == ["1998", "1999", "2000"]
    assert lines[-1] == (f"[codeoid] rule test-seq: 1,992 of 2,000 lines removed (1,992 head/tail). Exact output: "
                         f"{row['id']} (get_episode(\"{row['id']}\"), or `codeoid show {row['id']} --raw`)")


def test_a_pipe_named_with_command_is_filtered_and_the_raw_id_comes_from_the_tool_use_id(project: Path) -> None:
    done = compress("--tool-use-id", "toolu_pipe", "--command", "seq 1 2000", stdin=seq_bytes(2000))

    assert done.returncode == 0 and b"raw-toolu_pipe" in done.stdout.splitlines()[-1]
    assert archived_stdout("raw-toolu_pipe") == seq_bytes(2000)
    assert raw_outputs()[0]["exit_status"] is None  # inside a pipe it cannot see; PostToolUse fills it in


BROKEN_RULE_FILE = '[[rule]]\nname = "unterminated\nmatch = { program = ["seq"] }\n'


def codeoid_log(codeoid_home: Path) -> str:
    path = codeoid_home / "logs" / "codeoid.log"
    return path.read_text() if path.exists() else ""


def test_a_broken_rule_file_by_hand_is_one_stderr_line_and_a_log_line_and_the_other_rules_still_apply(
        project: Path, codeoid_home: Path) -> None:
    (project / ".codeoid" / "rules" / "bad.toml").write_text(BROKEN_RULE_FILE)

    done = compress("--", "seq", "1", "2000")

    errors = done.stderr.decode().splitlines()
    assert len(errors) == 1 and "bad.toml:2: invalid TOML" in errors[0] and errors[0].startswith("codeoid-compress:")
    assert done.returncode == 0 and MARKER in done.stdout  # the good project rule (and the built-ins) still apply
    assert "bad.toml:2: invalid TOML" in codeoid_log(codeoid_home)
    again = compress("--", "seq", "1", "2000")
    assert again.stderr == done.stderr  # said each time by hand; logged once per change of the file
    assert codeoid_log(codeoid_home).count("bad.toml:2") == 1


def test_under_the_rewrite_a_broken_rule_file_is_logged_and_stderr_stays_the_commands_own(
        project: Path, codeoid_home: Path) -> None:
    (project / ".codeoid" / "rules" / "bad.toml").write_text(BROKEN_RULE_FILE)

    done = compress("--tool-use-id", "toolu_bad_rules", "--", "seq", "1", "2000")

    assert done.stderr == b"" and MARKER in done.stdout
    assert "bad.toml:2: invalid TOML" in codeoid_log(codeoid_home)


def test_the_global_budget_comes_from_the_environment_for_rules_without_their_own(
        tmp_path: Path, codeoid_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = seq_rule_project(tmp_path, monkeypatch)
    rule = '[[rule]]\nname = "seq-all"\nmatch = { program = ["seq"] }\n'  # no budget of its own
    (root / ".codeoid" / "rules" / "test.toml").write_text(rule)

    default = compress("--", "seq", "1", "2000").stdout
    tight = compress("--", "seq", "1", "2000", env={**os.environ, "CODEOID_BUDGET_LINES": "10"}).stdout

    def kept(out: bytes) -> list[bytes]:
        return [line for line in out.split(b"\n") if line and not line.startswith(MARKER)]
    assert len(kept(default)) == 60 - 1 and len(kept(tight)) == 10 - 1  # a cut's marker line counts too
    assert MARKER + b"1941 lines cut, raw lines 59-1999" in default.split(b"\n")


def test_small_output_passes_through_unchanged_and_is_not_archived(project: Path) -> None:
    done = compress("--", "seq", "1", "30")

    assert done.stdout == seq_bytes(30) and raw_outputs() == []


def test_a_command_no_rule_applies_to_runs_as_itself(project: Path) -> None:
    done = compress("--", "sh", "-c", "printf 'x%.0s\\n' $(seq 1 500); exit 4")

    assert (done.returncode, done.stdout) == (4, b"x\n" * 500)
    assert raw_outputs() == []


def test_store_unavailable_means_raw_output_unchanged(project: Path, codeoid_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    locker = db.connect()
    locker.execute("BEGIN EXCLUSIVE")
    try:
        done = compress("--", "seq", "1", "2000", env={**os.environ, "CODEOID_BUSY_TIMEOUT_MS": "50"})
    finally:
        locker.execute("ROLLBACK")
        locker.close()

    assert (done.returncode, done.stdout) == (0, seq_bytes(2000))


def test_long_outputs_stream_through_the_archive_in_order(project: Path) -> None:
    count = 300_000  # ~2 MB: past the engine's hold, so archiving and printing interleave
    done = compress("--tool-use-id", "toolu_long", "--", "seq", "1", str(count))

    assert archived_stdout("raw-toolu_long") == seq_bytes(count)
    assert done.stdout.splitlines()[:5] == [b"1", b"2", b"3", b"4", b"5"]
    assert done.stdout.splitlines()[-2] == str(count).encode()


# -- signals and readers that go away -------------------------------------------------------------------------


def wait_for_sigterm_handler(pid: int, timeout: float = 30) -> None:
    """Until the process catches SIGTERM (it installs its handlers just before reading)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
        if caught & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.05)
    raise AssertionError("the compressor never installed its signal handlers")


def wait_for_child(pid: int, name: str, timeout: float = 60) -> psutil.Process:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [child for child in psutil.Process(pid).children() if child.name() == name]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never started {name!r}")


def wait_until_read(pipe: Any, timeout: float = 60) -> None:
    """Until the reader has taken every byte written into `pipe` (FIONREAD counts what is still in it).

    Nothing more to wait for: the compressor learns of a signal only in its select loop, after it has used the
    chunk it read, so a signal sent now finds every byte taken in."""
    deadline = time.monotonic() + timeout
    unread = array.array("i", [0])
    while time.monotonic() < deadline:
        fcntl.ioctl(pipe.fileno(), termios.FIONREAD, unread)
        if unread[0] == 0:
            return
        time.sleep(0.05)
    raise AssertionError("the compressor never read its input")


def wait_until_output_read(writer: psutil.Process, then: str, timeout: float = 60) -> None:
    """Until `writer` (a shell whose stdout is the compressor's input pipe) has moved on to its child named `then`,
    so what it printed before is all in the pipe, and the compressor has read all of it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(child.name() == then for child in writer.children()):
            # The pipe itself, opened anew through /proc: FIONREAD on it counts what is still unread.
            fd = os.open(f"/proc/{writer.pid}/fd/1", os.O_RDONLY | os.O_NONBLOCK)
            try:
                unread = array.array("i", [0])
                fcntl.ioctl(fd, termios.FIONREAD, unread)
            finally:
                os.close(fd)
            if unread[0] == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"the command never reached {then!r} with its output read")


def terminated_after_reading(data: bytes, *args: str) -> tuple[bytes, int]:
    """Run `codeoid-compress ARGS`, feed it `data` and send SIGTERM once it has read all of it, the pipe still
    open; its stdout and exit status."""
    process = subprocess.Popen([executable("codeoid-compress"), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(data)
    process.stdin.flush()
    wait_until_read(process.stdin)
    process.send_signal(signal.SIGTERM)
    out = process.stdout.read()
    status = process.wait(timeout=60)
    process.stdin.close()
    return out, status


def test_sigterm_prints_what_is_held_raw_at_once_and_exits(project: Path) -> None:
    out, status = terminated_after_reading(seq_bytes(100), "--command", "seq 1 100")

    assert out == seq_bytes(100)
    assert status == 128 + signal.SIGTERM


def test_sigterm_mid_stream_keeps_what_was_compressed_and_adds_the_rest_raw(project: Path) -> None:
    out, _ = terminated_after_reading(seq_bytes(200_000), "--tool-use-id", "toolu_term", "--command", "seq")

    lines = out.decode().splitlines()
    assert lines[:5] == ["1", "2", "3", "4", "5"]
    assert "200000" in lines and "raw-toolu_term" in lines[-1]
    assert archived_stdout("raw-toolu_term") == seq_bytes(200_000)


def test_sigint_while_running_a_command_stops_at_once(project: Path) -> None:
    process = subprocess.Popen([executable("codeoid-compress"), "--rule", "test-seq", "--", "sh", "-c",
                                "seq 1 50; sleep 30"],
                               stdout=subprocess.PIPE)
    wait_for_sigterm_handler(process.pid)
    shell = wait_for_child(process.pid, "sh")
    wait_until_output_read(shell, then="sleep")  # the 50 lines are printed and read, the command still runs
    process.send_signal(signal.SIGINT)

    assert process.wait(timeout=60) == 128 + signal.SIGINT
    assert process.stdout is not None and process.stdout.read() == seq_bytes(50)


def test_a_reader_that_goes_away_never_kills_the_writer_with_sigpipe(project: Path) -> None:
    writer = subprocess.Popen(["seq", "1", "1000000"], stdout=subprocess.PIPE)
    compressor = subprocess.Popen([executable("codeoid-compress"), "--command", "uname"], stdin=writer.stdout,
                                  stdout=subprocess.PIPE)
    assert writer.stdout is not None and compressor.stdout is not None
    writer.stdout.close()
    compressor.stdout.read(10)
    compressor.stdout.close()

    assert writer.wait(timeout=60) == 0
    assert compressor.wait(timeout=60) == 0


def test_a_command_whose_reader_goes_away_still_runs_to_its_end(project: Path) -> None:
    compressor = subprocess.Popen([executable("codeoid-compress"), "--rule", "test-seq", "--", "sh", "-c",
                                   "seq 1 1000000; exit 5"],
                                  stdout=subprocess.PIPE)
    assert compressor.stdout is not None
    compressor.stdout.read(10)
    compressor.stdout.close()

    assert compressor.wait(timeout=120) == 5


# -- failures inside the relay --------------------------------------------------------------------------------


class Output:
    """A file the relay writes to (a pipe would block once full), read back whole."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.write_end = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)

    def read(self) -> bytes:
        os.close(self.write_end)
        return self.path.read_bytes()


def seq_rule(project: Path) -> Rule:
    rule = load_rules(project_dir=project).named("test-seq")
    assert rule is not None
    return rule


def run_relay(project: Path, data: bytes, *, raw_id: str, chunk: int = 64 * 1024) -> bytes:
    output = Output(project / "relay-output")
    relay = Relay(seq_rule(project), RawOutputSpec(raw_id, "seq", str(project), str(project), None),
                  sink=output.write_end)
    for start in range(0, len(data), chunk):
        relay.feed(data[start:start + chunk])
    relay.finish(exit_status=0)
    return output.read()


def test_an_engine_failure_mid_stream_passes_the_rest_through_unchanged(project: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    data = seq_bytes(200_000)
    calls = 0
    real_feed = relay_module.Compressor.feed

    def failing_feed(self: Any, chunk: bytes) -> bytes:
        nonlocal calls
        calls += 1
        if calls == 10:
            raise RuntimeError("engine bug")
        return real_feed(self, chunk)

    monkeypatch.setattr(relay_module.Compressor, "feed", failing_feed)
    out = run_relay(project, data, raw_id="raw-engine-bug")

    assert out.startswith(b"1\n2\n3\n4\n5\n")
    failed_at = 9 * 64 * 1024
    assert data[failed_at:] in out  # everything from the failing chunk on, unchanged
    assert archived_stdout("raw-engine-bug") == data


def test_an_archive_failure_mid_stream_prints_raw_what_it_could_not_archive(project: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    data = seq_bytes(200_000)
    real_write = raw.RawOutputWriter.write
    written = 0

    def failing_write(self: Any, chunk: bytes) -> None:
        nonlocal written
        if written > 512 * 1024:
            raise db.StoreUnavailable("disk full")
        written += len(chunk)
        real_write(self, chunk)

    monkeypatch.setattr(raw.RawOutputWriter, "write", failing_write)
    out = run_relay(project, data, raw_id="raw-disk-full")

    archived = archived_stdout("raw-disk-full")
    assert data.startswith(archived) and len(archived) > 256 * 1024
    assert data[len(archived):] in out  # what the store did not get, the reader did, unchanged
    assert MARKER in out


def test_a_store_that_cannot_be_opened_leaves_the_output_unchanged(project: Path) -> None:
    output = Output(project / "relay-output")

    def unavailable() -> sqlite3.Connection:
        raise db.StoreUnavailable("locked")

    relay = Relay(seq_rule(project), RawOutputSpec("raw-none", "seq", str(project), str(project), None),
                  sink=output.write_end, open_store=unavailable)
    data = seq_bytes(100_000)
    for start in range(0, len(data), 50_000):
        relay.feed(data[start:start + 50_000])
    relay.finish(exit_status=0)

    assert output.read() == data and not relay.archived
