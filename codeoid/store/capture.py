"""Writing what happens in a session: backing sessions, user turns, tool calls, assistant messages.

Every write is idempotent on Claude Code's own keys (`tool_use_id`, `prompt_id`, `message.id`), so a hook
that is retried, replayed from the spool or fired twice never makes a second episode.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3

from codeoid.store import episode_text, session_titles
from codeoid.text import clean_text, estimate_tokens, to_json
from codeoid.workspace import WorkspaceId

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Between a turn's `prompt_id` and the digest of a prompt typed into that turn while it ran.
MID_TURN_SEPARATOR = "#"


class Owner:
    """Where an episode belongs: the backing session (a Claude Code, Codex or Gemini run), the codeoid session
    behind it, and the agent CLI it ran in (None: Claude Code)."""

    __slots__ = ("agent", "backing_session_id", "session_id", "workspace_id")

    def __init__(self, backing_session_id: str, session_id: str, workspace_id: int, agent: str | None = None) -> None:
        self.backing_session_id = backing_session_id
        self.session_id = session_id
        self.workspace_id = workspace_id
        self.agent = agent


def ensure_workspace(db: sqlite3.Connection, workspace: WorkspaceId, now: float) -> int:
    db.execute(
        "INSERT INTO workspaces (key, root, portable_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO NOTHING",
        (workspace.key, workspace.root, workspace.portable_id, now),
    )
    row = db.execute("SELECT id FROM workspaces WHERE key = ?", (workspace.key,)).fetchone()
    return int(row[0])


def ensure_backing_session(
    db: sqlite3.Connection,
    *,
    backing_session_id: str,
    workspace: WorkspaceId,
    now: float,
    codeoid_session_id: str | None = None,
    source: str | None = None,
    claude_pid: int | None = None,
    transcript_path: str | None = None,
    model: str | None = None,
    agent: str | None = None,
    hooked: bool = False,
) -> Owner:
    """Find or register the backing session; a new one joins `codeoid_session_id` or starts a session.

    Under the supervisor `codeoid_session_id` carries the durable id across rotations; without it each new
    backing session (startup, `/clear`) is a new codeoid session, and a resumed one keeps its own. `agent` names
    the CLI (None: Claude Code); `hooked` says the event came from that CLI's own hooks (live capture).
    """
    row = db.execute(
        "SELECT b.session_id, s.workspace_id, b.agent FROM backing_sessions b JOIN sessions s ON s.id = b.session_id"
        " WHERE b.id = ?",
        (backing_session_id,),
    ).fetchone()
    if row is not None:
        db.execute(
            "UPDATE backing_sessions SET claude_pid = coalesce(?, claude_pid),"
            " transcript_path = coalesce(?, transcript_path), model = coalesce(?, model),"
            " agent = coalesce(agent, ?), hooked_at = coalesce(hooked_at, ?),"
            " ended_at = CASE WHEN ? IS NULL THEN ended_at ELSE NULL END WHERE id = ?",
            (claude_pid, transcript_path, model, agent, now if hooked else None, source, backing_session_id),
        )
        return Owner(backing_session_id, row[0], int(row[1]), row[2] or agent)
    workspace_id = ensure_workspace(db, workspace, now)
    session_id = codeoid_session_id or os.urandom(16).hex()
    db.execute(
        "INSERT INTO sessions (id, workspace_id, created_at) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING",
        (session_id, workspace_id, now),
    )
    workspace_id = int(db.execute("SELECT workspace_id FROM sessions WHERE id = ?", (session_id,)).fetchone()[0])
    db.execute(
        "INSERT INTO backing_sessions (id, session_id, source, claude_pid, transcript_path, model, started_at, agent,"
        " hooked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (backing_session_id, session_id, source, claude_pid, transcript_path, model, now, agent,
         now if hooked else None),
    )
    return Owner(backing_session_id, session_id, workspace_id, agent)


def current_turn(db: sqlite3.Connection, owner: Owner) -> int:
    row = db.execute("SELECT turn_count FROM sessions WHERE id = ?", (owner.session_id,)).fetchone()
    return int(row[0]) if row else 0


def add_user_turn(
    db: sqlite3.Connection, owner: Owner, *, prompt: str, prompt_id: str | None, origin: str, now: float
) -> int | None:
    """Store a user prompt; None when this prompt was stored already.

    A prompt with a new `prompt_id` opens a turn. A prompt the user typed while a turn was running reaches the
    hook with that turn's `prompt_id` (Claude Code hands it to the model mid-turn), so it is stored in the open
    turn under the id and a digest of its text: a second prompt is never mistaken for a replay of the first.
    """
    text = clean_text(prompt)
    if prompt_id is None:
        return _insert_user(db, owner, key=f"unkeyed-{os.urandom(16).hex()}", text=text, origin=origin, now=now)
    same_turn = db.execute(
        "SELECT turn, text FROM episodes WHERE kind = 'user' AND (prompt_id = ? OR (prompt_id > ? AND prompt_id < ?))",
        (prompt_id, prompt_id + MID_TURN_SEPARATOR, prompt_id + chr(ord(MID_TURN_SEPARATOR) + 1)),
    ).fetchall()
    if not same_turn:
        return _insert_user(db, owner, key=prompt_id, text=text, origin=origin, now=now)
    if any(stored == text for _, stored in same_turn):
        return None
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return _insert(
        db, owner, turn=int(same_turn[0][0]), kind="user", prompt_id=f"{prompt_id}{MID_TURN_SEPARATOR}{digest}",
        text=text, origin=origin, summary=episode_text.text_summary("user", text), now=now,
    )


def turn_key(key: str) -> str:
    """The Claude Code id an episode key stands for (a mid-turn prompt's key carries a digest after the id)."""
    return key.partition(MID_TURN_SEPARATOR)[0]


def _insert_user(db: sqlite3.Connection, owner: Owner, *, key: str, text: str, origin: str, now: float) -> int:
    turn = current_turn(db, owner) + 1
    db.execute("UPDATE sessions SET turn_count = ? WHERE id = ?", (turn, owner.session_id))
    db.execute(
        "INSERT INTO turns (session_id, number, backing_session_id, started_at) VALUES (?, ?, ?, ?)",
        (owner.session_id, turn, owner.backing_session_id, now),
    )
    if origin == "user":
        session_titles.set_first_title(db, owner.session_id, text)
    return _insert(
        db, owner, turn=turn, kind="user", prompt_id=key, text=text, origin=origin,
        summary=episode_text.text_summary("user", text), now=now,
    )


def add_seed(db: sqlite3.Connection, owner: Owner, *, text: str, prompt_id: str | None, now: float) -> int | None:
    """Store a rotation seed in the turn it opened, marked as a seed: it is codeoid's text (a copy of stored
    history), kept for the record but never recalled. None when this seed was stored already."""
    key = f"seed:{prompt_id or owner.backing_session_id}"
    if db.execute("SELECT 1 FROM episodes WHERE kind = 'user' AND prompt_id = ?", (key,)).fetchone():
        return None
    text = clean_text(text)
    return _insert(
        db, owner, turn=current_turn(db, owner), kind="user", prompt_id=key, text=text, origin="seed",
        summary=episode_text.text_summary("rotation seed", text), now=now,
    )


def add_tool_call(
    db: sqlite3.Connection,
    owner: Owner,
    *,
    tool_name: str,
    tool_use_id: str | None,
    tool_input: dict[str, Any],
    response: Any,
    error: str | None,
    agent_id: str | None,
    now: float,
    original_command: str | None = None,
    raw_output_id: str | None = None,
    cut: str | None = None,
) -> int | None:
    """Store one tool call with its whole result (or failure text); None when it was stored already.

    `original_command`, for a Bash call the rewrite wrapped, is the command the model typed: it is what `command`
    and the input's `command` hold (stored, indexed, shown), and the wrapper that ran goes to `wrapper` alone.
    `cut`, when the text is not the whole result, says so in a sentence that every view of the episode repeats."""
    key = tool_use_id or f"unkeyed-{os.urandom(16).hex()}"
    if db.execute("SELECT 1 FROM episodes WHERE kind = 'tool' AND tool_use_id = ?", (key,)).fetchone():
        return None
    is_error = error is not None
    text = clean_text(error if is_error else episode_text.result_text(tool_name, response))  # type: ignore[arg-type]
    exit_status = episode_text.exit_status_of(error) if is_error else None
    if tool_name == "Bash" and not is_error and isinstance(response, dict) and not response.get("interrupted"):
        exit_status = 0
    command = tool_input.get("command") if tool_name == "Bash" else None
    command = clean_text(command) if isinstance(command, str) else None
    original = clean_text(original_command) if original_command else command
    wrapper = None
    if original is not None and command is not None and original != command:
        wrapper, command, tool_input = command, original, {**tool_input, "command": original}
    if raw_output_id is not None:
        raw_output_id = complete_raw_output(db, raw_output_id, owner, exit_status=exit_status)
    return _insert(
        db, owner, turn=current_turn(db, owner), kind="tool", tool_name=tool_name, tool_use_id=key,
        input=to_json(tool_input), command=command, original_command=original, wrapper=wrapper,
        cut=clean_text(cut) if cut else None,
        text=text, response=None if response is None else to_json(episode_text.response_without_text(response, text)),
        is_error=int(is_error), exit_status=exit_status,
        paths=to_json(episode_text.touched_paths(tool_input)), agent_id=agent_id,
        origin="codeoid" if _is_codeoid_tool(tool_name) else "user",
        summary=episode_text.tool_summary(tool_name, tool_input, text, exit_status, is_error),
        raw_output_id=raw_output_id, now=now,
    )


def complete_raw_output(db: sqlite3.Connection, raw_output_id: str, owner: Owner, *,
                        exit_status: int | None) -> str | None:
    """Fill in what only the tool result knows (the exit status the compressor could not see from inside the
    pipe, the session) and return the id; None when no such raw output was archived (a small output, or a
    store that was unavailable to the compressor), so the episode links to nothing."""
    cursor = db.execute(
        "UPDATE raw_outputs SET exit_status = coalesce(exit_status, ?), session_id = coalesce(session_id, ?),"
        " workspace_id = coalesce(workspace_id, ?) WHERE id = ?",
        (exit_status, owner.session_id, owner.workspace_id, raw_output_id),
    )
    return raw_output_id if cursor.rowcount else None


def add_assistant_message(
    db: sqlite3.Connection,
    owner: Owner,
    *,
    message_id: str,
    text: str,
    now: float,
    transcript_uuid: str | None = None,
    agent_id: str | None = None,
) -> int | None:
    """Store assistant text under its `message.id`; None when that message is stored already."""
    if db.execute("SELECT 1 FROM episodes WHERE kind = 'assistant' AND message_id = ?", (message_id,)).fetchone():
        return None
    text = clean_text(text)
    return _insert(
        db, owner, turn=current_turn(db, owner), kind="assistant", message_id=message_id, text=text,
        transcript_uuid=transcript_uuid, agent_id=agent_id,
        summary=episode_text.text_summary("assistant", text), now=now,
    )


def append_assistant_text(db: sqlite3.Connection, message_id: str, text: str) -> bool:
    """A message's text blocks arrive as separate transcript lines; later blocks extend the episode."""
    text = clean_text(text)
    cursor = db.execute(
        "UPDATE episodes SET text = text || char(10) || char(10) || ?,"
        " token_estimate = token_estimate + ? WHERE kind = 'assistant' AND message_id = ?",
        (text, estimate_tokens(text), message_id),
    )
    return cursor.rowcount > 0


def adopt_message_id(db: sqlite3.Connection, owner: Owner, *, placeholder: str, message_id: str) -> None:
    """Give an episode stored from `last_assistant_message` (before the transcript caught up) its real id."""
    db.execute(
        "UPDATE episodes SET message_id = ? WHERE kind = 'assistant' AND message_id = ? AND session_id = ?",
        (message_id, placeholder, owner.session_id),
    )


def end_turn(db: sqlite3.Connection, owner: Owner, *, reason: str, now: float) -> None:
    db.execute(
        "UPDATE turns SET ended_at = ?, end_reason = ? WHERE session_id = ? AND number = ? AND ended_at IS NULL",
        (now, reason, owner.session_id, current_turn(db, owner)),
    )


def end_backing_session(db: sqlite3.Connection, backing_session_id: str, *, reason: str, now: float) -> None:
    db.execute(
        "UPDATE backing_sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
        (now, reason, backing_session_id),
    )


def archive_live(
    db: sqlite3.Connection, backing_session_id: str, *, keep: frozenset[str] | set[str] = frozenset()
) -> int:
    """Move a window's live episodes to `archived`, except those whose key is in `keep` (still in the window)."""
    rows = db.execute(
        "SELECT id, coalesce(tool_use_id, prompt_id, message_id) FROM episodes"
        " WHERE backing_session_id = ? AND state = 'live'",
        (backing_session_id,),
    ).fetchall()
    ids = [(row[0],) for row in rows if row[1] is None or turn_key(row[1]) not in keep]
    db.executemany("UPDATE episodes SET state = 'archived' WHERE id = ?", ids)
    return len(ids)


def note_compaction(db: sqlite3.Connection, backing_session_id: str, *, trigger: str | None,
                    custom_instructions: str | None, now: float) -> None:
    db.execute(
        "INSERT INTO compactions (backing_session_id, trigger, custom_instructions, noted_at) VALUES (?, ?, ?, ?)",
        (backing_session_id, trigger, custom_instructions, now),
    )


def apply_compaction(db: sqlite3.Connection, backing_session_id: str, *, keep: set[str], now: float) -> int:
    """SessionStart(compact): archive what the compaction dropped and close the noted boundary."""
    archived = archive_live(db, backing_session_id, keep=keep)
    db.execute(
        "UPDATE compactions SET applied_at = ?, archived_count = ? WHERE id = ("
        " SELECT max(id) FROM compactions WHERE backing_session_id = ? AND applied_at IS NULL)",
        (now, archived, backing_session_id),
    )
    return archived


def _is_codeoid_tool(tool_name: str) -> bool:
    """codeoid's own memory tools: stored, but their results are copies and are not indexed."""
    # Gemini names an MCP server's tools `mcp_<server>_<tool>`.
    return tool_name.startswith(("mcp__codeoid__", "mcp__plugin_codeoid_codeoid__", "mcp_codeoid_"))


def _insert(db: sqlite3.Connection, owner: Owner, *, kind: str, text: str, summary: str, now: float,
            **fields: Any) -> int:
    columns = {
        "workspace_id": owner.workspace_id,
        "session_id": owner.session_id,
        "backing_session_id": owner.backing_session_id,
        "kind": kind,
        "text": text,
        "summary": summary,
        "token_estimate": estimate_tokens(text),
        "created_at": now,
        "agent": owner.agent,
        **fields,
    }
    names = ", ".join(columns)
    marks = ", ".join("?" for _ in columns)
    cursor = db.execute(f"INSERT INTO episodes ({names}) VALUES ({marks})", tuple(columns.values()))
    return int(cursor.lastrowid or 0)
