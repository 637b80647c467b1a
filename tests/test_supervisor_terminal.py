"""`codeoid run` passes the terminal through: keys as typed (raw mode, Ctrl-C included), resizes, and the exit code.

A stand-in for `claude` (a few lines of Python on the supervisor's pseudo-terminal) reports what it receives, so
these run in a second, without the real CLI.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
from e2e.tui import Terminal

from codeoid.rotation.supervisor import SESSION_ENV

FAKE_CLAUDE = r'''
import fcntl, json, os, signal, struct, sys, termios, tty

def size():
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8))
    return f"SIZE {rows}x{cols}\r\n".encode()

signal.signal(signal.SIGWINCH, lambda *_: os.write(1, size()))
with open(os.environ["FAKE_CLAUDE_LOG"], "w") as log:
    json.dump({"pid": os.getpid(), "argv": sys.argv[1:], "session": os.environ.get("CODEOID_SESSION_ID"),
               "run_dir": os.environ.get("CODEOID_RUN_DIR")}, log)
tty.setraw(0)  # before the first SIZE line: a test that has seen it may send Ctrl-C, which must arrive as a key
os.write(1, size())
while True:
    key = os.read(0, 1)
    if key == b"q":
        sys.exit(7)
    os.write(1, b"KEY " + key.hex().encode() + b"\r\n")
'''


def _supervise(tmp_path: Path) -> tuple[Terminal, Path]:
    fake = tmp_path / "claude"
    fake.write_text(f"#!{sys.executable}\n{FAKE_CLAUDE}")
    fake.chmod(0o755)
    log = tmp_path / "fake-claude.json"
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "CODEOID_CLAUDE_BIN": str(fake), "CODEOID_HOME": str(tmp_path / "data"),
           "HOME": str(tmp_path), "FAKE_CLAUDE_LOG": str(log)}
    env.pop(SESSION_ENV, None)
    codeoid = str(Path(sys.executable).parent / "codeoid")
    return Terminal([codeoid, "run", "--model", "sonnet"], env=env, cwd=str(project), rows=40, cols=120), log


def test_keys_resizes_and_the_exit_code_pass_through(tmp_path: Path) -> None:
    term, log = _supervise(tmp_path)
    try:
        term.wait_for("SIZE 40x120", timeout=60)
        term.resize(30, 100)
        term.wait_for("SIZE 30x100")
        term.write(b"\x03\x1b")  # Ctrl-C and Esc are the child's to interpret, not the supervisor's
        term.wait_for("KEY 03")
        term.wait_for("KEY 1b")
        assert term.alive()
        term.write(b"q")
        assert term.wait_exit(20) == 7
    finally:
        term.close()
    started = json.loads(log.read_text())
    argv = started["argv"]
    assert argv[:2] == ["--model", "sonnet"] and "--session-id" in argv
    assert "statusline" in json.loads(argv[argv.index("--settings") + 1])["statusLine"]["command"]
    assert started["session"] and started["run_dir"]
    assert not Path(started["run_dir"]).exists()  # the run directory goes with the supervisor


def test_sigterm_ends_the_supervisor_and_its_claude(tmp_path: Path) -> None:
    import signal

    term, log = _supervise(tmp_path)
    try:
        term.wait_for("SIZE 40x120", timeout=60)
        term.signal(signal.SIGTERM)
        assert term.wait_exit(20) == 128 + signal.SIGTERM
    finally:
        term.close()
    pid = json.loads(log.read_text())["pid"]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
