"""The memory tools as the model sees them: their names, arguments and purposes, and the prefix each install
route gives them (`mcp__codeoid__recall` through `codeoid install`, the plugin's longer prefix otherwise).

Shared by every text that names the tools (the rotation and fork seeds, the workspace index, route detection),
so a renamed tool is renamed everywhere at once.
"""

SETTINGS_TOOL_PREFIX = "mcp__codeoid__"
PLUGIN_TOOL_PREFIX = "mcp__plugin_codeoid_codeoid__"
TOOLS = (
    ("recall", "(query)", "earlier prompts, answers and tool calls found by words and meaning: a short list of "
                          "hits, each naming its episode and the lines that matched"),
    ("recall_file", "(path)", "the last stored read of a file (lines=\"a-b\" for some), and whether it changed since"),
    ("timeline", "(offset, limit)", "the history in order, one line per episode; offset 0 is the newest page"),
    ("get_episode", "(episode_id, lines)", "exactly the lines asked for (lines=\"82-120\") of one episode or raw "
                                           "output; without lines, the whole of it"),
)
