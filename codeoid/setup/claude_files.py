"""Where Claude Code keeps the files codeoid's install routes touch, and whether the plugin route is active.

Install and doctor both need the same answers: which settings file a scope means, where `~/.claude.json` really
is (`CLAUDE_CONFIG_DIR` moves it together with `~/.claude`), and whether codeoid is also enabled as a plugin,
since the two routes at once would store every event twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeoid.setup.json_config import InstallError, load_object

PLUGIN_NAME = "codeoid"


@dataclass(frozen=True)
class ClaudeFiles:
    """Claude Code's own files for one home directory."""

    config_dir: Path
    global_state: Path

    @property
    def user_settings(self) -> Path:
        return self.config_dir / "settings.json"

    @property
    def installed_plugins(self) -> Path:
        return self.config_dir / "plugins" / "installed_plugins.json"


def locate_claude_files(home: Path) -> ClaudeFiles:
    """Claude Code's files for `home`, honouring `CLAUDE_CONFIG_DIR` as Claude Code does (2.1.332 puts both
    the settings and `.claude.json` inside it)."""
    override = os.environ.get("CLAUDE_CONFIG_DIR")
    if override:
        config_dir = Path(override).expanduser()
        return ClaudeFiles(config_dir=config_dir, global_state=config_dir / ".claude.json")
    return ClaudeFiles(config_dir=home / ".claude", global_state=home / ".claude.json")


def project_settings(project_dir: Path) -> Path:
    """The project's committed settings file."""
    return project_dir / ".claude" / "settings.json"


def project_local_settings(project_dir: Path) -> Path:
    """The project's personal, gitignored settings file: the right home for absolute paths on this machine."""
    return project_dir / ".claude" / "settings.local.json"


@dataclass(frozen=True)
class PluginSighting:
    """One piece of evidence that codeoid is active as a Claude Code plugin."""

    plugin_id: str
    source: Path
    reason: str

    def sentence(self) -> str:
        return f"the plugin {self.plugin_id} is {self.reason} in {self.source}"


def find_plugin_route(files: ClaudeFiles, project_dir: Path) -> list[PluginSighting]:
    """Every sign that codeoid is enabled as a plugin for `project_dir`.

    `enabledPlugins` in the user, project and local settings layers decides, the later layer winning as in
    Claude Code; a plugin that `installed_plugins.json` lists for this user or project without any
    `enabledPlugins` entry counts as enabled too. `--plugin-dir` leaves no trace on disk and cannot be seen here.
    """
    decided: dict[str, tuple[bool, Path]] = {}
    for path in (files.user_settings, project_settings(project_dir), project_local_settings(project_dir)):
        enabled = (load_object(path) or {}).get("enabledPlugins")
        if isinstance(enabled, dict):
            for plugin_id, value in enabled.items():
                if _is_codeoid(plugin_id):
                    decided[plugin_id] = (value is True, path)
    sightings = [
        PluginSighting(plugin_id, path, "enabled (enabledPlugins)") for plugin_id, (on, path) in decided.items() if on
    ]
    installed = (load_object(files.installed_plugins) or {}).get("plugins")
    if isinstance(installed, dict):
        for plugin_id, records in installed.items():
            if _is_codeoid(plugin_id) and plugin_id not in decided and _installed_here(records, project_dir):
                sightings.append(PluginSighting(plugin_id, files.installed_plugins, "installed"))
    return sightings


def _is_codeoid(plugin_id: object) -> bool:
    return isinstance(plugin_id, str) and plugin_id.partition("@")[0] == PLUGIN_NAME


def _installed_here(records: Any, project_dir: Path) -> bool:
    """Whether an `installed_plugins.json` entry (a list of per-scope records in version 2, one record in
    version 1) covers this user or this project: records for other projects carry their `projectPath`."""
    if isinstance(records, dict):
        records = [records]
    if not isinstance(records, list):
        return True  # a shape this code does not know: listed is listed
    for record in records:
        if not isinstance(record, dict):
            continue
        project = record.get("projectPath")
        if project is None or Path(project) == project_dir:
            return True
    return False


def claude_project_root(directory: Path) -> Path:
    """The folder Claude Code keys a session's local-scope settings by when started in `directory`: the root of
    the git work tree holding it (measured on 2.1.332: a local-scope server keyed at the root applies in every
    subfolder, one keyed at a subfolder nowhere), else the folder itself."""
    for folder in (directory, *directory.parents):
        if (folder / ".git").exists():
            return folder
    return directory


@dataclass(frozen=True)
class ShadowingServer:
    """An MCP server named like codeoid's that Claude Code would load instead of it in some folder."""

    scope: str  # "local" (~/.claude.json projects[...]) or "project" (a .mcp.json)
    source: Path
    root: Path
    command: str

    def sentence(self, server: str) -> str:
        if self.scope == "local":
            return (f"{self.source} has a local-scope MCP server named {server!r} for {self.root} (it runs "
                    f"{self.command or 'no command'}), which Claude Code loads there instead of codeoid's, so the "
                    f"model has no memory tools in that project: remove it with `claude mcp remove -s local {server}` "
                    f"run in {self.root}.")
        return (f"{self.source} declares a project-scope MCP server named {server!r} (it runs "
                f"{self.command or 'no command'}), which Claude Code loads in {self.root} and every folder below "
                f"it instead of codeoid's, so the model has no memory tools there: rename or remove it in that file, "
                f"or keep it out of your sessions with \"disabledMcpjsonServers\": [\"{server}\"] in "
                f"{project_local_settings(self.root)}.")


def find_shadowing_servers(files: ClaudeFiles, directory: Path, name: str, is_ours: Any) -> list[ShadowingServer]:
    """Servers called `name` that are not codeoid's (`is_ours(entry)` says which are) and that Claude Code would
    load instead of a user-scope `name` in a session started in `directory`.

    Claude Code 2.1.332 takes a same-named server from the local scope first, then from a `.mcp.json` in the
    folder or any folder above it (approved or not, and even under `-p`), then from the user scope; a `.mcp.json`
    server listed in `disabledMcpjsonServers` is not loaded (all measured with the real CLI).
    """
    root = claude_project_root(directory)
    found = []
    projects = (_load_quietly(files.global_state) or {}).get("projects")
    local = projects.get(str(root)) if isinstance(projects, dict) else None
    servers = local.get("mcpServers") if isinstance(local, dict) else None
    entry = servers.get(name) if isinstance(servers, dict) else None
    if entry is not None and not is_ours(entry):
        found.append(ShadowingServer("local", files.global_state, root, _command_of(entry)))
    disabled: set[str] = set()
    for path in (files.user_settings, project_settings(root), project_local_settings(root)):
        listed = (_load_quietly(path) or {}).get("disabledMcpjsonServers")
        if isinstance(listed, list):
            disabled.update(item for item in listed if isinstance(item, str))
    if name in disabled:
        return found
    for folder in (directory, *directory.parents):
        declared = (_load_quietly(folder / ".mcp.json") or {}).get("mcpServers")
        entry = declared.get(name) if isinstance(declared, dict) else None
        if entry is not None:
            if not is_ours(entry):
                found.append(ShadowingServer("project", folder / ".mcp.json", folder, _command_of(entry)))
            break  # the nearest file declaring the name is the one that counts
    return found


def _command_of(entry: object) -> str:
    """The command line a server entry runs (or its URL), for a sentence."""
    if not isinstance(entry, dict):
        return ""
    args = entry.get("args")
    args = args if isinstance(args, list) else []
    words = [word for word in [entry.get("command"), *args] if isinstance(word, str) and word]
    return " ".join(words) or str(entry.get("url") or "")


def _load_quietly(path: Path) -> dict[str, Any] | None:
    """A JSON object, or None for a missing or unreadable file: a file that cannot be read loads no server."""
    try:
        return load_object(path)
    except InstallError:
        return None
