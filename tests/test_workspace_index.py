"""The workspace index: what it says, that it stays byte-identical, and how the real hooks hand it to a window."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_hook
from test_mcp_server import Memory, git_project

from codeoid.memory import workspace_index
from codeoid.memory.index_builder import DEBOUNCE_SECONDS, REBUILD_SECONDS, IndexBuilder
from codeoid.memory_tools import PLUGIN_TOOL_PREFIX, SETTINGS_TOOL_PREFIX
from codeoid.store import identity, queries, retraction
from codeoid.store import workspace_index as stored_index


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    monkeypatch.setenv("CODEOID_HOME", str(tmp_path / "codeoid-home"))
    for name in ("CODEOID_SESSION_ID", "CLAUDE_PID", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID",
                 "CLAUDE_PLUGIN_ROOT", "CODEOID_EXCLUDE_PATHS"):
        monkeypatch.delenv(name, raising=False)
    found = Memory(tmp_path / "codeoid-home", git_project(tmp_path / "project"))
    yield found
    found.db.close()


def source_file(memory: Memory, name: str, text: str = "x = 1\n") -> Path:
    path = memory.project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def workspace_of(memory: Memory) -> int:
    found = queries.workspace_id_for(memory.db, str(memory.project))
    assert found is not None
    return found


def a_week_of_work(memory: Memory) -> dict[str, Any]:
    """Three sessions: one reads db.py five times, one reads cli.py twice and .env once, one only talks."""
    first = memory.backing("cc-first")
    memory.user(first, "The store deadlocks when two hooks write at once; find out why.")
    db_py = source_file(memory, "src/store/db.py")
    for _ in range(5):
        memory.read(first, db_py)
    memory.bash(first, "pytest -x tests/test_store.py", "1 failed, 40 passed")
    second = memory.backing("cc-second")
    memory.user(second, "Add a --json flag to the sessions command.")
    cli_py = source_file(memory, "src/cli.py")
    memory.read(second, cli_py)
    memory.read(second, cli_py)
    memory.read(second, source_file(memory, ".env", "TOKEN=hunter2\n"))
    third = memory.backing("cc-third")
    memory.user(third, "What does WAL mode change for readers?")
    memory.assistant(third, "Readers no longer block writers.")
    return {"first": first, "second": second, "third": third}


def session_start(memory: Memory, backing_id: str, *, env: dict[str, str] | None = None) -> str | None:
    """Fire the real SessionStart hook for `backing_id` and return the context it adds, if any."""
    return added_context(run_hook("SessionStart", {
        "session_id": backing_id, "cwd": str(memory.project), "hook_event_name": "SessionStart", "source": "startup",
    }, env={"CLAUDE_PROJECT_DIR": str(memory.project), **(env or {})}, cwd=memory.project))


def prompt(memory: Memory, backing_id: str, text: str) -> str | None:
    return added_context(run_hook("UserPromptSubmit", {
        "session_id": backing_id, "cwd": str(memory.project), "hook_event_name": "UserPromptSubmit",
        "prompt": text, "prompt_id": f"p-{backing_id}-{text}",
    }, env={"CLAUDE_PROJECT_DIR": str(memory.project)}, cwd=memory.project))


def added_context(result: Any) -> str | None:
    assert result.returncode == 0 and result.stderr == b""
    if not result.stdout:
        return None
    output = json.loads(result.stdout)["hookSpecificOutput"]
    return str(output["additionalContext"])


def test_the_index_names_counts_hot_files_and_recent_sessions(memory: Memory) -> None:
    sessions = a_week_of_work(memory)
    workspace_id = workspace_of(memory)
    workspace_index.build(memory.db, workspace_id, vectors=None)
    stored = stored_index.latest(memory.db, workspace_id)
    assert stored is not None
    text = workspace_index.for_window(stored, SETTINGS_TOOL_PREFIX)

    assert text.startswith("<codeoid_memory>\n") and text.endswith("</codeoid_memory>")
    assert f"codeoid memory for {memory.project}: 13 episodes in 3 sessions" in text
    hot = text[text.index("Hottest files"):text.index("Recent sessions")]
    assert hot.index("- src/store/db.py (5)") < hot.index("- src/cli.py (2)")  # relative, by touches
    assert ".env" not in text and "hunter2" not in text  # excluded paths never show
    recent = text[text.index("Recent sessions"):text.index("Memory tools")]
    lines = [line for line in recent.splitlines() if line.startswith("- ")]
    assert len(lines) == 3 and sessions["third"].session_id[:8] in lines[0]  # newest activity first
    assert '"The store deadlocks when two hooks write at once; find out why."' in lines[2]
    assert f"- {SETTINGS_TOOL_PREFIX}recall(query):" in text and f"{SETTINGS_TOOL_PREFIX}get_episode" in text
    assert "Topics" not in text  # no vectors here, so no clusters to show


def test_the_same_memory_gives_the_same_bytes_and_new_memory_a_new_version(memory: Memory) -> None:
    sessions = a_week_of_work(memory)
    workspace_id = workspace_of(memory)
    first = workspace_index.build(memory.db, workspace_id, vectors=None, now=1000.0)
    text = stored_index.latest(memory.db, workspace_id).body  # type: ignore[union-attr]
    assert workspace_index.build(memory.db, workspace_id, vectors=None, now=2000.0) == first
    assert stored_index.latest(memory.db, workspace_id).body == text  # type: ignore[union-attr]

    memory.user(sessions["third"], "And for checkpoints?")
    assert workspace_index.build(memory.db, workspace_id, vectors=None) == first + 1


def test_a_large_memory_still_fits_under_the_limit(memory: Memory) -> None:
    for n in range(40):
        owner = memory.backing(f"cc-{n}")
        memory.user(owner, f"session {n}: " + "a very long opening prompt about many things " * 20)
        for m in range(12):
            memory.read(owner, source_file(memory, f"src/{'deeply/nested/' * 12}module_{n}_{m}.py"))
    workspace_id = workspace_of(memory)
    workspace_index.build(memory.db, workspace_id, vectors=None)
    stored = stored_index.latest(memory.db, workspace_id)
    assert stored is not None
    for prefix in (SETTINGS_TOOL_PREFIX, PLUGIN_TOOL_PREFIX):
        text = workspace_index.for_window(stored, prefix)
        assert len(text) <= workspace_index.MAX_CHARS
        assert f"{prefix}recall_file(path)" in text and "Recent sessions" in text


def test_session_start_injects_the_stored_index_with_the_routes_tool_names(memory: Memory) -> None:
    a_week_of_work(memory)
    assert session_start(memory, "cc-before-any-build") is None  # nothing built yet: nothing added
    workspace_index.build(memory.db, workspace_of(memory), vectors=None)

    settings_route = session_start(memory, "cc-new")
    assert settings_route is not None and "src/store/db.py (5)" in settings_route
    assert f"{SETTINGS_TOOL_PREFIX}timeline(offset, limit)" in settings_route
    plugin_route = session_start(memory, "cc-plugin", env={"CLAUDE_PLUGIN_ROOT": str(memory.project)})
    assert plugin_route is not None and f"{PLUGIN_TOOL_PREFIX}timeline(offset, limit)" in plugin_route
    assert plugin_route.replace(PLUGIN_TOOL_PREFIX, SETTINGS_TOOL_PREFIX) == settings_route


def test_a_window_reads_the_index_as_the_store_is_when_it_starts(memory: Memory) -> None:
    """The builder waits out its debounce and trigger; a session started right after another (a restart,
    `/clear`, a script) read "1 episode in 1 session" over a store of 6."""
    assert session_start(memory, "cc-nothing-yet") is None  # nothing stored: nothing to say
    first = memory.backing("cc-first")
    memory.user(first, "print the calibration table")
    workspace_index.build(memory.db, workspace_of(memory), vectors=None)  # the builder, at that session's start
    memory.bash(first, "cat table.txt", "zebra-quartz 7731")
    memory.assistant(first, "Printed it.")
    memory.user(first, "and the footer?")
    memory.bash(first, "tail -1 table.txt", "footer")
    memory.assistant(first, "The footer says footer.")

    text = session_start(memory, "cc-second")

    assert text is not None and f"codeoid memory for {memory.project}: 6 episodes in 1 session," in text
    assert '"print the calibration table"' in text
    assert session_start(memory, "cc-third") == text  # nothing new since: the same bytes


def test_a_prompt_hears_of_other_sessions_work_once_and_not_of_its_own(memory: Memory) -> None:
    sessions = a_week_of_work(memory)
    workspace_id = workspace_of(memory)
    workspace_index.build(memory.db, workspace_id, vectors=None)
    assert session_start(memory, "cc-mine") is not None
    mine = memory.backing("cc-mine")

    # Its own work changes the index, but the window already knows it: no delta.
    notes = source_file(memory, "docs/notes.md")
    for _ in range(8):
        memory.read(mine, notes)
    workspace_index.build(memory.db, workspace_id, vectors=None)
    assert prompt(memory, "cc-mine", "carry on") is None

    # Another session's work is news, told once, with the hot files it reshuffled.
    other = sessions["second"]
    routes = source_file(memory, "src/routes.py")
    for _ in range(9):
        memory.read(other, routes)
    workspace_index.build(memory.db, workspace_id, vectors=None)
    update = prompt(memory, "cc-mine", "what next")
    assert update is not None and update.startswith("<codeoid_memory_update>")
    assert "9 new episodes from other sessions" in update and "src/routes.py (9)" in update
    assert len(update) < 600
    assert prompt(memory, "cc-mine", "and now") is None


def test_a_window_that_never_saw_the_index_gets_it_whole_on_its_next_prompt(memory: Memory) -> None:
    a_week_of_work(memory)
    memory.backing("cc-early")  # started before anything was built
    workspace_index.build(memory.db, workspace_of(memory), vectors=None)
    text = prompt(memory, "cc-early", "hello")
    assert text is not None and text.startswith("<codeoid_memory>")
    assert prompt(memory, "cc-early", "hello again") is None


def test_the_builder_rebuilds_on_five_episodes_or_a_minute_never_within_the_debounce(memory: Memory) -> None:
    sessions = a_week_of_work(memory)
    builder = IndexBuilder(memory.db, str(memory.project))
    assert builder.check(now=0.0) == 1  # the first check always builds
    owner = sessions["third"]
    for n in range(5):
        memory.user(owner, f"question {n}")
    assert builder.check(now=DEBOUNCE_SECONDS - 1) is None  # five new, but too soon
    assert builder.check(now=DEBOUNCE_SECONDS + 1) == 2
    memory.user(owner, "one more")
    assert builder.check(now=DEBOUNCE_SECONDS + 30) is None  # one new episode waits for the minute
    assert builder.check(now=DEBOUNCE_SECONDS + 1 + REBUILD_SECONDS) == 3
    assert builder.check(now=10_000.0) is None  # nothing new: nothing to do


def test_the_cli_prints_what_a_new_window_starts_with(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from codeoid.cli import cli

    a_week_of_work(memory)
    monkeypatch.setenv("CODEOID_VECTOR", "off")
    monkeypatch.chdir(memory.project)
    result = CliRunner().invoke(cli, ["index"])
    assert result.exit_code == 0, result.output
    assert "src/store/db.py (5)" in result.output and f"{SETTINGS_TOOL_PREFIX}recall(query)" in result.output
    assert session_start(memory, "cc-after-cli") == result.output.rstrip("\n")


THEMES = {
    "sqlite": ("database is locked while the writer holds the wal checkpoint", "sqlite busy_timeout and wal journal",
               "OperationalError database is locked in test_concurrent_writes"),
    "docker": ("docker build fails: the base image layer cache is stale", "Dockerfile multi-stage build copies wheels",
               "docker compose up restarts the container after the healthcheck"),
    "css": ("the sidebar flexbox overflows on narrow screens", "css grid template areas for the dashboard layout",
            "media query breakpoint hides the navigation menu"),
}


@pytest.mark.slow
def test_topics_cluster_the_indexed_episodes_stably(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_chroma_server import chroma_processes

    from codeoid.memory import chroma_server
    from codeoid.memory.indexer import Indexer
    from codeoid.memory.vector_index import VectorIndex

    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    for name in ("CODEOID_CHROMA_URL", "CODEOID_VECTOR", "CODEOID_EXCLUDE_PATHS"):
        monkeypatch.delenv(name, raising=False)
    memory = Memory(home, git_project(tmp_path / "project"))
    try:
        theme_of: dict[int, str] = {}
        for theme, sentences in THEMES.items():
            owner = memory.backing(f"cc-{theme}")
            for n in range(12):
                sentence = sentences[n % len(sentences)]
                theme_of[memory.user(owner, f"{sentence} (attempt {n})")] = theme
                theme_of[memory.assistant(owner, f"Looked into it: {sentence}; trying variant {n}.")] = theme
        assert Indexer(memory.db).catch_up() == len(theme_of)
        workspace_id = workspace_of(memory)
        vectors = VectorIndex(store=identity.store_id(memory.db))
        version = workspace_index.build(memory.db, workspace_id, vectors=vectors)
        stored = stored_index.latest(memory.db, workspace_id)
        assert stored is not None
        topics = json.loads(stored.facts)["topics"]
        assert 2 <= len(topics) <= 8 and "Topics (share of episodes" in stored.body

        # Every theme leads at least one topic, whose example episode is of that theme.
        for theme, sentences in THEMES.items():
            words = set(" ".join(sentences).lower().split())
            leading = [topic for topic in topics if topic["label"].split(", ")[0] in words]
            assert any(theme_of[topic["example_episode"]] == theme for topic in leading), (theme, topics)
        assert sum(topic["share"] for topic in topics) == pytest.approx(1.0, abs=0.01)

        # A fresh client and a rebuild see the same vectors and give the same bytes.
        fresh = VectorIndex(store=identity.store_id(memory.db))
        assert workspace_index.build(memory.db, workspace_id, vectors=fresh) == version

        # The background builder keeps those topics while a few episodes arrive (clustering 2,000 vectors of a
        # large history holds the memory service's CPU for most of a second), finds them anew once the history
        # grew enough, and at once after a retraction: a retracted episode's words must leave the topics.
        def background_build() -> dict[str, Any]:
            workspace_index.build(memory.db, workspace_id, vectors=fresh, keep_topics=True)
            latest = stored_index.latest(memory.db, workspace_id)
            assert latest is not None
            return dict(json.loads(latest.facts))

        found = json.loads(stored.facts)
        owner = memory.backing("cc-later")
        later = [memory.user(owner, f"a later note about the weather, number {n}") for n in range(3)]
        assert Indexer(memory.db).catch_up() == 3
        kept = background_build()
        assert kept["topics"] == found["topics"] and kept["topics_over"] == found["topics_over"]
        assert kept["newest_episode"] == max(later)  # the rest of the index is current
        monkeypatch.setattr(workspace_index, "TOPICS_KEPT_WHILE_NEW_EPISODES", 2)  # 3 new of 75: at scale, 5%
        monkeypatch.setattr(workspace_index, "TOPICS_KEPT_WHILE_GROWN_BY", 0.0)
        assert background_build()["topics_over"]["indexed_upto"] == max(later)
        monkeypatch.setattr(workspace_index, "TOPICS_KEPT_WHILE_NEW_EPISODES", 50)
        retraction.retract(memory.db, [later[0]])
        assert background_build()["topics_over"]["retracted"] == 1
    finally:
        memory.db.close()
        chroma_server.stop_server()
        for process in chroma_processes(home):
            process.kill()


def test_the_mcp_server_builds_the_index_in_the_background(memory: Memory) -> None:
    import time

    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from test_mcp_server import SERVER

    a_week_of_work(memory)
    workspace_id = workspace_of(memory)

    async def serve_until_built() -> stored_index.Stored | None:
        params = StdioServerParameters(command=SERVER, cwd=str(memory.project),
                                       env={"CODEOID_HOME": str(memory.home), "CODEOID_VECTOR": "off"})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                found = stored_index.latest(memory.db, workspace_id)
                if found is not None:
                    return found
                await anyio.sleep(0.2)
        return None

    built = anyio.run(serve_until_built)
    assert built is not None and "src/store/db.py (5)" in built.body
