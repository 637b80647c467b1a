"""The store keeps what it is given: byte-exact blobs, every row across schema upgrades, private files."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from codeoid import paths
from codeoid.store import capture, context_index, db, identity, queries, raw
from codeoid.store.migrations import MIGRATIONS, migrate
from codeoid.workspace import identify

FIXTURES = Path(__file__).parent / "fixtures"


def _owner(connection: sqlite3.Connection, project: Path, backing: str = "cc-1") -> capture.Owner:
    with db.write_transaction(connection):
        return capture.ensure_backing_session(
            connection, backing_session_id=backing, workspace=identify(str(project)), now=1.0
        )


def test_upgrading_a_store_made_by_the_first_schema_keeps_every_row(codeoid_home: Path) -> None:
    target = Path(paths.database_path())
    shutil.copy(FIXTURES / "store-m001.db", target)
    before = sqlite3.connect(target)
    counts_before = {table: before.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                     for table in ("workspaces", "sessions", "backing_sessions", "episodes", "raw_outputs",
                                   "raw_chunks", "rotations")}
    episodes_before = before.execute("SELECT id, kind, state, text FROM episodes ORDER BY id").fetchall()
    before.close()

    connection = db.connect()
    applied = {row[0] for row in connection.execute("SELECT name FROM _migrations")}
    assert applied == {fn.__name__ for fn in MIGRATIONS}
    for table, count in counts_before.items():
        assert connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == count, table
    assert connection.execute("SELECT id, kind, state, text FROM episodes ORDER BY id").fetchall() == episodes_before
    assert raw.read_raw_stdout(connection, "raw-toolu_old1") == b"\xff\x00\xfe\nA"
    hits = queries.search_bm25(connection, "flaky", limit=10)
    assert {hit["id"] for hit in hits} == {1, 2, 3}  # the retracted episode 4 never matches
    assert connection.execute("SELECT transcript_offset FROM backing_sessions").fetchone()[0] == 0


def test_migrating_twice_applies_nothing_the_second_time(codeoid_home: Path) -> None:
    connection = db.connect()
    assert migrate(connection) == []


def test_each_store_gets_its_own_id_and_an_upgrade_starts_the_vector_index_over(
    codeoid_home: Path, tmp_path: Path
) -> None:
    paths.ensure_private_dir(os.path.dirname(paths.database_path()))
    old = sqlite3.connect(paths.database_path(), isolation_level=None)
    migrate(old, upto="m006_workspace_index")
    old.execute("UPDATE vector_progress SET indexed_upto = 40, claimed_upto = 40")  # indexed under the old ids
    old.close()

    upgraded = db.connect()
    other = sqlite3.connect(tmp_path / "another-machine.db", isolation_level=None)
    try:
        migrate(other)
        assert upgraded.execute("SELECT indexed_upto, claimed_upto FROM vector_progress").fetchone() == (0, 0)
        ours, theirs = identity.store_id(upgraded), identity.store_id(other)
        assert len(ours) == 32 and int(ours, 16) >= 0 and ours != theirs
        assert identity.store_id(db.connect()) == ours  # it never changes
    finally:
        upgraded.close()
        other.close()


def test_an_upgrade_makes_the_words_compression_cut_from_stored_outputs_searchable(
    codeoid_home: Path, project: Path
) -> None:
    paths.ensure_private_dir(os.path.dirname(paths.database_path()))
    old = sqlite3.connect(paths.database_path(), isolation_level=None)
    migrate(old, upto="m014_command_as_typed")
    owner = _owner(old, project)
    raw.store_raw_output(old, "raw-toolu_log", command="git log", stdout=(
        b"commit 1\n    The walrus gateway drops idle sockets after 30 s.\ncommit 2\n    Tidy.\n"))
    with db.write_transaction(old):
        episode = capture.add_tool_call(old, owner, tool_name="Bash", tool_use_id="toolu_log",
                                        tool_input={"command": "git log"},
                                        response={"stdout": "commit 1\ncommit 2\n[codeoid] 2 body lines cut"},
                                        error=None, agent_id=None, now=2.0, raw_output_id="raw-toolu_log")
        # The old store's neighbour index was up to date: its row holds the compressed text alone.
        old.execute("INSERT INTO episodes_context(rowid, self, near, mid, far) VALUES (?, ?, '', '', '')",
                    (episode, "tool Bash: commit 1 commit 2"))
        old.execute("UPDATE context_progress SET indexed_upto = ?", (episode,))
    old.close()

    upgraded = db.connect()
    try:
        found = queries.search_context(upgraded, "which gateway drops sockets?", workspace_id=owner.workspace_id,
                                       limit=5)[0]
        assert [row["id"] for row in found] == [episode]
        assert migrate(upgraded) == []
    finally:
        upgraded.close()


def test_a_search_indexes_raw_outputs_a_batch_at_a_time_and_a_full_catch_up_all_of_them(
    store: sqlite3.Connection, project: Path
) -> None:
    owner = _owner(store, project)
    for number in range(20):
        raw.store_raw_output(store, f"raw-toolu_{number}", command="make", stdout=(
            f"step {number} ok\n    the heron cache warmed {number} shards\n").encode())
        with db.write_transaction(store):
            capture.add_tool_call(store, owner, tool_name="Bash", tool_use_id=f"toolu_{number}",
                                  tool_input={"command": "make"}, response={"stdout": f"step {number} ok"},
                                  error=None, agent_id=None, now=2.0 + number, raw_output_id=f"raw-toolu_{number}")

    first = queries.search_context(store, "heron cache", workspace_id=owner.workspace_id, limit=50)[0]
    assert len(first) == context_index.RAW_BATCH  # one recall tokenizes one batch, not the store's backlog

    queries.catch_up_fts(store)  # what the memory service's indexer runs as episodes arrive
    assert len(queries.search_context(store, "heron cache", workspace_id=owner.workspace_id, limit=50)[0]) == 20


def test_a_100_mb_output_comes_back_byte_exact(store: sqlite3.Connection) -> None:
    blob = os.urandom(1024 * 1024) * 100
    stored = raw.store_raw_output(store, "raw-big", command="yes | head", stdout=blob, exit_status=0)
    assert stored.stdout_size == len(blob)
    assert raw.read_raw_stdout(store, "raw-big") == blob


def test_non_utf8_output_and_stderr_come_back_byte_exact(store: sqlite3.Connection) -> None:
    stdout = b"caf\xe9 \xff\xfe\x00 half-\xe2\x82 \x1b[31mred\x1b[0m\n"
    stderr = b"warn: \xc3\x28 invalid\n"
    raw.store_raw_output(store, "raw-latin1", command="cat legacy.txt", stdout=stdout, stderr=stderr, exit_status=3)
    found = raw.get_raw_output(store, "raw-latin1")
    assert found is not None
    assert (found.stderr, found.exit_status, found.complete) == (stderr, 3, True)
    assert raw.read_raw_stdout(store, "raw-latin1") == stdout


def test_a_streamed_output_is_stored_before_it_is_finished(store: sqlite3.Connection) -> None:
    writer = raw.RawOutputWriter(store, raw.raw_output_id_for("toolu_stream"), command="make")
    writer.write(b"first line\n")
    writer.flush()
    other = db.connect()
    assert raw.read_raw_stdout(other, "raw-toolu_stream") == b"first line\n"
    assert raw.get_raw_output(other, "raw-toolu_stream").complete is False  # type: ignore[union-attr]
    writer.write(b"x" * (raw.CHUNK_BYTES * 2 + 5))
    writer.finish(exit_status=0, duration_ms=12)
    assert raw.read_raw_stdout(other, "raw-toolu_stream") == b"first line\n" + b"x" * (raw.CHUNK_BYTES * 2 + 5)
    other.close()


def test_the_same_keys_never_make_a_second_episode(store: sqlite3.Connection, project: Path) -> None:
    owner = _owner(store, project)
    with db.write_transaction(store):
        assert capture.add_user_turn(store, owner, prompt="hi", prompt_id="p1", origin="user", now=2.0)
        assert capture.add_user_turn(store, owner, prompt="hi", prompt_id="p1", origin="user", now=3.0) is None
        assert capture.add_tool_call(store, owner, tool_name="Bash", tool_use_id="t1", tool_input={"command": "ls"},
                                     response={"stdout": "a\n"}, error=None, agent_id=None, now=4.0)
        assert capture.add_tool_call(store, owner, tool_name="Bash", tool_use_id="t1", tool_input={"command": "ls"},
                                     response={"stdout": "b\n"}, error=None, agent_id=None, now=5.0) is None
        assert capture.add_assistant_message(store, owner, message_id="m1", text="done", now=6.0)
        assert capture.add_assistant_message(store, owner, message_id="m1", text="done", now=7.0) is None
    assert [row["kind"] for row in queries.timeline(store)] == ["user", "tool", "assistant"]
    assert queries.get_episode(store, 2)["text"] == "a\n"  # type: ignore[index]


def test_search_matches_any_word_and_skips_retracted(store: sqlite3.Connection, project: Path) -> None:
    owner = _owner(store, project)
    with db.write_transaction(store):
        capture.add_user_turn(store, owner, prompt="the parser crashes on tabs", prompt_id="p1", origin="user",
                              now=1.0)
        capture.add_tool_call(store, owner, tool_name="Bash", tool_use_id="t1", tool_input={"command": "pytest"},
                              response={"stdout": "FAILED test_tokenizer.py::test_tabs"}, error=None, agent_id=None,
                              now=2.0)
        capture.add_user_turn(store, owner, prompt="secret token value", prompt_id="p2", origin="user", now=3.0)
        store.execute("UPDATE episodes SET state = 'retracted' WHERE prompt_id = 'p2'")
    ids = [hit["id"] for hit in queries.search_bm25(store, "why does the tokenizer crash? (tabs)")]
    assert ids[:2] in ([1, 2], [2, 1])
    assert queries.search_bm25(store, "secret value") == []
    assert queries.search_bm25(store, 'AND OR "NEAR(') == []  # query syntax in user text is never parsed


def test_words_in_most_episodes_of_a_large_store_leave_the_query(store: sqlite3.Connection, project: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queries, "COMMON_TERM_DOCS", 50)  # "large" is 5,000 episodes; 200 do here
    owner = _owner(store, project)
    with db.write_transaction(store):
        for n in range(200):
            capture.add_user_turn(store, owner, prompt=f"running the tests again, attempt {n}", prompt_id=f"p{n}",
                                  origin="user", now=float(n))
        capture.add_user_turn(store, owner, prompt="the zebra_crossing tests hang", prompt_id="z1",
                              origin="user", now=300.0)
        capture.add_user_turn(store, owner, prompt="a zebra escaped", prompt_id="z2", origin="user", now=301.0)
        capture.add_user_turn(store, owner, prompt="again_tests is the flaky one", prompt_id="a1", origin="user",
                              now=400.0)
    queries.catch_up_fts(store)

    # "tests" and "run" (stemmed from "running") are in every episode: only the telling words are searched.
    assert queries.any_term_query("zebra_crossing tests running", store) == '"zebra_crossing"'
    assert queries.any_term_query("zebra tests", store) == '"zebra"'
    hits = queries.search_bm25(store, "why do the zebra tests hang", limit=3)
    assert [hit["prompt_id"] for hit in hits[:2]] == ["z1", "z2"]
    # Only common words: the rarest stays, so the search still answers.
    assert queries.any_term_query("running tests", store) in ('"running"', '"tests"')
    assert len(queries.search_bm25(store, "running tests", limit=5)) == 5
    # An identifier of common words is counted as the phrase it is, which is rare: it stays.
    assert queries.any_term_query("again_tests zebra running", store) == '"again_tests" OR "zebra"'
    # A small store keeps every word.
    monkeypatch.setattr(queries, "COMMON_TERM_DOCS", 5000)
    assert queries.any_term_query("zebra tests", store) == '"zebra" OR "tests"'


def test_a_question_of_only_common_words_ranks_their_newest_rows_and_a_rare_word_reaches_every_row(
        store: sqlite3.Connection, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # At scale ("large" is 5,000 episodes, and 5,000 rows scored): 200 episodes and 20 rows here.
    monkeypatch.setattr(queries, "COMMON_TERM_DOCS", 50)
    monkeypatch.setattr(context_index, "SCORED_ROWS", 20)
    owner = _owner(store, project)
    with db.write_transaction(store):
        capture.add_user_turn(store, owner, prompt="the zebra tests hang", prompt_id="zebra", origin="user", now=0.0)
        for n in range(200):
            capture.add_user_turn(store, owner, prompt=f"running the tests again, attempt {n}", prompt_id=f"p{n}",
                                  origin="user", now=float(n + 1))
    queries.catch_up_fts(store)
    workspace = queries.workspace_id_for(store, str(project))

    common, stats = queries.search_context(store, "running tests", workspace_id=workspace, limit=50)
    newest = sorted(row[0] for row in store.execute("SELECT id FROM episodes ORDER BY id DESC LIMIT 20"))
    assert sorted(hit["id"] for hit in common) == newest
    # The sums standardising the scores stand for every matching row, as a sample's would.
    monkeypatch.setattr(context_index, "SCORED_ROWS", 5000)
    every, whole = queries.search_context(store, "running tests", workspace_id=workspace, limit=50)
    assert len(every) == 50 and stats.total == pytest.approx(whole.total, rel=0.25)
    assert stats.squares == pytest.approx(whole.squares, rel=0.5)
    # A rare word is never cut to the newest rows: the oldest episode is found by it.
    monkeypatch.setattr(context_index, "SCORED_ROWS", 20)
    rare, _ = queries.search_context(store, "zebra tests", workspace_id=workspace, limit=5)
    assert rare[0]["prompt_id"] == "zebra"


def test_a_question_of_many_fairly_common_words_scores_every_row_of_its_rare_one_and_the_newest_of_the_rest(
        store: sqlite3.Connection, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # At scale a question like "dispatcher run timeout" reaches 16k of 100k rows; BM25 scores at most 5,000. Here
    # 300 episodes, words in ~60 rows each (every word counts the six neighbour rows it reaches too), 40 scored.
    monkeypatch.setattr(queries, "COMMON_TERM_DOCS", 100)
    monkeypatch.setattr(context_index, "SCORED_ROWS", 40)
    owner = _owner(store, project)
    with db.write_transaction(store):
        for n in range(300):
            words = ["zebra escaped"] * (n == 3) + ["beta"] * (n % 37 == 15) + ["gamma"] * (n % 37 == 30)
            capture.add_user_turn(store, owner, prompt=" ".join(words or [f"note number {n}"]), prompt_id=f"p{n}",
                                  origin="user", now=float(n))
    queries.catch_up_fts(store)
    workspace = queries.workspace_id_for(store, str(project))
    question = "why did the zebra and beta and gamma"
    assert queries.lexical_query(question, store).match == '"zebra" OR "beta" OR "gamma"'

    bounded, stats = queries.search_context(store, question, workspace_id=workspace, limit=300)
    # The rare word's episode, the oldest of all, is found and ranked whole.
    assert bounded[0]["prompt_id"] == "p3"
    # The common words' rows are scored from the newest back, within the budget.
    scored = {hit["id"] for hit in bounded}
    assert len(scored) <= 40 + 7
    newest_beta = store.execute("SELECT max(id) FROM episodes WHERE text = 'beta'").fetchone()[0]
    oldest_beta = store.execute("SELECT min(id) FROM episodes WHERE text = 'beta'").fetchone()[0]
    assert newest_beta in scored and oldest_beta not in scored
    # The sums standardising the scores still stand for every matching row, as a sample's would.
    monkeypatch.setattr(context_index, "SCORED_ROWS", 5000)
    every, whole = queries.search_context(store, question, workspace_id=workspace, limit=300)
    assert oldest_beta in {hit["id"] for hit in every} and len(every) > len(bounded)
    assert stats.total == pytest.approx(whole.total, rel=0.25)
    assert stats.squares == pytest.approx(whole.squares, rel=0.5)


def test_a_word_counts_by_the_neighbour_rows_it_reaches_not_its_episodes(store: sqlite3.Connection, project: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Recall searches each episode with its neighbours: a word said in one turn of every seven matches nearly
    # every row there, so it tells rows apart as little as a word in every episode, and costs as much to rank.
    monkeypatch.setattr(queries, "COMMON_TERM_DOCS", 50)
    owner = _owner(store, project)
    with db.write_transaction(store):
        for n in range(210):
            said = "the deploy went fine" if n % 7 == 0 else f"note number {n}"
            capture.add_user_turn(store, owner, prompt=said, prompt_id=f"p{n}", origin="user", now=float(n))
        capture.add_user_turn(store, owner, prompt="the walrus escaped", prompt_id="w", origin="user", now=300.0)
    queries.catch_up_fts(store)

    assert queries.any_term_query("walrus deploy", store) == '"walrus"'  # 30 episodes, but 210 of 211 rows


def test_stop_words_are_left_out_of_the_bm25_query_unless_nothing_else_remains() -> None:
    assert queries.any_term_query("where did we see the SSL error?") == '"ssl" OR "error"'
    assert queries.any_term_query("what is it") == '"what" OR "is" OR "it"'


def test_bash_failure_keeps_exit_status_and_text(store: sqlite3.Connection, project: Path) -> None:
    owner = _owner(store, project)
    with db.write_transaction(store):
        capture.add_tool_call(store, owner, tool_name="Bash", tool_use_id="t9", tool_input={"command": "exit 3"},
                              response=None, error="Exit code 3\nboom", agent_id=None, now=1.0)
    row = queries.get_episode(store, 1)
    assert row is not None
    assert (row["exit_status"], row["is_error"], row["text"], row["original_command"]) == (3, 1, "Exit code 3\nboom",
                                                                                          "exit 3")


def test_worktrees_of_one_repository_share_a_workspace(tmp_path: Path) -> None:
    import subprocess

    main = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    subprocess.run(["git", "-C", str(main), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "init"], check=True)
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(tmp_path / "wt")], check=True)
    (main / "sub").mkdir()
    assert identify(str(tmp_path / "wt")).key == identify(str(main / "sub")).key == str((main / ".git").resolve())
    assert identify(str(tmp_path)).key == str(tmp_path.resolve())


def test_store_files_are_private_whatever_the_umask(codeoid_home: Path) -> None:
    old = os.umask(0)
    try:
        connection = db.connect()
        raw.store_raw_output(connection, "raw-x", command="true", stdout=b"x" * 10)
        connection.close()
    finally:
        os.umask(old)
    for root, _dirs, files in os.walk(codeoid_home):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for name in files:
            assert stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode) == 0o600, name


def test_a_corrupt_database_is_moved_aside_and_a_fresh_one_started(codeoid_home: Path) -> None:
    target = Path(paths.database_path())
    garbage = b"this is not a database " * 500
    target.write_bytes(garbage)
    connection = db.connect()
    assert connection.execute("SELECT count(*) FROM episodes").fetchone()[0] == 0
    kept = [path for path in Path(paths.quarantine_dir()).iterdir() if path.suffix == ".db"]
    assert len(kept) == 1 and kept[0].read_bytes() == garbage


def test_a_locked_store_says_unavailable_instead_of_waiting(codeoid_home: Path) -> None:
    holder = db.connect()
    holder.execute("BEGIN EXCLUSIVE")
    try:
        writer = db.connect(busy_ms=100)
        with pytest.raises(db.StoreUnavailable), db.write_transaction(writer):
            pass
        writer.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
