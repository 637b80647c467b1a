"""Which codeoid session a user's argument names: its id, a unique prefix of the id, its name, or the id of one
of its backing Claude Code sessions.

Every command that takes a session (`timeline --session`, `gain --session`, `fork`, `fork-capture`, `rotate`, the
viewer) resolves it here, so each accepts the same spellings and refuses an unknown or ambiguous one in the same
words, instead of quietly printing nothing for a session that does not exist.
"""

from __future__ import annotations

import sqlite3


class UnknownSession(ValueError):
    """The argument names no session, or several; the message says which and what to do, in one sentence."""


def resolve_session(db: sqlite3.Connection, ref: str) -> str:
    """The codeoid session id `ref` names. The exact id wins over a name, a name over a backing session id, and
    those over a prefix; a prefix that fits several sessions is refused rather than guessed."""
    if not ref.strip():
        raise UnknownSession("An empty session name names no session; `codeoid sessions --all-workspaces` lists them.")
    for where, value in (("id = ?", ref), ("name = ?", ref),
                         ("id = (SELECT session_id FROM backing_sessions WHERE id = ?)", ref),
                         ("id LIKE ? ESCAPE '\\'", escape_like(ref) + "%")):
        rows = db.execute(f"SELECT id FROM sessions WHERE {where} ORDER BY id", (value,)).fetchall()
        if len(rows) == 1:
            return str(rows[0][0])
        if len(rows) > 1:
            shown = ", ".join(str(row[0]) for row in rows[:5]) + (", ..." if len(rows) > 5 else "")
            raise UnknownSession(f"{ref!r} names {len(rows)} sessions ({shown}); give more of the session id.")
    raise UnknownSession(f"No codeoid session {ref!r}; `codeoid sessions --all-workspaces` lists them.")


def escape_like(text: str) -> str:
    """`text` for a LIKE pattern with '\\' as the escape: its own % and _ match only themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
