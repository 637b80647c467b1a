"""`codeoid run`: one durable codeoid session over as many backing `claude` windows as it takes.

The supervisor runs `claude` on a pseudo-terminal and passes the user's terminal through. It follows the backing
window's transcript (watchdog) to know how full the window is, learns the real window size from the status line
command it installs, and says in the run directory's `state.json` when a rotation is due. The UserPromptSubmit hook
then hands the next prompt over through the inbox and blocks it; the supervisor ends the old `claude` and everything
it started, records the rotation (the old window's episodes become `archived`), and starts a fresh `claude` whose
first message is the seed followed by that prompt. `/rotate` and `codeoid rotate` post a request without a prompt:
the fresh window then gets the seed as SessionStart context and waits for the user.

Everything runs on one thread around `selectors`; watchdog's thread and the signal handlers only wake it through a
pipe, so no state is shared between threads.
"""

from __future__ import annotations

import errno
import glob
import os
import selectors
import shutil
import signal
import time
import uuid
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from codeoid.capture import ingest
from codeoid.detached import WINDOW_MARKER_ENV
from codeoid.log import log
from codeoid.rotation import rundir, terminal
from codeoid.rotation.claude_args import (
    ClaudeArgs,
    backing_argv,
    merge_settings,
    picks_conversation,
    user_settings_layer,
)
from codeoid.rotation.config import RotationConfig
from codeoid.rotation.occupancy import TranscriptSensor, fallback_window
from codeoid.rotation.process_tree import Ending, hooks_running
from codeoid.rotation.routes import Wiring
from codeoid.rotation.seed import LastTurn, SeedFacts, build_seed, seeded_prompt
from codeoid.rotation.statusline import status_line_setting, user_status_line
from codeoid.setup.hook_table import HOOK_EXECUTABLE, hook_command, installed_executable
from codeoid.store import capture, rotations
from codeoid.store import db as store_db
from codeoid.workspace import identify

SESSION_ENV = "CODEOID_SESSION_ID"
TICK_SECONDS = 0.5
BUSY_TICK_SECONDS = 0.05  # while a rotation waits for the old window to settle
SETTLE_SECONDS = 5.0
READ_CHUNK = 65536
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
INTERRUPT_KEY = b"\x03"


class Window:
    """One backing `claude`: its process and terminal, and what is known about its conversation."""

    def __init__(self, child: terminal.Child, *, marker: str, backing_session_id: str | None) -> None:
        self.child = child
        self.marker = marker
        self.backing_session_id = backing_session_id
        self.sensor: TranscriptSensor | None = None
        self.reported_window: int | None = None  # from the status line
        self.reported_model: str | None = None
        self.exit_code: int | None = None


class PendingRotation:
    """A rotation asked for (with the handed-over prompt, if any), waiting for the old window to settle."""

    __slots__ = ("prompt", "reason", "requested_at", "deadline")

    def __init__(self, prompt: str | None, reason: str, requested_at: float) -> None:
        self.prompt = prompt
        self.reason = reason
        self.requested_at = requested_at
        self.deadline = time.monotonic() + SETTLE_SECONDS


class _Wake(FileSystemEventHandler):
    """Watchdog calls this on its own thread: it only wakes the main loop."""

    def __init__(self, wake_fd: int) -> None:
        self.wake_fd = wake_fd

    def on_any_event(self, event: FileSystemEvent) -> None:
        _poke(self.wake_fd)


class Supervisor:
    """One `codeoid run`: the user's terminal, the current backing window, and the rotations between windows."""

    def __init__(self, user: ClaudeArgs, *, claude_bin: str, config: RotationConfig, wiring: Wiring,
                 project_dir: str, stdin_fd: int = 0, stdout_fd: int = 1, home: Path | None = None,
                 session_id: str | None = None) -> None:
        self.user = user
        self.claude_bin = claude_bin
        self.config = config
        self.wiring = wiring
        self.project_dir = os.path.realpath(project_dir)
        self.workspace = identify(self.project_dir)
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.session_id = session_id or os.urandom(16).hex()  # given for a fork, whose session already exists
        self.settings = dict(wiring.settings)
        chained = user_status_line(user_settings_layer(user), Path(self.project_dir), home or Path.home())
        self.settings["statusLine"] = status_line_setting(chained)
        self.settings = merge_settings(self.settings, finish_turn_hooks())
        self.run_dir = rundir.create(uuid.uuid4().hex)
        self.rotation_count = 0
        self.phase = "starting"
        self.window: Window | None = None
        self._state: dict[str, Any] = {}
        self._statusline_mtime = 0.0
        self._signals: list[int] = []
        self._saved_tty: list[Any] | None = None
        self._to_child = bytearray()
        self._watched: set[str] = set()
        self._retired: set[str | None] = set()  # backing ids of windows rotated away: their reports are stale
        self._last_rotation: dict[str, Any] | None = None  # timings of the last rotation, for the benchmark
        self._endings: list[tuple[Ending, str | None]] = []  # old windows still shutting down
        self._pending: PendingRotation | None = None  # asked for, waiting for the old window to settle
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._observer = Observer()
        self._selector = selectors.DefaultSelector()

    # -- lifetime --------------------------------------------------------------------------------------

    def run(self) -> int:
        """Supervise until the user's `claude` exits; its exit code is returned."""
        rundir.write(self.run_dir, rundir.SUPERVISOR, {
            "pid": os.getpid(), "session_id": self.session_id, "workspace": self.workspace.root,
            "tool_prefix": self.wiring.tool_prefix, "route": self.wiring.route, "started_at": time.time()})
        previous = {signum: signal.signal(signum, self._on_signal)
                    for signum in (*ENDING_SIGNALS, signal.SIGINT, signal.SIGWINCH, signal.SIGCHLD, signal.SIGCONT)}
        self._watch(self.run_dir, recursive=True)
        self._observer.start()
        try:
            with terminal.raw_mode(self.stdin_fd) as saved:
                self._saved_tty = saved
                self.window = self._start_window(first=True, prompt=None)
                return self._loop()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self._shutdown()

    def _loop(self) -> int:
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            self._selector.register(self.stdin_fd, selectors.EVENT_READ, "stdin")
        except (OSError, ValueError):
            pass  # no terminal or pipe to read (a closed or regular-file stdin): nothing will be typed
        while True:
            tick = BUSY_TICK_SECONDS if self._pending is not None or self._endings else TICK_SECONDS
            for key, mask in self._selector.select(tick):
                if key.data == "wake":
                    _drain(self._wake_r)
                elif key.data == "stdin":
                    self._from_user()
                elif key.data == "child":
                    if mask & selectors.EVENT_READ:
                        self._from_child()
                    if mask & selectors.EVENT_WRITE:
                        self._flush_to_child()
            exit_code = self._handle_signals()
            if exit_code is not None:
                return exit_code
            self._step_endings()
            self._observe()
            self._advance_rotation()
            window = self.window
            if window is not None and self._child_exited(window):
                self._from_child()  # the last words on its screen
                return _shell_code(window.exit_code)

    def _shutdown(self) -> None:
        window, self.window = self.window, None
        if window is not None:
            self._endings.append((Ending(window.child.pid, marker=(WINDOW_MARKER_ENV, window.marker)), None))
            self._close_window(window)
        self._step_endings(wait=True)
        self._observer.stop()
        self._observer.join(timeout=5)
        self._selector.close()
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
        shutil.rmtree(self.run_dir, ignore_errors=True)

    # -- the backing claude ----------------------------------------------------------------------------

    def _start_window(self, *, first: bool, prompt: str | None, backing_session_id: str | None = None) -> Window:
        chooses_id = not (first and picks_conversation(self.user))
        backing = backing_session_id or (str(uuid.uuid4()) if chooses_id else None)
        marker = uuid.uuid4().hex
        argv = backing_argv(self.claude_bin, self.user, first=first, session_id=backing or "",
                            settings=self.settings, prompt=prompt, extra=self.wiring.extra_args)
        env = {**os.environ, SESSION_ENV: self.session_id, rundir.RUN_DIR_ENV: self.run_dir,
               WINDOW_MARKER_ENV: marker}
        child = terminal.spawn(argv, env=env, cwd=self.project_dir, size=terminal.get_size(self.stdin_fd))
        self._selector.register(child.fd, selectors.EVENT_READ, "child")
        window = Window(child, marker=marker, backing_session_id=backing)
        self.phase = "running"
        self._publish(window)
        return window

    def _close_window(self, window: Window) -> None:
        try:
            self._selector.unregister(window.child.fd)
        except (KeyError, ValueError):
            pass
        try:
            os.close(window.child.fd)
        except OSError:
            pass
        self._to_child.clear()

    def _child_exited(self, window: Window) -> bool:
        if window.exit_code is not None:
            return True
        try:
            pid, status = os.waitpid(window.child.pid, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            window.exit_code = window.exit_code or 0
            return True
        if pid == 0:
            return False
        if os.WIFSTOPPED(status):
            self._suspend(window)
            return False
        window.exit_code = os.waitstatus_to_exitcode(status)
        return True

    def _suspend(self, window: Window) -> None:
        """`claude` stopped itself (Ctrl-Z): give the terminal back to the shell and stop too; continue both."""
        if self._saved_tty is not None:
            terminal.restore(self.stdin_fd, self._saved_tty)
        os.kill(os.getpid(), signal.SIGSTOP)
        terminal.enter_raw(self.stdin_fd)
        size = terminal.get_size(self.stdin_fd)
        if size is not None:
            terminal.set_size(window.child.fd, size)
        os.killpg(os.getpgid(window.child.pid), signal.SIGCONT)

    # -- the terminal ----------------------------------------------------------------------------------

    def _from_user(self) -> None:
        try:
            data = os.read(self.stdin_fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the user's terminal is gone: nothing more will be typed
            self._selector.unregister(self.stdin_fd)
            return
        if self.window is not None:
            self._to_child.extend(data)
            self._flush_to_child()

    def _flush_to_child(self) -> None:
        window = self.window
        if window is None:
            return
        try:
            written = os.write(window.child.fd, self._to_child) if self._to_child else 0
        except (BlockingIOError, InterruptedError):
            written = 0
        except OSError:
            self._to_child.clear()
            written = 0
        del self._to_child[:written]
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self._to_child else 0)
        try:
            self._selector.modify(window.child.fd, events, "child")
        except (KeyError, ValueError):
            pass

    def _from_child(self) -> None:
        window = self.window
        if window is None:
            return
        while True:
            try:
                data = os.read(window.child.fd, READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # EIO: the pseudo-terminal's last user has gone
                if error.errno != errno.EIO:
                    log("supervisor", f"reading claude's terminal: {error}")
                data = b""
            if not data:
                try:
                    self._selector.unregister(window.child.fd)
                except (KeyError, ValueError):
                    pass
                return
            terminal.write_all(self.stdout_fd, data)

    # -- signals ---------------------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signals.append(signum)
        _poke(self._wake_w)

    def _handle_signals(self) -> int | None:
        while self._signals:
            signum = self._signals.pop(0)
            window = self.window
            if signum in (signal.SIGWINCH, signal.SIGCONT) and window is not None:
                size = terminal.get_size(self.stdin_fd)
                if size is not None:
                    terminal.set_size(window.child.fd, size)
            elif signum == signal.SIGINT and window is not None:
                self._to_child.extend(INTERRUPT_KEY)  # as if typed: claude decides what Ctrl-C means
                self._flush_to_child()
            elif signum in ENDING_SIGNALS:
                return 128 + signum  # `_shutdown` ends the backing claude and all it started
        return None

    # -- watching the window ---------------------------------------------------------------------------

    def _observe(self) -> None:
        """Take what changed: requests in the inbox, the status line's report, the transcript."""
        for request in rundir.take_inbox(self.run_dir):
            self._on_request(request)
        window = self.window
        if window is None:
            return
        self._read_status_line(window)
        if window.sensor is None:
            self._find_transcript(window)
        if window.sensor is not None:
            window.sensor.poll()
        self._publish(window)

    def _read_status_line(self, window: Window) -> None:
        path = os.path.join(self.run_dir, rundir.STATUSLINE)
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            return
        if mtime == self._statusline_mtime:
            return
        self._statusline_mtime = mtime
        report = rundir.read(self.run_dir, rundir.STATUSLINE) or {}
        session_id = report.get("session_id")
        if not isinstance(session_id, str) or session_id in self._retired:
            return
        if session_id != window.backing_session_id:
            # The user picked the conversation (--resume, --continue), or `/clear` started a new one.
            window.backing_session_id, window.sensor = session_id, None
            window.reported_window = None
        context = report.get("context_window")
        size = context.get("context_window_size") if isinstance(context, dict) else None
        if isinstance(size, int) and size > 0:
            window.reported_window = size
        model = report.get("model")
        if isinstance(model, dict) and isinstance(model.get("id"), str):
            window.reported_model = model["id"]
        path_reported = report.get("transcript_path")
        if window.sensor is None and isinstance(path_reported, str):
            self._follow(window, path_reported)

    def _find_transcript(self, window: Window) -> None:
        """Without a status line report yet, the transcript is found by the backing id Claude Code files it under."""
        if window.backing_session_id is None:
            return
        config_dir = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
        found = glob.glob(os.path.join(glob.escape(config_dir), "projects", "*", f"{window.backing_session_id}.jsonl"))
        if found:
            self._follow(window, found[0])

    def _follow(self, window: Window, path: str) -> None:
        window.sensor = TranscriptSensor(path)
        directory = os.path.dirname(path)
        if directory not in self._watched and os.path.isdir(directory):
            self._watch(directory, recursive=False)

    def _watch(self, directory: str, *, recursive: bool) -> None:
        self._observer.schedule(_Wake(self._wake_w), directory, recursive=recursive)
        self._watched.add(directory)

    def _publish(self, window: Window) -> None:
        """Write `state.json` when anything in it changed; hooks and the status line read it."""
        reading = window.sensor.reading if window.sensor is not None else None
        tokens = reading.tokens if reading else 0
        prompts = reading.prompts if reading else 0
        window_tokens, source = self._window_size(window)
        due = self.config.due(tokens, window_tokens, prompts) if self.phase == "running" else None
        state: dict[str, Any] = {
            "phase": self.phase, "session_id": self.session_id, "backing_session_id": window.backing_session_id,
            "tokens": tokens, "window": window_tokens, "window_source": source, "prompts": prompts, "due": due,
            "rotation_count": self.rotation_count, "soft": self.config.soft, "hard": self.config.hard,
            "auto_rotate": self.config.auto_rotate, "min_turns": self.config.min_turns,
            "last_rotation": dict(self._last_rotation) if self._last_rotation else None,
            "ending_windows": len(self._endings),
        }
        if state != self._state:
            self._state = state
            rundir.write(self.run_dir, rundir.STATE, {**state, "updated_at": time.time()})

    def _window_size(self, window: Window) -> tuple[int, str]:
        if window.reported_window:
            return window.reported_window, "statusline"
        reading = window.sensor.reading if window.sensor is not None else None
        if reading is not None and reading.reported_window:
            return reading.reported_window, "modelUsage"
        return fallback_window((reading.model if reading else None) or window.reported_model), "table"

    # -- rotation --------------------------------------------------------------------------------------

    def _on_request(self, request: dict[str, object]) -> None:
        window = self.window
        if window is None:
            return
        kind = request.get("kind")
        for_here = request.get("backing_session_id") in (None, window.backing_session_id)
        posted_at = request.get("posted_at")
        requested_at = float(posted_at) if isinstance(posted_at, (int, float)) else time.time()
        if self._pending is not None:
            log("supervisor", f"a rotation is already under way; ignored {request!r:.300}")
        elif kind == "prompt" and for_here and isinstance(request.get("prompt"), str):
            self._pending = PendingRotation(str(request["prompt"]), f"threshold:{request.get('reason') or 'due'}",
                                            requested_at)
        elif kind == "rotate" and for_here:
            self._pending = PendingRotation(None, f"request:{request.get('source') or 'codeoid rotate'}", requested_at)
        else:
            log("supervisor", f"ignored a request for another window: {request!r:.300}")
        if self._pending is not None:
            self.phase = "rotating"
            self._publish(window)

    def _advance_rotation(self) -> None:
        """Rotate once the old window is quiet: its last turn ended (its Stop hooks stored the answer) and no
        codeoid hook of it still runs. Meanwhile its terminal keeps being read, so it can finish writing; a
        window that does not settle in time is rotated anyway."""
        pending, old = self._pending, self.window
        if pending is None or old is None:
            return
        if old.sensor is not None:
            old.sensor.poll()
        busy = (old.sensor is not None and old.sensor.reading.turn_open) or hooks_running(old.child.pid,
                                                                                          HOOK_EXECUTABLE)
        if busy and time.monotonic() < pending.deadline:
            return
        if busy:
            log("supervisor", "the old window was still busy (a turn or a hook) when it was rotated")
        self._pending = None
        self._rotate_now(pending)

    def _rotate_now(self, pending: PendingRotation) -> None:
        """Replace the backing window: record the rotation, end the old `claude`, start the fresh one."""
        old = self.window
        assert old is not None
        prompt, reason, requested_at = pending.prompt, pending.reason, pending.requested_at
        occupancy = old.sensor.reading.tokens if old.sensor is not None else None
        window_tokens, _ = self._window_size(old)
        new_backing = str(uuid.uuid4())
        self._retired.add(old.backing_session_id)
        seed = self._record_and_seed(old, new_backing, reason=reason, occupancy=occupancy, window=window_tokens,
                                     last_prompt=old.sensor.reading.last_prompt if old.sensor else None)
        # The old window ends while the fresh one starts: Claude Code's start-up is most of a rotation's time.
        self._endings.append((Ending(old.child.pid, marker=(WINDOW_MARKER_ENV, old.marker)), old.backing_session_id))
        self._from_child()
        self._close_window(old)
        banner = (f"\r\n\x1b[2m── codeoid: rotation {self.rotation_count} · a fresh window; the previous one is "
                  f"archived and nothing was lost ──\x1b[0m\r\n")
        terminal.write_all(self.stdout_fd, terminal.RESET_MODES + banner.encode())
        if prompt is None:
            rundir.write(self.run_dir, rundir.SEED, {"backing_session_id": new_backing, "text": seed})
        first_message = seeded_prompt(seed, prompt) if prompt is not None else None
        self._last_rotation = {"requested_at": requested_at, "old_window_ended_at": None,
                               "fresh_window_started_at": time.time(), "seed_chars": len(seed)}
        self.window = self._start_window(first=False, prompt=first_message, backing_session_id=new_backing)

    def _step_endings(self, *, wait: bool = False) -> None:
        """Advance the old windows' endings; once one is over, archive anything its last moments stored."""
        while True:
            for item in list(self._endings):
                ending, backing_session_id = item
                if not ending.step():
                    continue
                self._endings.remove(item)
                if ending.survivors:
                    log("supervisor", f"processes that outlived SIGKILL after rotation: {ending.survivors}")
                if self._last_rotation is not None and not self._endings:
                    self._last_rotation["old_window_ended_at"] = time.time()
                if backing_session_id is not None:
                    self._archive_stragglers(backing_session_id)
            if not (wait and self._endings):
                return
            time.sleep(0.02)

    def _archive_stragglers(self, backing_session_id: str) -> None:
        try:
            db = store_db.connect()
        except store_db.StoreUnavailable:
            return
        try:
            with store_db.write_transaction(db):
                capture.archive_live(db, backing_session_id)
        except Exception as error:  # noqa: BLE001 - a late episode left live is not worth stopping for
            log("supervisor", f"could not archive the rest of window {backing_session_id}: {error!r}")
        finally:
            db.close()

    def _record_and_seed(self, old: Window, new_backing: str, *, reason: str, occupancy: int | None, window: int,
                         last_prompt: str | None) -> str:
        """Record the rotation in the store and build the seed from it; without a store, a generic seed."""
        try:
            db = store_db.connect()
        except store_db.StoreUnavailable as error:
            log("supervisor", f"rotation without memory: the store cannot be opened ({error})")
            return self._generic_seed(last_prompt)
        try:
            ingest.replay_backlog(db)  # hook events spooled while the store was busy: the last prompt may be one
            with store_db.write_transaction(db):
                if old.backing_session_id is not None:
                    self.session_id = rotations.session_of_backing(db, old.backing_session_id) or self.session_id
                last = rotations.last_user_turn(db, self.session_id)
                self.rotation_count = rotations.record_rotation(
                    db, session_id=self.session_id, workspace=self.workspace,
                    from_backing_session_id=old.backing_session_id, to_backing_session_id=new_backing,
                    reason=reason, occupancy_tokens=occupancy, window_tokens=window, now=time.time())
                info = rotations.session_info(db, self.session_id)
        except Exception as error:  # noqa: BLE001 - the user's prompt must reach a fresh window regardless
            log("supervisor", f"rotation not recorded ({error!r}); continuing without memory")
            return self._generic_seed(last_prompt)
        finally:
            db.close()
        # The transcript is the witness of last resort: if the store has not caught up, quote what was sent.
        if last is not None and last_prompt in (None, last.text):
            turn: LastTurn | None = LastTurn(last.text, last.episode_id)
        else:
            turn = LastTurn(last_prompt) if last_prompt else None
        return build_seed(SeedFacts(workspace=self.workspace.root, session_id=self.session_id,
                                    session_name=info.name if info else None, rotation=self.rotation_count,
                                    tool_prefix=self.wiring.tool_prefix, last_turn=turn))

    def _generic_seed(self, last_prompt: str | None) -> str:
        self.rotation_count += 1
        return build_seed(SeedFacts(workspace=self.workspace.root, session_id=self.session_id, session_name=None,
                                    rotation=self.rotation_count, tool_prefix=None,
                                    last_turn=LastTurn(last_prompt) if last_prompt else None))


def _poke(fd: int) -> None:
    try:
        os.write(fd, b"\0")
    except (BlockingIOError, OSError):
        pass  # the pipe is full: the loop is already due to wake


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, OSError):
        pass


def _shell_code(exit_code: int | None) -> int:
    """A shell's view of the exit: the code itself, or 128 + the signal that ended the process."""
    if exit_code is None:
        return 0
    return 128 - exit_code if exit_code < 0 else exit_code


def finish_turn_hooks() -> dict[str, Any]:
    """PreToolUse for every tool but Bash, for this supervisor's windows only.

    The installed PreToolUse hook matches Bash alone (it rewrites there, and other tools should not pay for a
    process each). Under the supervisor every other tool gets it too, so a turn that fills the window with Reads
    or Greps is still asked to finish at the hard threshold (`codeoid.rotation.notice`).
    """
    home = os.environ.get("CODEOID_HOME") or None
    command = hook_command(installed_executable(HOOK_EXECUTABLE), "PreToolUse", home)
    handler = {"type": "command", "command": command, "timeout": 5}
    return {"hooks": {"PreToolUse": [{"matcher": "^(?!Bash$)", "hooks": [handler]}]}}
