"""`codeoid retract` and `codeoid restore`: what the user takes back leaves everything the model can reach and
comes back whole; the real CLI and the real MCP server over the `mcp` SDK's stdio client."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from test_mcp_server import Memory, call, episode_ids, git_project

from codeoid.cli import cli
from codeoid.store import capture, raw
from codeoid.store import db as store_db


def codeoid(memory: Memory, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, env={"CODEOID_HOME": str(memory.home)})


def state_of(memory: Memory, episode_id: int) -> str:
    return str(memory.db.execute("SELECT state FROM episodes WHERE id = ?", (episode_id,)).fetchone()[0])


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    found = Memory(home, git_project(tmp_path / "project"))
    try:
        yield found
    finally:
        found.db.close()


@pytest.fixture
def pasted(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """A session where the user pasted a password, and a compressed Bash call that printed it."""
    monkeypatch.chdir(memory.project)
    owner = memory.backing("b-live")
    raw.store_raw_output(memory.db, "raw-toolu_secret", command="cat creds.txt",
                         stdout=b"db password: hunter2-walrus\n" * 50, exit_status=0)
    return {
        "prompt": memory.user(owner, "connect with the walrus password hunter2-walrus please"),
        "answer": memory.assistant(owner, "Connected to the walrus database."),
        "bash": memory.bash(owner, "cat creds.txt", "db password: hunter2-walrus [compressed]",
                            raw_output_id="raw-toolu_secret"),
        "other": memory.assistant(owner, "The walrus schema has 12 tables."),
    }


def test_a_retracted_episode_leaves_what_the_model_reaches_and_the_user_still_reads_it(
    memory: Memory, pasted: dict[str, int]
) -> None:
    done = codeoid(memory, "retract", str(pasted["prompt"]), f"{pasted['bash']}-{pasted['bash']}")

    assert done.exit_code == 0
    assert done.output.splitlines() == [
        f"retracted {pasted['prompt']} (was live): user: connect with the walrus password hunter2-walrus please",
        f"retracted {pasted['bash']} (was live): Bash cat creds.txt -> exit 0, 1 line"]
    recalled = call(memory, "recall", query="walrus password hunter2")
    assert set(episode_ids(recalled.text)) == {pasted["answer"], pasted["other"]}
    assert "hunter2" not in recalled.text.split("\n", 1)[1]  # past the head, which repeats the query
    for wanted in (str(pasted["prompt"]), "raw-toolu_secret"):
        refused = call(memory, "get_episode", episode_id=wanted)
        assert refused.is_error and "was retracted by the user" in refused.text and "hunter2" not in refused.text
    timeline = call(memory, "timeline").text
    assert "hunter2" not in timeline and f"{pasted['answer']}" in timeline
    assert "hunter2" not in codeoid(memory, "search", "walrus password hunter2").output

    shown = codeoid(memory, "show", str(pasted["prompt"]))
    assert "state: retracted" in shown.output and "hunter2-walrus" in shown.output
    # The words of its raw output left the index too (they were searchable while it was live).
    assert memory.db.execute("SELECT count(*) FROM raw_context WHERE raw_context MATCH 'hunter2'").fetchone() == (0,)


def test_a_restored_episode_comes_back_in_the_state_it_can_have(memory: Memory, pasted: dict[str, int]) -> None:
    archived = memory.assistant(memory.backing("b-old"), "The walrus migration ran on the old window.")
    memory.set_state(archived, "archived")
    assert codeoid(memory, "retract", str(pasted["prompt"]), str(archived), str(pasted["answer"])).exit_code == 0
    with store_db.write_transaction(memory.db):
        capture.end_backing_session(memory.db, "b-live", reason="rotation", now=memory.now())

    done = codeoid(memory, "restore", f"{pasted['prompt']}-{pasted['answer']}", str(archived), "9999")

    # The live window ended while they were retracted: the model no longer holds them, so they come back archived.
    assert done.exit_code == 0
    assert done.stdout.splitlines() == [f"restored {pasted['prompt']} (archived)",
                                        f"restored {pasted['answer']} (archived)", f"restored {archived} (archived)"]
    assert done.stderr.strip() == "not stored: 9999"
    assert re.search(rf"^=== episode {pasted['prompt']} ", call(memory, "recall", query="hunter2 walrus").text,
                     re.MULTILINE)


def test_a_compressed_calls_raw_words_leave_the_index_when_it_is_retracted_and_return_when_restored(
    memory: Memory, pasted: dict[str, int]
) -> None:
    def indexed() -> int:
        return int(memory.db.execute("SELECT count(*) FROM raw_context WHERE raw_context MATCH 'hunter2'")
                   .fetchone()[0])

    assert f"=== episode {pasted['bash']} " in call(memory, "recall", query="db password").text
    assert indexed() == 1
    codeoid(memory, "retract", str(pasted["bash"]))
    assert f"=== episode {pasted['bash']} " not in call(memory, "recall", query="db password").text
    assert indexed() == 0
    codeoid(memory, "restore", str(pasted["bash"]))
    assert f"=== episode {pasted['bash']} " in call(memory, "recall", query="db password").text
    assert indexed() == 1


def test_restoring_a_live_episode_whose_window_is_open_makes_it_live_again(
    memory: Memory, pasted: dict[str, int]
) -> None:
    codeoid(memory, "retract", str(pasted["other"]))
    assert state_of(memory, pasted["other"]) == "retracted"
    assert codeoid(memory, "restore", str(pasted["other"])).stdout == f"restored {pasted['other']} (live)\n"
    assert state_of(memory, pasted["other"]) == "live"


@pytest.mark.parametrize("argument", ["abc", "7-", "9-3", "1-20000"])
def test_a_bad_episode_argument_is_refused_and_nothing_changes(
    memory: Memory, pasted: dict[str, int], argument: str
) -> None:
    done = CliRunner().invoke(cli, ["retract", str(pasted["prompt"]), argument],
                              env={"CODEOID_HOME": str(memory.home)})
    assert done.exit_code == 2 and ("is not an episode id" in done.output or "at most 10,000" in done.output)
    assert state_of(memory, pasted["prompt"]) == "live"
