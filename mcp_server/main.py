"""`codeoid-mcp`: the stdio MCP server Claude Code starts once per session, serving memory back to the model.

Claude Code starts it in the project directory (and passes `CLAUDE_PROJECT_DIR`); that directory's
workspace is the one every tool answers for. Start-up does no store work and loads nothing heavy, so
`initialize` and `tools/list` are answered within Claude Code's start-up wait.
"""

from __future__ import annotations

import os
import threading

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from codeoid.mcp_server.tools import MemoryTools
from codeoid.memory.ranking import vector_enabled

INSTRUCTIONS = (
    "codeoid keeps every turn of this workspace's Claude Code sessions verbatim, including turns that have left "
    "your context window. Two steps: recall(query) answers with a short ranked list of hits, each naming its "
    "episode and showing only the numbered lines that matched; get_episode(id, lines=\"82-120\") then returns "
    "exactly the lines you need (a compressed command's raw output too), the whole episode only without lines. "
    "recall_file(path, lines) returns the last read of a file and whether it changed since; timeline() lists the "
    "history."
)
INDEXER_DELAY_SECONDS = 2.0
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def build_server(project_dir: str) -> MCPServer:
    tools = MemoryTools(project_dir)
    server: MCPServer = MCPServer("codeoid", instructions=INSTRUCTIONS, log_level="WARNING")
    for tool, title in ((tools.recall, "Recall past episodes"), (tools.recall_file, "Recall a file read"),
                        (tools.timeline, "Workspace timeline"), (tools.get_episode, "Get one episode")):
        server.add_tool(tool, title=title, annotations=READ_ONLY, structured_output=False)
    return server


def main() -> None:
    project_dir = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    server = build_server(project_dir)
    if vector_enabled():
        _start_indexer()
    _start_index_builder(project_dir)
    server.run("stdio")


def _start_indexer() -> None:
    """The vector indexer on a daemon thread, imported there too: chromadb and the model take most of a second
    to import, and `initialize` and `tools/list` must not wait for them."""

    def run() -> None:
        stop = threading.Event()
        if stop.wait(INDEXER_DELAY_SECONDS):
            return
        from codeoid.memory.indexer import run_forever

        run_forever(stop, delay=0)

    threading.Thread(target=run, name="codeoid-indexer", daemon=True).start()


def _start_index_builder(project_dir: str) -> None:
    """The workspace index builder on a daemon thread; hooks inject what it saves (`codeoid.memory.index_builder`)."""

    def run() -> None:
        from codeoid.memory.index_builder import run_forever

        run_forever(threading.Event(), project_dir, delay=INDEXER_DELAY_SECONDS)

    threading.Thread(target=run, name="codeoid-workspace-index", daemon=True).start()
