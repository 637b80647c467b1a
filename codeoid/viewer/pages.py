"""Each page of the viewer as a function from the store (and the request's parameters) to HTML."""

from __future__ import annotations

import datetime
import json
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from codeoid.store import ledger, queries, raw
from codeoid.store.session_ref import UnknownSession, resolve_session
from codeoid.viewer.chart import bar_chart
from codeoid.viewer.html import Links, esc, number, page, when

TIMELINE_PAGE = 50
RAW_PAGE_BYTES = 64 * 1024
SEARCH_LIMIT = 20
_WORD = re.compile(r"\w{2,}", re.UNICODE)


class NotFound(Exception):
    """What the URL names is not in the store; the message says so in a sentence."""


# -- sessions --------------------------------------------------------------------------------------------------

def sessions_page(db: sqlite3.Connection, links: Links) -> str:
    """Every workspace's sessions as a lineage: forks nested under the session they came from, and each session's
    windows (Claude Code sessions) in order, joined by the rotation that replaced one with the next."""
    rows = queries.sessions(db)
    if not rows:
        return page(links, "sessions", "Sessions", "<h1>Sessions</h1><p>No session is stored yet: start Claude Code "
                                                   "with codeoid installed and come back.</p>")
    windows = _windows(db)
    by_id = {row["id"]: row for row in rows}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda row: row["created_at"]):
        parent = row["forked_from"] if row["forked_from"] in by_id else None
        children.setdefault(parent, []).append(row)
    parts = ["<h1>Sessions</h1><p class=muted>Newest activity first, per workspace. A fork sits under the session "
             "it was forked from; a session's windows are the Claude Code sessions it ran in, rotated one into the "
             "next.</p>"]
    by_workspace: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(children.get(None, []), key=lambda row: -row["last_activity"]):
        by_workspace.setdefault(row["workspace"], []).append(row)
    for workspace, roots in by_workspace.items():
        parts.append(f"<h2>{esc(workspace)}</h2><div class=lineage><ul>")
        parts.extend(_session_tree(row, children, windows, links) for row in roots)
        parts.append("</ul></div>")
    return page(links, "sessions", "Sessions", "".join(parts))


def _session_tree(row: dict[str, Any], children: dict[str | None, list[dict[str, Any]]],
                  windows: dict[str, list[dict[str, Any]]], links: Links) -> str:
    name = f" <b>{esc(row['name'])}</b>" if row["name"] else ""
    title = f" <span class=title>{esc(row['title'])}</span>" if row.get("title") else ""
    forked = (f" · forked at turn {row['at_turn']}" if row["forked_from"] else "")
    strip = []
    for index, window in enumerate(windows.get(row["id"], []), 1):
        if index > 1:
            reason = window.get("rotation_reason")
            strip.append(f'<span class=arrow title="{esc(reason or "")}">→ {esc(reason or "")}</span>')
        strip.append(f'<span class=window title="Claude Code session {esc(window["id"])}">window {index} · '
                     f'{esc(window["source"] or "startup")} · {when(window["started_at"])}</span>')
    node = (f'<div class=node><a href="{links.session(row["id"])}">{esc(row["id"][:8])}</a>{name}{title}'
            f' <span class=muted>{_plural(row["turn_count"], "turn")} · {_plural(row["episodes"], "episode")} · '
            f'{_plural(row["rotation_count"], "rotation")} · last {when(row["last_activity"])}{forked}</span>'
            f'<div class=windows>{"".join(strip)}</div></div>')
    below = children.get(row["id"], [])
    nested = "".join(_session_tree(child, children, windows, links) for child in below)
    nested = f"<ul>{nested}</ul>" if nested else ""
    return f"<li>{node}{nested}</li>"


def _windows(db: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
    """Each session's backing sessions in order, each with the reason of the rotation that opened it, if any."""
    found: dict[str, list[dict[str, Any]]] = {}
    for window_id, session_id, source, started_at, reason in db.execute(
            """SELECT b.id, b.session_id, b.source, b.started_at,
                      (SELECT r.reason FROM rotations r WHERE r.to_backing_session_id = b.id LIMIT 1)
               FROM backing_sessions b ORDER BY b.started_at"""):
        found.setdefault(session_id, []).append({"id": window_id, "source": source, "started_at": started_at,
                                                 "rotation_reason": reason})
    return found


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


# -- a session's timeline --------------------------------------------------------------------------------------

def timeline_page(db: sqlite3.Connection, links: Links, ref: str, offset: int) -> str:
    """One page of a session's history (offset 0: the newest), every episode verbatim."""
    try:
        session_id = resolve_session(db, ref)
    except UnknownSession as error:
        raise NotFound(str(error)) from error
    total = queries.count_episodes(db, session_id=session_id)
    rows = queries.timeline(db, session_id=session_id, offset=offset, limit=TIMELINE_PAGE)
    info = db.execute("SELECT name, forked_from, at_turn, title FROM sessions WHERE id = ?", (session_id,)).fetchone()
    heading = f"<h1>Session {esc(session_id)}{f' · {esc(info[0])}' if info[0] else ''}</h1>"
    if info[3]:
        heading += f"<p class=title>{esc(info[3])}</p>"
    if info[1]:
        heading += (f'<p>Forked from <a href="{links.session(info[1])}">{esc(info[1])}</a> at turn {info[2]}; '
                    "its history starts with what it inherited.</p>")
    shown_from, shown_to = max(total - offset - len(rows), 0) + 1, total - offset
    pager = _pager(links, f"session/{session_id}", offset, total)
    body = [heading, f"<p class=muted>Episodes {shown_from:,}–{shown_to:,} of {total:,}, oldest first.</p>", pager]
    windows = {window["id"]: (number, window) for number, window in enumerate(_windows(db).get(session_id, []), 1)}
    previous = None
    for row in rows:
        window = row.get("backing_session_id")
        if window != previous and window in windows and row["session_id"] == session_id:
            number_, found = windows[window]
            why = f" after a rotation ({esc(found['rotation_reason'])})" if found["rotation_reason"] else ""
            body.append(f"<p class='window-start muted'>window {number_}{why} · Claude Code session "
                        f"{esc(window)} · {when(found['started_at'])}</p>")
        previous = window
        body.append(_episode(row, links, session_id))
    body.append(pager)
    return page(links, "sessions", f"Session {session_id[:8]}", "".join(body))


def _pager(links: Links, path: str, offset: int, total: int) -> str:
    older = offset + TIMELINE_PAGE
    newer = max(offset - TIMELINE_PAGE, 0)
    parts = []
    if older < total:
        parts.append(f'<a href="{links(path, offset=older)}">← older</a>')
    if offset > 0:
        parts.append(f'<a href="{links(path, offset=newer or None)}">newer →</a>')
    return f"<div class=pager>{''.join(parts)}</div>" if parts else ""


def _episode(row: dict[str, Any], links: Links, session_id: str | None = None) -> str:
    state = "" if row["state"] == "live" else f' <span class=state>{esc(row["state"])}</span>'
    inherited = (f' <span class=state>from {esc(row["session_id"][:8])}</span>'
                 if session_id and row["session_id"] != session_id else "")
    turn = f" · turn {row['turn']}" if row.get("turn") is not None else ""
    meta = (f'<div class=meta><a href="{links.episode(row["id"])}">#{row["id"]}</a> · {esc(row["kind"])}'
            f'{turn} · {when(row["created_at"])}'
            f"{state}{inherited}</div>")
    if row["kind"] != "tool":
        return f'<div class="episode {esc(row["kind"])}" id="e{row["id"]}">{meta}<pre>{esc(row["text"])}</pre></div>'
    command = row.get("original_command") or row.get("command")
    called = f"<pre>$ {esc(command)}</pre>" if command else _tool_input(row)
    raw_link = (f'<p>Raw output: <a href="{links.raw(row["raw_output_id"])}">{esc(row["raw_output_id"])}</a>'
                " (the exact stdout, before compression)</p>" if row.get("raw_output_id") else "")
    outcome = " · failed" if row.get("is_error") else ""
    return (f'<div class="episode tool" id="e{row["id"]}">{meta}<details><summary>{esc(row["summary"])}{outcome}'
            f"</summary>{called}<pre>{esc(row['text'])}</pre>{raw_link}</details></div>")


def _tool_input(row: dict[str, Any]) -> str:
    try:
        shown = json.dumps(json.loads(row["input"] or "null"), indent=2, ensure_ascii=False)
    except ValueError:
        shown = row["input"]
    return f"<pre>{esc(shown)}</pre>" if shown and shown != "null" else ""


def episode_page(db: sqlite3.Connection, links: Links, episode_id: int, *, may_retract: bool) -> str:
    row = queries.get_episode(db, episode_id)
    if row is None or row["state"] == "retracted":
        raise NotFound(f"No episode {episode_id} is stored, or it was retracted.")
    retract = (f'<form class=retract method=post action="{links(f"episode/{episode_id}/retract")}"><button>Retract '
               "this episode</button> <span class=muted>hidden from recall, the timeline and the vector index; "
               f"<code>codeoid restore {episode_id}</code> gives it back</span></form>" if may_retract else "")
    body = (f'<h1>Episode {episode_id}</h1><p>In session <a href="{links.session(row["session_id"])}">'
            f"{esc(row['session_id'])}</a>.</p>{_episode(row, links)}{retract}")
    return page(links, "sessions", f"Episode {episode_id}", body.replace("<details>", "<details open>"))


def retract_episode(db: sqlite3.Connection, links: Links, episode_id: int) -> str:
    """Retract one episode (`codeoid retract`'s own function) and say how to undo it."""
    from codeoid.store import retraction

    row = queries.get_episode(db, episode_id)
    if row is None:
        raise NotFound(f"No episode {episode_id} is stored.")
    changed = retraction.retract(db, [episode_id])
    said = "was retracted already" if not changed else f"is retracted (it was {esc(changed[0].before)})"
    body = (f"<h1>Episode {episode_id} {said}</h1><p>It is hidden from recall, the timeline, get_episode and the "
            f"vector index, and kept in the store: <code>codeoid restore {episode_id}</code> gives it back.</p>"
            f'<p><a href="{links.session(row["session_id"])}">Back to its session</a></p>')
    return page(links, "sessions", f"Retracted {episode_id}", body)


def raw_page(db: sqlite3.Connection, links: Links, raw_id: str, page_number: int) -> str:
    """One page of a raw output's exact stdout (decoded for display; `codeoid show --raw` gives the bytes)."""
    found = raw.get_raw_output(db, raw_id)
    if found is None or queries.raw_output_retracted(db, raw_id):
        raise NotFound(f"No raw output {raw_id} is stored, or its tool call was retracted.")
    pages = max(1, -(-found.stdout_size // RAW_PAGE_BYTES))
    page_number = min(max(page_number, 1), pages)
    data = _raw_slice(db, raw_id, (page_number - 1) * RAW_PAGE_BYTES, RAW_PAGE_BYTES)
    nav = []
    if page_number > 1:
        nav.append(f'<a href="{links.raw(raw_id, page=page_number - 1)}">← previous</a>')
    if page_number < pages:
        nav.append(f'<a href="{links.raw(raw_id, page=page_number + 1)}">next →</a>')
    pager = f"<div class=pager>{''.join(nav)}</div>" if nav else ""
    unfinished = "" if found.complete else " · <b>unfinished</b> (the command never reported its end)"
    body = (f"<h1>Raw output {esc(raw_id)}</h1><pre>$ {esc(found.command)}</pre>"
            f"<p class=muted>exit {esc(found.exit_status)} · {number(found.stdout_size)} bytes · page {page_number} of "
            f"{pages} · {when(found.created_at)}{unfinished}</p>{pager}"
            f"<pre>{esc(data.decode('utf-8', 'backslashreplace'))}</pre>{pager}")
    return page(links, "sessions", raw_id, body)


def _raw_slice(db: sqlite3.Connection, raw_id: str, start: int, size: int) -> bytes:
    """`size` bytes of the stored stdout from byte `start`: chunks are read (and unpacked) in order only up to the
    page's end."""
    taken = bytearray()
    position = 0
    for chunk in raw.iter_raw_stdout(db, raw_id):
        end = position + len(chunk)
        if end > start:
            taken += chunk[max(start - position, 0):start + size - position]
        position = end
        if position >= start + size:
            break
    return bytes(taken)


# -- search ----------------------------------------------------------------------------------------------------

def search_page(db: sqlite3.Connection, links: Links, query: str, workspace: str | None, here: Path) -> str:
    """The form, and the hits ranked as `recall` ranks them, each with what it matched on. Without a choice the
    workspace `codeoid ui` was started in is searched (by words and meaning), else every workspace (by words)."""
    from codeoid.memory import retrieval  # the vector stack loads only when a search is made

    if workspace is None:
        found_here = queries.workspace_id_for(db, str(here))
        workspace = "" if found_here is None else str(found_here)
    workspaces = db.execute("SELECT id, root FROM workspaces ORDER BY root").fetchall()
    options = "".join(f'<option value="{wid}"{" selected" if str(wid) == workspace else ""}>{esc(root)}</option>'
                      for wid, root in workspaces)
    form = (f'<form class=search method=get action="{links("search")}"><input type=text name=q autofocus '
            f'value="{esc(query)}" placeholder="what you are looking for"> <select name=workspace>'
            f'<option value="">every workspace (words only)</option>{options}</select> <button>Search</button>'
            "</form>")
    body = ["<h1>Search</h1>", form]
    if query.strip():
        workspace_id = int(workspace) if workspace.isdigit() else None
        found = retrieval.recall_ranked(db, query, workspace_id=workspace_id, limit=SEARCH_LIMIT)
        how = esc(found.signals) + (f" (vectors unavailable: {esc(found.fallback)})" if found.fallback else "")
        body.append(f"<p class=muted>{len(found.rows)} hit(s), ranked by {how}, as the recall tool ranks them: "
                    f"{_how_ranked(found.signals)}</p>")
        words = {word.lower() for word in _WORD.findall(query)} - queries.STOP_WORDS
        body.append("<table><tr><th>#</th><th class=n>score</th><th>episode</th><th>why it ranked</th></tr>")
        for rank, row in enumerate(found.rows, 1):
            body.append(f"<tr><td>{rank}</td><td class=n>{row['score']:.4f}</td><td>{_hit(row, links)}</td>"
                        f"<td>{_why(row, words)}</td></tr>")
        body.append("</table>")
    return page(links, "search", "Search", "".join(body))


def _how_ranked(signals: str) -> str:
    """The ranking in words, as `codeoid.memory.ranking` does it with the weights in force."""
    from codeoid.memory import ranking, retrieval

    if signals == "BM25":
        return "by BM25 alone (words), best first."
    if ranking.RecallWeights.from_env().zscore:
        return ("BM25 and meaning scores fused as z-scores over the whole store (a signal sure of one episode "
                "outweighs one lukewarm about many), with bonuses for recent episodes, for paths the query names "
                f"and for the kind of episode it asks for; nothing scoring below {retrieval.SCORE_FLOOR:g} (an "
                "average episode that matches no word) is shown.")
    return ("BM25 and vector ranks fused by reciprocal rank (CODEOID_RECALL_ZSCORE=0), with a bonus for recent "
            "episodes and for paths the query names.")


def _hit(row: dict[str, Any], links: Links) -> str:
    return (f'<a href="{links.episode(row["id"])}">#{row["id"]}</a> {esc(row["kind"])} · '
            f'{when(row["created_at"])} · session <a href="{links.session(row["session_id"])}">'
            f'{esc(row["session_id"][:8])}</a><br>{esc(row["summary"])}')


def _why(row: dict[str, Any], words: set[str]) -> str:
    text = f"{row.get('original_command') or ''}\n{row['text']}".lower()
    matched = sorted(word for word in words if word in text)
    reasons = [f"words: {', '.join(f'<mark>{esc(word)}</mark>' for word in matched)}" if matched
               else "no query word verbatim: found by meaning"]
    if row.get("matched_lines"):
        first, last = row["matched_lines"]
        reasons.append(f"closest in meaning: lines {first}–{last}")
    if row["state"] != "live":
        reasons.append(f"{esc(row['state'])} (out of the window, kept verbatim)")
    return "<br>".join(reasons)


# -- savings ---------------------------------------------------------------------------------------------------

def savings_page(db: sqlite3.Connection, links: Links, period: str, since: float | None) -> str:
    """The ledger over time: net tokens per day or week as a bar chart, then per period and per rule."""
    accounts = ledger.gain(db, since=since)
    periods = ledger.over_time(db, period, since=since)
    other = "week" if period == "day" else "day"
    charted = _every_period(periods, period)
    chart = bar_chart([key[5:] if period == "day" else f"wk {key[5:]}" for key, _ in charted],
                      [value for _, value in charted], title=f"Net tokens saved per {period}", unit="tokens")
    days = round((time.time() - since) / 86400) if since else None
    ranges = " · ".join(
        f"<b>{label}</b>" if value == days else f'<a href="{links("savings", period=period, days=value)}">{label}</a>'
        for label, value in (("last 7 days", 7), ("last 30 days", 30), ("last 90 days", 90), ("all", None)))
    total = accounts["total"]
    summary = (f"<p>{number(total['runs'])} compressed run(s) kept <b>{number(total['saved_tokens'])}</b> estimated "
               f"tokens out of the window ({total['saved_percent']}% of the {number(total['alone_chars'])} "
               f"characters Claude Code alone would have shown for them; {number(total['raw_bytes'])} raw bytes); "
               f"the model read back {number(total['charged_tokens'])} of them in {number(total['reads'])} read(s), "
               f"so <b>{number(total['net_tokens'])}</b> net.</p>")
    body = [f'<h1>Savings</h1>{summary}<p>{ranges} · <a href="{links("savings", period=other, days=days)}">'
            f"per {other}</a></p>",
            f'<figure id=chart>{chart}</figure>',
            f"<h2>Per {period}</h2>", _ledger_table(period, periods),
            "<h2>Per rule</h2>", _ledger_table("rule", accounts["by_rule"]),
            "<p class=muted>Tokens are estimated at 4 characters a token. Claude Code alone = the window it would "
            "have shown for the same calls (a long success as its 2 KB preview, a long failure as its first and "
            "last 5,000 characters); saved = that − codeoid's window, negative where codeoid showed more; charged = "
            "what the model read back of the raw outputs (every read is charged); net = saved − charged. Raw and "
            "shown bytes are the outputs' sizes before and after compression.</p>"]
    return page(links, "savings", "Savings", "".join(body))


def _every_period(rows: list[dict[str, Any]], period: str) -> list[tuple[str, int]]:
    """(key, net tokens) for every day or week from the first to the last with runs, 0 where there were none, so
    the chart's spacing is time's."""
    if not rows:
        return []
    net = {row["key"]: row["net_tokens"] for row in rows}
    step = datetime.timedelta(days=1 if period == "day" else 7)
    day, last = datetime.date.fromisoformat(rows[0]["key"]), datetime.date.fromisoformat(rows[-1]["key"])
    found = []
    while day <= last:
        found.append((day.isoformat(), net.get(day.isoformat(), 0)))
        day += step
    return found


_LEDGER_COLUMNS = (("runs", "runs"), ("Claude Code alone", "alone_chars"), ("codeoid", "window_chars"),
                   ("saved", "saved_chars"), ("saved %", "saved_percent"), ("saved ~tok", "saved_tokens"),
                   ("reads", "reads"), ("charged ~tok", "charged_tokens"), ("net ~tok", "net_tokens"),
                   ("raw bytes", "raw_bytes"), ("shown bytes", "shown_bytes"))


def _ledger_table(title: str, rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p class=muted>No compressed output is recorded yet.</p>"
    head = "".join(f"<th class=n>{esc(name)}</th>" for name, _ in _LEDGER_COLUMNS)
    lines = [f"<table><tr><th>{esc(title)}</th>{head}</tr>"]
    for row in rows:
        cells = "".join(f"<td class=n>{row[field]}%</td>" if field == "saved_percent"
                        else f"<td class=n>{number(row[field])}</td>" for _, field in _LEDGER_COLUMNS)
        lines.append(f"<tr><td>{esc(row['key'])}</td>{cells}</tr>")
    return "".join(lines) + "</table>"


# -- status ----------------------------------------------------------------------------------------------------

def status_page(db: sqlite3.Connection, links: Links, data_dir: Path, project_dir: Path) -> str:
    """Sizes of the store and the indexes, the backlog, and every doctor finding (health checks included)."""
    from codeoid.health.checks import health_report
    from codeoid.setup.doctor import doctor_report

    counts = {name: int(db.execute(f"SELECT count(*) FROM {name}").fetchone()[0])
              for name in ("workspaces", "sessions", "backing_sessions", "episodes", "raw_outputs")}
    raw_bytes = int(db.execute("SELECT coalesce(sum(stdout_size), 0) FROM raw_outputs").fetchone()[0])
    sizes = [("store (SQLite, with its WAL)", _size(data_dir, "store.db", "store.db-wal")),
             ("vector index (Chroma)", _tree_size(data_dir / "chroma")),
             ("spool", _tree_size(data_dir / "spool")), ("quarantine", _tree_size(data_dir / "quarantine"))]
    rows = "".join(f"<tr><td>{esc(name)}</td><td class=n>{number(count)}</td></tr>" for name, count in counts.items())
    rows += f"<tr><td>raw output bytes</td><td class=n>{number(raw_bytes)}</td></tr>"
    size_rows = "".join(f"<tr><td>{esc(name)}</td><td class=n>{size / 1e6:,.1f} MB</td></tr>" for name, size in sizes)
    findings = [*doctor_report(project_dir=project_dir), *health_report(data_dir, project_dir)]
    finding_rows = "".join(f"<tr><td class=status-{finding.status}>{esc(finding.status)}</td>"
                           f"<td>{esc(finding.sentence)}</td></tr>" for finding in findings)
    body = (f"<h1>Status</h1><p class=muted>Data in {esc(data_dir)}.</p>"
            f"<h2>What is stored</h2><table>{rows}</table><h2>Sizes on disk</h2><table>{size_rows}</table>"
            f"<h2>Checks</h2><p class=muted>What <code>codeoid doctor</code> reports.</p>"
            f"<table>{finding_rows}</table>")
    return page(links, "status", "Status", body)


def _size(folder: Path, *names: str) -> int:
    return sum((folder / name).stat().st_size for name in names if (folder / name).is_file())


def _tree_size(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, files in os.walk(folder) for name in files
               if os.path.isfile(os.path.join(root, name)))
