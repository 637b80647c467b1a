"""The memory service with real processes: thin `codeoid-mcp` servers driven by the `mcp` SDK's stdio client,
`codeoid search` as a subprocess, the service itself (uvicorn on its unix socket), the real model and a real
`chroma run`; the store filled through the capture API.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from test_mcp_server import Memory, git_project

from codeoid.memory import chroma_server
from codeoid.service import lifecycle
from codeoid.store import db as store_db
from codeoid.store import identity, vector_progress

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
WAIT_SECONDS = 240.0  # the model and chroma load on a busy 2-core machine


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    """A store and project in a short temp path (the service's socket path must fit in sun_path), vectors on, and
    every process the test started for this data dir stopped afterwards."""
    home = tmp_path / "h"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    for name in ("CODEOID_VECTOR", "CODEOID_CHROMA_URL", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR",
                 "CODEOID_SERVICE_IDLE_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CODEOID_INDEX_POLL_SECONDS", "0.2")
    found = Memory(home, git_project(tmp_path / "p"))
    try:
        yield found
    finally:
        found.db.close()
        lifecycle.stop_service()
        chroma_server.stop_server()
        for process in processes_of(home):
            process.kill()


def processes_of(home: Path) -> list[psutil.Process]:
    """Every process whose command line names this data dir (the service's socket, chroma's path)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(str(home) in part for part in process.info["cmdline"] or []):
            found.append(process)
    return found


def fill(memory: Memory, episodes: int, lines: int) -> list[int]:
    owner = memory.backing("bs-older")
    ids = []
    for number in range(episodes):
        stdout = "\n".join(f"case_{number}_{line}: parser token {number * line} ok" for line in range(lines))
        ids.append(memory.bash(owner, f"pytest -k parser_case_{number}", stdout))
    return ids


def wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def progress(memory: Memory) -> vector_progress.Progress:
    return vector_progress.progress(memory.db)


def search(memory: Memory, query: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "codeoid"), "search", query, "--limit", "3"], cwd=memory.project,
                          capture_output=True, text=True, timeout=WAIT_SECONDS, env={**os.environ, **(env or {})})


def vectors_of(memory: Memory, episode_ids: list[int]) -> set[int]:
    """The episodes of the project's workspace that have chunks in the vector index."""
    from codeoid.memory.vector_index import VectorIndex, workspace_index_id

    portable, key = memory.db.execute("SELECT portable_id, key FROM workspaces").fetchone()
    index = VectorIndex(store=identity.store_id(memory.db))
    return set(index.first_chunks(workspace_index_id(portable, key), episode_ids))


def mcp_params(memory: Memory) -> StdioServerParameters:
    return StdioServerParameters(command=str(BIN / "codeoid-mcp"), cwd=str(memory.project), env={
        "CODEOID_HOME": str(memory.home), "CODEOID_INDEX_POLL_SECONDS": "0.2"})


def test_two_servers_and_the_cli_share_one_service_and_one_indexer(memory: Memory) -> None:
    ids = fill(memory, 24, 8)
    claimers: set[str] = set()

    def indexed() -> bool:
        state = progress(memory)
        if state.claimed_by:
            claimers.add(state.claimed_by.split(":")[0])
        return state.indexed_upto >= ids[-1]

    async def two_sessions() -> tuple[list[str], list[int]]:
        async with AsyncExitStack() as stack:
            clients = []
            for _ in range(2):
                read, write = await stack.enter_async_context(stdio_client(mcp_params(memory)))
                client = await stack.enter_async_context(ClientSession(read, write))
                await client.initialize()
                clients.append(client)
            servers = [child.pid for child in psutil.Process().children(recursive=True)
                       if any("codeoid-mcp" in part for part in child.cmdline())]
            await anyio.to_thread.run_sync(lambda: wait_for(indexed, "the store to be indexed"))
            texts = []
            for client in clients:
                answer = await client.call_tool("recall", {"query": "parser_case_7 token"})
                assert not answer.is_error
                texts.append("\n".join(getattr(block, "text", "") for block in answer.content))
            for pid in servers:  # the thin servers never loaded the model
                assert "onnxruntime" not in Path(f"/proc/{pid}/maps").read_text()
            return texts, servers

    texts, servers = anyio.run(two_sessions)
    service = lifecycle.read_state()
    assert service is not None
    assert claimers == {str(service.pid)}, "every batch was claimed by the service's one indexer"
    for text in texts:
        assert "BM25 + semantic" in text and "=== episode" in text, text[:500]
    assert len(servers) == 2
    searched = search(memory, "parser_case_7 token")
    assert searched.returncode == 0, searched.stderr
    assert "BM25 only" not in searched.stderr and str(ids[7]) in searched.stdout
    assert lifecycle.read_state() == service, "the CLI used the same service"
    assert vectors_of(memory, ids) == set(ids)
    assert progress(memory).indexed_upto == ids[-1]
    sock = Path(service.socket)
    assert sock.is_socket() and sock.stat().st_mode & 0o777 == 0o600


def test_kill_9_of_the_service_mid_index_loses_nothing_and_the_next_call_restarts_it(
        memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEOID_INDEX_BATCH", "2")
    monkeypatch.setenv("CODEOID_INDEX_LEASE_SECONDS", "3")  # the dead service's claim expires soon
    ids = fill(memory, 40, 60)
    first = search(memory, "parser_case_3")  # starts the service, whose indexer starts on the store
    assert first.returncode == 0, first.stderr
    service = lifecycle.read_state()
    assert service is not None
    wait_for(lambda: 0 < progress(memory).indexed_upto < ids[-1], "indexing to be under way")
    os.kill(service.pid, signal.SIGKILL)
    psutil.Process(service.pid).wait(30)
    assert lifecycle.running_service() is None

    again = search(memory, "parser_case_3")
    assert again.returncode == 0, again.stderr
    assert "unavailable" not in again.stderr
    restarted = lifecycle.read_state()
    assert restarted is not None and restarted.pid != service.pid
    wait_for(lambda: progress(memory).indexed_upto >= ids[-1], "the new service to finish indexing")
    assert vectors_of(memory, ids) == set(ids)


def test_an_idle_service_stops_and_leaves_no_process_behind(memory: Memory,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEOID_SERVICE_IDLE_SECONDS", "1")
    monkeypatch.setenv("CODEOID_CHROMA_IDLE_SECONDS", "1")
    ids = fill(memory, 3, 3)
    searched = search(memory, "parser_case_1")
    assert searched.returncode == 0, searched.stderr
    service = lifecycle.read_state()
    assert service is not None
    wait_for(lambda: progress(memory).indexed_upto >= ids[-1], "the store to be indexed")  # chroma is up now
    psutil.Process(service.pid).wait(60)
    psutil.wait_procs(processes_of(memory.home), timeout=60)
    assert processes_of(memory.home) == []
    assert lifecycle.read_state() is None
    assert not Path(service.socket).exists()


def test_recall_falls_back_to_bm25_in_process_when_the_service_cannot_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / ("too-long-for-a-unix-socket-" * 4)  # sun_path cannot hold <home>/service/sock
    monkeypatch.setenv("CODEOID_HOME", str(home))
    monkeypatch.delenv("CODEOID_VECTOR", raising=False)
    memory = Memory(home, git_project(tmp_path / "p"))
    try:
        episode = fill(memory, 2, 3)[1]

        async def recall() -> Any:
            async with stdio_client(mcp_params(memory)) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                return await client.call_tool("recall", {"query": "parser_case_1"})

        answer = anyio.run(recall)
        text = "\n".join(getattr(block, "text", "") for block in answer.content)
        assert not answer.is_error, text
        assert "BM25 only: the memory service is unavailable" in text and "too long for a unix socket" in text
        assert f"=== episode {episode}" in text
        searched = search(memory, "parser_case_1")
        assert searched.returncode == 0 and "BM25 only: the memory service is unavailable" in searched.stderr
        assert str(episode) in searched.stdout
        assert lifecycle.read_state() is None and processes_of(home) == []
    finally:
        memory.db.close()


def test_the_thin_servers_tools_are_the_memory_tools_own(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                         codeoid_home: Path) -> None:
    """Forwarding wrappers show the model exactly what MemoryTools defines: names, docs, argument schemas."""
    from codeoid.mcp_server.main import build_server

    def listed(vector: str) -> list[tuple[str, str | None, dict[str, Any]]]:
        monkeypatch.setenv("CODEOID_VECTOR", vector)
        tools = anyio.run(build_server(str(project)).list_tools)
        return [(tool.name, tool.description, tool.input_schema) for tool in tools]

    forwarded, in_process = listed("on"), listed("off")
    assert forwarded == in_process
    assert {name for name, _, _ in forwarded} == {"recall", "recall_file", "timeline", "get_episode"}
    store_db.connect().close()  # build_server did no store work, and the store still opens


def cli(memory: Memory, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str],
                                                                               set[str]]:
    """`codeoid ARGS` in the project, and the top-level packages it imported (`-X importtime`)."""
    done = subprocess.run([sys.executable, "-X", "importtime", str(BIN / "codeoid"), *args], cwd=memory.project,
                          capture_output=True, text=True, timeout=WAIT_SECONDS, env={**os.environ, **(env or {})})
    modules = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in done.stderr.splitlines()
               if line.startswith("import time:")}
    return done, modules


def test_codeoid_reindex_and_index_run_in_the_service_and_embed_each_chunk_once(memory: Memory) -> None:
    from codeoid.memory.vector_index import VectorIndex, workspace_index_id
    from codeoid.store import dense_stats

    ids = fill(memory, 12, 4)
    assert search(memory, "parser_case_3").returncode == 0  # starts the service, whose indexer embeds the store
    wait_for(lambda: progress(memory).indexed_upto >= ids[-1], "the first indexing")
    service = lifecycle.read_state()
    assert service is not None

    reindexed, modules = cli(memory, "reindex")
    assert reindexed.returncode == 0, reindexed.stderr[-2000:]
    assert "Indexed 12 episodes." in reindexed.stdout
    assert not modules & {"onnxruntime", "numpy", "chromadb"}, "the CLI embedded nothing itself"
    assert lifecycle.read_state() == service, "the running service did it"
    assert progress(memory).indexed_upto == ids[-1] and vectors_of(memory, ids) == set(ids)
    portable, key = memory.db.execute("SELECT portable_id, key FROM workspaces").fetchone()
    workspace = workspace_index_id(portable, key)
    stats = dense_stats.load(memory.db, workspace)
    assert stats is not None
    assert stats.vectors == VectorIndex(store=identity.store_id(memory.db)).count(workspace), \
        "every chunk embedded exactly once since the reset"

    indexed, modules = cli(memory, "index")
    assert indexed.returncode == 0, indexed.stderr[-2000:]
    assert "recall" in indexed.stdout
    assert not modules & {"onnxruntime", "numpy", "chromadb"}
    assert lifecycle.read_state() == service


def test_doctor_reports_the_service_without_keeping_it_up_and_uninstall_stops_it(memory: Memory,
                                                                                 tmp_path: Path) -> None:
    import json

    from codeoid.service import client

    fill(memory, 2, 2)
    assert search(memory, "parser_case_1").returncode == 0
    service = lifecycle.read_state()
    assert service is not None
    idle_before = client.health(service)["idle_for"]

    doctor, _ = cli(memory, "doctor", "--json")
    sentences = [finding["sentence"] for finding in json.loads(doctor.stdout)]
    reported = [sentence for sentence in sentences if sentence.startswith("The memory service runs")]
    assert len(reported) == 1, sentences
    assert f"pid {service.pid}" in reported[0] and "mode 600" in reported[0] and "1 indexer" in reported[0]
    assert client.health(service)["idle_for"] >= idle_before, "looking is not activity for the idle stop"

    claude_home = tmp_path / "claude-home"
    claude_home.mkdir()
    uninstalled, _ = cli(memory, "uninstall", env={"HOME": str(claude_home)})
    assert uninstalled.returncode == 0, uninstalled.stderr[-2000:]
    assert f"Stopped the memory service (pid {service.pid})" in uninstalled.stdout
    assert not psutil.pid_exists(service.pid) or psutil.Process(service.pid).status() == psutil.STATUS_ZOMBIE
    assert lifecycle.read_state() is None and not Path(service.socket).exists()


def test_a_rotation_sweep_of_the_window_that_started_the_service_spares_it(memory: Memory) -> None:
    from codeoid.rotation.process_tree import end_process_tree

    marker = os.urandom(8).hex()
    window = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom codeoid.service import lifecycle\n"
                               "print(lifecycle.ensure_service().pid, flush=True)\ntime.sleep(300)"],
        env={**os.environ, "TREE_MARKER": marker}, stdout=subprocess.PIPE, text=True)
    assert window.stdout is not None
    pid = int(window.stdout.readline())
    assert psutil.Process(pid).environ().get("TREE_MARKER") == marker, "the sweep's marker reached the service"

    assert end_process_tree(window.pid, marker=("TREE_MARKER", marker)) == []
    window.wait(30)
    running = lifecycle.running_service()
    assert running is not None and running.pid == pid


def test_the_service_a_window_starts_does_not_carry_that_windows_marker(memory: Memory) -> None:
    """Shared by every window, the service is none of them: the marker `codeoid run` gives each window's processes
    (by which it knows an old window's leftovers) does not reach it, nor the Chroma server behind it."""
    from codeoid.detached import WINDOW_MARKER_ENV

    marker = os.urandom(8).hex()
    window = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom codeoid.service import lifecycle\n"
                               "print(lifecycle.ensure_service().pid, flush=True)\ntime.sleep(300)"],
        env={**os.environ, WINDOW_MARKER_ENV: marker}, stdout=subprocess.PIPE, text=True)
    try:
        assert window.stdout is not None
        pid = int(window.stdout.readline())
        assert psutil.Process(window.pid).environ().get(WINDOW_MARKER_ENV) == marker
        assert WINDOW_MARKER_ENV not in psutil.Process(pid).environ()
    finally:
        window.kill()
        window.wait(30)


def test_the_service_process_loads_neither_the_mcp_sdk_pydantic_nor_chromadb(tmp_path: Path) -> None:
    """What the service imports to serve, index and build workspace indexes; the SDK, pydantic and chromadb's client
    cost it ~80 MB between them before it learnt to do without (benchmarks/memory_service.py)."""
    done = subprocess.run([sys.executable, "-c", (
        "import sys\n"
        "import codeoid.service.daemon, codeoid.service.app, codeoid.memory.indexer, codeoid.memory.index_builder\n"
        "import codeoid.memory.workspace_index, codeoid.memory.vector_index, codeoid.memory.embedding\n"
        "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "CODEOID_HOME": str(tmp_path / "h")})
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "starlette" in loaded  # the measurement sees the service's own stack
    assert not loaded & {"mcp", "mcp_types", "pydantic", "pydantic_core", "chromadb", "httpx"}
