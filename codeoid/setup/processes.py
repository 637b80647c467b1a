"""The processes codeoid runs for one data dir, found (and ended) for `codeoid uninstall`.

Two kinds. The background ones codeoid starts on demand and that outlive every session: the memory service, the
Chroma watchdog and its Chroma server (`codeoid.detached` launches them with `SPARE_ENV` in their environment and
the data dir as their working directory, which is how they are recognised here, even when their state file is
gone). And the ones that belong to something the user runs: each Claude Code session's `codeoid-mcp`, a
`codeoid run` supervisor, a `codeoid ui` viewer; those end with their session or terminal and are only named,
never killed, since ending them would break work in progress.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from codeoid import detached

STOP_TIMEOUT_SECONDS = 15.0


@dataclass(frozen=True)
class CodeoidProcess:
    pid: int
    what: str  # "memory service", "Chroma watchdog", "Chroma server", "MCP server", "codeoid run", ...
    process: psutil.Process

    def label(self) -> str:
        return f"{self.what} (pid {self.pid})"


def background_processes(data_dir: str) -> list[CodeoidProcess]:
    """The memory service, Chroma watchdog and Chroma server running for `data_dir`."""
    wanted = os.path.realpath(data_dir)
    found = []
    for process in psutil.process_iter():
        try:
            if process.pid == os.getpid() or process.status() == psutil.STATUS_ZOMBIE:
                continue
            if detached.SPARE_ENV not in process.environ() or os.path.realpath(process.cwd()) != wanted:
                continue
            found.append(CodeoidProcess(process.pid, _background_kind(process.cmdline()), process))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def session_processes(data_dir: str) -> list[CodeoidProcess]:
    """codeoid-mcp servers, `codeoid run` supervisors and `codeoid ui` viewers that use `data_dir`, other than
    this process and its ancestors."""
    wanted = os.path.realpath(data_dir)
    mine = {os.getpid(), *(parent.pid for parent in _ancestors())}
    found = []
    for process in psutil.process_iter():
        try:
            if process.pid in mine or process.status() == psutil.STATUS_ZOMBIE:
                continue
            what = _session_kind(process.cmdline())
            if what is None or os.path.realpath(_data_dir_of(process.environ())) != wanted:
                continue
            found.append(CodeoidProcess(process.pid, what, process))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def end_all(found: list[CodeoidProcess]) -> None:
    """SIGTERM, then SIGKILL for whatever still runs after `STOP_TIMEOUT_SECONDS`."""
    detached.end([entry.process for entry in found], STOP_TIMEOUT_SECONDS)


def _background_kind(cmdline: list[str]) -> str:
    if "codeoid.service.daemon" in cmdline:
        return "memory service"
    if "codeoid.memory.chroma_server" in cmdline:
        return "Chroma watchdog"
    if "codeoid.memory.chroma_serve" in cmdline:
        return "Chroma server"
    # A `chroma run` an older codeoid started.
    if "run" in cmdline and any(os.path.basename(word) == "chroma" for word in cmdline[:2]):
        return "Chroma server"
    return "codeoid background process"


def _session_kind(cmdline: list[str]) -> str | None:
    """What a long-running codeoid console script is, from its command line (`python /venv/bin/codeoid-mcp`, or
    the script itself first)."""
    for position, word in enumerate(cmdline[:2]):
        name = os.path.basename(word)
        if name == "codeoid-mcp":
            return "MCP server"
        if name == "codeoid":
            subcommand = cmdline[position + 1] if len(cmdline) > position + 1 else ""
            return f"codeoid {subcommand}" if subcommand in ("run", "ui") else None
    return None


def _data_dir_of(environment: dict[str, str]) -> str:
    """The data dir a process with `environment` uses, as `codeoid.paths.data_dir_location` decides it."""
    override = environment.get("CODEOID_HOME")
    if override:
        return os.path.expanduser(override)
    home = environment.get("HOME") or os.path.expanduser("~")
    return os.path.join(environment.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "codeoid")


def _ancestors() -> list[psutil.Process]:
    try:
        return psutil.Process().parents()
    except psutil.Error:
        return []


def directory_size(path: str) -> int:
    """Bytes in the regular files under `path` (what deleting it frees)."""
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                status = os.lstat(os.path.join(directory, name))
            except OSError:
                continue
            total += status.st_size
    return total
