"""`codeoid install` and `codeoid uninstall`: the settings-file route into Claude Code.

Install writes codeoid's hooks (`hook_table.HOOK_TABLE`) and the `mcp__codeoid` allow rule into a settings file,
and the `codeoid` MCP server into `~/.claude.json`, editing the JSON directly rather than through `claude mcp add`
so that uninstall can put every file back exactly as it was. Only entries that run codeoid's own executables are
ever touched; everything else in those files is the user's and other tools'.

Scopes:
- `user`: hooks and allow rule in `~/.claude/settings.json`; server in `~/.claude.json` `mcpServers`.
- `project`: hooks and allow rule in `<project>/.claude/settings.local.json` (personal and gitignored, because
  the commands are absolute paths on this machine); server in `~/.claude.json` `projects[<project>].mcpServers`.

A file that did not exist before codeoid's first install is deleted again by uninstall when nothing but codeoid's
entries was ever in it, and kept (minus codeoid's entries) when someone else has written to it since, so "before"
and "after" agree whether the file was absent or present. Directories codeoid had to create for such a file are
removed again when empty.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from codeoid import paths
from codeoid.capture import loss_ring
from codeoid.setup.claude_files import (
    ClaudeFiles,
    find_plugin_route,
    find_shadowing_servers,
    locate_claude_files,
    project_local_settings,
)
from codeoid.setup.hook_table import (
    ALLOW_RULE,
    CODEOID_PROGRAMS,
    HOOK_EXECUTABLE,
    HOOK_TABLE,
    MCP_EXECUTABLE,
    MCP_SERVER_NAME,
    hook_command,
    hook_group,
    hook_handler,
    installed_executable,
    is_codeoid_handler,
    is_codeoid_server,
    parse_command,
)
from codeoid.setup.install_manifest import InstallRecord, KeyPath, load_records, manifest_path, save_records
from codeoid.setup.json_config import InstallError, back_up, load_object, write_atomic
from codeoid.setup.slash_commands import install_commands, remove_commands

__all__ = ["InstallError", "Outcome", "Scope", "install", "uninstall"]

Scope = Literal["user", "project"]
FILE_ITSELF: KeyPath = ()


@dataclass
class Outcome:
    """What an install or uninstall did, for the CLI to print."""

    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Target:
    """Where one scope puts its hooks and its MCP server."""

    settings: Path
    mcp_keys: KeyPath


def install(
    scope: Scope = "user",
    home: Path | None = None,
    project_dir: Path | None = None,
    *,
    force: bool = False,
    bin_dir: Path | None = None,
) -> Outcome:
    """Register codeoid's hooks, allow rule and MCP server for `scope`; running it again changes nothing, or
    refreshes codeoid's entries when they are stale (a venv that moved, a changed hook table).

    Refuses while codeoid is enabled as a plugin, unless `force`. `bin_dir` is where codeoid's executables live,
    by default beside the running interpreter.
    """
    home, project = _resolve(home, project_dir)
    files = locate_claude_files(home)
    outcome = Outcome()
    sightings = find_plugin_route(files, project)
    if sightings:
        found = "; ".join(sighting.sentence() for sighting in sightings)
        if not force:
            raise InstallError(
                f"codeoid is already active as a Claude Code plugin: {found}. Both routes at once would store "
                "every event twice: remove the plugin (`claude plugin uninstall codeoid@<marketplace>`) or disable "
                "it, then run again (or pass --force to install anyway)."
            )
        outcome.notes.append(f"Installed although {found}: every event will be stored twice until one goes.")
    hook_exe, mcp_exe = _executables(bin_dir)
    codeoid_home = os.environ.get("CODEOID_HOME") or None
    target = _target(scope, files, project)

    settings = _Document(target.settings)
    _register_hooks(settings, hook_exe, codeoid_home)
    allow_added = _add_allow_rule(settings)
    _add_status_line(settings, os.path.join(os.path.dirname(hook_exe), "codeoid"), codeoid_home)
    commands_dir = _commands_dir(scope, files, project)
    state = _Document(files.global_state)
    _register_mcp_server(state, target.mcp_keys, mcp_exe, codeoid_home)

    manifest = manifest_path(Path(paths.data_dir()))
    loss_ring.ensure_ring()  # set aside now, while there is room: it counts what a full disk loses
    records = load_records(manifest)
    previous = _take_record(records, scope, project)
    records.append(
        InstallRecord(
            scope=scope,
            project=str(project) if scope == "project" else None,
            settings_file=str(settings.path),
            mcp_file=str(state.path),
            allow_rule_added=allow_added or (previous is not None and previous.allow_rule_added),
            created={
                str(document.path): sorted(document.created_now() | _previously_created(previous, document.path))
                for document in (settings, state)
            },
            created_dirs=_merge_dirs(previous, missing_dirs(settings.path.parent), missing_dirs(state.path.parent),
                                     missing_dirs(commands_dir)),
        )
    )
    # The record goes first: if a write below fails, uninstall still knows what codeoid may have added.
    save_records(manifest, records)
    for document in (settings, state):
        document.save(outcome, may_delete=False)
    outcome.written.extend(install_commands(commands_dir, os.path.join(os.path.dirname(hook_exe), "codeoid")))
    if scope == "user":
        outcome.notes.extend(shadow.sentence(MCP_SERVER_NAME)
                             for shadow in find_shadowing_servers(files, project, MCP_SERVER_NAME, is_codeoid_server))
    if outcome.written:
        outcome.notes.append("Restart running Claude Code sessions: they read hooks and MCP servers at start-up.")
    return outcome


def uninstall(scope: Scope = "user", home: Path | None = None, project_dir: Path | None = None) -> Outcome:
    """Remove what `install` added for `scope`, and only that; running it again changes nothing.

    Without an install record (the data dir was deleted, or `CODEOID_HOME` differs from install time) codeoid's
    hooks, server and status line are still removed by their commands, but the allow rule stays, since nothing
    says codeoid added it.
    """
    home, project = _resolve(home, project_dir)
    files = locate_claude_files(home)
    target = _target(scope, files, project)
    manifest = manifest_path(Path(paths.data_dir_location()))
    records = load_records(manifest)
    record = _take_record(records, scope, project)
    outcome = Outcome()

    settings = _Document(Path(record.settings_file) if record else target.settings)
    _unregister_hooks(settings)
    _remove_status_line(settings)
    if record is not None and record.allow_rule_added:
        _remove_allow_rule(settings)
    state = _Document(Path(record.mcp_file) if record else files.global_state)
    _unregister_mcp_server(state, target.mcp_keys)

    for document in (settings, state):
        created = record.created_in(document.path) if record else set()
        document.prune(created)
        document.save(outcome, may_delete=FILE_ITSELF in created)
    outcome.removed.extend(remove_commands(_commands_dir(scope, files, project)))
    for directory in map(Path, record.created_dirs if record else []):
        _remove_if_empty(directory, outcome)
    save_records(manifest, records)
    if record is None and outcome.written:
        outcome.notes.append(
            f"No {scope}-scope install is recorded in {manifest}: removed codeoid's entries found by their "
            f"commands and left any `{ALLOW_RULE}` allow rule in place."
        )
    return outcome


def recorded_installs() -> list[InstallRecord]:
    """Every Claude Code install the manifest still records for this data dir."""
    return load_records(manifest_path(Path(paths.data_dir_location())))


def other_routes_note(home: Path | None = None, project_dir: Path | None = None) -> list[str]:
    """What uninstall leaves because it is another route's: the codeoid plugin, if Claude Code has it."""
    home, project = _resolve(home, project_dir)
    try:
        sightings = find_plugin_route(locate_claude_files(home), project)
    except InstallError:
        return []
    return [f"codeoid is also a Claude Code plugin here ({sighting.sentence()}): remove it with "
            f"`claude plugin uninstall {sighting.plugin_id}`." for sighting in sightings]


class _Document:
    """One JSON config file under edit: what it held, the edited copy, and the key paths codeoid created in it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        loaded = load_object(path)
        self.existed = loaded is not None
        self.original: dict[str, Any] = loaded or {}
        self.data = copy.deepcopy(self.original)
        self._created: set[KeyPath] = set()

    def created_now(self) -> set[KeyPath]:
        """What this edit brought into being, the file itself included."""
        return self._created | (set() if self.existed else {FILE_ITSELF})

    def ensure(self, keys: KeyPath, kind: type[dict[str, Any]] | type[list[Any]]) -> Any:
        """The container at `keys` (an object, or `kind` for the last key), creating what is missing."""
        node: Any = self.data
        for depth, key in enumerate(keys):
            wanted = kind if depth == len(keys) - 1 else dict
            if key not in node:
                node[key] = wanted()
                self._created.add(keys[: depth + 1])
            node = node[key]
            if not isinstance(node, wanted):
                shape = "an object" if wanted is dict else "an array"
                raise InstallError(
                    f"In {self.path}, {'.'.join(keys[: depth + 1])} should be {shape} but is not; "
                    "fix it by hand, then run again."
                )
        return node

    def find(self, keys: KeyPath) -> Any:
        """The value at `keys`, or None where a key is missing or a step is not an object."""
        node: Any = self.data
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node

    def prune(self, created: set[KeyPath]) -> None:
        """Drop the containers codeoid created that are empty again, deepest first."""
        for keys in sorted(created, key=len, reverse=True):
            parent = self.find(keys[:-1]) if keys else None
            if isinstance(parent, dict) and parent.get(keys[-1], None) in ({}, []):
                del parent[keys[-1]]

    def save(self, outcome: Outcome, *, may_delete: bool) -> None:
        """Write the edit if it changed anything, after a backup; delete the file instead when `may_delete` and
        nothing is left in it (it held only codeoid's entries, so there is nothing to back up)."""
        if self.data == self.original:
            return
        if may_delete and not self.data:
            self.path.unlink()
            outcome.removed.append(self.path)
            return
        if self.existed:
            outcome.backups.append(back_up(self.path))
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, self.data)
        outcome.written.append(self.path)


def _register_hooks(settings: _Document, executable: str, codeoid_home: str | None) -> None:
    """Put exactly one current codeoid handler on every event of the table, where the last one stood, and take
    codeoid's handlers off events the table no longer has."""
    hooks = settings.ensure(("hooks",), dict)
    registrations = {registration.event: registration for registration in HOOK_TABLE}
    for event in [*hooks, *(event for event in registrations if event not in hooks)]:
        registration = registrations.get(event)
        groups = settings.ensure(("hooks", event), list) if registration else hooks[event]
        if not isinstance(groups, list):
            continue
        kept, position = _without_codeoid_handlers(groups)
        if registration is not None:
            group = hook_group(hook_handler(executable, registration, codeoid_home), registration)
            kept.insert(len(kept) if position is None else position, group)
        groups[:] = kept


def _unregister_hooks(settings: _Document) -> None:
    hooks = settings.find(("hooks",))
    if not isinstance(hooks, dict):
        return
    for groups in hooks.values():
        if isinstance(groups, list):
            groups[:] = _without_codeoid_handlers(groups)[0]


def _without_codeoid_handlers(groups: list[Any]) -> tuple[list[Any], int | None]:
    """The groups minus codeoid's handlers (a group left empty by that goes too), and the index where the first
    group that went stood, so a refresh puts codeoid's group back in the same place."""
    kept: list[Any] = []
    position = None
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list):
            kept.append(group)
            continue
        others = [handler for handler in handlers if not is_codeoid_handler(handler)]
        if len(others) == len(handlers):
            kept.append(group)
        elif others:
            kept.append({**group, "hooks": others})
        elif position is None:
            position = len(kept)
    return kept, position


def _add_allow_rule(settings: _Document) -> bool:
    """Pre-allow every codeoid tool; True when the rule was not there yet."""
    allow = settings.ensure(("permissions", "allow"), list)
    if ALLOW_RULE in allow:
        return False
    allow.append(ALLOW_RULE)
    return True


def _remove_allow_rule(settings: _Document) -> None:
    allow = settings.find(("permissions", "allow"))
    if isinstance(allow, list) and ALLOW_RULE in allow:
        allow.remove(ALLOW_RULE)


def _add_status_line(settings: _Document, codeoid_exe: str, codeoid_home: str | None) -> None:
    """Occupancy and the rotation counter under the prompt, but only where the user has no status line: theirs
    is never replaced (under `codeoid run` the supervisor chains codeoid's after it instead)."""
    if "statusLine" in settings.data:
        return
    command = hook_command(codeoid_exe, "statusline", codeoid_home)
    settings.data["statusLine"] = {"type": "command", "command": command}


def _commands_dir(scope: str, files: ClaudeFiles, project: Path) -> Path:
    """Where Claude Code finds the scope's slash commands: `/rotate`, `/recall` and `/gain` go there."""
    return files.config_dir / "commands" if scope == "user" else project / ".claude" / "commands"


def _remove_status_line(settings: _Document) -> None:
    """A status line is codeoid's to remove only when it runs one of codeoid's programs."""
    status_line = settings.data.get("statusLine")
    command = status_line.get("command") if isinstance(status_line, dict) else None
    if isinstance(command, str) and parse_command(command).program in CODEOID_PROGRAMS:
        del settings.data["statusLine"]


def _register_mcp_server(state: _Document, keys: KeyPath, executable: str, codeoid_home: str | None) -> None:
    servers = state.ensure(keys, dict)
    existing = servers.get(MCP_SERVER_NAME)
    if existing is not None and not is_codeoid_server(existing):
        raise InstallError(
            f"{state.path} already has an MCP server named {MCP_SERVER_NAME!r} that does not run {MCP_EXECUTABLE}; "
            "rename or remove it (`claude mcp remove codeoid`), then run again."
        )
    servers[MCP_SERVER_NAME] = {
        "type": "stdio",
        "command": executable,
        "args": [],
        "env": {"CODEOID_HOME": codeoid_home} if codeoid_home else {},
        # Without it Claude Code defers MCP tools behind tool search and the model does not see recall at all.
        "alwaysLoad": True,
    }


def _unregister_mcp_server(state: _Document, keys: KeyPath) -> None:
    servers = state.find(keys)
    if isinstance(servers, dict) and is_codeoid_server(servers.get(MCP_SERVER_NAME)):
        del servers[MCP_SERVER_NAME]


def _resolve(home: Path | None, project_dir: Path | None) -> tuple[Path, Path]:
    """Absolute home and project paths; the project is resolved because Claude Code keys `~/.claude.json`
    `projects` by the real path of its working directory."""
    return (home or Path.home()).absolute(), (project_dir or Path.cwd()).resolve()


def _target(scope: str, files: ClaudeFiles, project: Path) -> _Target:
    if scope == "user":
        return _Target(files.user_settings, ("mcpServers",))
    if scope == "project":
        return _Target(project_local_settings(project), ("projects", str(project), "mcpServers"))
    raise InstallError(f"Unknown scope {scope!r}: use 'user' or 'project'.")


def _executables(bin_dir: Path | None) -> tuple[str, str]:
    """codeoid-hook and codeoid-mcp by absolute path, checked now rather than at the first hook."""
    found = []
    for name in (HOOK_EXECUTABLE, MCP_EXECUTABLE):
        path = (bin_dir / name) if bin_dir else Path(installed_executable(name))
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise InstallError(
                f"{path} is missing or not executable: install the codeoid package into this Python environment "
                "(`pip install codeoid`, or `pip install -e .` in a checkout) and run `codeoid install` from it."
            )
        found.append(str(path.absolute()))
    return found[0], found[1]


def _take_record(records: list[InstallRecord], scope: str, project: Path) -> InstallRecord | None:
    """Remove and return the record of this scope (and project, for project scope)."""
    wanted = str(project) if scope == "project" else None
    for record in records:
        if record.scope == scope and record.project == wanted:
            records.remove(record)
            return record
    return None


def _previously_created(previous: InstallRecord | None, path: Path) -> set[KeyPath]:
    return previous.created_in(path) if previous else set()


def missing_dirs(directory: Path) -> list[Path]:
    """The directories that must be created for `directory` to exist, deepest first."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    return missing


def _merge_dirs(previous: InstallRecord | None, *missing: list[Path]) -> list[str]:
    """Directories codeoid created over all its installs, deepest first so removal can go in order."""
    names = set(previous.created_dirs if previous else []) | {str(path) for group in missing for path in group}
    return sorted(names, key=lambda name: len(Path(name).parts), reverse=True)


def _remove_if_empty(directory: Path, outcome: Outcome) -> None:
    try:
        directory.rmdir()
    except OSError:
        return  # not empty (or already gone): something else lives there now
    outcome.removed.append(directory)
