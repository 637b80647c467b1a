"""Retention with a budget and real forgetting, through the real `codeoid` CLI and the real MCP server.

`codeoid gc --apply` brings a store grown past its budget under it without touching a live window, and recall,
timeline and get_episode then say "raw expired" where bytes were dropped; incomplete raw outputs and old
quarantined files are swept after their grace period; `codeoid forget` leaves no byte of the forgotten text in
the database file, its WAL or the full-text index, and a tombstone in the timeline.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import executable
from test_mcp_server import Memory, call, git_project, serve

from codeoid.memory import chroma_server
from codeoid.store import capture, queries, raw, retention
from codeoid.store import db as store_db

MB = 1024 * 1024


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    found = Memory(home, git_project(tmp_path / "project"))
    try:
        yield found
    finally:
        found.db.close()
        chroma_server.stop_server()  # started by `codeoid forget` to remove vectors


def codeoid(memory: Memory, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([executable("codeoid"), *args], capture_output=True, text=True, timeout=300,
                            cwd=memory.project, env={**os.environ, "CODEOID_HOME": str(memory.home)})
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def bash_with_raw(memory: Memory, owner: capture.Owner, name: str, size: int = MB) -> tuple[int, str, bytes]:
    """A compressed Bash call: its raw stdout (incompressible bytes) archived first, then the episode."""
    stdout = os.urandom(size)
    raw_id = f"raw-{name}"
    raw.store_raw_output(memory.db, raw_id, command=f"make {name}", stdout=stdout)
    episode = memory.bash(owner, f"make {name}", f"compressed output of {name}\n[codeoid] 9,000 lines removed",
                          raw_output_id=raw_id)
    return episode, raw_id, stdout


def data_dir_size(home: Path) -> int:
    return sum(retention.file_sizes(str(home)).values())


def test_gc_brings_an_over_budget_store_under_its_budget_and_never_touches_a_live_window(memory: Memory) -> None:
    old = memory.backing("bs-old")
    archived = [bash_with_raw(memory, old, f"archived-{index}") for index in range(6)]
    for episode, _, _ in archived:
        memory.set_state(episode, "archived")
    live = [bash_with_raw(memory, memory.backing("bs-live"), f"live-{index}") for index in range(2)]
    memory.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    codeoid(memory, "gc")  # the first writer sets the spool reserve aside: it counts against the budget too
    used = data_dir_size(memory.home)
    budget = used - int(3.5 * MB)

    dry = codeoid(memory, "gc", "--budget", str(budget))
    assert "raw outputs would expire: 4" in dry.stdout and "dry run: nothing changed" in dry.stdout
    assert all(raw.read_raw_stdout(memory.db, raw_id) == stdout for _, raw_id, stdout in archived)

    applied = codeoid(memory, "gc", "--apply", "--budget", str(budget))

    assert "raw outputs expired: 4" in applied.stdout, applied.stdout
    assert data_dir_size(memory.home) <= budget
    for _, raw_id, stdout in live + archived[4:]:
        assert raw.read_raw_stdout(memory.db, raw_id) == stdout  # live windows and the newest archived: intact
    for episode, raw_id, _ in archived[:4]:
        found = raw.get_raw_output(memory.db, raw_id)
        assert found is not None and found.expired_at is not None and found.stdout_size == MB
        assert raw.read_raw_stdout(memory.db, raw_id) == b""
        row = queries.get_episode(memory.db, episode)
        assert row is not None and row["text"].startswith("compressed output of")  # the compressed text stays
    shown = codeoid(memory, "show", archived[0][1], "--raw", check=False)
    assert shown.returncode != 0 and "raw expired" in shown.stderr

    timeline, episode_page, raw_page, recall = serve(
        memory, ("timeline", {"limit": 20}), ("get_episode", {"episode_id": archived[0][0]}),
        ("get_episode", {"episode_id": archived[0][1]}), ("recall", {"query": "compressed output archived-0"}))
    assert timeline.text.count("raw expired") == 4, timeline.text
    assert "raw expired" in episode_page.text
    assert raw_page.is_error and "raw expired" in raw_page.text
    assert "raw expired" in recall.text
    assert "raw expired" not in call(memory, "get_episode", episode_id=live[0][0]).text

    doctor = codeoid(memory, "doctor", check=False)
    assert "The data dir holds" in doctor.stdout and "raw outputs" in doctor.stdout


def test_gc_sweeps_incomplete_raw_outputs_and_old_quarantine_after_their_grace(memory: Memory) -> None:
    writer = raw.RawOutputWriter(memory.db, "raw-killed", command="make killed")  # never finished: killed
    writer.write(b"partial output\n" * 1000)
    writer.flush()
    fresh_writer = raw.RawOutputWriter(memory.db, "raw-running", command="make running")
    fresh_writer.write(b"still running\n")
    fresh_writer.flush()
    two_days_ago = time.time() - 2 * 24 * 3600
    memory.db.execute("UPDATE raw_outputs SET created_at = ? WHERE id = 'raw-killed'", (two_days_ago,))
    quarantine = memory.home / "quarantine"
    quarantine.mkdir(mode=0o700, exist_ok=True)
    (quarantine / "old.event.json.failed").write_bytes(b"{}")
    (quarantine / "new.event.json.failed").write_bytes(b"{}")
    (quarantine / "store-20260101T000000-7.db").write_bytes(b"a corrupt store: maybe the only copy")
    long_ago = time.time() - 40 * 24 * 3600
    for name in ("old.event.json.failed", "store-20260101T000000-7.db"):
        os.utime(quarantine / name, (long_ago, long_ago))

    result = codeoid(memory, "gc", "--apply")

    assert "incomplete raw outputs swept: 1" in result.stdout and "quarantined files removed: 1" in result.stdout
    assert raw.read_raw_stdout(memory.db, "raw-killed") == b""
    assert raw.read_raw_stdout(memory.db, "raw-running") == b"still running\n"
    assert sorted(path.name for path in quarantine.iterdir()) == ["new.event.json.failed",
                                                                  "store-20260101T000000-7.db"]


SECRET = "zanzibarquokka"


def test_forget_deletes_text_raw_fts_and_vectors_for_good_and_leaves_a_tombstone(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    before = memory.user(owner, "first, an ordinary question")
    pasted = memory.user(owner, f"my password is {SECRET}, keep it safe")
    run, raw_id, _ = bash_with_raw(memory, owner, "leak", size=4096)
    raw.store_raw_output(memory.db, "raw-leak2", command="cat .env", stdout=f"PASSWORD={SECRET}\n".encode() * 50
                         + f"BACKUP_PASSWORD={SECRET}-old\n".encode())
    leaked = memory.bash(owner, "cat .env", f"PASSWORD={SECRET}", raw_output_id="raw-leak2")
    after = memory.assistant(owner, "an ordinary answer")
    queries.catch_up_fts(memory.db)
    # The line compression cut is searchable: the raw output's words are in the index recall searches.
    assert memory.db.execute("SELECT count(*) FROM raw_context WHERE raw_context MATCH ?", (SECRET,)).fetchone() == (1,)
    with store_db.write_transaction(memory.db):  # as if the vector indexer had embedded everything
        memory.db.execute("UPDATE vector_progress SET indexed_upto = ?, claimed_upto = ?", (after, after))
    memory.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    database = memory.home / "store.db"
    assert SECRET.encode() in database.read_bytes()

    result = codeoid(memory, "forget", str(pasted), str(leaked), str(run))

    assert f"forgot {pasted}" in result.stdout and "deleted 2 raw output(s)" in result.stdout
    for path in (database, memory.home / "store.db-wal"):
        if path.exists():
            assert SECRET.encode() not in path.read_bytes(), path
    for index in ("episodes_fts", "episodes_context", "raw_context"):
        fts_hits = memory.db.execute(f"SELECT count(*) FROM {index} WHERE {index} MATCH ?", (SECRET,))
        assert fts_hits.fetchone() == (0,), index
    assert raw.get_raw_output(memory.db, "raw-leak2") is None and raw.get_raw_output(memory.db, raw_id) is None
    # Their vectors were removed from Chroma at once, not left queued for an indexer.
    assert "removed the vectors of 3 episode(s) from the local Chroma server" in result.stdout
    assert memory.db.execute("SELECT count(*) FROM vector_removals").fetchone() == (0,)
    tombstone = queries.get_episode(memory.db, pasted)
    assert tombstone is not None and tombstone["summary"] == "forgotten" and tombstone["text"] == ""
    assert tombstone["forgotten_at"] is not None and tombstone["prompt_id"]  # a replayed hook cannot bring it back

    timeline = call(memory, "timeline", limit=20).text
    assert [f"{episode}" in timeline for episode in (before, pasted, leaked, after)] == [True] * 4
    assert timeline.count("forgotten") == 3 and SECRET not in timeline
    assert call(memory, "recall", query=SECRET).text.startswith("No stored e")  # nothing left to match

    again = codeoid(memory, "forget", str(pasted), "--vacuum")
    assert "already forgotten" in again.stderr


def test_an_expired_raw_output_leaves_the_index_its_words_were_found_by(memory: Memory) -> None:
    owner = memory.backing("bs-old")
    raw.store_raw_output(memory.db, "raw-toolu_log", command="git log",
                         stdout=b"commit 1\n    The ocelot relay drops idle sockets.\ncommit 2\n")
    log = memory.bash(owner, "git log", "commit 1\ncommit 2", raw_output_id="raw-toolu_log")
    memory.set_state(log, "archived")
    assert "=== episode" in call(memory, "recall", query="ocelot relay").text

    planned = retention.Plan(budget=0, used=0, projected=0, expire_raw=[("raw-toolu_log", 0)])
    assert retention.apply(memory.db, planned, str(memory.home)).expired_raw == 1

    assert call(memory, "recall", query="ocelot relay").text.startswith("No stored e")
    assert memory.db.execute("SELECT count(*) FROM raw_context").fetchone() == (0,)


def test_raw_chunks_are_stored_zstd_compressed_and_old_plain_chunks_still_read(codeoid_home: Path) -> None:
    import sqlite3

    from codeoid import paths
    from codeoid.store.migrations import migrate

    paths.ensure_private_dir(os.path.dirname(paths.database_path()))
    old = sqlite3.connect(paths.database_path(), isolation_level=None)
    migrate(old, upto="m008_retraction")  # a store from before compression, with a plain chunk in it
    old.execute("INSERT INTO raw_outputs (id, command, stdout_size, complete, created_at)"
                " VALUES ('raw-old', 'seq 3', 6, 1, 1.0)")
    old.execute("INSERT INTO raw_chunks (raw_output_id, seq, data) VALUES ('raw-old', 0, ?)", (b"1\n2\n3\n",))
    old.close()

    upgraded = store_db.connect()
    try:
        assert raw.read_raw_stdout(upgraded, "raw-old") == b"1\n2\n3\n"
        text = b"".join(b"test_%d PASSED\n" % index for index in range(300_000))  # ~5 MB of test output
        noise = os.urandom(3 * MB)
        raw.store_raw_output(upgraded, "raw-text", command="pytest", stdout=text)
        raw.store_raw_output(upgraded, "raw-noise", command="head -c 3M /dev/urandom", stdout=noise)
        assert raw.read_raw_stdout(upgraded, "raw-text") == text
        assert raw.read_raw_stdout(upgraded, "raw-noise") == noise
        stored = dict(upgraded.execute("SELECT raw_output_id, sum(length(data)) FROM raw_chunks GROUP BY 1"))
        codecs = dict(upgraded.execute("SELECT raw_output_id, group_concat(DISTINCT coalesce(codec, 'plain'))"
                                       " FROM raw_chunks GROUP BY 1"))
        assert codecs == {"raw-old": "plain", "raw-text": "zstd", "raw-noise": "plain"}
        assert stored["raw-text"] < len(text) / 10 and stored["raw-noise"] == len(noise)
    finally:
        upgraded.close()


def test_the_mcp_server_collects_in_the_background_when_the_store_is_over_budget(memory: Memory) -> None:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    old = memory.backing("bs-old")
    episode, raw_id, _ = bash_with_raw(memory, old, "archived-bg")
    memory.set_state(episode, "archived")
    live, live_raw, live_stdout = bash_with_raw(memory, memory.backing("bs-live"), "live-bg")
    env = {"CODEOID_HOME": str(memory.home), "CODEOID_VECTOR": "off", "CODEOID_DISK_BUDGET": "1MB",
           "CODEOID_GC_INTERVAL_SECONDS": "0.2"}

    async def until_expired() -> str:
        params = StdioServerParameters(command=executable("codeoid-mcp"), cwd=str(memory.project), env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            with anyio.fail_after(60):
                while True:
                    answer = await client.call_tool("timeline", {"limit": 10})
                    text = "\n".join(getattr(block, "text", "") for block in answer.content)
                    log = memory.home / "logs" / "codeoid.log"
                    if "raw expired" in text and log.exists() and "background gc" in log.read_text():
                        return text
                    await anyio.sleep(0.2)  # polling the server's answer, not timing it

    timeline = anyio.run(until_expired)

    assert timeline.count("raw expired") == 1
    found = raw.get_raw_output(memory.db, raw_id)
    assert found is not None and found.expired_at is not None
    assert raw.read_raw_stdout(memory.db, live_raw) == live_stdout  # still over budget, yet the live window is whole
    assert "background gc: 1 raw outputs expired" in (memory.home / "logs" / "codeoid.log").read_text()
    assert live


def free_pages(memory: Memory) -> int:
    return int(memory.db.execute("PRAGMA freelist_count").fetchone()[0])


def test_forget_vacuum_after_a_forget_still_vacuums(memory: Memory) -> None:
    owner = memory.backing("bs-1")
    episode, _, _ = bash_with_raw(memory, owner, "big")  # 1 MB of raw output: pages to free
    memory.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    codeoid(memory, "forget", str(episode))
    assert free_pages(memory) > 0
    size = (memory.home / "store.db").stat().st_size

    again = codeoid(memory, "forget", str(episode), "--vacuum")

    assert "already forgotten" in again.stderr and "vacuumed the store" in again.stdout
    assert free_pages(memory) == 0 and (memory.home / "store.db").stat().st_size < size - MB // 2


def test_gc_apply_json_says_when_the_data_dir_stays_over_budget(memory: Memory) -> None:
    bash_with_raw(memory, memory.backing("bs-live"), "live")  # a live window: gc never touches it

    done = json.loads(codeoid(memory, "gc", "--apply", "--json", "--budget", "100KB").stdout)

    assert done["over_budget"] is True and "still over the budget" in done["note"]
    assert "live windows, which gc never removes" in done["note"]
    under = json.loads(codeoid(memory, "gc", "--apply", "--json", "--budget", "1GB").stdout)
    assert under["over_budget"] is False and under["note"] is None


def killed_spool_write(home: Path, size: int) -> Path:
    """What a hook killed while spooling a big result leaves: the head of an entry under a `.tmp` name."""
    from codeoid.capture import spool

    spool_dir = home / "spool"
    spool_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    event = spool.SpooledEvent("PostToolUse", {"tool_use_id": "toolu_killed", "tool_response": "x" * size},
                               {}, time.time())
    whole = Path(spool.spool_event(event, str(spool_dir)))
    cut = whole.with_name(whole.name.replace(".event.json", ".tmp"))
    cut.write_bytes(whole.read_bytes()[: size // 2])
    whole.unlink()
    return cut


def test_an_unfinished_spool_write_is_not_spool_and_gc_sweeps_it_counting_the_loss(memory: Memory) -> None:
    from codeoid.capture import loss_ring, spool

    memory.backing("bs-1")
    cut = killed_spool_write(memory.home, 10 * MB)
    whole_tmp = killed_spool_write(memory.home, 1000)  # killed between its last write and its rename: whole
    event = spool.SpooledEvent("UserPromptSubmit", {"prompt_id": "p-rescued", "session_id": "cc-1", "prompt": "hi",
                                                    "cwd": str(memory.project)}, {}, time.time())
    entry = Path(spool.spool_event(event, str(memory.home / "spool")))
    entry.rename(whole_tmp)
    assert retention.file_sizes(str(memory.home))["unfinished spool writes"] >= 5 * MB
    assert retention.file_sizes(str(memory.home)).get("spool", 0) < MB

    doctor = codeoid(memory, "doctor", check=False)
    assert "No events wait in the spool" in doctor.stdout
    assert "2 unfinished spool write(s)" in doctor.stdout and "unfinished spool writes 5." in doctor.stdout
    fresh = codeoid(memory, "gc", "--apply")
    assert cut.exists() and "unfinished spool writes" not in fresh.stdout  # within its grace: maybe still written

    old = time.time() - 2 * spool.ORPHAN_GRACE_SECONDS
    for path in (cut, whole_tmp):
        os.utime(path, (old, old))
    dry = codeoid(memory, "gc")
    assert "unfinished spool writes to sweep: 2" in dry.stdout and cut.exists()
    swept = codeoid(memory, "gc", "--apply")

    assert "unfinished spool writes swept: 1 removed" in swept.stdout and "1 rescued for replay" in swept.stdout
    assert not cut.exists() and not whole_tmp.exists()
    count, lines = loss_ring.losses(str(memory.home / "logs" / "lost.ring"))
    assert count == 1 and "PostToolUse toolu_killed its hook was killed while spooling it" in lines[-1]
    assert spool.backlog(str(memory.home / "spool")) == 1  # the whole one waits for the next writer
    assert "1 event(s) were lost" in codeoid(memory, "doctor", check=False).stdout
