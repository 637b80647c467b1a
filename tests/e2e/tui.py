"""Driving an interactive terminal program (the `claude` TUI, or `codeoid run` around it) under a pseudo-terminal.

A test types into the program as a person would and waits for what appears. Two views of the output are kept:
`screen_text`, everything the program wrote with the escape sequences removed (words drawn since a mark, even if
scrolled away since), and `screen`, the screen as a terminal shows it now (pyte emulates it). The second is the
one to wait on for text a TUI draws by changing what is already there: Codex turns "Working (3s)" into
"Worked for 3s" by writing only "ed for 3s" over the old line, so the stream never holds the new words whole.
Output is read continuously by a thread, so the program never blocks on a full PTY buffer while the test waits
for something else (an API request, a file).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import signal
import struct
import termios
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import pyte

# CSI, OSC (ended by BEL or ST) and two-byte escapes: enough to turn the TUI's output into searchable text.
_WHITESPACE = re.compile(r"\s+")
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|[\x00-\x08\x0e-\x1f]")


class _Screen(pyte.Screen):
    """pyte's screen, taking the private SGR sequences (xterm's `CSI > 4;1 m`, modifyOtherKeys) that Gemini CLI
    writes and pyte 0.8.2 passes on with a keyword its own handler does not accept. They set keyboard modes, not
    how text looks, so they change nothing on the screen."""

    def select_graphic_rendition(self, *attrs: int, private: bool = False) -> None:
        if not private:
            super().select_graphic_rendition(*attrs)


def at_a_persons_terminal(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the variables that tell a program it runs in CI: a person at a terminal has none, and with
    them Gemini CLI refuses interactive mode (`CI=true`) and Ink-based TUIs stop redrawing."""
    return {name: value for name, value in env.items()
            if name not in ("CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS") and not name.startswith("CI_")}


class TerminalTimeout(AssertionError):
    """What the test waited for did not appear in time; the message carries the screen's tail."""


class Terminal:
    """One program running on a fresh pseudo-terminal of a given size."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, rows: int = 40,
                 cols: int = 120) -> None:
        self.argv = list(argv)
        pid, fd = os.forkpty()
        if pid == 0:  # the child: become the program, or say why not
            try:
                os.chdir(cwd)
                os.execvpe(self.argv[0], self.argv, at_a_persons_terminal(env))
            except BaseException as error:  # noqa: BLE001 - the child must never return into pytest
                os.write(2, f"exec {self.argv[0]} failed: {error}\n".encode())
            os._exit(127)
        self.pid = pid
        self.fd = fd
        self._output = bytearray()
        self._lock = threading.Lock()
        self._screen = _Screen(cols, rows)
        self._emulator = pyte.ByteStream(self._screen)
        self._emulator_error: Exception | None = None
        self.resize(rows, cols)
        self._exit_status: int | None = None
        self._reader = threading.Thread(target=self._read_forever, daemon=True)
        self._reader.start()

    # -- output ----------------------------------------------------------------------------------------

    def _read_forever(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError as error:
                if error.errno == errno.EINTR:
                    continue
                break  # EIO: every process holding the slave side has exited
            if not chunk:
                break
            with self._lock:
                self._output.extend(chunk)
                if self._emulator_error is None:
                    try:
                        self._emulator.feed(chunk)
                    except Exception as error:  # noqa: BLE001 - the stream must go on being read and kept
                        self._emulator_error = error

    @property
    def output(self) -> bytes:
        with self._lock:
            return bytes(self._output)

    def mark(self) -> int:
        """A position in the output; `wait_for(..., since=mark)` only looks at what came after it."""
        with self._lock:
            return len(self._output)

    def screen_text(self, since: int = 0) -> str:
        """Everything written since `since`, escape sequences removed (cursor moves become nothing)."""
        return _ESCAPES.sub("", self.output[since:].decode("utf-8", "replace"))

    def screen(self) -> str:
        """The screen as the terminal shows it now, one line per row."""
        with self._lock:
            if self._emulator_error is not None:
                raise RuntimeError(f"the terminal emulator failed on the program's output: {self._emulator_error!r}")
            return "\n".join(line.rstrip() for line in self._screen.display)

    def wait_for(self, pattern: str | re.Pattern[str], *, timeout: float = 60, since: int = 0,
                 after: str | None = None, on_screen: bool = False) -> re.Match[str]:
        """Wait until `pattern` appears in the screen text (with `after`: drawn after that text was; with
        `on_screen`: on the screen as it is now, which `since` and `after` do not apply to).

        A literal string is matched with all whitespace ignored on both sides, because the TUI positions words
        with cursor moves rather than spaces; a compiled regex is matched against the text as it is.
        """
        assert not (on_screen and (since or after)), "the screen as it is now has no past to look after"
        if isinstance(pattern, re.Pattern):
            assert after is None, "`after` goes with a literal pattern"
            regex, squeeze = pattern, False
        else:
            literal = re.escape(_WHITESPACE.sub("", pattern))
            if after is not None:
                literal = re.escape(_WHITESPACE.sub("", after)) + ".*?" + literal
            regex, squeeze = re.compile(literal, re.DOTALL), True
        deadline = time.monotonic() + timeout
        view = self.screen if on_screen else lambda: self.screen_text(since)
        while True:
            text = view()
            found = regex.search(_WHITESPACE.sub("", text) if squeeze else text)
            if found:
                return found
            if time.monotonic() > deadline:
                raise TerminalTimeout(f"{regex.pattern!r} did not appear within {timeout}s; screen tail:\n"
                                      f"{view()[-3000:]}")
            if not self.alive() and not self._reader.is_alive():
                raise TerminalTimeout(f"{regex.pattern!r}: the program exited ({self._exit_status}); screen tail:\n"
                                      f"{self.screen_text(since)[-3000:]}")
            time.sleep(0.05)

    # -- input -----------------------------------------------------------------------------------------

    def write(self, data: str | bytes) -> None:
        payload = data.encode() if isinstance(data, str) else data
        while payload:
            written = os.write(self.fd, payload)
            payload = payload[written:]

    def type_line(self, text: str, *, timeout: float = 60, gap: float = 0.3) -> None:
        """Type `text`, wait until the TUI has taken it in (it shows it), then press Enter as a keystroke of its own.

        Waiting for the echo is the synchronisation: a fixed pause is not, since a starved TUI may read the text
        and the Enter together, take them for a paste and insert a newline instead of sending. `gap` is not a wait
        for anything: Codex and Gemini take an Enter that follows the last character by less than about 120 ms
        (by their own clock, which runs on from the echo) for part of a paste, so a person's keystroke gap is kept.
        """
        mark = self.mark()
        self.write(text)
        self.wait_for(text, since=mark, timeout=timeout)
        time.sleep(gap)
        self.write("\r")

    def resize(self, rows: int, cols: int) -> None:
        """Set the terminal size; the kernel sends SIGWINCH to the foreground process group."""
        with self._lock:
            self._screen.resize(rows, cols)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    # -- lifetime --------------------------------------------------------------------------------------

    def alive(self) -> bool:
        if self._exit_status is not None:
            return False
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        self._exit_status = os.waitstatus_to_exitcode(status)
        return False

    def wait_exit(self, timeout: float = 60) -> int:
        """The program's exit code (negative: killed by that signal)."""
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() > deadline:
                raise TerminalTimeout(f"the program did not exit within {timeout}s; screen tail:\n"
                                      f"{self.screen_text()[-3000:]}")
            time.sleep(0.05)
        assert self._exit_status is not None
        return self._exit_status

    def signal(self, signum: int) -> None:
        if self.alive():
            os.kill(self.pid, signum)

    def close(self) -> None:
        """Stop the program if it still runs and release the PTY."""
        if self.alive():
            self.signal(signal.SIGTERM)
            try:
                self.wait_exit(10)
            except TerminalTimeout:
                self.signal(signal.SIGKILL)
                self.wait_exit(5)
        try:
            os.close(self.fd)
        except OSError:
            pass


def wait_until(condition: Callable[[], object], *, timeout: float = 60, interval: float = 0.1,
               message: str | Callable[[], str] = "condition") -> object:
    """Poll `condition` until it returns something truthy; that value is returned."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            text = message() if callable(message) else message
            raise TerminalTimeout(f"timed out after {timeout}s waiting for {text}")
        time.sleep(interval)
