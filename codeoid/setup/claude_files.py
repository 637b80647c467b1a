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

from codeoid.setup.json_config import load_object

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
