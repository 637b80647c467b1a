"""`codeoid doctor`: what is installed, whether it can work, and what went wrong, in plain sentences.

Each check reads and never repairs: the data dir is located without being created or having its mode fixed
(`paths.data_dir()` would do both and hide the very problem being looked for). Every finding is a status and a
sentence that says what to do when something is off.
"""

from __future__ import annotations

import os
import platform
import shutil
import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, NamedTuple

from codeoid import paths
from codeoid.capture import loss_ring, spool
from codeoid.paths import DIR_MODE, FILE_MODE
from codeoid.setup.claude_files import (
    ClaudeFiles,
    PluginSighting,
    find_plugin_route,
    find_shadowing_servers,
    locate_claude_files,
    project_local_settings,
)
from codeoid.setup.hook_table import (
    ALLOW_RULE,
    HOOK_TABLE,
    MCP_SERVER_NAME,
    is_codeoid_handler,
    is_codeoid_server,
    parse_command,
)
from codeoid.setup.install_manifest import InstallRecord, load_records, manifest_path
from codeoid.setup.json_config import InstallError, load_object

Status = Literal["ok", "info", "warn", "fail"]
CLAUDE_VERSION_TIMEOUT = 5.0
MAX_NAMED = 5


class Finding(NamedTuple):
    status: Status
    sentence: str


def doctor_report(home: Path | None = None, project_dir: Path | None = None) -> list[Finding]:
    """Every check, in the order a reader wants them: route, versions, permissions, rule files, backlog."""
    home = (home or Path.home()).absolute()
    project = (project_dir or Path.cwd()).resolve()
    data_dir = Path(paths.data_dir_location())
    return [
        *_route_findings(locate_claude_files(home), project, data_dir),
        *_version_findings(),
        *_permission_findings(data_dir),
        *_rule_file_findings(home, project),
        *_backlog_findings(data_dir),
        *_loss_findings(data_dir),
        *_size_findings(data_dir),
        *_missed_compression_findings(data_dir),
        *_agent_findings(home),
    ]


def _agent_findings(home: Path) -> list[Finding]:
    """Codex and Gemini CLI, for each one `codeoid install --agent` was run for: is everything still registered."""
    from codeoid.setup import agents

    try:
        recorded = agents.recorded_agents()
    except InstallError as error:
        return [Finding("fail", str(error))]
    findings = []
    for agent in recorded:
        try:
            missing = agents.installed(agent, home)
        except InstallError as error:
            findings.append(Finding("fail", str(error)))
            continue
        if missing:
            findings.append(Finding("fail", f"codeoid is installed in {agent} but {', '.join(missing)} is gone: run "
                                            f"`codeoid install --agent {agent}` again."))
        else:
            findings.append(Finding("ok", f"codeoid's hooks and MCP server are registered in {agent}; its sessions "
                                          "are captured live."))
    return findings


def _rule_file_findings(home: Path, project: Path) -> list[Finding]:
    """A user or project rule file that cannot be used is skipped whole by codeoid-compress: name it, with its
    line. Read afresh, without the rule cache."""
    from codeoid.compressors.loader import load_rules

    config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    rules = load_rules(project_dir=project, user_dir=Path(config) / "codeoid" / "rules")
    return [Finding("fail", f"Rule file {error} — codeoid skips this file (the built-in rules and your other "
                            "rules still apply): fix it, then run `codeoid doctor` again.")
            for error in rules.errors]


def _route_findings(files: ClaudeFiles, project: Path, data_dir: Path) -> list[Finding]:
    """Which install route is active, and whether what it registered can run."""
    findings: list[Finding] = []
    manifest = manifest_path(data_dir)
    records: list[InstallRecord] = []
    sightings: list[PluginSighting] = []
    try:
        records = load_records(manifest)
        sightings = find_plugin_route(files, project)
    except InstallError as error:
        findings.append(Finding("fail", str(error)))
    unrecorded = _unrecorded_settings(files, project, records)
    for path in unrecorded:
        findings.append(
            Finding(
                "warn",
                f"{path} has codeoid hooks, but no install is recorded in {manifest} (was CODEOID_HOME different at "
                "install time?): run `codeoid install` again so uninstall knows what to remove.",
            )
        )
    if sightings and (records or unrecorded):
        plugin = "; ".join(sighting.sentence() for sighting in sightings)
        findings.append(
            Finding(
                "fail",
                f"Two install routes are active at once, `codeoid install` and {plugin}: every event is stored "
                "twice. Keep one: `codeoid uninstall`, or remove the plugin with `claude plugin uninstall`.",
            )
        )
    elif sightings:
        plugin = "; ".join(sighting.sentence() for sighting in sightings)
        findings.append(
            Finding(
                "ok", f"codeoid runs as a Claude Code plugin ({plugin}); its tools are mcp__plugin_codeoid_codeoid__*."
            )
        )
    elif not records and not unrecorded:
        findings.append(
            Finding("fail", "codeoid is not installed: run `codeoid install` (or install the codeoid plugin).")
        )
    for record in records:
        where = "user scope" if record.scope == "user" else f"project scope for {record.project}"
        findings.append(
            Finding(
                "info",
                f"Installed at {where}: hooks and allow rule in {record.settings_file}, "
                f"MCP server in {record.mcp_file}.",
            )
        )
        findings.extend(_hook_findings(Path(record.settings_file), data_dir))
        findings.extend(_server_findings(record))
    if records or unrecorded:
        findings.extend(_shadow_findings(files, project, records))
    return findings


def _shadow_findings(files: ClaudeFiles, project: Path, records: list[InstallRecord]) -> list[Finding]:
    """A server of codeoid's name that Claude Code would load instead of codeoid's in this folder.

    A project-scope install of this very project puts codeoid's own server in the local scope, which nothing
    outranks; any other install is hidden by a same-named local or `.mcp.json` server that is not codeoid's.
    """
    shadows = find_shadowing_servers(files, project, MCP_SERVER_NAME, is_codeoid_server)
    if not shadows:
        if any(record.scope == "user" for record in records):
            return [Finding("ok", f"No project or local MCP server named {MCP_SERVER_NAME!r} hides codeoid's in "
                                  f"{project}.")]
        return []
    return [Finding("fail", shadow.sentence(MCP_SERVER_NAME)) for shadow in shadows]


def _unrecorded_settings(files: ClaudeFiles, project: Path, records: list[InstallRecord]) -> list[Path]:
    """Settings files that carry codeoid hooks no install record accounts for."""
    recorded = {Path(record.settings_file) for record in records}
    found = []
    for path in (files.user_settings, project_local_settings(project)):
        if path in recorded:
            continue
        try:
            settings = load_object(path) or {}
        except InstallError:
            continue  # unreadable settings are reported where they are recorded; here they prove nothing
        if _codeoid_handlers(settings):
            found.append(path)
    return found


def _codeoid_handlers(settings: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(event, group, handler) for every codeoid handler in a settings object."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [
        (event, group, handler)
        for event, groups in hooks.items()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for handler in group["hooks"]
        if is_codeoid_handler(handler)
    ]


def _hook_findings(path: Path, data_dir: Path) -> list[Finding]:
    """Every event of the table registered once, matching the table, running an executable that exists."""
    try:
        settings = load_object(path)
    except InstallError as error:
        return [Finding("fail", str(error))]
    if settings is None:
        return [Finding("fail", f"{path} is gone, and codeoid's hooks with it: run `codeoid install` again.")]
    findings: list[Finding] = []
    if settings.get("disableAllHooks") is True:
        findings.append(
            Finding("fail", f"{path} sets disableAllHooks: no hook runs, codeoid's included; remove that setting.")
        )
    handlers = _codeoid_handlers(settings)
    by_event = {registration.event: registration for registration in HOOK_TABLE}
    for registration in HOOK_TABLE:
        if not any(event == registration.event for event, _, _ in handlers):
            findings.append(
                Finding(
                    "fail",
                    f"No codeoid hook is registered for {registration.event} in {path}, so those events are not "
                    "stored: run `codeoid install` to restore it.",
                )
            )
    for event, group, handler in handlers:
        command = parse_command(handler["command"])
        expected = by_event.get(event)
        if expected is None:
            findings.append(
                Finding(
                    "warn", f"{path} runs codeoid for {event}, which codeoid no longer uses: run `codeoid install`."
                )
            )
        elif group.get("matcher") != expected.matcher or handler.get("timeout") != expected.timeout:
            findings.append(
                Finding(
                    "warn",
                    f"The {event} hook in {path} has a matcher or timeout other than codeoid's "
                    f"({expected.matcher!r}, {expected.timeout} s): run `codeoid install` to refresh it.",
                )
            )
        if not _is_executable(command.executable):
            findings.append(
                Finding(
                    "fail",
                    f"The {event} hook in {path} runs {command.executable}, which does not exist or cannot be run "
                    "(did the virtualenv move?): run `codeoid install` from the environment codeoid lives in.",
                )
            )
        pinned = command.environment.get("CODEOID_HOME")
        if pinned and Path(pinned).expanduser().absolute() != data_dir:
            findings.append(
                Finding(
                    "warn",
                    f"The {event} hook in {path} keeps its data in {pinned} (CODEOID_HOME at install time), but "
                    f"this report looked at {data_dir}: run doctor with CODEOID_HOME={pinned}, or install again.",
                )
            )
    if not findings:
        executable = parse_command(handlers[0][2]["command"]).executable
        findings.append(Finding("ok", f"All {len(HOOK_TABLE)} hooks are registered in {path} and run {executable}."))
    permissions = settings.get("permissions")
    allow = permissions.get("allow") if isinstance(permissions, dict) else None
    if not (isinstance(allow, list) and ALLOW_RULE in allow):
        findings.append(
            Finding(
                "warn",
                f"{ALLOW_RULE} is not in permissions.allow of {path}: every codeoid tool call will ask for "
                "permission; run `codeoid install` to add it.",
            )
        )
    return findings


def _server_findings(record: InstallRecord) -> list[Finding]:
    """The `codeoid` MCP server is where the record says, always loaded, and its command exists."""
    path = Path(record.mcp_file)
    try:
        state = load_object(path) or {}
    except InstallError as error:
        return [Finding("fail", str(error))]
    container: Any = state
    if record.scope == "project":
        container = (state.get("projects") or {}).get(record.project) or {}
    servers = container.get("mcpServers") if isinstance(container, dict) else None
    entry = servers.get(MCP_SERVER_NAME) if isinstance(servers, dict) else None
    if not (isinstance(entry, dict) and is_codeoid_server(entry)):
        return [
            Finding(
                "fail",
                f"codeoid's MCP server is not registered in {path}, so the model has no recall tools: "
                "run `codeoid install` again.",
            )
        ]
    if not _is_executable(entry["command"]):
        return [
            Finding(
                "fail",
                f"codeoid's MCP server runs {entry['command']}, which does not exist or cannot be run: "
                "run `codeoid install` from the environment codeoid lives in.",
            )
        ]
    if entry.get("alwaysLoad") is not True:
        return [
            Finding(
                "warn",
                f"codeoid's MCP server in {path} lacks alwaysLoad, so its tools hide behind tool search: "
                "run `codeoid install` to refresh it.",
            )
        ]
    return [Finding("ok", f"The MCP server {MCP_SERVER_NAME} is registered in {path} and runs {entry['command']}.")]


def _version_findings() -> list[Finding]:
    """Versions of everything codeoid depends on, read without importing the heavy packages."""
    findings = [
        Finding(
            "info",
            f"codeoid {_package_version('codeoid') or 'unknown'} on Python "
            f"{platform.python_version()} ({sys.executable}).",
        )
    ]
    findings.append(_claude_version())
    for package in ("mcp", "chromadb"):
        version = _package_version(package)
        if version is None:
            findings.append(
                Finding(
                    "fail",
                    f"The {package} package is missing from this environment: reinstall codeoid (pip install codeoid).",
                )
            )
        else:
            findings.append(Finding("info", f"{package} {version}."))
    return findings


def _claude_version() -> Finding:
    executable = shutil.which("claude")
    if executable is None:
        return Finding(
            "warn", "The claude CLI is not on PATH: install Claude Code (npm install -g @anthropic-ai/claude-code)."
        )
    try:
        result = subprocess.run(
            [executable, "--version"],
            capture_output=True,
            text=True,
            timeout=CLAUDE_VERSION_TIMEOUT,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return Finding("warn", f"`{executable} --version` failed ({error}): check that Claude Code runs.")
    return Finding("info", f"Claude Code {result.stdout.strip()} ({executable}).")


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _permission_findings(data_dir: Path) -> list[Finding]:
    """Directories 0700 and files 0600 everywhere under the data dir: it holds every command and output."""
    if not data_dir.exists():
        return [Finding("info", f"The data dir {data_dir} does not exist yet; the first hook creates it.")]
    wrong = [
        f"{path} ({mode:04o}, should be {wanted:04o})"
        for path, mode, wanted in _modes_under(data_dir)
        if mode != wanted
    ]
    if not wrong:
        return [Finding("ok", f"The data dir {data_dir} is private: directories 0700, files 0600.")]
    named = ", ".join(wrong[:MAX_NAMED]) + (f" and {len(wrong) - MAX_NAMED} more" if len(wrong) > MAX_NAMED else "")
    return [
        Finding(
            "fail",
            f"{len(wrong)} path(s) under the data dir are readable by others: {named}. "
            f"Fix them with `chmod -R go-rwx {data_dir}`.",
        )
    ]


def _modes_under(root: Path) -> list[tuple[Path, int, int]]:
    """(path, mode, wanted mode) for the root and every directory and regular file below it."""
    found = [(root, stat.S_IMODE(root.stat().st_mode), DIR_MODE)]
    for directory, subdirectories, files in os.walk(root):
        for name in subdirectories:
            path = Path(directory, name)
            status = path.lstat()
            if stat.S_ISDIR(status.st_mode):
                found.append((path, stat.S_IMODE(status.st_mode), DIR_MODE))
        for name in files:
            path = Path(directory, name)
            status = path.lstat()
            if stat.S_ISREG(status.st_mode):
                found.append((path, stat.S_IMODE(status.st_mode), FILE_MODE))
    return found


def _size_findings(data_dir: Path) -> list[Finding]:
    """What the data dir holds, by kind, against its disk budget (`codeoid gc` brings it under)."""
    from codeoid.store import retention

    sizes = retention.file_sizes(str(data_dir))
    if not sizes:
        return []
    parts = {}
    database = data_dir / "store.db"
    if database.exists():
        try:
            with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
                parts = retention.store_breakdown(db)
        except sqlite3.Error:
            parts = {}
    total = sum(sizes.values())
    store = ", ".join(f"{name} {_mb(size)}" for name, size in sorted(parts.items(), key=lambda item: -item[1]))
    kinds = ", ".join(f"{kind} {_mb(size)}" for kind, size in sorted(sizes.items(), key=lambda item: -item[1]))
    try:
        budget = retention.disk_budget()
    except retention.RetentionConfigError as error:
        return [Finding("fail", f"The disk budget cannot be read: {error}.")]
    sentence = f"The data dir holds {_mb(total)} of a {_mb(budget)} budget: {kinds}" + (
        f" (store: {store})" if store else "") + "."
    if total > budget:
        return [Finding("warn", sentence + " Over budget: `codeoid gc --apply` brings it under.")]
    return [Finding("info", sentence)]


def _mb(size: int) -> str:
    return f"{size / 1024**2:,.1f} MB"


def _loss_findings(data_dir: Path) -> list[Finding]:
    """Events lost because not even the spool could be written (a full disk), as the loss ring counted them."""
    count, lines = loss_ring.losses(str(data_dir / "logs" / "lost.ring"))
    if not count:
        return [Finding("ok", "No event has been lost.")]
    return [Finding("fail", f"{count} event(s) were lost (not even the spool could take them: a full disk, or a hook "
                            f"killed while spooling); the last: {lines[-1] if lines else 'unknown'}. Free space "
                            f"under {data_dir} if the disk is full.")]


def _backlog_findings(data_dir: Path) -> list[Finding]:
    """Events waiting in the spool and databases moved aside as corrupt."""
    findings: list[Finding] = []
    spool_dir = data_dir / "spool"
    waiting = spool.backlog(str(spool_dir)) if spool_dir.is_dir() else 0
    if waiting:
        findings.append(
            Finding(
                "warn",
                f"{waiting} event(s) wait in the spool ({spool_dir}) because the database could not take them; the "
                "next write replays them. If the number keeps growing, the database is locked or the disk is full.",
            )
        )
    else:
        findings.append(Finding("ok", "No events wait in the spool."))
    unfinished = spool.orphans(str(spool_dir), now=float("inf")) if spool_dir.is_dir() else []
    if unfinished:
        findings.append(Finding(
            "warn", f"{len(unfinished)} unfinished spool write(s) ({_mb(sum(size for _, size in unfinished))}) were "
                    "left by hooks killed while spooling; no event waits in them. `codeoid gc --apply` sweeps those "
                    f"older than {spool.ORPHAN_GRACE_SECONDS // 60} minutes and counts each as a lost event."))
    quarantine = data_dir / "quarantine"
    names = sorted(entry.name for entry in quarantine.iterdir() if entry.is_file()) if quarantine.is_dir() else []
    databases = [name for name in names if name.endswith(".db")]
    others = [name for name in names if not name.endswith((".db", ".db-wal", ".db-shm", ".reason"))]
    if databases:
        findings.append(
            Finding(
                "warn",
                f"{len(databases)} corrupt database(s) were moved aside to {quarantine} ({', '.join(databases)}) "
                "and a fresh one started; their history is not searched. Keep them for recovery or delete them.",
            )
        )
    if others:
        findings.append(
            Finding(
                "warn",
                f"{len(others)} unreadable hook input(s) were kept in {quarantine}; "
                "look at them if events seem missing.",
            )
        )
    return findings


def _missed_compression_findings(data_dir: Path) -> list[Finding]:
    """A pointer to `codeoid discover` when much of the Bash output stored reached the window uncompressed."""
    database = data_dir / "store.db"
    if not database.is_file():
        return []
    from codeoid.store import ledger

    try:
        with closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=1)) as db:
            hint = ledger.missed_hint(*ledger.missed(db))
    except sqlite3.Error:
        return []  # a busy or damaged store is reported by the checks that own it
    return [Finding("info", hint)] if hint else []


def _is_executable(path: str | None) -> bool:
    return path is not None and os.path.isfile(path) and os.access(path, os.X_OK)
