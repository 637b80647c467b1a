"""`codeoid ui`: a local, read-only web viewer of the store, server-rendered (Starlette on uvicorn, both already in
the dependency tree through `mcp`), with no JavaScript and no front-end build.

Pages: sessions with their windows, rotations and forks drawn as a lineage; a session's timeline with every episode
verbatim (tool results folded in `<details>`, raw outputs paged); search through `codeoid.memory.retrieval`, the
ranking `recall` uses; savings over time from the ledger, charted as SVG on the server; and status, with the
findings of `codeoid.health`.

It only reads, unless started with `--allow-retract`: then an episode's page can retract it, through the same
`codeoid.store.retraction` as `codeoid retract` (undone by `codeoid restore`). It never imports what writes on the
hooks' behalf (`codeoid.capture`), starts or forks sessions (`codeoid.rotation`, `codeoid.fork`), edits Claude
Code's settings (`codeoid.setup.install`), nor an entry point (`codeoid.cli`, `codeoid.hooks`,
`codeoid.mcp_server`). Nothing in codeoid imports it but the CLI's `ui` command.
"""
