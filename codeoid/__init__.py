"""codeoid: every turn of a Claude Code session kept verbatim, paged back on demand.

The data path, one sub-package a step: a hook event (`codeoid.hooks`) is turned into rows by `capture`, kept by
`store`, embedded and searched by `memory`, and answered by the MCP server (`codeoid.mcp_server`). Around it:
`rotation` (a fresh window instead of compaction), `fork` (a session branched onto any backend), `setup`
(install, uninstall, doctor) and `cli` (the `codeoid` command). `codeoid.compressors` is the rule engine behind
`codeoid-compress`. The modules at this level are small helpers every layer may use (`paths`, `log`, `text`,
`pages`, `records`, `workspace`, `exclusions`, `detached`); they import nothing from the packages.
`tests/test_import_rules.py` holds each package to what its docstring says it never imports.

Kept empty of imports on purpose: hook processes import `codeoid.hooks.main` and pay for every module
this package pulls in at start-up.
"""

__version__ = "0.1.0"
