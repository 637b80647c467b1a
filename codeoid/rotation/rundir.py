"""The run directory: the only channel between a supervisor and the hooks, status line and `codeoid rotate`.

One directory per `codeoid run`, under `<data dir>/run/<run id>/`, named to every backing `claude` (and so to its
hooks) by `CODEOID_RUN_DIR`:

| file | written by | read by | holds |
| --- | --- | --- | --- |
| `supervisor.json` | supervisor, at start | `codeoid rotate` | pid, codeoid session id, workspace |
| `state.json` | supervisor, on every change | hooks, status line | occupancy, window, prompts, `due`, counter |
| `statusline.json` | status line command | supervisor | what Claude Code last reported (window, transcript) |
| `inbox/*.json` | UserPromptSubmit hook, `codeoid rotate` | supervisor | a handed-over prompt, or a rotation request |
| `seed.json` | supervisor, for `/rotate` | SessionStart hook | the seed of a window that waits for the user |

Every write is a whole file renamed into place, so a reader never sees half of one; readers treat a missing or
unreadable file as "nothing to say". Stdlib only (`os`, `json`): hooks import this on their start-up path.
"""

from __future__ import annotations

import json
import os
import time

from codeoid import paths

RUN_DIR_ENV = "CODEOID_RUN_DIR"
SUPERVISOR = "supervisor.json"
STATE = "state.json"
STATUSLINE = "statusline.json"
SEED = "seed.json"
INBOX = "inbox"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def run_root() -> str:
    return paths.subdir("run")


def create(run_id: str) -> str:
    """A fresh private run directory with its inbox."""
    run_dir = paths.ensure_private_dir(os.path.join(run_root(), run_id))
    paths.ensure_private_dir(os.path.join(run_dir, INBOX))
    return run_dir


def from_env(environ: Any) -> str | None:
    """The run directory a process under a supervisor was given, if it still exists."""
    run_dir = environ.get(RUN_DIR_ENV) if environ is not None else None
    return run_dir if isinstance(run_dir, str) and run_dir and os.path.isdir(run_dir) else None


def read(run_dir: str, name: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(run_dir, name), encoding="utf-8") as file:
            value = json.load(file)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write(run_dir: str, name: str, value: dict[str, Any]) -> str:
    """Replace `name` with `value` in one rename."""
    path = os.path.join(run_dir, name)
    paths.write_private(path, json.dumps(value, ensure_ascii=False).encode("utf-8"))
    return path


def post(run_dir: str, request: dict[str, Any]) -> str:
    """Drop a request into the supervisor's inbox; names sort in the order requests were made."""
    name = f"{INBOX}/{time.time_ns():020d}-{os.getpid()}.json"
    return write(run_dir, name, {**request, "posted_at": time.time()})


def take_inbox(run_dir: str) -> list[dict[str, Any]]:
    """Every waiting request, oldest first, each removed as it is taken (a request is acted on once)."""
    inbox = os.path.join(run_dir, INBOX)
    try:
        names = sorted(name for name in os.listdir(inbox) if name.endswith(".json"))
    except OSError:
        return []
    requests = []
    for name in names:
        request = read(inbox, name)
        try:
            os.unlink(os.path.join(inbox, name))
        except OSError:
            continue  # someone else took it
        if request is not None:
            requests.append(request)
    return requests


def supervisor_alive(run_dir: str) -> bool:
    """Whether the supervisor of `run_dir` still runs: a prompt is only ever handed to a live one."""
    info = read(run_dir, SUPERVISOR)
    return info is not None and _alive(info.get("pid"))


def live_supervisors() -> list[tuple[str, dict[str, Any]]]:
    """(run dir, supervisor.json) of every supervisor whose process is still running, newest first."""
    root = os.path.join(paths.data_dir_location(), "run")
    try:
        names = os.listdir(root)
    except OSError:
        return []
    found = []
    for name in names:
        run_dir = os.path.join(root, name)
        info = read(run_dir, SUPERVISOR)
        if info is not None and _alive(info.get("pid")):
            found.append((run_dir, info))
    return sorted(found, key=lambda item: item[1].get("started_at", 0), reverse=True)


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
