"""The user's terminal, passed through to a backing `claude` running on a pseudo-terminal of its own.

The supervisor puts the user's terminal in raw mode, so every key (Ctrl-C, Esc, Ctrl-Z) reaches `claude` as the
byte it is and `claude` alone decides what it means; the supervisor keeps the window size of the pseudo-terminal
equal to the user's. Each backing `claude` gets a fresh pseudo-terminal, so a rotation never leaves the old
process's input half read.
"""

from __future__ import annotations

import fcntl
import os
import struct
import termios
import tty
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# What a killed TUI may have left switched on: alternate screen, hidden cursor, bracketed paste, mouse and focus
# reporting, the kitty keyboard protocol, colours. The next `claude` turns on what it needs again.
RESET_MODES = (b"\x1b[?1049l\x1b[?25h\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l"
               b"\x1b[<u\x1b[0m")


class Child:
    """A process running on the slave side of a pseudo-terminal whose master side is `fd`."""

    __slots__ = ("pid", "fd")

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd


def spawn(argv: list[str], *, env: dict[str, str], cwd: str, size: bytes | None) -> Child:
    """Start `argv` as the session leader of a new pseudo-terminal (its controlling terminal), sized like the
    user's terminal. `os.forkpty` does the fork, `setsid` and `TIOCSCTTY` in C; the child only calls `exec`."""
    pid, fd = os.forkpty()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        except BaseException as error:  # noqa: BLE001 - a forked child must never return into the supervisor
            os.write(2, f"codeoid run: cannot start {argv[0]}: {error}\r\n".encode())
        os._exit(127)
    if size is not None:
        set_size(fd, size)
    os.set_blocking(fd, False)
    return Child(pid, fd)


def get_size(fd: int) -> bytes | None:
    """The window size of terminal `fd` (the raw `struct winsize`), or None if `fd` is not a terminal."""
    try:
        return fcntl.ioctl(fd, termios.TIOCGWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
    except OSError:
        return None


def set_size(fd: int, size: bytes) -> None:
    """Resize the pseudo-terminal; the kernel sends SIGWINCH to the process group in its foreground."""
    try:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, size)
    except OSError:
        pass


@contextmanager
def raw_mode(fd: int) -> Iterator[list[Any] | None]:
    """Raw mode on `fd` for the duration, restored however the block ends; yields the saved settings (None when
    `fd` is no terminal, and nothing is changed)."""
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        yield None
        return
    tty.setraw(fd, termios.TCSANOW)
    try:
        yield saved
    finally:
        restore(fd, saved)


def restore(fd: int, saved: list[Any]) -> None:
    try:
        termios.tcsetattr(fd, termios.TCSAFLUSH, saved)
    except termios.error:
        pass


def enter_raw(fd: int) -> None:
    """Raw mode again after the supervisor was stopped and continued."""
    try:
        tty.setraw(fd, termios.TCSANOW)
    except termios.error:
        pass


def write_all(fd: int, data: bytes) -> None:
    """Write everything to a blocking descriptor (the user's terminal)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except BlockingIOError:
            import select

            select.select([], [fd], [], 1.0)
            continue
        view = view[written:]
