"""Setup: putting codeoid into Claude Code and checking that it is there.

`install` registers the hooks, the MCP server and the allow rule (and takes exactly those out again),
`install_manifest` remembers what was added so uninstall removes only that, `hook_table` is the one table of
what codeoid registers, `claude_files` knows where Claude Code keeps its settings, `json_config` edits JSON files
safely (backups, atomic writes), `bin_links` puts codeoid's commands on PATH, `processes` finds what codeoid runs
for a data dir (uninstall ends it), and `doctor` checks the whole installation in sentences.

Other packages read `hook_table`, `claude_files` and `json_config` (the supervisor and fork need the same
facts). Setup never imports `codeoid.capture`'s handlers, `codeoid.memory`, the CLI or an entry point.
"""
