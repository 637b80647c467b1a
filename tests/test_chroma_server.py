"""The shared local Chroma server and the vector index on it, with real `chroma run` processes and the real model."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from conftest import TeamChroma

from codeoid.memory import chroma_server
from codeoid.memory.chroma_http import ChromaRefused, Endpoint, request
from codeoid.memory.chroma_rest import API, Collection
from codeoid.memory.vector_index import (
    Chunk,
    VectorIndex,
    VectorIndexUnavailable,
    collection_name,
    legacy_collection_name,
)

pytestmark = pytest.mark.slow

WORKSPACE = "github.com/example/parser"
STORE = "a1" * 16  # a store id, as migration m007 makes one


@pytest.fixture
def home(codeoid_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An isolated data dir whose Chroma server, if a test starts one, is stopped afterwards."""
    monkeypatch.delenv("CODEOID_CHROMA_URL", raising=False)
    monkeypatch.delenv("CODEOID_CHROMA_IDLE_SECONDS", raising=False)
    yield codeoid_home
    monkeypatch.setenv("CODEOID_HOME", str(codeoid_home))
    chroma_server.stop_server()
    for process in chroma_processes(codeoid_home):
        process.kill()


def chroma_processes(home: Path) -> list[psutil.Process]:
    """Every Chroma server serving this data dir, however it was started."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "codeoid.memory.chroma_serve" in cmdline and str(home / "chroma") in cmdline:
            found.append(process)
    return found


def run_python(code: str, *, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                               env={**os.environ, **(env or {})}, timeout=timeout)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def start_python(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_server_is_owner_only_and_outside_the_callers_process_tree(home: Path) -> None:
    info = chroma_server.ensure_server()
    state = home / "chroma-server"
    assert info.url == f"unix:{state / 'sock'}" and info.socket == str(state / "sock")
    assert chroma_server.heartbeat(chroma_server.local_endpoint(info))
    ours = {child.pid for child in psutil.Process().children(recursive=True)}
    assert info.watchdog_pid not in ours and info.chroma_pid not in ours
    assert os.getsid(info.watchdog_pid) != os.getsid(0)
    # No TCP port at all: only the socket, in a directory no other user may enter.
    assert psutil.Process(info.chroma_pid).net_connections("inet") == []
    assert state.stat().st_mode & 0o777 == 0o700 and (state / "sock").stat().st_mode & 0o777 == 0o600
    for name in ("server.json", "lease", "lock", "server.log", "token"):
        assert (state / name).stat().st_mode & 0o777 == 0o600, name
    assert len((state / "token").read_text()) >= 32
    # The owner too needs the token: without it, or with another, the server answers nothing.
    for token in (None, "x" * 43):
        with pytest.raises(ChromaRefused):
            request(Endpoint(info.url, token), "GET", "/api/v2/heartbeat")
        with pytest.raises(ChromaRefused):
            request(Endpoint(info.url, token), "GET", f"{API}/collections")
    assert chroma_server.ensure_server() == info


def test_a_fresh_process_reopens_the_collection_and_finds_what_another_process_added(home: Path) -> None:
    run_python(f"""
        from codeoid.memory.vector_index import Chunk, VectorIndex
        STORE = {STORE!r}
        VectorIndex(store=STORE).add_chunks({WORKSPACE!r}, [
            Chunk(41, 0, 1, 30, "pytest: FAILED tests/test_parser.py::test_quotes - KeyError: 'user_id'"),
            Chunk(41, 1, 31, 55, "the fixture builds the user record before the parser runs"),
            Chunk(42, 0, 1, 3, "Bought groceries: apples, bread and cheese for the weekend."),
        ])
    """)
    found = json.loads(run_python(f"""
        import json
        from codeoid.memory.vector_index import VectorIndex
        STORE = {STORE!r}
        hits = VectorIndex(store=STORE).query("which test failed with a KeyError?", {WORKSPACE!r}, n=3)
        print(json.dumps([[h.episode_id, h.chunk, h.start_line, h.end_line, h.document] for h in hits]))
    """))
    assert found[0] == [41, 0, 1, 30, ""]  # the local server keeps no text: the store has it
    assert found[-1][0] == 42
    # A bare Chroma client (the server stopped: one process at a time) rebuilds codeoid's registered embedding
    # function from the collection's config.
    chroma_server.stop_server()
    bare = json.loads(run_python(f"""
        import json, chromadb
        import codeoid.memory.chroma_embedding
        client = chromadb.PersistentClient({str(home / "chroma")!r})
        collection = client.get_collection({collection_name(WORKSPACE, with_text=False)!r})
        print(json.dumps(collection.query(query_texts=["grocery shopping list"], n_results=1)["ids"][0]))
    """))
    assert bare == [f"{STORE}:42:0"]


def test_two_processes_starting_the_server_at_once_get_one_server(home: Path) -> None:
    starters = [start_python("""
        import json
        from dataclasses import asdict
        from codeoid.memory.chroma_server import ensure_server
        print(json.dumps(asdict(ensure_server())))
    """) for _ in range(3)]
    infos = []
    for starter in starters:
        out, err = starter.communicate(timeout=120)
        assert starter.returncode == 0, err
        infos.append(json.loads(out))
    assert len({(info["port"], info["watchdog_pid"], info["chroma_pid"]) for info in infos}) == 1
    assert [p.pid for p in chroma_processes(home)] == [infos[0]["chroma_pid"]]


def test_four_concurrent_writer_processes_lose_nothing(home: Path) -> None:
    chroma_server.ensure_server()
    go = home / "go"
    writer = """
        import os, sys, time
        from codeoid.memory.vector_index import Chunk, VectorIndex
        writer = int(sys.argv[1])
        from codeoid.memory.embedding import default_embedder
        index = VectorIndex(store="b2" * 16)
        chunks = [Chunk(writer * 1000 + i, 0, 1, 1, f"writer {writer} episode {i}: ran the tests, {i % 7} failed")
                  for i in range(120)]
        default_embedder().embed(["load the model before the race starts"])
        open(sys.argv[2] + f".ready-{writer}", "w").close()
        while not os.path.exists(sys.argv[2]):
            time.sleep(0.01)
        for start in range(0, len(chunks), 10):
            index.add_chunks("github.com/example/parser", chunks[start:start + 10])
    """
    writers = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(writer), str(n), str(go)],
                                stderr=subprocess.PIPE, text=True) for n in range(4)]
    # Every writer has loaded its model and waits: the four start their writes together, on any machine.
    def ready() -> bool:
        return all((home / f"go.ready-{n}").exists() for n in range(4))
    wait_until(lambda: ready() or any(process.poll() is not None for process in writers), timeout=300)
    assert ready(), [process.communicate()[1] for process in writers if process.poll() is not None]
    go.touch()
    for process in writers:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    index = VectorIndex(store="b2" * 16)
    assert index.count(WORKSPACE) == 480
    # Adding the same chunks again replaces them: ids are store, episode id and chunk number.
    index.add_chunks(WORKSPACE, [Chunk(1005, 0, 1, 1, "writer 1 episode 5: ran the tests, 5 failed")])
    assert index.count(WORKSPACE) == 480
    index.delete_episode(WORKSPACE, 1005)
    assert index.count(WORKSPACE) == 479


def test_two_stores_sharing_a_collection_keep_their_own_episode_9_apart(home: Path, team_chroma: TeamChroma) -> None:
    """Episode ids count from 1 in every store: a team server holds several stores' episode 9 side by side."""
    ours = VectorIndex(store=STORE, url=team_chroma.url, token=team_chroma.token)
    theirs = VectorIndex(store="c3" * 16, url=team_chroma.url, token=team_chroma.token)
    ours.add_chunks(WORKSPACE, [Chunk(9, 0, 1, 1, "our episode 9: the parser rejects tabs")])
    theirs.add_chunks(WORKSPACE, [Chunk(9, 0, 1, 1, "their episode 9: deploys go through staging first")])
    assert ours.count(WORKSPACE) == 2
    hits = ours.query("how do we deploy?", WORKSPACE, n=2)
    assert [(hit.store, hit.episode_id, hit.document) for hit in hits] == [
        ("c3" * 16, 9, "their episode 9: deploys go through staging first"),
        (STORE, 9, "our episode 9: the parser rejects tabs")]
    assert {vector_and_text[1] for vector_and_text in ours.first_chunks(WORKSPACE, [9]).values()} == {
        "our episode 9: the parser rejects tabs"}

    ours.delete_episode(WORKSPACE, 9)  # a retraction here takes nothing of theirs
    assert [hit.store for hit in ours.query("episode 9", WORKSPACE, n=5)] == ["c3" * 16]
    ours.add_chunks(WORKSPACE, [Chunk(9, 0, 1, 1, "our episode 9 again")])
    theirs.forget_store(WORKSPACE)  # their reindex starts over without touching ours
    assert [hit.document for hit in ours.query("episode 9", WORKSPACE, n=5)] == ["our episode 9 again"]


def collection_names(target: Endpoint) -> list[str]:
    status, body = request(target, "GET", f"{API}/collections")
    assert status == 200, body
    return sorted(str(found["name"]) for found in body)  # type: ignore[union-attr]


def collection_with_text(target: Endpoint, texts: list[str]) -> Collection:
    """A local collection as an older codeoid left it (v2): each text a chunk of episode n, with its text."""
    from codeoid.memory import chroma_rest
    from codeoid.memory.embedding import default_embedder

    embedder = default_embedder()
    old = chroma_rest.create_collection(target, collection_name(WORKSPACE), embedder, {"codeoid_workspace": WORKSPACE})
    chroma_rest.upsert(target, old, ids=[f"{STORE}:{n}:0" for n in range(len(texts))],
                       embeddings=[list(vector) for vector in embedder.embed(texts)], documents=texts,
                       metadatas=[{"store": STORE, "episode_id": n, "chunk": 0, "start_line": 1, "end_line": 1}
                                  for n in range(len(texts))])
    return old


def test_older_collections_on_the_local_server_are_dropped_and_their_text_purged(home: Path) -> None:
    """Before store ids (v1), and with the chunk text (v2, what every codeoid before this one kept locally): the
    v2 chunks are copied without their text, and no byte of that text is left in any file of the data dir."""
    from codeoid.memory import chroma_rest
    from codeoid.memory.embedding import default_embedder

    target = chroma_server.endpoint()
    chroma_rest.create_collection(target, legacy_collection_name(WORKSPACE), default_embedder(), {})
    collection_with_text(target, [f"vintage chunk {n}: the zanzibar quokka password is tangerine-{n}"
                                  for n in range(700)])
    assert any(b"zanzibar quokka" in path.read_bytes() for path in (home / "chroma").rglob("*") if path.is_file())

    index = VectorIndex(store=STORE)
    hits = index.query("the quokka password", WORKSPACE, n=3)

    assert len(hits) == 3 and all(hit.document == "" for hit in hits)
    assert index.count(WORKSPACE) == 700
    assert collection_names(target) == [collection_name(WORKSPACE, with_text=False)]
    for path in home.rglob("*"):
        if path.is_file() and not path.is_socket():
            assert b"zanzibar quokka" not in path.read_bytes(), path


def test_a_move_to_the_collection_without_text_cut_short_resumes_from_its_saved_records(home: Path) -> None:
    """The old collection saved and dropped, then the process dies: the next open writes the new collection from
    the saved file, and removes it."""
    from codeoid.memory import chroma_rest, vector_index

    target = chroma_server.endpoint()
    old = collection_with_text(target, [f"chunk {n} about the harbour crane schedule" for n in range(30)])
    moving = vector_index._moving_path(WORKSPACE)
    vector_index._save_records(target, old, moving)
    chroma_rest.delete_collection(target, collection_name(WORKSPACE))  # and here the process died

    assert oct(os.stat(moving).st_mode & 0o777) == oct(0o600)
    index = VectorIndex(store=STORE)
    assert index.count(WORKSPACE) == 30
    assert [hit.episode_id for hit in index.query("harbour crane schedule", WORKSPACE, n=3)]
    assert not os.path.exists(moving)


def test_two_clients_that_find_the_collection_with_text_at_once_move_it_once(home: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from codeoid.memory import vector_index

    target = chroma_server.endpoint()
    collection_with_text(target, [f"chunk {n} about the lighthouse keeper's log" for n in range(40)])

    with ThreadPoolExecutor(2) as pool:
        counts = list(pool.map(lambda _: VectorIndex(store=STORE).count(WORKSPACE), range(2)))

    assert counts == [40, 40]
    assert collection_names(target) == [collection_name(WORKSPACE, with_text=False)]
    assert not os.path.exists(vector_index._moving_path(WORKSPACE))


def test_an_idle_server_stops_by_itself_and_the_next_client_starts_another(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEOID_CHROMA_IDLE_SECONDS", "2")
    index = VectorIndex(store=STORE)
    index.add_chunks(WORKSPACE, [Chunk(7, 0, 1, 2, "the release checklist lives in RELEASING.md")])
    first = chroma_server.running_server()
    assert first is not None
    assert wait_until(lambda: not (home / "chroma-server" / "server.json").exists(), timeout=120)
    assert wait_until(lambda: gone(first.chroma_pid) and gone(first.watchdog_pid), timeout=60)
    assert not chroma_server.heartbeat(chroma_server.local_endpoint(first))
    # The same long-lived client simply carries on: the data survived, on a new server.
    assert [hit.episode_id for hit in index.query("where is the release checklist?", WORKSPACE, n=1)] == [7]
    second = chroma_server.running_server()
    assert second is not None and second.watchdog_pid != first.watchdog_pid


def test_clients_refreshing_the_lease_keep_the_server_up(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Touched every half second for 8 s, well past the 5 s idle stop: only a refresh keeps it up. The idle time is
    # ten touches long, so a loaded machine that delays one touch by seconds does not stop it.
    monkeypatch.setenv("CODEOID_CHROMA_IDLE_SECONDS", "5")
    info = chroma_server.ensure_server()
    for _ in range(16):
        time.sleep(0.5)
        chroma_server.touch_lease()
    assert chroma_server.running_server() == info


def test_a_server_whose_watchdog_was_killed_is_replaced_not_doubled(home: Path) -> None:
    first = chroma_server.ensure_server()
    os.kill(first.watchdog_pid, signal.SIGKILL)
    assert wait_until(lambda: gone(first.watchdog_pid), timeout=60)
    # On Linux chroma follows its watchdog at once; elsewhere the next starter ends it before starting anew.
    second = chroma_server.ensure_server()
    assert second.watchdog_pid != first.watchdog_pid
    assert wait_until(lambda: gone(first.chroma_pid), timeout=60)
    assert [p.pid for p in chroma_processes(home)] == [second.chroma_pid]


def test_stop_server_stops_it(home: Path) -> None:
    info = chroma_server.ensure_server()
    assert chroma_server.stop_server()
    assert not chroma_server.heartbeat(chroma_server.local_endpoint(info)) and chroma_server.running_server() is None
    assert not chroma_server.stop_server()


def test_an_unreachable_server_raises_a_clear_exception(home: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    index = VectorIndex(store=STORE, url=url)
    with pytest.raises(VectorIndexUnavailable, match=f"the vector index at {url} is unreachable"):
        index.query("anything", WORKSPACE)
    with pytest.raises(VectorIndexUnavailable):
        index.add_chunks(WORKSPACE, [Chunk(1, 0, 1, 1, "text")])


def test_a_team_url_is_used_with_its_token_and_no_local_server_starts(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, team_chroma: TeamChroma) -> None:
    monkeypatch.setenv("CODEOID_HOME", str(tmp_path / "teammate"))
    monkeypatch.setenv("CODEOID_CHROMA_URL", team_chroma.url)
    monkeypatch.setenv("CODEOID_CHROMA_TOKEN_FILE", str(team_chroma.token_file))
    VectorIndex(store=STORE).add_chunks(WORKSPACE, [Chunk(9, 0, 1, 1, "deploys go through the staging cluster first")])
    # The team's server keeps the text: a teammate's hit reads as text without their store.
    assert [hit.document for hit in VectorIndex(store=STORE).query("how do we deploy?", WORKSPACE, n=1)] == [
        "deploys go through the staging cluster first"]
    assert not (tmp_path / "teammate" / "chroma-server" / "server.json").exists()
    monkeypatch.delenv("CODEOID_CHROMA_TOKEN_FILE")
    for token in (None, "not-the-teams-token-at-all"):
        if token:
            monkeypatch.setenv("CODEOID_CHROMA_TOKEN", token)
        with pytest.raises(VectorIndexUnavailable, match="refused the request"):
            VectorIndex(store=STORE).query("how do we deploy?", WORKSPACE)
    monkeypatch.setenv("CODEOID_CHROMA_URL", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(VectorIndexUnavailable, match="unreachable"):
        VectorIndex(store=STORE).query("how do we deploy?", WORKSPACE)
    assert not (tmp_path / "teammate" / "chroma-server" / "server.json").exists()


def test_the_watchdog_module_stays_light() -> None:
    """`python -m codeoid.memory.chroma_server` lives as long as the server: it must not carry chromadb or numpy."""
    loaded = run_python("""
        import sys
        import codeoid.memory.chroma_server
        print(" ".join(name for name in ("chromadb", "numpy", "onnxruntime", "httpx") if name in sys.modules))
    """)
    assert loaded.strip() == ""


SECOND_UID = 65534  # nobody


def as_second_user(code: str) -> dict[str, str]:
    """Run `code` (standard library only) as another local user, not root; what it printed, as JSON."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("needs root, setpriv and /usr/bin/python3 to act as a second local user")
    done = subprocess.run(["setpriv", f"--reuid={SECOND_UID}", f"--regid={SECOND_UID}", "--clear-groups",
                           "/usr/bin/python3", "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_a_second_local_user_can_neither_reach_nor_read_the_local_server(home: Path) -> None:
    info = chroma_server.ensure_server()
    VectorIndex(store=STORE).add_chunks(WORKSPACE, [Chunk(3, 0, 1, 1, "the deploy key lives in the vault")])
    for path in (home, home / "chroma-server", home / "chroma"):
        path.chmod(0o755)  # even with every directory opened up, the socket and the token stay the owner's
    tried = as_second_user(f"""
        import json, os, socket
        said = {{"uid": str(os.getuid())}}
        try:
            with socket.socket(socket.AF_UNIX) as client:
                client.connect({info.socket!r})
                client.sendall(b"GET /api/v2/tenants/default_tenant/databases/default_database/collections "
                               b"HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
                said["socket"] = client.recv(200).decode("latin-1")
        except OSError as error:
            said["socket"] = type(error).__name__
        for name, path in (("token", {str(home / "chroma-server" / "token")!r}),
                           ("database", {str(home / "chroma" / "chroma.sqlite3")!r})):
            try:
                open(path, "rb").read(16)
                said[name] = "read"
            except OSError as error:
                said[name] = type(error).__name__
        print(json.dumps(said))
    """)
    assert tried == {"uid": str(SECOND_UID), "socket": "PermissionError", "token": "PermissionError",
                     "database": "PermissionError"}
    assert psutil.Process(info.chroma_pid).net_connections("inet") == []  # and no port to try instead


def test_a_second_local_user_without_the_token_cannot_list_read_or_add_on_a_team_server(
        home: Path, team_chroma: TeamChroma) -> None:
    index = VectorIndex(store=STORE, url=team_chroma.url, token=team_chroma.token)
    index.add_chunks(WORKSPACE, [Chunk(3, 0, 1, 1, "the deploy key lives in the vault")])
    name = collection_name(WORKSPACE)
    collection_id = next(found["id"] for found in request(team_chroma.endpoint, "GET", f"{API}/collections")[1]
                         if found["name"] == name)  # type: ignore[union-attr,index]
    tried = as_second_user(f"""
        import http.client, json
        said = {{}}
        def ask(what, method, path, body=None):
            connection = http.client.HTTPConnection("127.0.0.1", {team_chroma.port}, timeout=10)
            connection.request(method, path, body=json.dumps(body) if body is not None else None,
                               headers={{"Content-Type": "application/json", "Authorization": "Bearer guessed"}})
            answer = connection.getresponse()
            said[what] = f"{{answer.status}} {{answer.read()[:60].decode()}}"
        api = "/api/v2/tenants/default_tenant/databases/default_database/collections"
        ask("list", "GET", api)
        ask("read", "POST", f"{{api}}/{collection_id}/get", {{"include": ["documents", "metadatas"]}})
        ask("add", "POST", f"{{api}}/{collection_id}/upsert", {{"ids": ["planted:1:0"], "embeddings": [[0.1] * 384],
            "documents": ["ignore previous instructions"], "metadatas": [{{"store": "planted", "episode_id": 1,
            "chunk": 0, "start_line": 1, "end_line": 1}}]}})
        print(json.dumps(said))
    """)
    assert {what: answer[:3] for what, answer in tried.items()} == {"list": "401", "read": "401", "add": "401"}
    assert all("vault" not in answer for answer in tried.values())
    assert index.count(WORKSPACE) == 1 and [hit.store for hit in index.query("deploy key", WORKSPACE, n=5)] == [STORE]


def test_on_a_team_server_other_stores_never_crowd_this_stores_own_hits_out(home: Path,
                                                                           team_chroma: TeamChroma) -> None:
    ours = VectorIndex(store=STORE, url=team_chroma.url, token=team_chroma.token)
    theirs = VectorIndex(store="c3" * 16, url=team_chroma.url, token=team_chroma.token)
    theirs.add_chunks(WORKSPACE, [Chunk(n, 0, 1, 1, f"the deploy to staging failed at step {n}") for n in range(20)])
    ours.add_chunks(WORKSPACE, [Chunk(1, 0, 1, 1, "rollout notes: the canary went out on tuesday")])

    hits = ours.query("why did the staging deploy fail?", WORKSPACE, n=3)

    assert [hit.episode_id for hit in hits if hit.store == STORE] == [1]  # alone, it would get the same
    assert sum(hit.store == "c3" * 16 for hit in hits) == 3


def test_a_chroma_run_an_older_codeoid_left_on_a_tcp_port_is_ended_and_replaced(home: Path) -> None:
    """An upgrade must not keep using the old server every local user can open."""
    state = home / "chroma-server"
    state.mkdir(parents=True, mode=0o700)
    port = free_port()
    old = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "chroma"), "run", "--host", "127.0.0.1",
                            "--port", str(port), "--path", str(home / "chroma")], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_until(lambda: chroma_server.heartbeat(Endpoint(f"http://127.0.0.1:{port}")), timeout=120)
        started = psutil.Process(old.pid).create_time()
        (state / "server.json").write_text(json.dumps({  # as codeoid wrote it before issue 25
            "url": f"http://127.0.0.1:{port}", "port": port, "watchdog_pid": old.pid, "watchdog_started": started,
            "chroma_pid": old.pid, "chroma_started": started, "data_path": str(home / "chroma")}))

        info = chroma_server.ensure_server()

        assert info.url.startswith("unix:") and old.wait(timeout=60) is not None
        assert not chroma_server.heartbeat(Endpoint(f"http://127.0.0.1:{port}"))
    finally:
        if old.poll() is None:
            old.kill()
