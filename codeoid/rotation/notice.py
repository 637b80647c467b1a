"""What the hooks tell Claude Code about the window mid-turn: finish the turn at the hard threshold, and keep
native auto-compaction for a last resort.

A single long turn can fill the window without a user prompt in between, and rotation only happens at a prompt. So
at the hard threshold every main-chain tool call gets a short note asking the model to finish the turn; the next
prompt then rotates. Claude Code's own auto-compaction (around 96.7% of a 1M window in 2.1.332) would otherwise
fire first: under the supervisor it is blocked below the hard threshold and allowed above it, as the backstop for a
turn that does not stop.

Both functions read only the run directory's `state.json` and return at once; outside the supervisor they do
nothing.
"""

from __future__ import annotations

import json

from codeoid.rotation import rundir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def finish_turn_notice(payload: dict[str, Any], environ: Any) -> str | None:
    """Text for PreToolUse `additionalContext` when this window is at or over the hard threshold, else None."""
    if payload.get("agent_id"):
        return None  # a subagent's window is its own; its usage never counts
    share = _share_over_hard(payload, environ)
    if share is None:
        return None
    return (f"codeoid: this context window is {round(100 * share)}% full. Finish the current turn now: complete or "
            "stop the step in progress and answer the user, without starting new work. The next prompt continues in "
            "a fresh window, where all history stays available through codeoid's memory tools.")


def compaction_block(payload: dict[str, Any], environ: Any) -> str | None:
    """PreCompact's answer (a block, as JSON) for an automatic compaction that rotation should replace."""
    if payload.get("trigger") != "auto":
        return None  # a /compact the user asked for is theirs
    state = _state_here(payload, environ)
    if state is None or _share(state) >= float(state.get("hard") or 1):
        return None
    return json.dumps({"decision": "block", "reason": "codeoid rotates this session at the next prompt instead of "
                                                      "compacting it."})


def _share_over_hard(payload: dict[str, Any], environ: Any) -> float | None:
    state = _state_here(payload, environ)
    if state is None:
        return None
    share = _share(state)
    return share if share >= float(state.get("hard") or 1) else None


def _state_here(payload: dict[str, Any], environ: Any) -> dict[str, Any] | None:
    run_dir = rundir.from_env(environ)
    state = rundir.read(run_dir, rundir.STATE) if run_dir is not None else None
    if state is None or state.get("backing_session_id") != payload.get("session_id"):
        return None
    return state


def _share(state: dict[str, Any]) -> float:
    window = state.get("window")
    if not isinstance(window, int) or window <= 0:
        return 0.0
    return int(state.get("tokens") or 0) / window
