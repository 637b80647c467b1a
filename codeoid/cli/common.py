"""What several commands share: opening the store for reading, the workspace scope option, JSON and time output."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from codeoid.store import db as store_db
from codeoid.store import queries


@contextmanager
def open_store() -> Iterator[sqlite3.Connection]:
    """Open the store for reading, landing any spooled events first so what is printed is complete."""
    from codeoid.capture import ingest  # not at the top: `codeoid --version` and the status line never open the store

    try:
        db = store_db.connect()
    except store_db.StoreUnavailable as error:
        raise click.ClickException(f"The store cannot be opened: {error}") from error
    try:
        try:
            ingest.replay_backlog(db)
        except (store_db.StoreUnavailable, store_db.StoreCorrupt):
            pass  # still busy: reading what is committed is the best we can do
        yield db
    finally:
        db.close()


def scope_option(fn: Any) -> Any:
    return click.option("--all-workspaces", "all_workspaces", is_flag=True,
                        help="Include every workspace, not only the one of the current directory.")(fn)


def workspace_scope(db: sqlite3.Connection, all_workspaces: bool) -> int | None:
    if all_workspaces:
        return None
    found = queries.workspace_id_for(db, os.getcwd())
    if found is None:
        raise click.ClickException(
            f"Nothing is stored for the workspace of {os.getcwd()}; run inside a project codeoid has seen, "
            "or pass --all-workspaces."
        )
    return found


def session_id_of(db: sqlite3.Connection, ref: str, *, param_hint: str) -> str:
    """The session `ref` names (an id, a unique prefix, a name or a backing Claude Code id); an unknown or ambiguous
    one is a usage error (exit 2) in one sentence, never an empty listing."""
    from codeoid.store.session_ref import UnknownSession, resolve_session

    try:
        return resolve_session(db, ref)
    except UnknownSession as error:
        raise click.BadParameter(str(error), param_hint=param_hint) from error


def plural(count: int, noun: str) -> str:
    """'1 turn', '2 turns', '0 turns'."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def format_time(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def print_json(value: Any) -> None:
    """Rows print every field; a tool episode's `response` is printed whole, as Claude Code reported it."""
    def whole(row: Any) -> Any:
        if isinstance(row, dict) and "response" in row and "text" in row:
            return {**row, "response": queries.tool_response(row)}
        return row

    value = [whole(row) for row in value] if isinstance(value, list) else whole(value)
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def print_outcome(outcome: Any, *, nothing: str) -> None:
    for path in outcome.written:
        click.echo(f"wrote {path}")
    for path in outcome.removed:
        click.echo(f"removed {path}")
    for path in outcome.backups:
        click.echo(f"backup {path}")
    for note in outcome.notes:
        click.echo(note)
    if not (outcome.written or outcome.removed):
        click.echo(nothing)
