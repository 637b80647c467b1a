"""One function per Claude Code hook event: read the fields the event carries and make the store calls.

Every field is read through the `_str`/`_dict` accessors: a payload with wrong types or missing keys still
stores whatever parts of it are valid. Each handler runs inside one write transaction opened by the caller.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Callable

from codeoid import memory_tools
from codeoid.capture import persisted, prompt_kinds, transcript
from codeoid.capture.spool import SpooledEvent
from codeoid.memory import workspace_index
from codeoid.rotation import handoff, notice, rundir, seed
from codeoid.store import capture
from codeoid.store import workspace_index as stored_index
from codeoid.store.capture import Owner
from codeoid.text import clean_text, to_json
from codeoid.workspace import identify

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENV_KEYS = ("CLAUDE_PID", "CLAUDE_PROJECT_DIR", "CODEOID_SESSION_ID", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PLUGIN_ROOT",
            rundir.RUN_DIR_ENV)
USER_SOURCES = (None, "user", "sdk")
PENDING_PREFIX = "pending:"
# `codeoid.compressors.bash_wrapper.NAME_PREFIX`, spelled here so the module loads only for wrapped commands
# (a test keeps the two equal).
WRAPPER_NAME_PREFIX = "__codeoid_"
# A prompt is handed to the supervisor, and context is added to a window, only while the user waits on the event,
# never when it is replayed from the spool later.
LIVE_MAX_AGE_SECONDS = 10.0

Handler = Callable[[sqlite3.Connection, SpooledEvent], "str | None"]


def _str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def _dict(payload: dict[str, Any], key: str) -> dict[str, Any]:
    value = payload.get(key)
    if isinstance(value, dict):
        return value
    return {} if value is None else {"value": value}


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def owner_of(db: sqlite3.Connection, event: SpooledEvent, *, registering: bool = False) -> Owner:
    """The backing and codeoid session of this event, registering them on first sight.

    Any event may be the first one seen (hooks installed mid-session, SessionStart spooled), so every
    handler can register; only SessionStart refreshes the pid, transcript path and model.
    """
    payload = event.payload
    backing_id = _str(payload, "session_id") or event.env.get("CLAUDE_CODE_SESSION_ID") or "unknown-session"
    project_dir = event.env.get("CLAUDE_PROJECT_DIR") or _str(payload, "cwd") or os.getcwd()
    return capture.ensure_backing_session(
        db,
        backing_session_id=backing_id,
        workspace=identify(project_dir),
        now=event.received_at,
        codeoid_session_id=event.env.get("CODEOID_SESSION_ID"),
        source=_str(payload, "source") if registering else None,
        claude_pid=_int(event.env.get("CLAUDE_PID")),
        transcript_path=_str(payload, "transcript_path"),
        model=_str(payload, "model") if registering else None,
    )


def session_start(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    owner = owner_of(db, event, registering=True)
    source = _str(event.payload, "source")
    if source == "clear":
        _archive_previous_windows(db, owner, event)
    elif source == "compact":
        path = _str(event.payload, "transcript_path")
        keep = transcript.preserved_keys(transcript.read_records(path)) if path else None
        capture.apply_compaction(db, owner.backing_session_id, keep=keep or set(), now=event.received_at)
    seed_text = _deliver_waiting_seed(db, owner, event)
    return _context("SessionStart", seed_text, _memory_index(db, owner, event))


def _deliver_waiting_seed(db: sqlite3.Connection, owner: Owner, event: SpooledEvent) -> str | None:
    """A window started by `/rotate` has no prompt to carry its seed: the seed arrives as SessionStart context,
    so the window waits for the user with the seed already in it."""
    run_dir = rundir.from_env(event.env)
    waiting = rundir.read(run_dir, rundir.SEED) if run_dir is not None else None
    text = waiting.get("text") if waiting else None
    if not waiting or waiting.get("backing_session_id") != owner.backing_session_id or not isinstance(text, str):
        return None
    capture.add_seed(db, owner, text=text, prompt_id=None, now=event.received_at)
    return text


def _memory_index(db: sqlite3.Connection, owner: Owner, event: SpooledEvent) -> str | None:
    """The workspace index, whole, for a window that starts (or restarts after /clear or compaction): as prebuilt,
    brought up to date first when episodes were stored since."""
    stored = workspace_index.current(db, owner.workspace_id, now=event.received_at) if _live(event) else None
    return _show_whole(db, owner, event, stored) if stored is not None else None


def _memory_delta(db: sqlite3.Connection, owner: Owner, event: SpooledEvent) -> str | None:
    """What memory gained since this window last saw the index, when that is news (`workspace_index.delta`);
    the whole index for a window that never saw one (codeoid installed mid-session, or the first build)."""
    stored = stored_index.latest(db, owner.workspace_id) if _live(event) else None
    if stored is None:
        return None
    seen = stored_index.view(db, owner.backing_session_id)
    if seen is None:
        return _show_whole(db, owner, event, stored)
    if seen[0] == stored.version:
        return None
    text = workspace_index.delta(db, seen[1], stored, workspace_id=owner.workspace_id, session_id=owner.session_id)
    if text is not None:
        stored_index.mark_shown(db, owner.backing_session_id, owner.workspace_id, stored, event.received_at)
    return text


def _show_whole(db: sqlite3.Connection, owner: Owner, event: SpooledEvent, stored: stored_index.Stored) -> str:
    stored_index.mark_shown(db, owner.backing_session_id, owner.workspace_id, stored, event.received_at)
    return workspace_index.for_window(stored, _tool_prefix(event))


def _tool_prefix(event: SpooledEvent) -> str:
    """Plugin hooks run with `CLAUDE_PLUGIN_ROOT`, and the plugin route names the tools differently."""
    return memory_tools.PLUGIN_TOOL_PREFIX if event.env.get("CLAUDE_PLUGIN_ROOT") else memory_tools.SETTINGS_TOOL_PREFIX


def _context(event_name: str, *texts: str | None) -> str | None:
    joined = "\n\n".join(text for text in texts if text)
    if not joined:
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": joined}})


def _live(event: SpooledEvent) -> bool:
    return time.time() - event.received_at < LIVE_MAX_AGE_SECONDS


def _archive_previous_windows(db: sqlite3.Connection, owner: Owner, event: SpooledEvent) -> None:
    """`/clear` starts a new backing session in the same `claude` process; the old window leaves context."""
    pid = _int(event.env.get("CLAUDE_PID"))
    if pid is None:
        return
    rows = db.execute(
        "SELECT id FROM backing_sessions WHERE claude_pid = ? AND id != ? AND ended_at IS NULL",
        (pid, owner.backing_session_id),
    ).fetchall()
    for (backing_id,) in rows:
        capture.archive_live(db, backing_id)
        capture.end_backing_session(db, backing_id, reason="clear", now=event.received_at)


def user_prompt_submit(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    if _live(event):
        answer = handoff.on_user_prompt(event.payload, event.env)
        if answer is not None:
            return answer  # the prompt is blocked here; a fresh window stores it when it is sent there
    owner = owner_of(db, event)
    sync_transcript(db, owner, event)
    source = _str(event.payload, "source")
    prompt_id = _str(event.payload, "prompt_id")
    seed_text, prompt = seed.split_seeded(_str(event.payload, "prompt") or "")
    capture.add_user_turn(db, owner, prompt=prompt, prompt_id=prompt_id, origin=_prompt_origin(prompt, source),
                          now=event.received_at)
    if seed_text is not None:
        capture.add_seed(db, owner, text=seed_text, prompt_id=prompt_id, now=event.received_at)
    return _context("UserPromptSubmit", _memory_delta(db, owner, event))


def _prompt_origin(prompt: str, source: str | None) -> str:
    if prompt_kinds.is_task_notification(prompt):
        return prompt_kinds.TASK_NOTIFICATION_ORIGIN
    return "user" if source in USER_SOURCES else (source or "user")


def post_tool_use(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    payload = event.payload
    owner = owner_of(db, event)
    failed = event.event == "PostToolUseFailure"
    error = payload.get("error") if failed else None
    if failed and not isinstance(error, str):
        error = "" if error is None else to_json(error)
    tool_name = _str(payload, "tool_name") or "unknown"
    tool_use_id = _str(payload, "tool_use_id")
    tool_input = _dict(payload, "tool_input")
    original = unwrapped_bash(tool_input, tool_use_id) if tool_name == "Bash" else None
    response = None if failed else payload.get("tool_response")
    facts = payload.get(persisted.FACTS_KEY)
    facts = facts if isinstance(facts, dict) and not failed else None
    replaced = _store_replacement(db, owner, event, facts) if original is None and not failed else None
    if replaced is not None and replaced[1] is not None:
        response = {**response, "stdout": replaced[1]} if isinstance(response, dict) else response
    capture.add_tool_call(
        db, owner,
        tool_name=tool_name,
        tool_use_id=tool_use_id,
        tool_input=tool_input,
        response=response,
        error=error,
        agent_id=_str(payload, "agent_id"),
        now=event.received_at,
        original_command=original[0] if original else None,
        raw_output_id=original[1] if original else replaced[0] if replaced else None,
        cut=_cut_note(facts, error if original is None else None),
        # Claude Code showed the model its `<persisted-output>` preview, unless the compressed view replaced it.
        partly_shown=facts is not None and (replaced is None or replaced[1] is None),
    )
    if replaced is None or replaced[1] is None or not isinstance(response, dict):
        return None
    # A replacement still carrying the persisted keys is ignored by Claude Code (protocol notes 9b).
    answer = persisted.without_persisted_keys(response)
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": answer}})


# Claude Code's cut of a failed command's output: its first 30,000 characters, cut to the first and last 5,000
# around this marker (protocol notes 9b).
_TRUNCATED = re.compile(r"\.\.\. \[(\d+) characters truncated\] \.\.\.")


def _cut_note(facts: dict[str, Any] | None, error: str | None) -> str | None:
    """Where the stored text is not the call's whole result, a sentence saying so (None: it is whole)."""
    if facts is not None and facts.get("cut"):
        return str(facts["cut"])
    found = _TRUNCATED.search(error) if error else None
    if found is None:
        return None
    return (f"Claude Code handed over only its cut text of this failed command ({int(found.group(1)):,} characters "
            "truncated in the middle, and nothing past the first 30,000): the rest of the output was never stored")


def _store_replacement(db: sqlite3.Connection, owner: Owner, event: SpooledEvent,
                       facts: dict[str, Any] | None) -> tuple[str, str | None] | None:
    """Archive the output the hook compressed (`SpooledEvent.replacement`) as the call's raw output, with what
    the model is shown for the savings ledger: (raw output id, shown text), or None to replace nothing. Only a
    live event, seen for the first time, is answered; the answer goes out after this transaction commits, so
    the raw text is stored before the model reads anything derived from it.

    A result Claude Code saved to a file, read back by the hook (`codeoid.capture.persisted`), is archived too when
    nothing replaces it: (raw output id, None), its bytes verbatim, so `codeoid show --raw` and get_episode give
    the whole of it."""
    replacement, tool_use_id = event.replacement, _str(event.payload, "tool_use_id")
    whole = _persisted_bytes(event.payload) if facts is not None and facts.get("whole") else None
    if tool_use_id is None or (whole is None and (replacement is None or not _live(event))):
        return None
    from codeoid.store.raw import insert_raw_output, raw_output_id_for

    raw_id = raw_output_id_for(tool_use_id)
    known = db.execute("SELECT 1 FROM episodes WHERE kind = 'tool' AND tool_use_id = ? UNION ALL "
                       "SELECT 1 FROM raw_outputs WHERE id = ?", (tool_use_id, raw_id)).fetchone()
    if known is not None:
        return None  # delivered twice: the first delivery answered, this one stores nothing new
    command = _dict(event.payload, "tool_input").get("command")
    answer = replacement if replacement is not None and _live(event) else None
    stdout = answer.raw if answer is not None else whole
    assert stdout is not None
    insert_raw_output(db, raw_id, command=command if isinstance(command, str) else "", stdout=stdout,
                      cwd=_str(event.payload, "cwd"), tool_use_id=tool_use_id, session_id=owner.session_id,
                      workspace_id=owner.workspace_id, exit_status=0, rule=answer.rule if answer else None,
                      shown_size=len(answer.shown.encode("utf-8", "surrogatepass")) if answer else None)
    return raw_id, answer.shown if answer else None


def _persisted_bytes(payload: dict[str, Any]) -> bytes | None:
    """The text `persisted.load` put in the tool response, as the bytes to archive (None: nothing to archive)."""
    response = payload.get("tool_response")
    stdout = response.get("stdout") if isinstance(response, dict) else None
    return stdout.encode("utf-8", "surrogatepass") if isinstance(stdout, str) else None


def unwrapped_bash(tool_input: dict[str, Any], tool_use_id: str | None) -> tuple[str, str] | None:
    """The command the model asked for and its raw output's id, read back from the rewrite's wrapper (PostToolUse
    sees what ran). The wrapper's module (and `typing`, `shlex` with it) loads only for a wrapped command: most
    Bash calls are not, and every import is paid by every hook."""
    command = tool_input.get("command")
    if not isinstance(command, str) or WRAPPER_NAME_PREFIX not in command:
        return None
    from codeoid.compressors import bash_wrapper
    from codeoid.store.raw import raw_output_id_for

    found = bash_wrapper.unwrap(command)
    if found is None or found.tool_use_id != tool_use_id:
        return None
    return found.command, raw_output_id_for(found.tool_use_id)


def stop(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    owner = owner_of(db, event)
    sync_transcript(db, owner, event)
    last = _str(event.payload, "last_assistant_message")
    if last and last.strip():
        turn = capture.current_turn(db, owner)
        _store_unless_present(db, owner, event, last, placeholder=f"{PENDING_PREFIX}{owner.backing_session_id}:{turn}")
    if event.event == "StopFailure":
        error = event.payload.get("error")
        capture.end_turn(db, owner, reason=f"stop_failure: {error}" if error else "stop_failure",
                         now=event.received_at)
    else:
        capture.end_turn(db, owner, reason="stop", now=event.received_at)
    return None


def subagent_stop(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    """Subagent turns are stored and marked with their agent id; compaction's internal agent is marked too."""
    owner = owner_of(db, event)
    sync_transcript(db, owner, event)
    agent_id = _str(event.payload, "agent_id") or "subagent"
    path = _str(event.payload, "agent_transcript_path")
    if path:
        for line in transcript.assistant_texts(transcript.read_records(path), sidechain=True):
            _store_line(db, owner, event, line, agent_id=agent_id)
    last = _str(event.payload, "last_assistant_message")
    if last and last.strip():
        _store_unless_present(db, owner, event, last, placeholder=f"{PENDING_PREFIX}{agent_id}", agent_id=agent_id)
    return None


def pre_compact(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    owner = owner_of(db, event)
    sync_transcript(db, owner, event)
    capture.note_compaction(
        db, owner.backing_session_id, trigger=_str(event.payload, "trigger"),
        custom_instructions=_str(event.payload, "custom_instructions"), now=event.received_at,
    )
    return notice.compaction_block(event.payload, event.env)


def session_end(db: sqlite3.Connection, event: SpooledEvent) -> str | None:
    owner = owner_of(db, event)
    sync_transcript(db, owner, event)
    reason = _str(event.payload, "reason") or "other"
    if reason == "clear":
        capture.archive_live(db, owner.backing_session_id)
    capture.end_backing_session(db, owner.backing_session_id, reason=reason, now=event.received_at)
    return None


def sync_transcript(db: sqlite3.Connection, owner: Owner, event: SpooledEvent) -> None:
    """Store assistant text from the main transcript lines written since the last read."""
    path = _str(event.payload, "transcript_path")
    if not path:
        return
    row = db.execute("SELECT transcript_offset FROM backing_sessions WHERE id = ?",
                     (owner.backing_session_id,)).fetchone()
    records, offset = transcript.read_new_records(path, int(row[0]) if row else 0)
    for line in transcript.assistant_texts(records):
        _store_line(db, owner, event, line, agent_id=None)
    db.execute("UPDATE backing_sessions SET transcript_offset = ? WHERE id = ?", (offset, owner.backing_session_id))


def _store_line(db: sqlite3.Connection, owner: Owner, event: SpooledEvent, line: transcript.AssistantText,
                *, agent_id: str | None) -> None:
    """One text block: extend its message's episode, claim a pending one with that text, or start one."""
    # The transcript is read as is: a lone surrogate or a non-string uuid must not fail every later hook.
    line.message_id, line.text = clean_text(line.message_id), clean_text(line.text)
    line.uuid = clean_text(line.uuid) if isinstance(line.uuid, str) else None
    row = db.execute("SELECT text FROM episodes WHERE kind = 'assistant' AND message_id = ?",
                     (line.message_id,)).fetchone()
    if row is not None:
        if line.text not in row[0]:
            capture.append_assistant_text(db, line.message_id, line.text)
        return
    pending = db.execute(
        "SELECT message_id FROM episodes WHERE kind = 'assistant' AND session_id = ? AND message_id LIKE ?"
        " AND instr(text, ?) > 0 ORDER BY id DESC LIMIT 1",
        (owner.session_id, PENDING_PREFIX + "%", line.text),
    ).fetchone()
    if pending is not None:
        capture.adopt_message_id(db, owner, placeholder=pending[0], message_id=line.message_id)
        return
    capture.add_assistant_message(db, owner, message_id=line.message_id, text=line.text,
                                  now=line.timestamp or event.received_at, transcript_uuid=line.uuid,
                                  agent_id=agent_id)


def _store_unless_present(db: sqlite3.Connection, owner: Owner, event: SpooledEvent, text: str, *,
                          placeholder: str, agent_id: str | None = None) -> None:
    """`last_assistant_message` arrives before the lagging transcript has the line: store it under a
    placeholder key unless this turn already holds that text; the transcript line adopts it later."""
    turn = capture.current_turn(db, owner)
    present = db.execute(
        "SELECT 1 FROM episodes WHERE kind = 'assistant' AND session_id = ? AND turn = ? AND instr(text, ?) > 0",
        (owner.session_id, turn, text.strip()),
    ).fetchone()
    if present is None:
        capture.add_assistant_message(db, owner, message_id=placeholder, text=text, now=event.received_at,
                                      agent_id=agent_id)


HANDLERS: dict[str, Handler] = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "PostToolUse": post_tool_use,
    "PostToolUseFailure": post_tool_use,
    "Stop": stop,
    "StopFailure": stop,
    "SubagentStop": subagent_stop,
    "PreCompact": pre_compact,
    "SessionEnd": session_end,
}
