"""UserPromptSubmit under the supervisor: hand a prompt over when a rotation is due, and take `/rotate`.

The supervisor decides when a rotation is due and says so in `state.json`; the hook only reads that, drops a request
into the inbox and blocks the prompt (Claude Code erases a blocked prompt, so it is never sent to the old window;
the supervisor sends it as the fresh window's first message). Nothing here waits for the supervisor. A prompt is
handed over only to a supervisor that is alive and watching this very backing session, so a stale state file or an
event replayed from the spool can never swallow a prompt.
"""

from __future__ import annotations

import json

from codeoid.capture.prompt_kinds import is_task_notification
from codeoid.rotation import rundir
from codeoid.rotation.seed import split_seeded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ROTATE_COMMANDS = ("/rotate", "/codeoid:rotate")
OUTSIDE_SUPERVISOR = (
    "codeoid: /rotate needs the supervisor. Start Claude Code as `codeoid run [claude options]`: it watches how full "
    "the context window is and rotates into a fresh window (history stays available through codeoid's memory tools) "
    "at the next prompt after 97% (90% with CODEOID_AUTO_ROTATE=1), or at once on /rotate or `codeoid rotate`."
)


def is_rotate_command(prompt: object) -> bool:
    if not isinstance(prompt, str):
        return False
    word = prompt.strip().split(maxsplit=1)[0] if prompt.strip() else ""
    return word in ROTATE_COMMANDS


def on_user_prompt(payload: dict[str, Any], environ: Any) -> str | None:
    """The hook's answer (a block, as JSON) when the prompt goes to the supervisor or is `/rotate`; None to let the
    prompt through to the window as usual."""
    prompt = payload.get("prompt")
    run_dir = rundir.from_env(environ)
    supervised = run_dir is not None and rundir.supervisor_alive(run_dir)
    if is_rotate_command(prompt):
        if not supervised or run_dir is None:
            return block(OUTSIDE_SUPERVISOR)
        rundir.post(run_dir, {"kind": "rotate", "source": "/rotate", "backing_session_id": payload.get("session_id")})
        return block("codeoid: rotating into a fresh window now; it will wait for your next prompt.")
    if not supervised or run_dir is None or not isinstance(prompt, str) or prompt.lstrip().startswith("/"):
        return None  # a slash command acts on this window; the rotation waits for the next plain prompt
    if is_task_notification(prompt):
        return None  # a background agent reporting back: the rotation waits for the user
    state = rundir.read(run_dir, rundir.STATE)
    if not due_here(state, payload) or split_seeded(prompt)[0] is not None:
        return None
    assert state is not None
    rundir.post(run_dir, {"kind": "prompt", "prompt": prompt, "prompt_id": payload.get("prompt_id"),
                          "backing_session_id": payload.get("session_id"), "reason": state.get("due")})
    share = round(100 * int(state.get("tokens") or 0) / max(int(state.get("window") or 1), 1))
    return block(f"codeoid: the context window is {share}% full; continuing in a fresh window, "
                 "where your prompt is sent as it is.")


def due_here(state: dict[str, Any] | None, payload: dict[str, Any]) -> bool:
    return bool(state and state.get("due") and state.get("phase") == "running"
                and state.get("backing_session_id") == payload.get("session_id"))


def block(reason: str) -> str:
    return json.dumps({"decision": "block", "reason": reason})
