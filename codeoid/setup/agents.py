"""`codeoid install|uninstall --agent codex|gemini`: codeoid's hooks and MCP server in another agent CLI's config.

What goes where (docs/agent-protocols.md):
- Codex: the hooks in `$CODEX_HOME/hooks.json` (Claude Code's format); in `$CODEX_HOME/config.toml` one block
  between codeoid's marker lines holding `[mcp_servers.codeoid]` and the `[hooks.state."<key>"]` trust entries for
  codeoid's hooks, whose hashes `codex app-server` itself reports (`hooks/list`): Codex runs no hook until it is
  trusted, and running `codeoid install --agent codex` is the user's decision to trust codeoid's. Without the
  `codex` binary the trust entries are left out and Codex asks at its next start.
- Gemini: `hooks` and `mcpServers.codeoid` in the user settings `~/.gemini/settings.json` (timeouts in ms).

Only codeoid's own entries are touched: a hook whose command runs `codeoid-hook`, the server named `codeoid`
running `codeoid-mcp`, the marked TOML block. Every changed file is backed up first, and the manifest
(`agents-install.json` in the data dir) keeps each file's bytes from before the first install and a digest of
what install wrote: uninstall puts those bytes back exactly (or removes a file that did not exist) when nobody
has changed the file since, and otherwise takes out codeoid's entries alone.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeoid import paths
from codeoid.setup.hook_table import (
    HOOK_EXECUTABLE,
    MCP_EXECUTABLE,
    MCP_SERVER_NAME,
    installed_executable,
    is_codeoid_handler,
    is_codeoid_server,
)
from codeoid.setup.install import Outcome, missing_dirs
from codeoid.setup.json_config import InstallError, back_up, load_object, write_atomic

AGENTS = ("codex", "gemini")
MANIFEST_NAME = "agents-install.json"
TOML_BEGIN = "# >>> codeoid: added by `codeoid install --agent codex`; `codeoid uninstall --agent codex` removes it"
TOML_END = "# <<< codeoid"
#: How long `codex app-server` may take to list the hooks (it starts Codex's whole runtime).
APP_SERVER_SECONDS = 60


@dataclass(frozen=True)
class AgentHook:
    """One event codeoid registers in an agent CLI: its name there, matcher (None: no matcher key), timeout."""

    event: str
    matcher: str | None
    timeout: int  # in the CLI's own unit: seconds for Codex, milliseconds for Gemini


#: Codex's default timeout is 600 s (1 s for SessionEnd); a stuck hook must cost seconds. PreToolUse only ever
#: rewrites a shell command (Codex names its shell tool `Bash` to hooks).
CODEX_HOOKS = (
    AgentHook("SessionStart", None, 10),
    AgentHook("UserPromptSubmit", None, 10),
    AgentHook("PreToolUse", "Bash", 5),
    AgentHook("PostToolUse", "*", 10),
    AgentHook("Stop", None, 10),
    AgentHook("SessionEnd", None, 5),
)
#: Gemini's default is 60 s. No BeforeTool: codeoid does not rewrite commands there (docs/agent-protocols.md).
GEMINI_HOOKS = (
    AgentHook("SessionStart", None, 10_000),
    AgentHook("BeforeAgent", None, 10_000),
    AgentHook("AfterTool", "*", 10_000),
    AgentHook("AfterAgent", None, 10_000),
    AgentHook("SessionEnd", None, 5_000),
)
HOOKS = {"codex": CODEX_HOOKS, "gemini": GEMINI_HOOKS}


def codex_home(home: Path) -> Path:
    """`$CODEX_HOME`, else `<home>/.codex`."""
    override = os.environ.get("CODEX_HOME")
    return Path(override) if override else home / ".codex"


def config_files(agent: str, home: Path) -> list[Path]:
    """The files codeoid edits for `agent`."""
    if agent == "codex":
        return [codex_home(home) / "hooks.json", codex_home(home) / "config.toml"]
    return [home / ".gemini" / "settings.json"]


def hook_command(agent: str, event: str) -> str:
    home = os.environ.get("CODEOID_HOME")
    prefix = f"CODEOID_HOME={shlex.quote(paths.data_dir_location())} " if home else ""
    return f"{prefix}{shlex.quote(installed_executable(HOOK_EXECUTABLE))} --agent={agent} {event}"


def mcp_entry() -> dict[str, Any]:
    """codeoid-mcp as the CLI starts it; `CODEOID_HOME` is passed on when the installer had it (Codex gives a
    server only an allow-list of its own environment)."""
    env = {"CODEOID_HOME": paths.data_dir_location()} if os.environ.get("CODEOID_HOME") else {}
    return {"command": installed_executable(MCP_EXECUTABLE), "args": [], "env": env}


def install(agent: str, home: Path | None = None, *, codex_binary: str | None = None) -> Outcome:
    """Register codeoid's hooks and MCP server in `agent`'s config; running it again changes nothing."""
    home = home or Path.home()
    outcome = Outcome()
    manifest = _load_manifest()
    record = manifest.setdefault(agent, {})
    hooks_file = config_files(agent, home)[0]
    _write(hooks_file, _with_hooks(agent, _json_text(hooks_file), mcp=agent == "gemini"), record, outcome)
    if agent == "codex":
        config = config_files(agent, home)[1]
        trust = _codex_trust(hooks_file, home, codex_binary, outcome)
        _write(config, _with_codex_block(config, _read(config), trust), record, outcome)
    _save_manifest(manifest)
    return outcome


def uninstall(agent: str, home: Path | None = None) -> Outcome:
    """Take codeoid out of `agent`'s config: back to the exact bytes from before when nobody changed a file
    since, else codeoid's entries alone."""
    home = home or Path.home()
    outcome = Outcome()
    manifest = _load_manifest()
    record = manifest.get(agent, {})
    emptied: list[str] = []  # folders codeoid made for files it removed: taken away once every file is done
    for path in config_files(agent, home):
        current = _read(path)
        if current is None:
            continue
        entry = record.get(str(path))
        if entry is not None and entry.get("installed") == _digest(current):
            original = entry.get("original")
            if original is None:  # codeoid made the file and it holds only what codeoid wrote: nothing to back up
                path.unlink()
                outcome.removed.append(path)
                emptied += entry.get("created_dirs", [])
            else:
                _replace(path, base64.b64decode(original), outcome)
            continue
        stripped = (_without_codex_block(current) if path.suffix == ".toml"
                    else _without_hooks(path, current))
        if stripped != current:
            _replace(path, stripped, outcome)
    _remove_created_dirs(emptied)
    manifest.pop(agent, None)
    _save_manifest(manifest)
    return outcome


def recorded_agents() -> list[str]:
    """The agent CLIs `codeoid install --agent` has put codeoid into (per the manifest)."""
    return [agent for agent, record in _load_manifest().items() if record]


def installed(agent: str, home: Path | None = None) -> list[str]:
    """What is missing of codeoid's registration in `agent` (empty: fully installed), for `codeoid doctor`."""
    home = home or Path.home()
    hooks_file = config_files(agent, home)[0]
    text = _read(hooks_file)
    missing: list[str] = []
    data = _parse_json(hooks_file, text) if text is not None else {}
    for hook in HOOKS[agent]:
        groups = (data.get("hooks") or {}).get(hook.event) or []
        if not any(is_codeoid_handler(h) for g in groups if isinstance(g, dict) for h in g.get("hooks") or []):
            missing.append(f"the {hook.event} hook in {hooks_file}")
    if agent == "gemini":
        if not is_codeoid_server((data.get("mcpServers") or {}).get(MCP_SERVER_NAME)):
            missing.append(f"the codeoid MCP server in {hooks_file}")
    else:
        config = config_files(agent, home)[1]
        if TOML_BEGIN not in (_read(config) or b"").decode("utf-8", "replace"):
            missing.append(f"the codeoid MCP server in {config}")
    return missing


# -- JSON: hooks.json (Codex), settings.json (Gemini) --------------------------------------------------------------

def _with_hooks(agent: str, text: bytes | None, *, mcp: bool) -> bytes:
    """`text` with codeoid's hooks (and, for Gemini, its MCP server) registered, the user's entries as they were."""
    data = _parse_json(None, text) if text is not None else {}
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError("The config's `hooks` is not an object; fix it by hand, then run again.")
    hooks = _strip_codeoid_hooks(hooks)
    for hook in HOOKS[agent]:
        handler: dict[str, Any] = {"type": "command", "command": hook_command(agent, hook.event),
                                   "timeout": hook.timeout}
        group: dict[str, Any] = {} if hook.matcher is None else {"matcher": hook.matcher}
        group["hooks"] = [handler]
        groups = hooks.get(hook.event, [])
        if not isinstance(groups, list):
            raise InstallError(f"The config's hooks.{hook.event} is not a list; fix it by hand, then run again.")
        hooks[hook.event] = [*groups, group]
    result = {**data, "hooks": hooks}
    if mcp:
        servers = data.get("mcpServers", {})
        if not isinstance(servers, dict):
            raise InstallError("The config's mcpServers is not an object; fix it by hand, then run again.")
        existing = servers.get(MCP_SERVER_NAME)
        if existing is not None and not is_codeoid_server(existing):
            raise InstallError(f"The config already has an MCP server named {MCP_SERVER_NAME!r} that does not run "
                               "codeoid-mcp; rename or remove it, then run again.")
        result["mcpServers"] = {**servers, MCP_SERVER_NAME: {**mcp_entry(), "trust": True}}
    if text is not None and _parse_json(None, text) == result:
        return text  # already installed as it would be now: not a byte changes
    return _json_bytes(result)


def _strip_codeoid_hooks(hooks: dict[str, Any]) -> dict[str, Any]:
    """`hooks` without codeoid's handlers; a group or event left empty by that goes too."""
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        new_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(is_codeoid_handler(h) for h in handlers):
                new_groups.append(group)
                continue
            rest = [h for h in handlers if not is_codeoid_handler(h)]
            if rest:
                new_groups.append({**group, "hooks": rest})
        if new_groups:
            kept[event] = new_groups
    return kept


def _without_hooks(path: Path, text: bytes) -> bytes:
    data = _parse_json(path, text)
    result = dict(data)
    if isinstance(data.get("hooks"), dict):
        hooks = _strip_codeoid_hooks(data["hooks"])
        if hooks:
            result["hooks"] = hooks
        else:
            result.pop("hooks")
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and is_codeoid_server(servers.get(MCP_SERVER_NAME)):
        servers = {name: entry for name, entry in servers.items() if name != MCP_SERVER_NAME}
        if servers:
            result["mcpServers"] = servers
        else:
            result.pop("mcpServers")
    return text if result == data else _json_bytes(result)


def _parse_json(path: Path | None, text: bytes) -> dict[str, Any]:
    where = str(path) if path else "The config file"
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        raise InstallError(f"{where} is not valid JSON ({error}); fix it by hand or move it away, then run again.") \
            from error
    if not isinstance(data, dict):
        raise InstallError(f"{where} holds a JSON {type(data).__name__}, not an object; fix it by hand.")
    return data


def _json_text(path: Path) -> bytes | None:
    load_object(path)  # the same clear error as the Claude Code route for a file that is not a JSON object
    return _read(path)


def _json_bytes(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# -- TOML: Codex's config.toml -------------------------------------------------------------------------------------

def _with_codex_block(path: Path, text: bytes | None, trust: dict[str, str]) -> bytes:
    """`text` with codeoid's marked block (MCP server, hook trust) at its end, replacing an older one."""
    base = _without_codex_block(text) if text is not None else b""
    try:
        existing = tomllib.loads(base.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InstallError(f"{path} is not valid TOML ({error}); fix it by hand, then run again.") from error
    if MCP_SERVER_NAME in (existing.get("mcp_servers") or {}):
        raise InstallError(f"{path} already has an MCP server named {MCP_SERVER_NAME!r}; remove it "
                           f"(`codex mcp remove {MCP_SERVER_NAME}`), then run again.")
    entry = mcp_entry()
    lines = [TOML_BEGIN, f"[mcp_servers.{MCP_SERVER_NAME}]", f"command = {_toml(entry['command'])}", "args = []"]
    if entry["env"]:
        pairs = ", ".join(f"{_toml(k)} = {_toml(v)}" for k, v in entry["env"].items())
        lines.append(f"env = {{ {pairs} }}")
    for key, digest in sorted(trust.items()):
        lines += ["", f"[hooks.state.{_toml(key)}]", f"trusted_hash = {_toml(digest)}"]
    lines.append(TOML_END)
    separator = b"" if not base or base.endswith(b"\n\n") else (b"\n" if base.endswith(b"\n") else b"\n\n")
    result = base + separator + ("\n".join(lines) + "\n").encode("utf-8")
    try:
        tomllib.loads(result.decode("utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise InstallError(f"{path}: codeoid's entries would clash with what is there ({error}); "
                           "fix it by hand, then run again.") from error
    if text is not None and result == text:
        return text
    return result


def _without_codex_block(text: bytes) -> bytes:
    """`text` without codeoid's marked block and the blank line install put before it."""
    decoded = text.decode("utf-8", "surrogateescape")
    start = decoded.find(TOML_BEGIN)
    end = decoded.find(TOML_END, start)
    if start < 0 or end < 0:
        return text
    end += len(TOML_END)
    if decoded[end:end + 1] == "\n":
        end += 1
    head = decoded[:start]
    if head.endswith("\n\n"):
        head = head[:-1]
    return (head + decoded[end:]).encode("utf-8", "surrogateescape")


def _toml(value: str) -> str:
    """A TOML basic string (a JSON string is one while non-ASCII text stays literal)."""
    return json.dumps(value, ensure_ascii=False)


def _codex_trust(hooks_file: Path, home: Path, binary: str | None, outcome: Outcome) -> dict[str, str]:
    """The `trusted_hash` Codex itself computes for each of codeoid's hooks, keyed by Codex's hook key."""
    if binary is None:
        outcome.notes.append("codex was not found: Codex will ask you to review codeoid's hooks at its next start "
                             "(choose \"Trust all and continue\"); until then they do not run.")
        return {}
    try:
        listed = _app_server_hooks(binary, home, hooks_file.parent)
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        raise InstallError(f"Could not ask {binary} for the hashes of codeoid's hooks ({error}); run again, or "
                           "trust them in Codex's /hooks review.") from error
    trust = {str(h["key"]): str(h["currentHash"]) for h in listed
             if h.get("sourcePath") == str(hooks_file) and is_codeoid_handler({"type": "command",
                                                                                "command": h.get("command")})}
    if len(trust) != len(CODEX_HOOKS):
        raise InstallError(f"{binary} listed {len(trust)} of codeoid's {len(CODEX_HOOKS)} hooks in {hooks_file}; "
                           "is it Codex 0.171.0 or later with hooks enabled?")
    outcome.notes.append(f"Trusted codeoid's {len(trust)} hooks in Codex (their hashes as Codex computes them).")
    return trust


def _app_server_hooks(binary: str, home: Path, codex_dir: Path) -> list[dict[str, Any]]:
    """`hooks/list` from `codex app-server` over stdio JSON-RPC (docs/agent-protocols.md)."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codeoid",
                                                                                       "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(home)]}},
    ]
    env = {**os.environ, "CODEX_HOME": str(codex_dir)}
    with subprocess.Popen([binary, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=env, cwd=home) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            for request in requests:
                process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.flush()
            return _read_hooks_answer(process, APP_SERVER_SECONDS)
        finally:
            process.kill()


def _read_hooks_answer(process: subprocess.Popen[bytes], seconds: float) -> list[dict[str, Any]]:
    import selectors
    import time

    assert process.stdout is not None
    deadline = time.monotonic() + seconds
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == 2:
                    if "error" in message:
                        raise ValueError(f"hooks/list failed: {message['error']}")
                    return [hook for entry in message["result"]["data"] for hook in entry.get("hooks", [])]
    raise ValueError(f"no answer to hooks/list within {seconds:.0f} s")


# -- files and the manifest ----------------------------------------------------------------------------------------

def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: Path, data: bytes, record: dict[str, Any], outcome: Outcome) -> None:
    """Write `data` to `path` (backing up what was there) and note in `record` what it was before the first
    install and what install left, so uninstall can tell whether anyone changed it since."""
    current = _read(path)
    entry = record.get(str(path))
    if entry is None:
        created = missing_dirs(path.parent) if current is None else []
        entry = {"original": None if current is None else base64.b64encode(current).decode(), "created_dirs":
                 [str(d) for d in created]}
        record[str(path)] = entry
    if current != data:
        if current is None:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _replace(path, data, outcome)
    entry["installed"] = _digest(data)


def _replace(path: Path, data: bytes, outcome: Outcome) -> None:
    if path.exists():
        outcome.backups.append(back_up(path))
    target = Path(os.path.realpath(path))
    temporary = target.with_name(f".{target.name}.codeoid-tmp")
    mode = target.stat().st_mode & 0o777 if target.exists() else paths.FILE_MODE
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
        file.flush()
        os.fchmod(file.fileno(), mode)
        os.fsync(file.fileno())
    os.replace(temporary, target)
    outcome.written.append(path)


def _remove_created_dirs(directories: list[str]) -> None:
    """Deepest first; a folder someone else has put files in stays."""
    for directory in sorted(set(directories), key=len, reverse=True):
        try:
            Path(directory).rmdir()
        except OSError:
            continue  # not empty (someone else's files), or gone already


def _manifest_path() -> Path:
    return Path(paths.data_dir_location()) / MANIFEST_NAME


def _load_manifest() -> dict[str, Any]:
    return load_object(_manifest_path()) or {}


def _save_manifest(manifest: dict[str, Any]) -> None:
    path = _manifest_path()
    if not any(manifest.values()):
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, manifest, mode=paths.FILE_MODE)
