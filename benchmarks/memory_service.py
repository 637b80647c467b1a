"""What sessions cost with the shared memory service: RSS of one extra session's `codeoid-mcp`, of four concurrent
sessions' codeoid processes together, `codeoid search` warm, and the first `tools/list` after spawn.

Real processes throughout: `codeoid-mcp` over the SDK's stdio client, `codeoid search` as a subprocess, the
memory service and `chroma run` as codeoid starts them. The store is `recall_latency.py`'s (real source lines as
sessions, one synthetic vector per episode; queries are embedded by the real model). Run with the interpreter of
the installation to measure, so the same script measures a build without the service (then each server holds the
model itself and `codeoid search` loads it every time):

    .venv/bin/python benchmarks/memory_service.py [--episodes 2000] [--sessions 4] [--searches 10] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import psutil

sys.path.insert(0, os.path.dirname(__file__))
from recall_latency import fill_store, fill_vectors, source_lines  # noqa: E402

BIN = Path(sys.executable).parent
QUERY = "timeout the parser config error"


def codeoid_processes(home: str) -> list[psutil.Process]:
    """This test's `codeoid-mcp` servers and the memory service of `home` (not chroma: it is the same either way)."""
    found = [child for child in psutil.Process().children(recursive=True)
             if any(part.endswith("codeoid-mcp") for part in child.cmdline())]
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "codeoid.service.daemon" in cmdline and any(home in part for part in cmdline):
            found.append(process)
    return found


def wall_of(argv: list[str], cwd: str) -> float:
    """Milliseconds `argv` took, end to end; a search must rank with vectors (the service's, or loaded here)."""
    begin = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0 and "BM25 only" not in done.stderr, done.stderr
    return (time.perf_counter() - begin) * 1000


def first_tools_list(project: str, runs: int) -> list[float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def once() -> float:
        params = StdioServerParameters(command=str(BIN / "codeoid-mcp"), cwd=project, env=dict(os.environ))
        started = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await client.list_tools()
            return time.perf_counter() - started

    return [anyio.run(once) for _ in range(runs)]


def sessions_and_search(project: str, home: str, sessions: int, searches: int) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def run() -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            clients = []
            for _ in range(sessions):
                params = StdioServerParameters(command=str(BIN / "codeoid-mcp"), cwd=project, env=dict(os.environ))
                read, write = await stack.enter_async_context(stdio_client(params))
                client = await stack.enter_async_context(ClientSession(read, write))
                await client.initialize()
                clients.append(client)
            for client in clients:
                answer = await client.call_tool("recall", {"query": QUERY})
                text = "\n".join(getattr(block, "text", "") for block in answer.content)
                assert "BM25 + semantic" in text, text[:300]
            processes = codeoid_processes(home)
            memory = {process.pid: process.memory_full_info() for process in processes}
            rss = {pid: info.rss / 2**20 for pid, info in memory.items()}
            servers = [process.pid for process in processes if "codeoid.service.daemon" not in process.cmdline()]
            service = [pid for pid in rss if pid not in servers]
            times, cpu, floor = [], [], []
            for _ in range(searches):
                floor.append(await anyio.to_thread.run_sync(wall_of, [sys.executable, "-c", "pass"], project))
                used = resource.getrusage(resource.RUSAGE_CHILDREN)
                times.append(await anyio.to_thread.run_sync(
                    wall_of, [str(BIN / "codeoid"), "search", QUERY, "--limit", "5"], project))
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append((after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime) * 1000)
            return {"server_rss_mb": max(rss[pid] for pid in servers), "total_rss_mb": sum(rss.values()),
                    "service_rss_mb": sum(rss[pid] for pid in service),
                    "total_pss_mb": sum(info.pss for info in memory.values()) / 2**20,
                    "processes": len(rss), "search_ms": times, "search_cpu_ms": cpu, "floor_ms": floor}

    return anyio.run(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--searches", type=int, default=10)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    lines = source_lines()
    with tempfile.TemporaryDirectory() as scratch:
        home = os.path.join(scratch, "home")
        os.environ["CODEOID_HOME"] = home
        os.environ.pop("CODEOID_CHROMA_URL", None)
        from codeoid.memory import chroma_server

        try:
            memory, newest = fill_store(args.episodes, lines)
            fill_vectors(memory, newest)
            memory.db.close()
            project = str(memory.project)
            lists = first_tools_list(project, 5)
            found = sessions_and_search(project, home, args.sessions, args.searches)
        finally:
            try:
                from codeoid.service import lifecycle
            except ImportError:  # a build without the service
                pass
            else:
                lifecycle.stop_service()
            chroma_server.stop_server()
    searches = sorted(found["search_ms"])
    p95 = searches[min(len(searches) - 1, round(0.95 * (len(searches) - 1)))]
    rows = [
        ("one extra session's `codeoid-mcp` RSS after a recall", f"{found['server_rss_mb']:.0f} MB"),
        (f"{args.sessions} concurrent sessions' codeoid processes together ({found['processes']} processes)",
         f"{found['total_rss_mb']:.0f} MB RSS (the memory service {found['service_rss_mb']:.0f} MB); "
         f"{found['total_pss_mb']:.0f} MB PSS (shared library pages counted once)"),
        ("`codeoid search` warm, wall time of the command", f"median {statistics.median(searches):.0f} ms, "
         f"p95 {p95:.0f} ms (`python -c pass`: {statistics.median(found['floor_ms']):.0f} ms)"),
        ("`codeoid search` warm, CPU time of the command",
         f"median {statistics.median(found['search_cpu_ms']):.0f} ms"),
        ("first `tools/list` after spawn (median of 5)", f"{statistics.median(lists):.2f} s"),
    ]
    rows.append(("load average (1, 5, 15 min) at the end", ", ".join(f"{load:.1f}" for load in os.getloadavg())))
    for what, number in rows:
        print(f"| {what} | {number} |" if args.markdown else f"{what}: {number}")


if __name__ == "__main__":
    main()
