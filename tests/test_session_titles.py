"""Sessions are told apart by a title from their first prompt: stored as the prompt is, given to sessions stored
before by a migration, never showing a prompt that was retracted or forgotten, and printed by `codeoid sessions`
(and its --json)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from codeoid import paths
from codeoid.cli import cli
from codeoid.store import capture, db, queries, retention, retraction
from codeoid.store.migrations import migrate
from codeoid.workspace import identify

LONG_PROMPT = ("Fix the flaky parser test in tests/test_parser.py:\n\n  it fails one run in five with a KeyError "
               "on 'name', and only on CI")


def _owner(connection: sqlite3.Connection, project: Path, backing: str) -> capture.Owner:
    with db.write_transaction(connection):
        return capture.ensure_backing_session(connection, backing_session_id=backing,
                                              workspace=identify(str(project)), now=1.0)


def _prompt(connection: sqlite3.Connection, owner: capture.Owner, text: str, key: str, origin: str = "user") -> int:
    with db.write_transaction(connection):
        episode = capture.add_user_turn(connection, owner, prompt=text, prompt_id=key, origin=origin, now=2.0)
    assert episode is not None
    return episode


def _titles(connection: sqlite3.Connection) -> dict[str, str | None]:
    return {row["id"]: row["title"] for row in queries.sessions(connection)}


def test_a_session_is_titled_by_the_first_prompt_the_user_typed(store: sqlite3.Connection, project: Path) -> None:
    owner = _owner(store, project, "cc-1")
    _prompt(store, owner, "<task-notification>build done</task-notification>", "p0", origin="task")
    _prompt(store, owner, LONG_PROMPT, "p1")
    _prompt(store, owner, "and now the docs", "p2")

    (title,) = _titles(store).values()
    assert title == "Fix the flaky parser test in tests/test_parser.py: it fails…"
    assert len(title) == 60


def test_retracting_or_forgetting_the_first_prompt_takes_its_title_away(store: sqlite3.Connection,
                                                                        project: Path) -> None:
    owner = _owner(store, project, "cc-1")
    secret = _prompt(store, owner, "my password is hunter2, log in with it", "p1")
    second = _prompt(store, owner, "deploy to staging", "p2")

    retraction.retract(store, [secret])
    assert list(_titles(store).values()) == ["deploy to staging"]
    retraction.restore(store, [secret])
    assert list(_titles(store).values()) == ["my password is hunter2, log in with it"]
    retention.forget(store, [secret, second])
    assert list(_titles(store).values()) == [None]


def test_sessions_stored_before_titles_existed_get_theirs(codeoid_home: Path, project: Path) -> None:
    paths.ensure_private_dir(os.path.dirname(paths.database_path()))
    old = sqlite3.connect(paths.database_path(), isolation_level=None)
    migrate(old, upto="m012_recall_filter_index")
    old.execute("INSERT INTO workspaces (id, key, root, created_at) VALUES (1, 'k', ?, 1)", (str(project),))
    for session, prompt in (("s-1", "rename the config loader"), ("s-2", None)):
        old.execute("INSERT INTO sessions (id, workspace_id, created_at) VALUES (?, 1, 1)", (session,))
        if prompt:
            old.execute("INSERT INTO episodes (workspace_id, session_id, turn, kind, text, summary, token_estimate, "
                        "created_at) "
                        "VALUES (1, ?, 1, 'user', ?, '', 5, 1)", (session, prompt))
    old.close()

    upgraded = db.connect()
    assert _titles(upgraded) == {"s-1": "rename the config loader", "s-2": None}
    upgraded.close()


def test_codeoid_sessions_prints_the_title_and_its_json_carries_it(codeoid_home: Path, project: Path,
                                                                   monkeypatch) -> None:
    connection = db.connect()
    _prompt(connection, _owner(connection, project, "cc-1"), "why does the build fail on arm64?", "p1")
    connection.close()
    monkeypatch.chdir(project)

    text = CliRunner().invoke(cli, ["sessions"]).output
    listed = json.loads(CliRunner().invoke(cli, ["sessions", "--json"]).output)

    assert text.splitlines()[0].endswith("rotations  title")
    assert text.splitlines()[1].endswith("0 rotations  why does the build fail on arm64?")
    assert [row["title"] for row in listed] == ["why does the build fail on arm64?"]
