"""`codeoid ui` end to end: the real command serving a real store, read by a real headless Chromium.

Every page loads without a console error (the pages carry no script, and the Content-Security-Policy would report
one); the sessions page draws a fork and a rotation; a session's timeline shows episodes verbatim with tool results
folded and a raw output paged; search finds the expected episode; the savings chart is drawn (its screenshot has
coloured pixels); the token guards every path. The README's screenshot (docs/img/ui.png) is made here
with CODEOID_UPDATE_SCREENSHOT=1.
"""

from __future__ import annotations

import datetime
import io
import os
import re
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Browser, find_chromium
from conftest import executable
from test_mcp_server import Memory, git_project

from codeoid.memory import chroma_server
from codeoid.store import db as store_db
from codeoid.store import ledger, raw, rotations
from codeoid.workspace import identify

REPO = Path(__file__).resolve().parent.parent
SCREENSHOT = REPO / "docs" / "img" / "ui.png"
RAW_LINES = 3_100  # 135 KB: three pages of raw output


def local_noon(days_ago: int) -> float:
    day = datetime.date.today() - datetime.timedelta(days=days_ago)
    return datetime.datetime.combine(day, datetime.time(12)).timestamp()


def populate(memory: Memory) -> dict[str, object]:
    """A workspace with a session that rotated once, a fork of it, a compressed Bash call with its raw output, and
    ledger runs on several days."""
    first = memory.backing("cc-window-1")
    memory.user(first, "Why does the parser choke on the walrus operator in fixtures?")
    memory.assistant(first, "The tokenizer treats ':=' as two tokens; I will check the grammar file.")
    stdout = "".join(f"tests/test_parser.py::test_case_{n} PASSED\n" for n in range(RAW_LINES))
    raw.store_raw_output(memory.db, "raw-toolu_pytest", command="pytest -v", stdout=stdout.encode(), exit_status=0,
                         session_id=first.session_id)
    bash = memory.bash(first, "pytest -v", f"{RAW_LINES} passed [compressed]", raw_output_id="raw-toolu_pytest")
    with store_db.write_transaction(memory.db):
        memory.db.execute("UPDATE sessions SET name = 'walrus-parser' WHERE id = ?", (first.session_id,))
        rotations.record_rotation(memory.db, session_id=first.session_id, workspace=identify(str(memory.project)),
                                  from_backing_session_id="cc-window-1", to_backing_session_id="cc-window-2",
                                  reason="window 97% full", occupancy_tokens=194_000, window_tokens=200_000,
                                  now=memory.now())
    with store_db.write_transaction(memory.db):
        from codeoid.store import capture

        second = capture.ensure_backing_session(memory.db, backing_session_id="cc-window-2",
                                                workspace=identify(str(memory.project)), now=memory.now(),
                                                codeoid_session_id=first.session_id, source="startup")
    memory.user(second, "Now make the grammar accept <b>walrus</b> in comprehensions")
    with store_db.write_transaction(memory.db):
        memory.db.execute(
            "INSERT INTO sessions (id, workspace_id, name, forked_from, at_turn, turn_count, created_at)"
            " SELECT 'fork-0001-codex', workspace_id, 'try-codex', id, 1, 1, ? FROM sessions WHERE id = ?",
            (memory.now(), first.session_id))
    for days_ago, (raw_size, shown) in enumerate([(30_000, 3_000), (0, 0), (90_000, 6_000), (12_000, 9_000),
                                                  (50_000, 5_000)][::-1]):
        if raw_size:
            raw_id = f"raw-ledger-{days_ago}"
            raw.store_raw_output(memory.db, raw_id, command="git diff", stdout=b"d" * raw_size, exit_status=0)
            ledger.record_shown(memory.db, raw_id, rule="git-diff", shown_size=shown)
            with store_db.write_transaction(memory.db):
                memory.db.execute("UPDATE raw_outputs SET created_at = ? WHERE id = ?", (local_noon(days_ago), raw_id))
    assert 2 * 65536 < len(stdout) <= 3 * 65536
    return {"session": first.session_id, "bash": bash}


class Viewer:
    """`codeoid ui` running in the background; `url` is what it printed."""

    def __init__(self, home: Path, cwd: Path, *args: str) -> None:
        self.process = subprocess.Popen([executable("codeoid"), "ui", *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, cwd=cwd,
                                        env={**os.environ, "CODEOID_HOME": str(home)})
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # printed once the server accepts requests
        found = re.search(r"(http://127\.0\.0\.1:\d+/[\w-]+/)", line)
        if found is None:
            self.process.kill()
            raise AssertionError(f"codeoid ui printed {line!r}; stderr: {self.process.stderr.read()}")  # type: ignore
        self.url = found.group(1)

    def close(self) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    monkeypatch.setenv("CODEOID_HOME", str(tmp_path / "codeoid-home"))
    for name in ("CODEOID_CHROMA_URL", "CODEOID_VECTOR"):
        monkeypatch.delenv(name, raising=False)
    found = Memory(tmp_path / "codeoid-home", git_project(tmp_path / "project"))
    try:
        yield found
    finally:
        found.db.close()
        chroma_server.stop_server()  # started by `codeoid reindex` and the viewer's search, if they ran


@pytest.fixture
def viewer(memory: Memory) -> Iterator[tuple[Viewer, dict[str, object]]]:
    facts = populate(memory)
    served = Viewer(memory.home, memory.project)
    try:
        yield served, facts
    finally:
        served.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no chromium: ./test.sh installs Debian's package (apt-get install chromium)")
    opened = Browser(chromium, tmp_path / "chromium-profile")
    try:
        yield opened
    finally:
        opened.close()


def text_of(browser: Browser) -> str:
    return str(browser.evaluate("document.body.innerText"))


@pytest.mark.slow
def test_every_page_loads_in_chromium_without_a_console_error(
        viewer: tuple[Viewer, dict[str, object]], browser: Browser, tmp_path: Path) -> None:
    served, facts = viewer
    session = str(facts["session"])

    browser.open(served.url)  # the bare URL lands on the sessions page
    sessions = text_of(browser)
    assert "Sessions" in sessions and "walrus-parser" in sessions and "try-codex" in sessions
    # Each session titled by its first prompt, so they can be told apart without their hex ids.
    assert "walrus-parser Why does the parser choke on the walrus operator in fixture… 2 turns" in sessions
    assert "window 1" in sessions and "→ window 97% full" in sessions and "window 2" in sessions
    fork_parent = browser.evaluate("document.querySelector('.lineage li li .node').textContent")
    assert "try-codex" in fork_parent and "forked at turn 1" in fork_parent  # nested under its parent

    browser.open(f"{served.url}session/{session[:6]}")  # a prefix, as everywhere
    timeline = text_of(browser)
    assert "Why does the parser choke on the walrus operator" in timeline
    assert "Now make the grammar accept <b>walrus</b> in comprehensions" in timeline  # escaped, shown verbatim
    assert "window 2 after a rotation (window 97% full) · Claude Code session cc-window-2" in timeline
    assert browser.evaluate("document.querySelectorAll('details').length") == 1
    assert browser.evaluate("document.querySelector('details').open") is False
    raw_href = browser.evaluate("document.querySelector('details a').getAttribute('href')")

    browser.open(f"http://127.0.0.1:{served.url.split(':')[2].split('/')[0]}{raw_href}")
    first_page = text_of(browser)
    assert "pytest -v" in first_page and "page 1 of 3" in first_page
    assert "tests/test_parser.py::test_case_0 PASSED" in first_page
    browser.open(browser.evaluate("document.querySelector('.pager a').href"))
    assert "page 2 of 3" in text_of(browser)

    browser.open(f"{served.url}status")
    status = text_of(browser)
    assert "What is stored" in status and "matches its pinned sha256" in status

    assert browser.errors == []


@pytest.mark.slow
def test_search_in_chromium_finds_the_expected_episode_with_why(
        viewer: tuple[Viewer, dict[str, object]], browser: Browser) -> None:
    served, facts = viewer
    indexed = subprocess.run([executable("codeoid"), "reindex"], capture_output=True, text=True, timeout=300,
                             env={**os.environ})
    assert indexed.returncode == 0, indexed.stderr
    browser.open(f"{served.url}search")
    browser.evaluate("document.querySelector('input[name=q]').value = 'tokenizer grammar file'")
    browser.click("form.search button")
    # The workspace `codeoid ui` runs in is searched by default, by words and meaning, as recall searches it.
    assert "ranked by BM25 + semantic" in text_of(browser), text_of(browser)[:600]
    assert "fused as z-scores over the whole store" in text_of(browser)  # the default fusion, in its own words
    assert "reciprocal rank" not in text_of(browser)
    first = browser.evaluate("document.querySelector('table tr:nth-child(2)').innerText")
    assert "The tokenizer treats ':=' as two tokens" in first
    assert "tokenizer" in first and "grammar" in first  # the words it matched on
    assert browser.errors == []


@pytest.mark.slow
def test_the_savings_chart_renders_and_the_readme_screenshot_is_made(
        viewer: tuple[Viewer, dict[str, object]], browser: Browser, tmp_path: Path) -> None:
    from PIL import Image

    served, _ = viewer
    browser.open(f"{served.url}savings")
    # Four days with runs, five days from the first to today: the day without runs is a bar of zero.
    assert browser.evaluate("document.querySelectorAll('#chart svg rect').length") == 5
    chart = Image.open(io.BytesIO(browser.screenshot(tmp_path / "chart.png", selector="#chart svg"))).convert("RGB")
    pixels = chart.tobytes()
    blue = sum(1 for red, blue_ in zip(pixels[0::3], pixels[2::3], strict=True) if blue_ > 150 and red < 120)
    assert blue > 2000, f"only {blue} bar pixels (#2f6fde) in the chart"
    assert browser.errors == []

    # The README's screenshot is refreshed on request only, so a test run leaves the checkout as it found it.
    shot = SCREENSHOT if os.environ.get("CODEOID_UPDATE_SCREENSHOT") == "1" else tmp_path / "ui.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    browser.screenshot(shot)
    assert Image.open(shot).size == (1280, 900)


def test_the_token_guards_every_path(viewer: tuple[Viewer, dict[str, object]]) -> None:
    served, _ = viewer
    base = served.url.rsplit("/", 2)[0]
    for path in ("/", "/sessions", "/search?q=walrus", "/wrong-token/sessions"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + path, timeout=10)
        assert refused.value.code == 404 and b"walrus" not in refused.value.read()
    with urllib.request.urlopen(served.url + "sessions", timeout=10) as page:
        assert page.headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert b"walrus-parser" in page.read()


def test_ui_refuses_to_start_without_a_store(tmp_path: Path) -> None:
    done = subprocess.run([executable("codeoid"), "ui"], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "CODEOID_HOME": str(tmp_path / "empty")})
    assert done.returncode == 1 and "Nothing is stored" in done.stderr
    assert not (tmp_path / "empty").exists()




def post(url: str, origin: str | None = None, host: str | None = None) -> int:
    headers = {"Origin": origin} if origin else {}
    if host is not None:
        headers["Host"] = host
    request = urllib.request.Request(url, method="POST", data=b"", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return refused.code


def state_of(memory: Memory, episode_id: object) -> str:
    return str(memory.db.execute("SELECT state FROM episodes WHERE id = ?", (episode_id,)).fetchone()[0])


def test_the_viewer_cannot_retract_unless_started_to(viewer: tuple[Viewer, dict[str, object]],
                                                     memory: Memory) -> None:
    served, facts = viewer
    assert post(f"{served.url}episode/{facts['bash']}/retract") in (404, 405)
    with urllib.request.urlopen(f"{served.url}episode/{facts['bash']}", timeout=10) as page:
        assert b"Retract this episode" not in page.read()
    assert state_of(memory, facts["bash"]) == "archived"


def get_status(url: str, host: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status), answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


def test_the_viewer_refuses_a_rebound_host_and_a_post_without_its_own_origin(memory: Memory) -> None:
    facts = populate(memory)
    served = Viewer(memory.home, memory.project, "--allow-retract")
    try:
        port = served.url.split(":")[2].split("/")[0]
        retract = f"{served.url}episode/{facts['bash']}/retract"
        # DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 posts with its own Host and
        # an Origin that matches it.
        assert post(retract, origin=f"http://evil.example:{port}", host=f"evil.example:{port}") == 421
        status, body = get_status(f"{served.url}sessions", host=f"evil.example:{port}")
        assert status == 421 and b"walrus" not in body
        assert post(retract) == 403  # no Origin at all
        assert post(retract, origin="null") == 403
        assert post(retract, origin=f"http://127.0.0.1:{int(port) + 1}") == 403
        assert state_of(memory, facts["bash"]) == "archived"
        status, body = get_status(f"{served.url}sessions", host=f"localhost:{port}")
        assert status == 200 and b"walrus-parser" in body
        assert post(retract, origin=f"http://localhost:{port}", host=f"localhost:{port}") == 200
        assert state_of(memory, facts["bash"]) == "retracted"
    finally:
        served.close()


@pytest.mark.slow
def test_with_allow_retract_an_episode_page_retracts_it_in_chromium(memory: Memory, browser: Browser) -> None:
    facts = populate(memory)
    served = Viewer(memory.home, memory.project, "--allow-retract")
    try:
        assert post(f"{served.url}episode/{facts['bash']}/retract", origin="http://evil.example") == 403
        assert state_of(memory, facts["bash"]) == "archived"

        browser.open(f"{served.url}episode/{facts['bash']}")
        browser.click("form.retract button")
        assert f"Episode {facts['bash']} is retracted (it was archived)" in text_of(browser)
        assert f"codeoid restore {facts['bash']}" in text_of(browser)
        assert state_of(memory, facts["bash"]) == "retracted"
        browser.open(f"{served.url}session/{facts['session']}")
        assert "pytest -v" not in text_of(browser)  # gone from the timeline
        assert browser.errors == []
    finally:
        served.close()
