"""`codeoid rotate`: ask a running supervisor, from another terminal, to rotate its window now.

The request goes into the supervisor's inbox like `/rotate` typed in the session: the window is replaced at once,
whatever the guard, and the fresh one waits for the user.
"""

from __future__ import annotations

import os

from codeoid.rotation import rundir
from codeoid.workspace import identify


class NoSupervisor(LookupError):
    """No single supervisor matches; the message says what to do."""


def request_rotation(*, session: str | None, directory: str) -> dict[str, object]:
    """Post a rotation request to the supervisor of `session`, else to the one running in `directory`'s
    workspace; returns that supervisor's `supervisor.json`."""
    running = rundir.live_supervisors()
    if session is not None:
        matches = [(path, info) for path, info in running
                   if session in (info.get("session_id"), os.path.basename(path))]
    else:
        root = os.path.realpath(identify(directory).root)
        matches = [(path, info) for path, info in running
                   if os.path.realpath(str(info.get("workspace", ""))) == root]
    if not matches:
        where = f"session {session}" if session else f"the workspace of {directory}"
        raise NoSupervisor(f"No `codeoid run` is running for {where}. Rotation happens under the supervisor: start "
                           "Claude Code as `codeoid run [claude options]`.")
    if len(matches) > 1:
        listed = ", ".join(str(info.get("session_id")) for _, info in matches)
        raise NoSupervisor(f"Several `codeoid run` sessions run here ({listed}); pick one with --session.")
    run_dir, info = matches[0]
    rundir.post(run_dir, {"kind": "rotate", "source": "codeoid rotate"})
    return info
