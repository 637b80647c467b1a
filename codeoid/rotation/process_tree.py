"""Ending a backing `claude` and everything it started, leaving no orphan behind.

Claude Code detaches the Bash tool's shells into process groups of their own, and anything re-parented to init
has left the tree by the time `claude` is gone, so two nets are cast: the tree as it stands before `claude` is
signalled, and every process carrying the backing window's marker in its environment (set by the supervisor and
inherited by all of them). A process whose environment says `CODEOID_DETACHED_SERVICE` is a shared service
(the local Chroma server) that only happened to be started from inside the window: it is spared.

An `Ending` advances without blocking (`step`), so the supervisor can start the fresh window while the old one is
still shutting down; `end_process_tree` is the same thing waited for.
"""

from __future__ import annotations

import os
import signal
import time

import psutil

SPARE_ENV = "CODEOID_DETACHED_SERVICE"
CLAUDE_GRACE_SECONDS = 2.0
REST_GRACE_SECONDS = 1.0


class Ending:
    """One process tree on its way out: `claude` is asked first (SIGTERM lets it run its SessionEnd hooks and
    restore its terminal), then what it left is asked, then anything still there is killed."""

    def __init__(self, root_pid: int, *, marker: tuple[str, str] | None) -> None:
        snapshot = _tree(root_pid)
        self.root = snapshot.pop(0) if snapshot and snapshot[0].pid == root_pid else None
        self.rest = {process.pid: process for process in snapshot}
        self.marker = marker
        self.stage = "root"
        self.deadline = time.monotonic() + CLAUDE_GRACE_SECONDS
        self.survivors: list[int] = []
        if self.root is not None:
            _signal(self.root, signal.SIGTERM)

    def step(self) -> bool:
        """Advance as far as possible without waiting; True once every process is gone (or survived SIGKILL)."""
        now = time.monotonic()
        if self.stage == "root":
            if self.root is not None and not _gone(self.root):
                if now < self.deadline:
                    return False
                _signal(self.root, signal.SIGKILL)
                return False
            self._ask_the_rest()
        if self.stage in ("rest", "killed"):
            alive = [process for process in self.rest.values() if not _gone(process)]
            if alive and now < self.deadline:
                return False
            if alive and self.stage == "rest":
                for process in alive:
                    _signal(process, signal.SIGKILL)
                self.stage, self.deadline = "killed", now + REST_GRACE_SECONDS
                return False
            self.survivors = [process.pid for process in alive]
            self.stage = "done"
        return self.stage == "done"

    def _ask_the_rest(self) -> None:
        if self.marker is not None:
            self.rest.update({process.pid: process for process in marked_processes(*self.marker)})
        self.rest.pop(os.getpid(), None)
        self.rest = {pid: process for pid, process in self.rest.items() if not _spared(process)}
        for process in self.rest.values():
            _signal(process, signal.SIGTERM)
        self.stage, self.deadline = "rest", time.monotonic() + REST_GRACE_SECONDS


def end_process_tree(root_pid: int, *, marker: tuple[str, str] | None) -> list[int]:
    """End `root_pid` and everything it left, waiting for it; the pids that survived even SIGKILL (normally none)."""
    ending = Ending(root_pid, marker=marker)
    while not ending.step():
        time.sleep(0.02)
    return ending.survivors


def hooks_running(root_pid: int, program: str) -> bool:
    """Whether a descendant of `root_pid` runs `program` (a hook still storing the last turn): ending the tree now
    would lose that event."""
    return any(_runs(process, program) for process in _tree(root_pid)[1:])


def marked_processes(name: str, value: str) -> list[psutil.Process]:
    """Every process whose environment has `name=value` (those we may not read are not ours)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(name) == value:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _gone(process: psutil.Process) -> bool:
    """Exited; a zombie child of ours is reaped on the way, so it does not linger in the process table."""
    try:
        if process.status() != psutil.STATUS_ZOMBIE:
            return False
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return True
    try:
        os.waitpid(process.pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child: its own parent reaps it
    return True


def _tree(root_pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(root_pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _runs(process: psutil.Process, program: str) -> bool:
    try:
        return any(os.path.basename(word) == program for word in process.cmdline()[:2])
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _spared(process: psutil.Process) -> bool:
    try:
        return SPARE_ENV in process.environ()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _signal(process: psutil.Process, signum: int) -> None:
    try:
        process.send_signal(signum)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        pass
