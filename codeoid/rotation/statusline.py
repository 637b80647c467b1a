"""`codeoid statusline`: occupancy and the rotation counter under the prompt, and the supervisor's window sensor.

Claude Code runs the status line command with a JSON object on stdin that says what it knows: the backing session,
its transcript, the model, and `context_window.context_window_size`. Under `codeoid run` this command is the one the
supervisor's `--settings` layer installs, so it first saves that object in the run directory (where the supervisor
reads the real window size from it), then runs the user's own status line command, if they have one, with the same
stdin (its rows come first), then prints codeoid's row. `codeoid install` installs it plainly, only where the user
has no status line of their own.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from codeoid.rotation import rundir
from codeoid.setup.claude_files import locate_claude_files, project_local_settings, project_settings
from codeoid.setup.hook_table import CODEOID_PROGRAMS, installed_executable, parse_command
from codeoid.setup.json_config import InstallError, load_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CHAINED_TIMEOUT_SECONDS = 5.0


def user_status_line(flag_layer: dict[str, Any], project: Path, home: Path) -> dict[str, Any] | None:
    """The status line the user would have had: their `--settings`, else the most local settings file's. One that
    runs codeoid's own program (what `codeoid install` set up) is not theirs to chain: codeoid's row is added anyway."""
    files = locate_claude_files(home)
    candidates = [flag_layer]
    for path in (project_local_settings(project), project_settings(project), files.user_settings):
        try:
            candidates.append(load_object(path) or {})
        except InstallError:
            continue
    for layer in candidates:
        line = layer.get("statusLine")
        if isinstance(line, dict) and isinstance(line.get("command"), str) and line["command"].strip():
            return None if parse_command(line["command"]).program in CODEOID_PROGRAMS else line
    return None


def status_line_setting(chained: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `statusLine` entry that runs codeoid's status line, chaining `chained` (keeping its padding and
    refresh interval) when the user has one."""
    command = shlex.quote(installed_executable("codeoid")) + " statusline"
    setting: dict[str, Any] = {"type": "command", "command": command}
    if chained is not None:
        setting["command"] = f"{command} --chain {shlex.quote(chained['command'])}"
        setting.update({key: chained[key] for key in ("padding", "refreshInterval") if key in chained})
    return setting


def run(stdin: bytes, chain: str | None, environ: Any) -> str:
    """The status rows to print for one refresh."""
    payload = _payload(stdin)
    run_dir = rundir.from_env(environ)
    if run_dir is not None and payload:
        try:
            rundir.write(run_dir, rundir.STATUSLINE, payload)
        except OSError:
            pass  # the supervisor falls back to the window table
    rows = [_chained_rows(chain, stdin)] if chain else []
    state = rundir.read(run_dir, rundir.STATE) if run_dir is not None else None
    rows.append(codeoid_row(payload, state))
    return "\n".join(row for row in rows if row) + "\n"


def codeoid_row(payload: dict[str, Any], state: dict[str, Any] | None) -> str:
    """`codeoid ctx 91% of 200k · rotations 1`, from the supervisor's sensor when it watches this window, else
    from what Claude Code reported."""
    if state is not None and state.get("backing_session_id") == payload.get("session_id") and state.get("window"):
        tokens, window = int(state.get("tokens") or 0), int(state["window"])
        rotations = int(state.get("rotation_count") or 0)
        due = " · rotating at the next prompt" if state.get("due") else ""
    else:
        tokens, window = _reported(payload)
        rotations = _stored_rotation_count(payload.get("session_id"))
        due = ""
    share = f"{round(100 * tokens / window)}% of {_short(window)}" if window else "–"
    return f"codeoid ctx {share} · rotations {rotations}{due}"


def _payload(stdin: bytes) -> dict[str, Any]:
    try:
        value = json.loads(stdin)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _reported(payload: dict[str, Any]) -> tuple[int, int]:
    window_info = payload.get("context_window")
    if not isinstance(window_info, dict):
        return 0, 0
    usage = window_info.get("current_usage")
    tokens = 0
    if isinstance(usage, dict):
        tokens = sum(value for key, value in usage.items()
                     if key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                     and isinstance(value, int))
    window = window_info.get("context_window_size")
    return tokens, window if isinstance(window, int) else 0


def _stored_rotation_count(backing_session_id: Any) -> int:
    """Outside the supervisor the counter comes from the store (a resumed window may have been rotated into)."""
    if not isinstance(backing_session_id, str):
        return 0
    from codeoid.store import db as store_db

    try:
        connection = store_db.connect(busy_ms=100)
    except (store_db.StoreUnavailable, OSError):
        return 0
    try:
        row = connection.execute(
            "SELECT s.rotation_count FROM backing_sessions b JOIN sessions s ON s.id = b.session_id WHERE b.id = ?",
            (backing_session_id,),
        ).fetchone()
    except Exception:  # noqa: BLE001 - a status line never fails over the counter
        row = None
    finally:
        connection.close()
    return int(row[0]) if row else 0


def _chained_rows(command: str, stdin: bytes) -> str:
    """The user's own status line output, given the same stdin; nothing if it fails or hangs."""
    try:
        completed = subprocess.run(command, shell=True, input=stdin, capture_output=True,
                                   timeout=CHAINED_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return completed.stdout.decode("utf-8", "replace").rstrip("\n")


def _short(tokens: int) -> str:
    if tokens >= 1_000_000 and tokens % 1_000_000 == 0:
        return f"{tokens // 1_000_000}M"
    return f"{round(tokens / 1000)}k" if tokens >= 1000 else str(tokens)
