"""How codeoid reaches the backing `claude`: which install route is active, and what that means for the seed.

The seed names the memory tools by the names the model actually has: `mcp__codeoid__*` for the settings route,
`mcp__plugin_codeoid_codeoid__*` for the plugin route. With neither installed, the supervisor wires codeoid in for
its own sessions only (hooks and the allow rule in its `--settings` layer, the server through `--mcp-config`),
which is the settings route's shape, so the tools keep the settings route's names. Never both routes at once:
an active plugin is left to do the work.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from codeoid.memory_tools import PLUGIN_TOOL_PREFIX, SETTINGS_TOOL_PREFIX
from codeoid.rotation.claude_args import ClaudeArgs
from codeoid.setup.claude_files import find_plugin_route, locate_claude_files, project_local_settings, project_settings
from codeoid.setup.hook_table import (
    ALLOW_RULE,
    HOOK_EXECUTABLE,
    HOOK_TABLE,
    MCP_EXECUTABLE,
    MCP_SERVER_NAME,
    hook_group,
    hook_handler,
    installed_executable,
    is_codeoid_handler,
)
from codeoid.setup.json_config import InstallError, load_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Wiring:
    route: str  # "settings", "plugin", or "supervisor" (wired in by codeoid run for its own sessions)
    tool_prefix: str
    settings: dict[str, Any] = field(default_factory=dict)
    extra_args: tuple[str, ...] = ()


def detect_wiring(user: ClaudeArgs, project: Path, home: Path | None = None) -> Wiring:
    files = locate_claude_files((home or Path.home()).absolute())
    if _plugin_dir_is_codeoid(user) or _sightings(files, project):
        return Wiring("plugin", PLUGIN_TOOL_PREFIX)
    layers = [files.user_settings, project_settings(project), project_local_settings(project)]
    if any(_has_codeoid_hooks(path) for path in layers):
        return Wiring("settings", SETTINGS_TOOL_PREFIX)
    return supervisor_wiring()


def supervisor_wiring() -> Wiring:
    """Hooks, allow rule and server for the supervisor's sessions, the same entries `codeoid install` writes."""
    hook_exe, mcp_exe = installed_executable(HOOK_EXECUTABLE), installed_executable(MCP_EXECUTABLE)
    home = os.environ.get("CODEOID_HOME") or None
    hooks = {registration.event: [hook_group(hook_handler(hook_exe, registration, home), registration)]
             for registration in HOOK_TABLE}
    server = {"type": "stdio", "command": mcp_exe, "args": [], "env": {"CODEOID_HOME": home} if home else {},
              "alwaysLoad": True}
    return Wiring(
        "supervisor",
        SETTINGS_TOOL_PREFIX,
        settings={"hooks": hooks, "permissions": {"allow": [ALLOW_RULE]}},
        extra_args=("--mcp-config", json.dumps({"mcpServers": {MCP_SERVER_NAME: server}})),
    )


def _sightings(files: Any, project: Path) -> bool:
    try:
        return bool(find_plugin_route(files, project))
    except InstallError:
        return False


def _plugin_dir_is_codeoid(user: ClaudeArgs) -> bool:
    for option in user.options:
        if option[0].partition("=")[0] != "--plugin-dir":
            continue
        directory = option[0].partition("=")[2] or (option[1] if len(option) > 1 else "")
        manifest = _load(Path(directory).expanduser() / ".claude-plugin" / "plugin.json")
        if manifest.get("name") == "codeoid":
            return True
    return False


def _has_codeoid_hooks(path: Path) -> bool:
    hooks = _load(path).get("hooks")
    if not isinstance(hooks, dict):
        return False
    return any(
        is_codeoid_handler(handler)
        for groups in hooks.values() if isinstance(groups, list)
        for group in groups if isinstance(group, dict)
        for handler in (group.get("hooks") or [])
    )


def _load(path: Path) -> dict[str, Any]:
    try:
        return load_object(path) or {}
    except InstallError:
        return {}
