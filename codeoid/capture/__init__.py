"""Capture: from a hook event (Claude Code, Codex or Gemini CLI) to rows in the store, and nothing lost on the way.

`events` has one handler per hook event (what to store, what to inject back), `agent_events` the same for Codex's
and Gemini CLI's events once `codeoid.hooks.agents` has normalized them, `ingest` applies an event inside
a write transaction or, when the store is busy or the disk full, hands it to `spool`, which the next writer
replays. `record` and `codex_record` read Codex's rollout into steps (also for the fork's read-back);
`transcript` reads Claude Code's transcript files (assistant text, compaction boundaries) and
`prompt_kinds` tells a person's prompt from the turns Claude Code makes itself.

Hook processes import this package on every event, so it stays light. It never imports `codeoid.memory`'s
search stack (retrieval, the vector index, embeddings, the Chroma server), `codeoid.setup`, the CLI or any entry
point (`codeoid.hooks`, `codeoid.mcp_server`); the one memory module it reads is `codeoid.memory.workspace_index`,
for the prebuilt index text SessionStart injects.
"""
