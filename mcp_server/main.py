"""`codeoid-mcp`: the stdio MCP server Claude Code starts once per session, serving memory back to the model.

Claude Code starts it in the project directory (and passes `CLAUDE_PROJECT_DIR`); that directory's
workspace is the one every tool answers for. Start-up does no store work and loads nothing heavy, so
`initialize` and `tools/list` are answered within Claude Code's start-up wait.

It is thin: with semantic memory on, tool calls go to the one memory service of the data dir
(`codeoid.service`), which holds the model, the indexer and the workspace index builders for every session at
once; this process only keeps that service up while the session lasts. With `CODEOID_VECTOR=off` there is
nothing heavy to share, and the tools and the workspace index builder run here.
"""

from __future__ import annotations

import os
import threading

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from codeoid.log import log
from codeoid.mcp_server.forwarding import answered_here, forwarding
from codeoid.mcp_server.tools import MemoryTools
from codeoid.memory.ranking import vector_enabled
from codeoid.service import client, lifecycle

INSTRUCTIONS = (
    "codeoid keeps every turn of this workspace's Claude Code sessions verbatim, including turns that have left "
    "your context window. Two steps: recall(query) answers with a short ranked list of hits, each naming its "
    "episode and showing only the numbered lines that matched; get_episode(id, lines=\"82-120\") then returns "
    "exactly the lines you need (a compressed command's raw output too), the whole episode only without lines. "
    "recall_file(path, lines) returns the last read of a file and whether it changed since; timeline() lists the "
    "history."
)
INDEXER_DELAY_SECONDS = 2.0  # before the service or the workspace index builder is started
GC_INTERVAL_ENV = "CODEOID_GC_INTERVAL_SECONDS"
GC_INTERVAL_SECONDS = 3600.0
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def build_server(project_dir: str) -> MCPServer:
    tools = MemoryTools(project_dir)
    shared = vector_enabled()
    server: MCPServer = MCPServer("codeoid", instructions=INSTRUCTIONS, log_level="WARNING")
    for tool, title in ((tools.recall, "Recall past episodes"), (tools.recall_file, "Recall a file read"),
                        (tools.timeline, "Workspace timeline"), (tools.get_episode, "Get one episode")):
        server.add_tool(forwarding(tool, project_dir) if shared else answered_here(tool), title=title,
                        annotations=READ_ONLY, structured_output=False)
    return server


def main() -> None:
    project_dir = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    server = build_server(project_dir)
    if vector_enabled():
        _keep_service(project_dir)
    else:
        _start_index_builder(project_dir)
    _start_gc()
    server.run("stdio")


def _keep_service(project_dir: str) -> None:
    """While this session lasts, keep the memory service up (starting it again if it died) and building this
    workspace's index, so episodes are embedded as they arrive, not at the next recall. On a daemon thread, after
    `initialize` and `tools/list` had their turn."""

    def run() -> None:
        pause = threading.Event()
        if pause.wait(INDEXER_DELAY_SECONDS):
            return
        while True:
            try:
                client.attach(project_dir)
            except (client.ServiceUnavailable, RuntimeError) as error:
                log("mcp", f"memory service: {error}")
            pause.wait(min(30.0, lifecycle.idle_seconds() / 4))

    threading.Thread(target=run, name="codeoid-service-keeper", daemon=True).start()


def _start_index_builder(project_dir: str) -> None:
    """The workspace index builder on a daemon thread; hooks inject what it saves (`codeoid.memory.index_builder`)."""

    def run() -> None:
        from codeoid.memory.index_builder import run_forever

        run_forever(threading.Event(), project_dir, delay=INDEXER_DELAY_SECONDS)

    threading.Thread(target=run, name="codeoid-workspace-index", daemon=True).start()


def _start_gc() -> None:
    """Retention in the background: every `CODEOID_GC_INTERVAL_SECONDS` (an hour; 0 turns it off), the first pass
    a minute after start (or sooner with a shorter interval), the same as `codeoid gc --apply`."""
    try:
        interval = float(os.environ.get(GC_INTERVAL_ENV) or GC_INTERVAL_SECONDS)
    except ValueError:
        interval = GC_INTERVAL_SECONDS
    if interval <= 0:
        return

    def run() -> None:
        from codeoid import paths
        from codeoid.capture import spool
        from codeoid.log import log
        from codeoid.store import db as store_db
        from codeoid.store import retention

        stop = threading.Event()
        wait = min(interval, 60.0)
        while not stop.wait(wait):
            wait = interval
            try:
                swept = spool.sweep_orphans()
                if swept.removed or swept.rescued:
                    log("gc", f"background gc: {swept.removed} unfinished spool writes removed (counted lost), "
                              f"{swept.rescued} rescued for replay")
                db = store_db.connect()
                try:
                    outcome = retention.collect(db, paths.data_dir())
                finally:
                    db.close()
            except Exception as error:  # noqa: BLE001 - a failed pass must not take the server down; retried later
                log("gc", f"background gc failed: {error!r}")
                continue
            if outcome is not None:
                log("gc", f"background gc: {outcome.expired_raw} raw outputs expired, {outcome.swept_incomplete} "
                          f"incomplete swept, {outcome.removed_quarantine} quarantined files removed, "
                          f"{outcome.expired_vectors} episodes' vectors dropped; data dir now "
                          f"{outcome.used_after:,} bytes")

    threading.Thread(target=run, name="codeoid-gc", daemon=True).start()
