"""Health checks of what runs behind the hooks: the search stack (Chroma, the embedding model, the indexing backlog),
quarantine and raw outputs left unfinished (`codeoid.setup.doctor` checks the rule files).

`codeoid doctor` prints them after the installation checks of `codeoid.setup.doctor`, and the viewer's status page
shows the same findings. Each check is one small function that reads and never repairs: the store is opened only
if it already exists, and no Chroma server is started to be looked at.

It may import the store, the search stack and `codeoid.setup.doctor` (for its `Finding`); it never imports an entry
point (`codeoid.cli`, `codeoid.hooks`, `codeoid.mcp_server`) or the viewer.
"""
