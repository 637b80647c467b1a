"""A result Claude Code saved to a file (`persistedOutputPath`) is stored whole, through the real `codeoid-hook`:
the episode, `codeoid show`, recall and get_episode see the whole output, not the 30,000 characters the payload
carries; only a regular file in the session's own `tool-results/` folder is read, within a cap; an episode that
really was cut says so wherever it shows; and the after-the-fact compression counts from the whole file or not at
all. Claude Code's side of it (which tools, what the payload holds) is replayed in `tests/e2e/test_persisted_e2e.py`.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import executable, run_hook
from test_mcp_server import Memory, git_project, serve

from codeoid.capture import persisted
from codeoid.mcp_server.tools import DEFAULT_RECALL_TOKENS
from codeoid.pages import BYTES_PER_TOKEN

SESSION = "5e551011-aaaa-bbbb-cccc-000000000001"
NEEDLE = "FATAL needle-7f3a: disk quota exceeded on /var/lib/zeppelin"
SEQ_RULE = """
[[rule]]
name = "test-seq"
match = { program = ["seq"] }
head = 5
tail = 3
"""


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CODEOID_COMPRESS", raising=False)
    for name in ("CODEOID_SESSION_ID", "CLAUDE_PID", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID",
                 persisted.MAX_BYTES_ENV):
        monkeypatch.delenv(name, raising=False)
    project = git_project(tmp_path / "project")
    (project / ".codeoid" / "rules").mkdir(parents=True)
    (project / ".codeoid" / "rules" / "test.toml").write_text(SEQ_RULE)
    slug = tmp_path / "claude-home" / ".claude" / "projects" / "-tmp-project"
    results = slug / SESSION / "tool-results"
    results.mkdir(parents=True)
    transcript = slug / f"{SESSION}.jsonl"
    transcript.write_text("")
    env = {"CLAUDE_PROJECT_DIR": str(project), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "CODEOID_HOME": str(home)}
    return {"project": project, "home": home, "results": results, "transcript": transcript, "env": env,
            "tmp": tmp_path}


def big_log(lines: int = 4000) -> str:
    """About 200 KB that no rule compresses, one needle line in its middle; a final newline, as in the file."""
    return "".join((NEEDLE if n == lines // 2 else f"2026-12-02T10:{n % 60:02d} worker {n} heartbeat ok {'.' * 20}")
                   + "\n" for n in range(1, lines + 1))


def persisted_payload(world: dict[str, Any], command: str, whole: str, *, tool_use_id: str = "toolu_big1",
                      path: Path | str | None = None) -> dict[str, Any]:
    """What Claude Code 2.1.332 hands PostToolUse for a success of 30,000 characters or more: the first 30,000
    (a final newline dropped), and the file it saved the whole output to."""
    target = Path(path) if path is not None else world["results"] / f"{tool_use_id}.txt"
    if path is None:
        target.write_text(whole)
    return {"session_id": SESSION, "transcript_path": str(world["transcript"]), "cwd": str(world["project"]),
            "hook_event_name": "PostToolUse", "permission_mode": "default", "tool_name": "Bash",
            "tool_use_id": tool_use_id, "tool_input": {"command": command, "description": "d"},
            "tool_response": {"stdout": whole[:30_000].rstrip("\n"), "stderr": "", "interrupted": False,
                              "isImage": False, "noOutputExpected": False,
                              "persistedOutputPath": str(target), "persistedOutputSize": len(whole.encode())}}


def hook(world: dict[str, Any], payload: dict[str, Any], env: dict[str, str] | None = None,
         timeout: float = 30) -> Any:
    result = run_hook(payload["hook_event_name"], payload, env={**world["env"], **(env or {})},
                      cwd=world["project"], timeout=timeout)
    assert (result.returncode, result.stderr) == (0, b"")
    return json.loads(result.stdout) if result.stdout else None


def episode(world: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
    connection = sqlite3.connect(world["home"] / "store.db")
    connection.row_factory = sqlite3.Row
    try:
        row = connection.execute("SELECT * FROM episodes WHERE tool_use_id = ?", (tool_use_id,)).fetchone()
        return dict(row)
    finally:
        connection.close()


def codeoid(world: dict[str, Any], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([executable("codeoid"), *args], capture_output=True, cwd=world["project"],
                          env={**os.environ, **world["env"]}, timeout=120)


def memory_calls(world: dict[str, Any], *calls: tuple[str, dict[str, Any]]) -> list[str]:
    memory = Memory(world["home"], world["project"])
    try:
        results = serve(memory, *calls)
    finally:
        memory.db.close()
    assert not any(result.is_error for result in results), results
    return [result.text for result in results]


def test_a_persisted_output_is_stored_whole_found_by_recall_and_paged_back_exactly(world: dict[str, Any]) -> None:
    whole = big_log()
    assert len(whole) > 190_000 and NEEDLE not in whole[:30_000]
    assert hook(world, persisted_payload(world, "tail -n +1 service.log", whole)) is None  # no rule: nothing replaced

    stored = episode(world, "toolu_big1")
    assert stored["text"] == whole and stored["cut"] is None
    assert stored["partly_shown"] == 1  # the window saw Claude Code's preview: recall finds it there too
    assert stored["summary"].endswith("-> exit 0, 4000 lines")
    assert stored["raw_output_id"] == "raw-toolu_big1"
    assert codeoid(world, "show", "raw-toolu_big1", "--raw").stdout == whole.encode()  # verbatim, final newline too
    assert codeoid(world, "show", str(stored["id"]), "--raw").stdout == whole.encode()

    recalled, paged = memory_calls(world, ("recall", {"query": "disk quota exceeded zeppelin"}),
                                   ("get_episode", {"episode_id": stored["id"], "lines": "1999-2001"}))
    assert f"=== episode {stored['id']}" in recalled and f"2000: {NEEDLE}" in recalled
    lines = whole.split("\n")
    assert "\n-----\n" + "\n".join(lines[1998:2001]) + "\n-----" in paged


def test_only_a_regular_file_in_the_sessions_tool_results_folder_is_read(world: dict[str, Any]) -> None:
    """Anything else is refused, and the episode says what it holds instead of the whole output."""
    whole = big_log()
    outside = world["tmp"] / "elsewhere.txt"
    outside.write_text(whole)
    link = world["results"] / "link.txt"
    link.symlink_to(outside)
    fifo = world["results"] / "fifo.txt"
    os.mkfifo(fifo)
    other_session = world["results"].parent.parent / "other-session" / "tool-results"
    other_session.mkdir(parents=True)
    (other_session / "x.txt").write_text(whole)
    refused = {"toolu_out": outside, "toolu_link": link, "toolu_fifo": fifo, "toolu_other": other_session / "x.txt",
               "toolu_dotdot": world["results"] / ".." / ".." / ".." / ".." / "elsewhere.txt",
               "toolu_dir": world["results"]}
    for tool_use_id, path in refused.items():
        payload = persisted_payload(world, "tail -n +1 service.log", whole, tool_use_id=tool_use_id, path=path)
        assert hook(world, payload, timeout=20) is None  # a FIFO never blocks the hook
        stored = episode(world, tool_use_id)
        assert stored["text"] == whole[:30_000].rstrip("\n"), tool_use_id
        assert stored["cut"] is not None and "could not read" in stored["cut"], (tool_use_id, stored["cut"])
        assert stored["raw_output_id"] is None
    no_transcript = persisted_payload(world, "tail -n +1 service.log", whole, tool_use_id="toolu_notranscript")
    del no_transcript["transcript_path"]
    hook(world, no_transcript)
    assert "could not read" in episode(world, "toolu_notranscript")["cut"]


def test_past_the_read_cap_the_head_is_stored_and_every_view_says_where_it_was_cut(world: dict[str, Any]) -> None:
    whole = big_log()
    hook(world, persisted_payload(world, "tail -n +1 service.log", whole), {persisted.MAX_BYTES_ENV: "100000"})
    stored = episode(world, "toolu_big1")
    assert stored["text"] == whole[:100_000]
    cut = stored["cut"]
    assert "first 100,000 bytes" in cut and persisted.MAX_BYTES_ENV in cut and f"{len(whole):,} bytes" in cut

    shown = codeoid(world, "show", str(stored["id"])).stdout.decode()
    assert f"cut: {cut}" in shown
    recalled, paged = memory_calls(world, ("recall", {"query": "heartbeat worker"}),
                                   ("get_episode", {"episode_id": stored["id"], "lines": "1-3"}))
    assert f"cut: {cut}" in recalled and f"cut: {cut}" in paged

    from html import escape

    from codeoid.store import db as store_db
    from codeoid.viewer.html import Links
    from codeoid.viewer.pages import episode_page

    connection = store_db.connect()
    try:
        assert f"Cut: {escape(cut)}" in episode_page(connection, Links("t"), stored["id"], may_retract=False)
    finally:
        connection.close()


def test_a_failed_commands_cut_text_says_it_was_cut(world: dict[str, Any]) -> None:
    """A failure's output is Claude Code's own cut text (no file is written): the episode says so."""
    head, tail = "a" * 5000, "z" * 5000
    failure = {"session_id": SESSION, "transcript_path": str(world["transcript"]), "cwd": str(world["project"]),
               "hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_use_id": "toolu_fail",
               "tool_input": {"command": "make test"},
               "error": f"Exit code 2\n{head}\n\n... [20000 characters truncated] ...\n\n{tail}"}
    hook(world, failure)
    whole_failure = {**failure, "tool_use_id": "toolu_fail_small", "error": "Exit code 1\nboom"}
    hook(world, whole_failure)
    stored = episode(world, "toolu_fail")
    assert "20,000 characters truncated" in stored["cut"] and "never stored" in stored["cut"]
    assert episode(world, "toolu_fail_small")["cut"] is None
    assert "cut: Claude Code handed over only its cut text" in codeoid(world, "show", str(stored["id"])).stdout.decode()


def test_the_after_the_fact_compression_counts_from_the_whole_file(world: dict[str, Any]) -> None:
    """`seq 1 5000`: its first 30,000 characters end in a newline, so the hook is handed 29,999 characters
    (3,000 lines). The compressed view is of all 5,000 lines, and the answer drops the persisted keys: Claude Code
    ignores a replacement that still carries them."""
    whole = "".join(f"{n:09d}\n" for n in range(1, 5001))
    sent = persisted_payload(world, "seq -w 1 5000", whole)
    assert len(sent["tool_response"]["stdout"]) == 29_999
    answer = hook(world, sent)["hookSpecificOutput"]["updatedToolOutput"]
    assert not set(answer) & set(persisted.PERSISTED_KEYS)
    assert answer["interrupted"] is False
    shown = answer["stdout"]
    assert "[codeoid] 4992 lines cut, raw lines 6-4997" in shown.splitlines(), shown
    assert codeoid(world, "show", "raw-toolu_big1", "--raw").stdout == whole.encode()
    stored = episode(world, "toolu_big1")
    assert stored["text"] == shown and stored["raw_output_id"] == "raw-toolu_big1"
    assert stored["partly_shown"] is None  # the window holds this text whole


def test_a_preview_is_never_compressed(world: dict[str, Any]) -> None:
    """When the whole file cannot be read (refused, or past the cap), the output is left alone: no count is
    taken from the first 30,000 characters."""
    whole = "".join(f"{n:09d}\n" for n in range(1, 5001))
    outside = world["tmp"] / "seq.txt"
    outside.write_text(whole)
    assert hook(world, persisted_payload(world, "seq -w 1 5000", whole, tool_use_id="t-refused", path=outside)) \
        is None
    assert hook(world, persisted_payload(world, "seq -w 1 5000", whole, tool_use_id="t-capped"),
                {persisted.MAX_BYTES_ENV: "40000"}) is None
    assert episode(world, "t-refused")["raw_output_id"] is None


def test_get_episode_without_lines_answers_a_first_page_and_names_the_next(world: dict[str, Any]) -> None:
    """A 200 KB output asked for with no lines: a page as large as a recall answer, and the call for the rest."""
    whole = big_log()
    hook(world, persisted_payload(world, "tail -n +1 service.log", whole))
    stored = episode(world, "toolu_big1")
    first, raw_first = memory_calls(world, ("get_episode", {"episode_id": stored["id"]}),
                                    ("get_episode", {"episode_id": "raw-toolu_big1"}))
    for text, item in ((first, f'"{stored["id"]}"'), (raw_first, '"raw-toolu_big1"')):
        assert len(text.encode()) <= DEFAULT_RECALL_TOKENS * BYTES_PER_TOKEN, len(text)
        shown = re.search(r"lines 1-(\d+) of (\d+) shown; next: get_episode\((\S+), lines=\"(\d+)-(\d+)\"\)", text)
        assert shown is not None, text[-500:]
        last, total = int(shown.group(1)), int(shown.group(2))
        assert total == 4000 and 10 < last < 200
        assert (shown.group(3), int(shown.group(4)), int(shown.group(5))) == (item, last + 1, 4000)
        assert "\n".join(whole.split("\n")[:last]) in text
