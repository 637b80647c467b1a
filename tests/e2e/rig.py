"""An isolated world in which the real `claude` CLI runs headless against the fake Anthropic API.

`ClaudeRig` owns a temporary HOME (pre-accepted first-run screens), a git project, a `CODEOID_HOME`, and an
environment stripped of anything inherited that could reach the network or the developer's real config. A
test scripts the fake API, calls `run()`, and asserts on the parsed stream-json events, hook events, the
requests the model received, and whatever codeoid stored.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from .fake_anthropic import FakeAnthropic, RecordedRequest, Reply, bash
from .tui import Terminal, wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = "claude-sonnet-4-5"
#: Any string works against the fake API; its last 20 characters go into `customApiKeyResponses.approved`.
API_KEY = "sk-ant-api03-codeoid-e2e-rig-not-a-real-key-0000000000"
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_UPDATES": "1",
    "DISABLE_INSTALLATION_CHECKS": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    # Needed for --dangerously-skip-permissions when the tests run as root (CI containers).
    "IS_SANDBOX": "1",
}
#: Inherited variables that would point Claude Code (or codeoid) at real accounts, config or data.
STRIPPED_PREFIXES = ("ANTHROPIC_", "CLAUDE", "CODEOID_", "XDG_")
#: Set to a per-rig token in every process the rig starts; see `ClaudeRig.kill_own_processes`.
RIG_MARKER_VAR = "CODEOID_E2E_RIG"


def find_cli(name: str, variable: str) -> str | None:
    """An agent CLI as CI pins it (`variable` overrides, then the repo's .tools install), else whatever is on PATH."""
    override = os.environ.get(variable)
    if override:
        return override
    pinned = REPO_ROOT / ".tools" / "node_modules" / ".bin" / name
    if pinned.exists():
        return str(pinned)
    return shutil.which(name)


def find_claude() -> str | None:
    """The claude binary: CODEOID_CLAUDE_BIN, then .tools/, then PATH."""
    return find_cli("claude", "CODEOID_CLAUDE_BIN")


class ClaudeRunTimeout(AssertionError):
    """`claude` outlived its timeout; raised with what it printed so the hang can be diagnosed."""


@dataclass(frozen=True)
class RunResult:
    """One `claude -p` run: its output parsed, plus the API requests that arrived during it."""

    args: list[str]
    exit_code: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]
    requests: list[RecordedRequest]

    @property
    def result(self) -> dict[str, Any] | None:
        """The final `result` event (None if claude died before printing one)."""
        results = [e for e in self.events if e.get("type") == "result"]
        return results[-1] if results else None

    @property
    def text(self) -> str:
        """The final answer text, as `claude -p` would print it."""
        return str((self.result or {}).get("result", ""))

    @property
    def session_id(self) -> str:
        for event in self.events:
            if event.get("session_id"):
                return str(event["session_id"])
        raise AssertionError(f"no session_id in the run's events; stderr: {self.stderr[-2000:]}")

    @property
    def hook_events(self) -> list[dict[str, Any]]:
        """`system/hook_started` and `system/hook_response` events, in order."""
        return [
            e
            for e in self.events
            if e.get("type") == "system" and e.get("subtype") in ("hook_started", "hook_response")
        ]

    def hook_responses(self, hook_event: str | None = None) -> list[dict[str, Any]]:
        """Finished hooks, optionally only those of one event such as "PostToolUse"."""
        responses = [e for e in self.hook_events if e.get("subtype") == "hook_response"]
        if hook_event is None:
            return responses
        return [e for e in responses if e.get("hook_event") == hook_event]

    @property
    def main_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == "main"]

    def describe(self) -> str:
        """A compact summary for assertion messages."""
        return (
            f"exit={self.exit_code} result={self.result!r:.500}\n"
            f"stderr tail: {self.stderr[-1500:]}\n"
            f"requests: {[(r.index, r.kind) for r in self.requests]}"
        )


class ClaudeRig:
    """A temporary HOME + project + CODEOID_HOME, and the env and commands to run claude inside it."""

    def __init__(self, root: Path, api: FakeAnthropic, claude_bin: str) -> None:
        self.root = root
        self.api = api
        self.claude_bin = claude_bin
        self.home = root / "home"
        self.project = root / "project"
        self.codeoid_home = root / "codeoid-home"
        self.tmp = root / "tmp"
        for path in (self.home, self.project, self.codeoid_home, self.tmp):
            path.mkdir(parents=True, exist_ok=True)
        self.marker = uuid.uuid4().hex
        self._terminals: list[Terminal] = []
        self.env = self._build_env()
        self._write_claude_json()
        self._init_project()

    # -- setup -----------------------------------------------------------------------------------------

    def _build_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED_PREFIXES)}
        bin_dir = str(Path(sys.executable).parent)
        env.update(OFFLINE_ENV)
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            CODEOID_HOME=str(self.codeoid_home),
            # Claude Code keeps per-project task output and cwd files under $TMPDIR/claude-<uid>.
            TMPDIR=str(self.tmp),
            ANTHROPIC_BASE_URL=self.api.base_url,
            ANTHROPIC_API_KEY=API_KEY,
            **{RIG_MARKER_VAR: self.marker},
            # Hooks installed by codeoid run its console scripts; the venv's must win over any other copy.
            PATH=os.pathsep.join([bin_dir, env.get("PATH", "")]),
        )
        return env

    def trust(self, folder: Path) -> None:
        """Accept the trust dialog for another folder, as a user who opened Claude Code there once."""
        path = self.home / ".claude.json"
        state = json.loads(path.read_text())
        state["projects"].setdefault(str(folder), {}).update(hasTrustDialogAccepted=True,
                                                              hasCompletedProjectOnboarding=True)
        path.write_text(json.dumps(state, indent=2))

    def _write_claude_json(self) -> None:
        """Pre-accept onboarding, trust and the custom key, so interactive runs never stop at them."""
        project_state = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        state = {
            "hasCompletedOnboarding": True,
            "bypassPermissionsModeAccepted": True,
            "projects": {str(self.project): project_state},
            "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        }
        (self.home / ".claude.json").write_text(json.dumps(state, indent=2))

    def _init_project(self) -> None:
        """A git repo with one commit: Claude Code reports git state, and some hooks key on the repo."""
        (self.project / "README.md").write_text("# e2e project\n")
        identity = ["-c", "user.name=codeoid e2e", "-c", "user.email=e2e@codeoid.invalid"]
        git = ["git", *identity, "-c", "commit.gpgsign=false"]
        for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "initial"]):
            subprocess.run([*git, *args], cwd=self.project, env=self.env, check=True, capture_output=True)

    # -- configuration ---------------------------------------------------------------------------------

    @property
    def user_settings_path(self) -> Path:
        return self.home / ".claude" / "settings.json"

    @property
    def project_settings_path(self) -> Path:
        return self.project / ".claude" / "settings.json"

    def write_settings(self, settings: Mapping[str, Any], *, path: Path | None = None) -> Path:
        """Merge `settings` into a settings file (user scope by default); top-level keys are replaced.

        Merging keeps what `install_codeoid()` wrote while a test adds its own keys. A `hooks` value replaces
        the file's hooks whole; to add hooks beside codeoid's, write them to another scope (`path=`), since
        Claude Code collects hooks from every settings file.
        """
        target = path or self.user_settings_path
        current = json.loads(target.read_text()) if target.exists() else {}
        current.update(settings)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(current, indent=2))
        return target

    def install_codeoid(self, *extra_args: str) -> subprocess.CompletedProcess[str]:
        """Run the venv's `codeoid install --scope user` in this world, failing loudly if it fails."""
        codeoid = Path(sys.executable).parent / "codeoid"
        completed = subprocess.run(
            [str(codeoid), "install", "--scope", "user", *extra_args],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert completed.returncode == 0, f"codeoid install failed:\n{completed.stdout}\n{completed.stderr}"
        return completed

    # -- running ---------------------------------------------------------------------------------------

    def run(
        self,
        prompt: str,
        *extra_args: str,
        allow_all: bool = True,
        model: str = DEFAULT_MODEL,
        timeout: float = 120,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run `claude -p PROMPT` headless in the project (or `cwd`) and return what it printed and what the API
        saw; `env` replaces the rig's environment for this run.

        `extra_args` go after the standard flags (e.g. "--resume", session_id). On timeout every process the
        rig started is killed, so a hook or Bash child that hangs cannot outlive the test.
        """
        args = [
            self.claude_bin,
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-hook-events",
            "--model",
            model,
        ]
        if allow_all:
            args.append("--dangerously-skip-permissions")
        args.extend(extra_args)
        first_request = len(self.api.requests)
        process = subprocess.Popen(
            args,
            cwd=cwd or self.project,
            env=dict(env) if env is not None else self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_own_processes()
            try:
                stdout, stderr = process.communicate(timeout=10)
            except subprocess.TimeoutExpired:  # a child that scrubbed its environment still holds the pipes
                stdout, stderr = "", "(output lost: pipes held open by an escaped child)"
            raise ClaudeRunTimeout(
                f"claude did not finish within {timeout}s\nstdout tail: {stdout[-2000:]}\n"
                f"stderr tail: {stderr[-2000:]}\nrequests: {[(r.index, r.kind) for r in self.api.requests]}"
            ) from None
        return RunResult(
            args=args,
            exit_code=process.returncode,
            stdout=stdout,
            stderr=stderr,
            events=_parse_stream_json(stdout),
            requests=self.api.requests[first_request:],
        )

    def supervise(self, *claude_args: str, model: str | None = DEFAULT_MODEL, env: Mapping[str, str] | None = None,
                  rows: int = 40, cols: int = 120) -> Terminal:
        """Start `codeoid run [--model MODEL] CLAUDE_ARGS` interactively on a pseudo-terminal in the project.

        The returned `Terminal` is the user's keyboard and screen; `close()` it (the rig's own `close` also ends
        every process it started). `model=None` leaves Claude Code's default model.
        """
        codeoid = str(Path(sys.executable).parent / "codeoid")
        argv = [codeoid, "run", *(["--model", model] if model else []), *claude_args]
        terminal = Terminal(argv, env={**self.env, "CODEOID_CLAUDE_BIN": self.claude_bin, **(env or {})},
                            cwd=str(self.project), rows=rows, cols=cols)
        self._terminals.append(terminal)
        return terminal

    def supervisor_state(self) -> dict[str, Any] | None:
        """The running supervisor's `state.json` (what hooks and the status line read), if there is one."""
        for path in sorted((self.codeoid_home / "run").glob("*/state.json")):
            try:
                return dict(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
        return None

    def wait_for_state(self, predicate: Any, *, timeout: float = 60) -> dict[str, Any]:
        """Wait until the supervisor's state satisfies `predicate(state)`; returns that state."""
        def matching() -> dict[str, Any] | None:
            state = self.supervisor_state()
            return state if state is not None and predicate(state) else None

        found = wait_until(matching, timeout=timeout,
                           message=lambda: f"supervisor state; the last one was {self.supervisor_state()}")
        assert isinstance(found, dict)
        return found

    def own_processes(self, name: str | None = None) -> list[psutil.Process]:
        """Running processes this rig started (they carry its marker), optionally only those named `name`."""
        found = []
        for process in psutil.process_iter():
            try:
                if process.environ().get(RIG_MARKER_VAR) != self.marker or process.status() == psutil.STATUS_ZOMBIE:
                    continue
                if name is None or process.name() == name:
                    found.append(process)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def own_processes_running(self, text: str) -> list[psutil.Process]:
        """Running processes this rig started whose command line contains `text`."""
        found = []
        for process in self.own_processes():
            try:
                if any(text in arg for arg in process.cmdline()):
                    found.append(process)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def kill_own_processes(self) -> None:
        """Kill every process that carries this rig's marker in its environment.

        Claude Code detaches the Bash tool's shell into its own process group, so neither a process group
        nor the process tree (orphans are re-parented) finds everything a run left behind; the inherited
        environment does.
        """
        for process in psutil.process_iter():
            try:
                if process.environ().get(RIG_MARKER_VAR) == self.marker:
                    process.kill()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue

    def close(self) -> None:
        """End of test: nothing a run started may outlive it."""
        for terminal in self._terminals:
            terminal.close()
        self.kill_own_processes()

    def stored_prompts(self) -> list[str]:
        """The user prompts codeoid has stored so far, oldest first (none before the store exists)."""
        path = self.codeoid_home / "store.db"
        if not path.exists():
            return []
        connection = sqlite3.connect(path)
        try:
            return [row[0] for row in connection.execute("SELECT text FROM episodes WHERE kind = 'user' ORDER BY id")]
        finally:
            connection.close()

    def codeoid_log(self, chars: int = 3000) -> str:
        """The tail of codeoid's own log, where a hook that stepped aside says why (for assertion messages)."""
        path = self.codeoid_home / "logs" / "codeoid.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else "(codeoid wrote no log)"

    # -- reading Claude Code's own files ---------------------------------------------------------------

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        """The records of a session's transcript JSONL, wherever Claude Code put it under HOME."""
        matches = list((self.home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
        assert matches, f"no transcript for session {session_id}"
        return [json.loads(line) for line in matches[0].read_text().splitlines() if line.strip()]


def _parse_stream_json(stdout: str) -> list[dict[str, Any]]:
    """One JSON object per line; anything else (a crash message) is kept as a `non_json` event, not lost."""
    events = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            events.append({"type": "non_json", "line": line})
    return events


MID_TURN_PROMPT = "also skip the network tests"
MID_TURN_ANSWER = "Done, and the network tests were skipped."


def type_a_prompt_mid_turn(rig: ClaudeRig, term: Terminal) -> None:
    """In a fresh `codeoid run` TUI: ask for a Bash step that runs until the test lets it end, type
    `MID_TURN_PROMPT` while it runs, end it once Claude Code shows the prompt queued, and return once
    `MID_TURN_ANSWER` is on screen (Claude Code hands the second prompt to the model inside that turn).

    The step waits on a file, not a clock: however slow the machine, the prompt is queued while the step runs.
    It only reads (a write would stop at a permission prompt), so the test finds it running by its command line."""
    term.wait_for("codeoid ctx", timeout=60)
    gate = rig.root / f"slow-step-may-end-{uuid.uuid4().hex}"
    step = f"until [ -e {shlex.quote(str(gate))} ]; do sleep 0.1; done; echo slow-step-done"
    rig.api.add(Reply([bash(step, "the slow step")]), MID_TURN_ANSWER)
    term.type_line("run the slow step")
    wait_until(lambda: rig.own_processes_running(gate.name), timeout=60, message="the slow step to start")
    mark = term.mark()
    term.type_line(MID_TURN_PROMPT)
    # Queued, and its UserPromptSubmit hook (codeoid's, which stores it) done: a prompt whose hook still runs when
    # the step ends is not handed over with the step's result but sent as a turn of its own after the answer.
    term.wait_for("Press up to edit queued messages", since=mark, timeout=60)
    wait_until(lambda: rig.stored_prompts().count(MID_TURN_PROMPT), timeout=60, message="the queued prompt stored")
    gate.touch()
    term.wait_for(MID_TURN_ANSWER, timeout=60)
