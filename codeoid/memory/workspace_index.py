"""The workspace index: a compact, stable text telling the model what memory holds before it needs to ask.

It has a fingerprint line (episodes, sessions, first and last activity), the hottest files by touch count with a
`recall_file` nudge, topic clusters over the episode embeddings (`codeoid.memory.topics`), one line per recent session,
and the memory tools by the names the active install route gives them. The long-lived process builds it
(`build`; it needs the vector index for topics) and saves it in the store; hooks only read it: SessionStart
injects it whole (`for_window`), UserPromptSubmit a short `delta` when memory changed materially since the
window last saw it.

The text is a pure function of the stored state: no "built at", no "3 hours ago", lists in a fixed order. The
same memory gives byte-identical text, so it never breaks the prompt cache. Times are UTC minutes.

Hooks import this module, so it imports nothing heavy at the top (numpy and the vector index load inside `build`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

from codeoid.memory_tools import PLUGIN_TOOL_PREFIX, SETTINGS_TOOL_PREFIX, TOOLS
from codeoid.store import workspace_index as stored_index
from codeoid.text import one_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from codeoid.memory.privacy import Policy
    from codeoid.memory.vector_index import VectorIndex

OPEN, CLOSE = "<codeoid_memory>", "</codeoid_memory>"
UPDATE_OPEN, UPDATE_CLOSE = "<codeoid_memory_update>", "</codeoid_memory_update>"
MAX_CHARS = 3000  # the whole injected text; Claude Code's own limit is ~10,000
HOT_FILES = 8
RECENT_SESSIONS = 5
TOPIC_SAMPLE = 2000  # episodes clustered at most, evenly spread over the memory's history
# A background rebuild keeps the topics it found last until the indexed history grew by this share (or this many
# episodes) or an episode was retracted or restored: clustering a sample spread over 100k episodes costs ~0.6 s of
# the memory service's CPU, and its GIL, which the recalls it answers meanwhile wait for; a few new episodes
# cannot move shares of the whole history.
TOPICS_KEPT_WHILE_GROWN_BY = 0.05
TOPICS_KEPT_WHILE_NEW_EPISODES = 50
PROMPT_CHARS = 70
# A delta is worth a few hundred characters of the window only for news: other sessions' work, or a change in
# what memory is mostly about.
MATERIAL_OTHERS_EPISODES = 5
DELTA_HOT_FILES = 5
NOT_COUNTED_ORIGINS = ("codeoid", "seed")  # copies of stored episodes, as in retrieval
_LONGEST_PREFIX = max(SETTINGS_TOOL_PREFIX, PLUGIN_TOOL_PREFIX, key=len)


def build(db: sqlite3.Connection, workspace_id: int, *, vectors: VectorIndex | None,
          now: float | None = None, keep_topics: bool = False) -> int:
    """Gather the facts, render the text and save it; the stored version (unchanged if the text is).
    `keep_topics`: the stored index's topics stand while they are current enough (the background builder's
    rebuilds); else they are found anew."""
    stored = stored_index.latest(db, workspace_id) if keep_topics else None
    try:
        previous = json.loads(stored.facts) if stored else None
    except ValueError:  # unreadable facts lend nothing: the topics are found anew
        previous = None
    facts = gather(db, workspace_id, vectors=vectors, previous=previous if isinstance(previous, dict) else None)
    return stored_index.save(db, workspace_id, body=render_body(facts), facts=_dump(facts),
                             now=time.time() if now is None else now)


def current(db: sqlite3.Connection, workspace_id: int, *, now: float) -> stored_index.Stored | None:
    """The stored index, first brought up to date when episodes were stored since it was built (None until the
    long-lived builder made a first one), for a window about to read it.

    The long-lived builder waits out its debounce and its five-episode trigger, so a session that starts soon
    after another ended (a quick restart, `/clear`, a script) read the index as it was at that session's start:
    "1 episode in 1 session" over a store of 6. Counts, hot files and recent sessions are plain queries (about
    40 ms at 10,000 episodes), redone here; the topics, which need the vector index, are kept from the last build.
    """
    stored = stored_index.latest(db, workspace_id)
    if stored is None:
        return None
    try:
        previous = json.loads(stored.facts)
    except ValueError:
        previous = {}
    if not isinstance(previous, dict):
        previous = {}
    newer = db.execute(
        f"""SELECT 1 FROM episodes WHERE workspace_id = ? AND id > ? AND state != 'retracted'
                AND origin NOT IN {NOT_COUNTED_ORIGINS} LIMIT 1""",
        (workspace_id, int(previous.get("newest_episode") or 0)),
    ).fetchone()
    if newer is None:
        return stored
    facts = gather(db, workspace_id, vectors=None)
    facts.update({key: previous[key] for key in ("topics", "topics_over") if key in previous})
    stored_index.save(db, workspace_id, body=render_body(facts), facts=_dump(facts), now=now)
    return stored_index.latest(db, workspace_id)


def gather(db: sqlite3.Connection, workspace_id: int, *, vectors: VectorIndex | None,
           previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the index says, as plain JSON-able data (also what deltas compare); `previous` facts lend
    their topics while these are current (`TOPICS_KEPT_WHILE_GROWN_BY`)."""
    from codeoid.memory.privacy import Policy

    policy = Policy.from_env()
    root = db.execute("SELECT root FROM workspaces WHERE id = ?", (workspace_id,)).fetchone()[0]
    count, sessions, first, last, newest = db.execute(
        f"""SELECT count(*), count(DISTINCT session_id), min(created_at), max(created_at), coalesce(max(id), 0)
            FROM episodes WHERE workspace_id = ? AND state != 'retracted' AND origin NOT IN {NOT_COUNTED_ORIGINS}""",
        (workspace_id,),
    ).fetchone()
    return {
        "root": root,
        "episodes": count,
        "sessions": sessions,
        "first_at": first,
        "last_at": last,
        "newest_episode": newest,
        "hot_files": _hot_files(db, workspace_id, root, policy),
        **(_topics_of(db, workspace_id, vectors, previous) if vectors is not None else {"topics": []}),
        "recent_sessions": _recent_sessions(db, workspace_id, policy),
    }


def render_body(facts: dict[str, Any], *, budget: int | None = None) -> str:
    """The index without its tool reference, within `budget` characters (dropping list tails to fit)."""
    budget = budget if budget is not None else MAX_CHARS - len(_wrap("", tool_reference(_LONGEST_PREFIX)))
    limits = [(HOT_FILES, len(facts["topics"]), RECENT_SESSIONS), (6, 6, 3), (4, 4, 2), (3, 3, 1), (0, 0, 0)]
    text = ""
    for files, topics, recent in limits:
        text = _render(facts, files, topics, recent)
        if len(text) <= budget:
            return text
    return text[:budget]


def for_window(stored: stored_index.Stored, tool_prefix: str) -> str:
    """The text SessionStart injects: the body and the tool reference under the route's tool names."""
    return _wrap(stored.body, tool_reference(tool_prefix))


def tool_reference(tool_prefix: str) -> str:
    return "\n".join(["Memory tools (look things up instead of guessing):",
                      *(f"- {tool_prefix}{name}{args}: {purpose}" for name, args, purpose in TOOLS)])


def delta(db: sqlite3.Connection, shown_facts: str, stored: stored_index.Stored, *, workspace_id: int,
          session_id: str) -> str | None:
    """What a window should hear about memory since it last saw the index, or None when nothing material changed.

    Material: at least `MATERIAL_OTHERS_EPISODES` episodes from other sessions, or a new topic. The window's
    own work is in the window already, so a hot-file list it reshuffled alone is no news; when there is news,
    a changed hot-file list comes with it.
    """
    try:
        before, now = json.loads(shown_facts), json.loads(stored.facts)
    except ValueError:
        return None
    lines = []
    others = _others_since(db, workspace_id, int(before.get("newest_episode") or 0), session_id)
    if others >= MATERIAL_OTHERS_EPISODES:
        lines.append(f"{others} new episodes from other sessions of this workspace since your index "
                     f"(timeline() lists them).")
    old_files = {path for path, _ in before.get("hot_files", [])[:DELTA_HOT_FILES]}
    new_files = now.get("hot_files", [])[:DELTA_HOT_FILES]
    if new_files and {path for path, _ in new_files} != old_files:
        listed = ", ".join(f"{path} ({count})" for path, count in new_files)
        added = [path for path, _ in new_files if path not in old_files]
        lines.append(f"Hottest files now: {listed}" + (f"; new among them: {', '.join(added)}." if added else "."))
    old_topics = {topic["label"] for topic in before.get("topics", [])}
    new_topics = [topic for topic in now.get("topics", []) if topic["label"] not in old_topics]
    lines += [f"New topic: {_topic_line(topic)}" for topic in new_topics]
    if others < MATERIAL_OTHERS_EPISODES and not new_topics:
        return None
    return "\n".join([UPDATE_OPEN, *lines, UPDATE_CLOSE])


def _render(facts: dict[str, Any], files: int, topics: int, recent: int) -> str:
    count, sessions = facts["episodes"], facts["sessions"]
    lines = [
        f"codeoid memory for {facts['root']}: {count:,} episode{'s' * (count != 1)} in {sessions:,} "
        f"session{'s' * (sessions != 1)}"
        + (f", {_when(facts['first_at'])} to {_when(facts['last_at'])}." if facts["first_at"] else "."),
        "Every prompt, answer and tool result is stored verbatim, including what has left your context window.",
    ]
    if files and facts["hot_files"]:
        lines += ["", "Hottest files (touches); recall_file(path) gives the last stored read and whether it changed:"]
        lines += [f"- {path} ({touches})" for path, touches in facts["hot_files"][:files]]
    if topics and facts["topics"]:
        lines += ["", "Topics (share of episodes, an episode to start from):"]
        lines += [f"- {_topic_line(topic)}" for topic in facts["topics"][:topics]]
    if recent and facts["recent_sessions"]:
        lines += ["", "Recent sessions:"]
        lines += [_session_line(session) for session in facts["recent_sessions"][:recent]]
    return "\n".join(lines)


def _topic_line(topic: dict[str, Any]) -> str:
    return f"{topic['label']} ({round(topic['share'] * 100)}%, episode {topic['example_episode']})"


def _session_line(session: dict[str, Any]) -> str:
    parts = [_when(session["last_at"]), session["id"][:8]]
    parts.append(f"{session['turns']} turn{'s' * (session['turns'] != 1)}")
    if session["rotations"]:
        parts.append(f"{session['rotations']} rotation{'s' * (session['rotations'] != 1)}")
    if session["forked_from"]:
        parts.append(f"forked from {session['forked_from'][:8]} at turn {session['at_turn']}")
    about = session["name"] or session["first_prompt"]
    return "- " + " · ".join(parts) + (f": {json.dumps(about, ensure_ascii=False)}" if about else "")


def _wrap(body: str, tools: str) -> str:
    return f"{OPEN}\n{body}\n\n{tools}\n{CLOSE}"


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(stamp))


def _dump(facts: dict[str, Any]) -> str:
    return json.dumps(facts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _hot_files(db: sqlite3.Connection, workspace_id: int, root: str, policy: Policy) -> list[list[Any]]:
    rows = db.execute(
        f"""SELECT p.value, count(*) AS touches FROM episodes e, json_each(e.paths) p
            WHERE e.workspace_id = ? AND e.kind = 'tool' AND e.state != 'retracted' AND e.paths LIKE '[_%'
              AND e.origin NOT IN {NOT_COUNTED_ORIGINS} AND p.type = 'text'
            GROUP BY p.value ORDER BY touches DESC, p.value LIMIT ?""",
        (workspace_id, HOT_FILES * 3),
    ).fetchall()
    shown: dict[str, int] = {}
    for path, touches in rows:
        if policy.excluded([path]):
            continue
        name = os.path.relpath(path, root) if path.startswith(root.rstrip("/") + "/") else path
        shown[name] = shown.get(name, 0) + touches
    ranked = sorted(shown.items(), key=lambda item: (-item[1], item[0]))
    return [[name, touches] for name, touches in ranked[:HOT_FILES]]


def _recent_sessions(db: sqlite3.Connection, workspace_id: int, policy: Policy) -> list[dict[str, Any]]:
    rows = db.execute(
        f"""SELECT s.id, s.name, s.turn_count, s.rotation_count, s.forked_from, s.at_turn,
                   max(e.created_at) AS last_at,
                   (SELECT f.text FROM episodes f WHERE f.session_id = s.id AND f.kind = 'user'
                        AND f.origin = 'user' AND f.state != 'retracted' ORDER BY f.id LIMIT 1) AS first_prompt
            FROM sessions s JOIN episodes e ON e.session_id = s.id
            WHERE s.workspace_id = ? AND e.state != 'retracted' AND e.origin NOT IN {NOT_COUNTED_ORIGINS}
            GROUP BY s.id ORDER BY last_at DESC, s.id LIMIT ?""",
        (workspace_id, RECENT_SESSIONS),
    ).fetchall()
    return [
        {"id": session_id, "name": name, "turns": turns, "rotations": rotations, "forked_from": forked_from,
         "at_turn": at_turn, "last_at": last_at, "first_prompt": one_line(policy.redact(first or ""), PROMPT_CHARS)}
        for session_id, name, turns, rotations, forked_from, at_turn, last_at, first in rows
    ]


def _topics_of(db: sqlite3.Connection, workspace_id: int, vectors: VectorIndex,
               previous: dict[str, Any] | None) -> dict[str, Any]:
    """The topics and what they were found over (`topics_over`: the vector index's watermark and the workspace's
    retracted episodes), kept from `previous` while that is current."""
    from codeoid.store import vector_progress

    over = {"indexed_upto": vector_progress.progress(db).indexed_upto, "retracted": db.execute(
        "SELECT count(*) FROM episodes WHERE workspace_id = ? AND state = 'retracted'", (workspace_id,)).fetchone()[0]}
    before = (previous or {}).get("topics_over")
    if previous and previous.get("topics") and isinstance(before, dict) and before["retracted"] == over["retracted"]:
        grown = over["indexed_upto"] - int(before["indexed_upto"])
        if 0 <= grown < max(TOPICS_KEPT_WHILE_NEW_EPISODES, TOPICS_KEPT_WHILE_GROWN_BY * over["indexed_upto"]):
            return {"topics": previous["topics"], "topics_over": before}
    return {"topics": _topics(db, workspace_id, vectors), "topics_over": over}


def _topics(db: sqlite3.Connection, workspace_id: int, vectors: VectorIndex) -> list[dict[str, Any]]:
    """Clusters of up to `TOPIC_SAMPLE` indexed episodes spread evenly over the history (empty while Chroma is
    unreachable: the index then simply has no topics section)."""
    import numpy as np

    from codeoid.memory.topics import MIN_EPISODES, find_topics
    from codeoid.memory.vector_index import VectorIndexUnavailable, workspace_index_id
    from codeoid.store import queries, vector_progress

    ids = queries.workspace_ids(db, workspace_id)
    upto = vector_progress.progress(db).indexed_upto
    candidates = [row[0] for row in db.execute(
        f"""SELECT id FROM episodes WHERE workspace_id = ? AND id <= ? AND state != 'retracted'
                AND origin NOT IN {NOT_COUNTED_ORIGINS} ORDER BY id""",
        (workspace_id, upto),
    )]
    if ids is None or len(candidates) < MIN_EPISODES:
        return []
    step = max(1, len(candidates) / TOPIC_SAMPLE)
    sample = [candidates[int(i * step)] for i in range(min(TOPIC_SAMPLE, len(candidates)))]
    try:
        stored = vectors.first_chunks(workspace_index_id(*ids), sample)
    except VectorIndexUnavailable:
        return []
    found = sorted(stored)
    if len(found) < MIN_EPISODES:
        return []
    texts = _chunk_texts(db, found, {i: stored[i][1] for i in found})
    topics = find_topics(found, np.array([stored[i][0] for i in found]), [texts[i] for i in found])
    return [{"label": topic.label, "share": round(topic.share, 3), "example_episode": topic.example_episode}
            for topic in topics]


def _chunk_texts(db: sqlite3.Connection, episode_ids: list[int], stored: dict[int, str]) -> dict[int, str]:
    """Each episode's first chunk's text: Chroma's where it keeps the text (a team's server), else the store's, as
    the indexer redacts it (the local server keeps none)."""
    missing = [i for i in episode_ids if not stored.get(i)]
    if not missing:
        return stored
    from codeoid.memory import chunking, privacy
    from codeoid.store import queries

    policy = privacy.Policy.from_env()
    texts = dict(stored)
    marks = ", ".join("?" for _ in missing)
    for row in queries._rows(db.execute(
            f"""SELECT id, kind, tool_name, original_command, command, summary, substr(text, 1, 4000) AS text
                FROM episodes WHERE id IN ({marks})""", missing)):
        texts[int(row["id"])] = policy.redact(chunking.episode_header(row) + "\n" + (row["text"] or ""))
    return {i: texts.get(i, "") for i in episode_ids}


def _others_since(db: sqlite3.Connection, workspace_id: int, after_episode_id: int, session_id: str) -> int:
    return int(db.execute(
        f"""SELECT count(*) FROM episodes WHERE workspace_id = ? AND id > ? AND session_id != ?
                AND state != 'retracted' AND origin NOT IN {NOT_COUNTED_ORIGINS}""",
        (workspace_id, after_episode_id, session_id),
    ).fetchone()[0])
