"""The memory service: one warm process per data dir that every codeoid client of that data dir shares.

Each Claude Code session starts its own `codeoid-mcp`; loading the embedder, a Chroma client and an indexer in
each of them cost ~300 MB a session and had several indexers compete for the same store. The service holds them
once: the MiniLM embedder (query embeddings too), the vector indexer (one per store), the workspace index
builders, and recall's ranking. Thin MCP servers and `codeoid search` call it over a unix socket in the data dir
(an ASGI app served by uvicorn; clients use the standard library's `http.client`), passing who is asking so
answers stay scoped.

- `lifecycle`: starting it on demand, shared exactly like the local Chroma server (lock, state file, idle stop,
  detached, spared by a rotation's sweep), restarting it when it died, stopping it;
- `daemon`: the service process itself (binds the socket, runs uvicorn, stops when idle);
- `app`: the ASGI app and the workers it owns;
- `client`: the calls clients make, each able to start the service.

This package never imports `codeoid.cli`, `codeoid.hooks`, `codeoid.setup`, `codeoid.rotation`, `codeoid.fork` or
`codeoid.capture`; it serves the memory tools of `codeoid.mcp_server.tools` (their one definition) and
`codeoid.memory`. Starlette and uvicorn load only in the service process, never in a client.
"""
