"""Shared fixtures: an isolated data dir, a scratch git project, and the real hook executable."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BIN_DIR = Path(sys.executable).parent


class TeamChroma:
    """A team's Chroma server stand-in: codeoid's own server on a TCP port of 127.0.0.1, with a token."""

    def __init__(self, root: Path) -> None:
        import secrets
        import socket
        import time

        from codeoid.memory.chroma_http import Endpoint, heartbeat

        root.mkdir(parents=True, exist_ok=True)
        self.token = secrets.token_urlsafe(24)
        self.token_file = root / "team-token"
        self.token_file.write_text(self.token)
        self.token_file.chmod(0o600)
        self.path = root / "team-chroma"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (root / "team-chroma.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "codeoid.memory.chroma_serve", "--port", str(self.port), "--path", str(self.path),
             "--token-file", str(self.token_file)], stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.endpoint = Endpoint(self.url, self.token)
        deadline = time.monotonic() + 120
        while not heartbeat(self.endpoint, timeout=1.0):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                log = (root / "team-chroma.log").read_text()
                raise AssertionError(f"the team Chroma stand-in did not start: {log}")
            time.sleep(0.1)

    def env(self) -> dict[str, str]:
        """What a teammate's codeoid is configured with to use it."""
        return {"CODEOID_CHROMA_URL": self.url, "CODEOID_CHROMA_TOKEN": self.token}

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.log.close()


@pytest.fixture
def team_chroma(tmp_path: Path) -> Iterator[TeamChroma]:
    server = TeamChroma(tmp_path / "team")
    try:
        yield server
    finally:
        server.close()


def executable(name: str) -> str:
    """An installed entry point of this environment, by absolute path, as Claude Code would run it."""
    path = BIN_DIR / name
    if not path.exists():
        pytest.fail(f"{path} is missing: install codeoid into this environment (pip install .)")
    return str(path)


@pytest.fixture(autouse=True)
def no_memory_service_outlives_its_test(tmp_path: Path) -> Iterator[None]:
    """Stop the memory services a test started (through a hook, `codeoid-mcp` or the CLI, in its own folder): left
    alone, each idles on for ten minutes with the model loaded, and a suite run left half a dozen behind it. Killed,
    not asked, and not waited for: the test is over, its folder is its own, and a graceful stop waits for the
    indexer and for clients' connections (1.7 s for an idle service; a killed one is gone 1.5 s later, when the
    machine's init reaps it)."""
    yield
    import psutil

    for process in psutil.process_iter(["cmdline"]):
        words = process.info["cmdline"] or []
        ours = ("codeoid.service.daemon", "codeoid.memory.chroma_server", "codeoid.memory.chroma_serve")
        if any(name in words for name in ours) and any(str(tmp_path) in word for word in words):
            process.kill()


@pytest.fixture
def codeoid_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "codeoid-home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    for name in ("CODEOID_SESSION_ID", "CLAUDE_PID", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


class HookResult:
    def __init__(self, completed: subprocess.CompletedProcess[bytes]) -> None:
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr


def run_hook(event: str, payload: dict[str, Any] | bytes | str, *, env: dict[str, str] | None = None,
             cwd: Path | None = None, timeout: float = 30) -> HookResult:
    """Run the real `codeoid-hook EVENT` in a fresh process with the payload on stdin."""
    data = payload if isinstance(payload, bytes) else (
        payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
    )
    completed = subprocess.run(
        [executable("codeoid-hook"), event], input=data, capture_output=True, timeout=timeout,
        env={**os.environ, **(env or {})}, cwd=cwd,
    )
    return HookResult(completed)


@pytest.fixture
def store(codeoid_home: Path) -> Iterator[Any]:
    """A connection to the isolated store (opened after the hooks under test have written)."""
    from codeoid.store import db

    connection = db.connect()
    yield connection
    connection.close()


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A 16 MB tmpfs as CODEOID_HOME's disk, unmounted afterwards."""
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mountpoint)],
                                 capture_output=True, text=True, timeout=30)
    except OSError as error:
        pytest.skip(f"cannot mount a tmpfs to fill up: {error}")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill up (needs root): {mounted.stderr.strip()}")
    home = mountpoint / "home"
    monkeypatch.setenv("CODEOID_HOME", str(home))
    try:
        yield home
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False, timeout=30)


def fill_disk(path: Path) -> int:
    """Write zeros to `path` until the disk says ENOSPC; return how many bytes fitted."""
    written = 0
    chunk = b"\0" * 65536
    with path.open("wb", buffering=0) as file:
        while True:
            try:
                written += file.write(chunk) or 0
            except OSError as error:
                assert error.errno == errno.ENOSPC
                break
        for size in (4096, 512, 1):  # the last partial blocks too
            while True:
                try:
                    written += file.write(b"\0" * size) or 0
                except OSError:
                    break
    return written
