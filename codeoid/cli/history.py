"""Reading what the store holds: `sessions`, `timeline`, `show`, `search`, `gain`, and the indexes (`index`,
`reindex`)."""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Iterable
from typing import Any

import click

from codeoid.cli.common import (
    format_time,
    open_store,
    plural,
    print_json,
    scope_option,
    session_id_of,
    workspace_scope,
)
from codeoid.cli.group import cli
from codeoid.store import db as store_db
from codeoid.store import queries, raw
from codeoid.text import agent_label

REINDEX_POLL_SECONDS = 0.5


@cli.command(epilog="""\b
Examples:
  codeoid sessions                    this workspace's sessions
  codeoid sessions --all-workspaces   every workspace's, each line naming its workspace""")
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON.")
@scope_option
def sessions(as_json: bool, all_workspaces: bool) -> None:
    """List codeoid sessions, newest activity first.

    Each line gives the session id (any unique prefix of it, or its name, works wherever a session is asked
    for), its last activity, its turns, episodes and rotations, its title (the start of its first prompt) and
    where it was forked from.
    """
    with open_store() as db:
        rows = queries.sessions(db, workspace_id=workspace_scope(db, all_workspaces))
        if as_json:
            for row in rows:
                row["backing"] = queries.backing_sessions(db, row["id"])
            print_json(rows)
            return
    if not rows:
        click.echo("No session is stored here yet.")
        return
    id_width = max(len("session"), *(len(row["id"]) + (len(row["name"]) + 3 if row["name"] else 0) for row in rows))
    agent_width = max(len("agent"), *(len(row["agents"]) for row in rows))
    click.echo(f"{'session':<{id_width}}  {'agent':<{agent_width}}  {'last activity':<19}  {'turns':>9}  "
               f"{'episodes':>12}  {'rotations':>11}" + ("  workspace" if all_workspaces else "") + "  title")
    for row in rows:
        lineage = f"  forked from {row['forked_from']} at turn {row['at_turn']}" if row["forked_from"] else ""
        name = f" ({row['name']})" if row["name"] else ""
        where = f"  {row['workspace']}" if all_workspaces else ""
        title = f"  {row['title']}" if row["title"] else "  -"
        click.echo(
            f"{row['id'] + name:<{id_width}}  {row['agents']:<{agent_width}}  {format_time(row['last_activity'])}"
            f"  {plural(row['turn_count'], 'turn'):>9}"
            f"  {plural(row['episodes'], 'episode'):>12}  {plural(row['rotation_count'], 'rotation'):>11}{where}"
            f"{title}{lineage}"
        )


@cli.command(epilog="""\b
Examples:
  codeoid timeline --limit 20              the newest 20 episodes of this workspace
  codeoid timeline --session c4cf          one session (a unique id prefix or its name), with what it inherited
  codeoid timeline --offset 20 --limit 20  the 20 episodes before those""")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0),
              help="How many of the newest episodes to skip (0: the newest page).")
@click.option("--session", "session_ref", metavar="SESSION",
              help="Only this codeoid session: its id, a unique prefix of it, or its name.")
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON, episode text whole.")
@scope_option
def timeline(limit: int, offset: int, session_ref: str | None, as_json: bool, all_workspaces: bool) -> None:
    """The history in order, one line per episode.

    Shows the newest page by default; --offset skips that many of the newest episodes.
    """
    with open_store() as db:
        session_id = session_id_of(db, session_ref, param_hint="--session") if session_ref else None
        workspace_id = None if session_id else workspace_scope(db, all_workspaces)
        rows = queries.timeline(db, workspace_id=workspace_id, session_id=session_id, offset=offset, limit=limit)
        lineage = queries.session_lineage(db, session_id) if session_id else []
        roots = dict(db.execute("SELECT id, root FROM workspaces").fetchall()) if all_workspaces else {}
    if as_json:
        print_json(rows)
        return
    if len(lineage) > 1:
        click.echo(f"session {session_id} is forked from {lineage[1][0]} at turn {lineage[1][1]}; its history "
                   "starts with what it inherited:")
        for ancestor, upto in lineage[1:]:
            click.echo(f"  turns up to {upto} of {ancestor}, marked [from {ancestor[:8]}]")
    if not rows:
        click.echo("No episode on this page." if offset else "No episode is stored here yet.")
        return
    click.echo(f"{'id':>6}  {'time':<19}  {'kind':<9} " + ("workspace  " if roots else "") + "summary")
    for row in rows:
        state = "" if row["state"] == "live" else f" [{row['state']}]"
        inherited = f" [from {row['session_id'][:8]}]" if session_id and row["session_id"] != session_id else ""
        where = f" {roots.get(row['workspace_id'], '?')} " if roots else ""
        when = format_time(row["created_at"])
        agent = f" [{agent_label(row.get('agent'))}]"
        click.echo(f"{row['id']:>6}  {when}  {row['kind']:<9}{agent}{state}{inherited}{where} {row['summary']}")


@cli.command(epilog="""\b
Examples:
  codeoid show 42                       episode 42, its text whole
  codeoid show raw-toolu_01X --raw      the exact bytes of a raw output, e.g. to pipe into grep
  codeoid show 42 --lines 82-120        lines 82-120 of episode 42, exactly as stored""")
@click.argument("episode_id")
@click.option("--raw", "as_raw", is_flag=True, help="Write the exact stored bytes (raw output or episode text).")
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON.")
@click.option("--lines", "line_range", metavar="A-B",
              help="Only these lines of the text or stdout, exactly (82-120, 82, or 82- for the rest).")
def show(episode_id: str, as_raw: bool, as_json: bool, line_range: str | None) -> None:
    """Show one episode or raw output, whole or some lines.

    EPISODE_ID is an episode number (from timeline or search) or a raw output id (raw-...), the exact stdout
    of a compressed Bash call. --lines prints exactly those lines of its text or stdout, byte for byte.
    """
    if line_range is not None:
        _show_lines(episode_id, line_range)
        return
    with open_store() as db:
        if episode_id.startswith("raw-"):
            _show_raw_output(db, episode_id, as_raw=as_raw, as_json=as_json)
            return
        if not episode_id.isdigit():
            raise click.ClickException(f"{episode_id!r} is not an episode id (a number) or a raw output id (raw-...).")
        row = queries.get_episode(db, int(episode_id))
    if row is None:
        raise click.ClickException(f"No episode {episode_id}.")
    if as_raw:
        sys.stdout.buffer.write(row["text"].encode("utf-8", "surrogatepass"))
        sys.stdout.buffer.flush()
    elif as_json:
        print_json(row)
    else:
        # The command the model wrote; the wrapper codeoid ran in its place (hundreds of characters of plumbing)
        # stays in --json as `wrapper`.
        shown = {**row, "command": row.get("original_command") or row.get("command")}
        for field in ("id", "kind", "state", "tool_name", "command", "exit_status", "session_id", "turn",
                      "created_at", "raw_output_id", "summary", "cut"):
            if shown.get(field) is not None:
                value = format_time(shown[field]) if field == "created_at" else shown[field]
                click.echo(f"{field}: {value}")
        if row.get("wrapper"):
            click.echo("compressed: yes (--json shows the wrapper codeoid ran in its place)")
        click.echo("")
        click.echo(row["text"])


def _show_lines(episode_id: str, line_range: str) -> None:
    """Lines `first`..`last` of an episode's text or a raw output's stdout, byte for byte, as stored."""
    from codeoid.pages import LineRangeError, byte_lines, parse_line_range

    try:
        first, last = parse_line_range(line_range)
    except LineRangeError as error:
        raise click.ClickException(str(error)) from error
    with open_store() as db:
        if episode_id.startswith("raw-"):
            found = raw.get_raw_output(db, episode_id)
            if found is None:
                raise click.ClickException(f"No raw output {episode_id}.")
            if found.expired_at is not None:
                raise click.ClickException(f"{episode_id}: raw expired ({found.stdout_size:,} bytes dropped by "
                                           "`codeoid gc` to keep the data dir under its disk budget).")
            chunks: Iterable[bytes] = raw.iter_raw_stdout(db, episode_id)  # streamed: a raw output may be 1 GB
        else:
            row = queries.get_episode(db, int(episode_id)) if episode_id.isdigit() else None
            if row is None:
                raise click.ClickException(f"No episode {episode_id}.")
            chunks = [row["text"].encode("utf-8", "surrogatepass")]
        for number, line in enumerate(byte_lines(chunks), 1):
            if last is not None and number > last:
                break
            if number >= first:
                sys.stdout.buffer.write(line + b"\n")
    sys.stdout.buffer.flush()


def _show_raw_output(db: sqlite3.Connection, raw_id: str, *, as_raw: bool, as_json: bool) -> None:
    found = raw.get_raw_output(db, raw_id)
    if found is None:
        raise click.ClickException(f"No raw output {raw_id}.")
    if found.expired_at is not None and as_raw:
        raise click.ClickException(f"{raw_id}: raw expired ({found.stdout_size:,} bytes dropped by `codeoid gc` to "
                                   "keep the data dir under its budget); `codeoid show` prints what remains.")
    if as_raw:
        for chunk in raw.iter_raw_stdout(db, raw_id):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        return
    stdout = raw.read_raw_stdout(db, raw_id).decode("utf-8", "backslashreplace")
    fields = {name: getattr(found, name) for name in found.__dataclass_fields__}
    fields["stderr"] = (found.stderr or b"").decode("utf-8", "backslashreplace")
    if as_json:
        print_json({**fields, "stdout": stdout})
        return
    for name in ("id", "command", "cwd", "exit_status", "duration_ms", "stdout_size", "complete", "created_at"):
        click.echo(f"{name}: {format_time(fields[name]) if name == 'created_at' else fields[name]}")
    click.echo("")
    click.echo(stdout)


@cli.command()
@click.argument("query")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON, episode text whole.")
@scope_option
def search(query: str, limit: int, as_json: bool, all_workspaces: bool) -> None:
    """Find episodes by words and meaning, with their lines.

    BM25 and the vector index fused, ranked as the MCP server's recall ranks them; archived episodes included.
    `codeoid show ID --lines A-B` pages the rest of a hit.
    """
    from codeoid.memory import hits, line_choice  # the search stack loads only for a search
    from codeoid.service import client  # ranked by the memory service, whose model is warm; started if need be

    if not query.strip():
        raise click.ClickException("The query is empty.")
    with open_store() as db:
        found = client.recall_ranked(db, query, workspace_id=workspace_scope(db, all_workspaces), limit=limit)
        raw_outputs = {row["raw_output_id"]: facts for row in found.rows if row["raw_output_id"]
                       for facts in [hits.raw_facts(db, row["raw_output_id"])] if facts is not None}
        terms = line_choice.question_terms(db, query)
        choices = [line_choice.choose(db, terms, row) for row in found.rows]
        roots = dict(db.execute("SELECT id, root FROM workspaces").fetchall()) if all_workspaces else {}
    if found.fallback:
        click.echo(f"BM25 only: {found.fallback}.", err=True)
    if as_json:
        print_json(found.rows)
        return
    if not found.rows:
        click.echo("No episode matches.")
        return
    head = (f"{len(found.rows)} hit{'s' if len(found.rows) != 1 else ''}, best first ({found.signals}). "
            "`codeoid show ID --lines A-B` pages any episode or raw output exactly.")
    places = {row["id"]: roots.get(row["workspace_id"], "?") for row in found.rows} if roots else None
    click.echo(hits.render_hits(head, found.rows, choices=choices, budget=None, raw_outputs=raw_outputs, places=places,
                                page_call=lambda item, lines: f"codeoid show {item} --lines {lines}"))


@cli.command(epilog="""\b
Examples:
  codeoid gain                        per rule, per session and in total
  codeoid gain --daily --since 14d    one line and a bar per day of the last two weeks
  codeoid gain --weekly --csv         per week (weeks start on Monday), for a spreadsheet
  codeoid gain --session c4cf --json  one session (a unique id prefix or its name), every field""")
@click.option("--session", "session_ref", metavar="SESSION",
              help="Only the raw outputs of this codeoid session: its id, a unique prefix of it, or its name.")
@click.option("--daily", "period", flag_value="day", help="One line per day, with a bar chart of tokens saved.")
@click.option("--weekly", "period", flag_value="week", help="One line per week (from Monday), with a bar chart.")
@click.option("--since", metavar="WHEN", help="Only runs from then on: a date (2026-11-30) or an age (7d, 2w, 12h).")
@click.option("--json", "as_json", is_flag=True, help="Print every account as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the table as CSV (the per-day or per-week one with "
              "--daily/--weekly).")
@scope_option
def gain(session_ref: str | None, period: str | None, since: str | None, as_json: bool, as_csv: bool,
         all_workspaces: bool) -> None:
    """Tokens compression kept out of the model's window.

    Per rule, per session and in total (or per day or week): the window Claude Code alone would have shown for
    the same calls (a long success as its 2 KB preview, a long failure as its first and last 5,000 characters),
    the window codeoid's text took, the difference (negative where codeoid showed more), less what the model read
    back of the raw outputs (charged back on every read). Raw and shown bytes follow as a second account.
    """
    from codeoid.store import ledger

    if as_json and as_csv:
        raise click.UsageError("Give one of --json and --csv.")
    since_stamp = parse_since(since) if since else None
    with open_store() as db:
        session_id = session_id_of(db, session_ref, param_hint="--session") if session_ref else None
        workspace_id = None if session_id else workspace_scope(db, all_workspaces)
        accounts = ledger.gain(db, workspace_id=workspace_id, session_id=session_id, since=since_stamp)
        if period:
            accounts[f"by_{period}"] = ledger.over_time(db, period, workspace_id=workspace_id,
                                                        session_id=session_id, since=since_stamp)
        hint = ledger.missed_hint(*ledger.missed(db, workspace_id=workspace_id, session_id=session_id))
    if as_json:
        print_json(accounts)
        return
    tables = ([(period, accounts[f"by_{period}"])] if period else
              [("rule", accounts["by_rule"]), ("session", accounts["by_session"]), ("total", [accounts["total"]])])
    if as_csv:
        _print_csv(tables)
        return
    if not accounts["total"]["runs"]:
        click.echo("No compressed output is recorded here" + (" since then." if since else " yet."))
        if hint:
            click.echo(hint)
        return
    click.echo("Sizes in characters of the model's window; ~tok is estimated tokens (4 a token). alone = what "
               "Claude Code alone would have shown for these calls; saved = alone - codeoid; net = saved - charged "
               "(what the model read back). raw B and shown B: the outputs' bytes, before and after compression.")
    if period:
        click.echo("")
        rows = accounts[f"by_{period}"]
        for line, bar in zip(_gain_table(period, rows), ["", *_bars([row["net_tokens"] for row in rows])],
                             strict=True):
            click.echo(f"{line}  {bar}".rstrip())
        click.echo("")
        for line in _gain_table("", [accounts["total"]]):
            click.echo(line)
    else:
        for title, rows in tables:
            click.echo("")
            for line in _gain_table("" if title == "total" else title, rows):
                click.echo(line)
    costly = [row for row in accounts["by_rule"] if row["saved_chars"] < 0] if not period else []
    for row in costly:
        click.echo("")
        click.echo(f"{row['key']} put {-row['saved_chars']:,} more characters in the window than Claude Code alone "
                   "would have (it previews a long success in about 2,300).")
    if hint:
        click.echo("")
        click.echo(hint)


_GAIN_COLUMNS = (("runs", "runs"), ("alone", "alone_chars"), ("codeoid", "window_chars"), ("saved", "saved_chars"),
                 ("saved%", "saved_percent"), ("~tok", "saved_tokens"), ("reads", "reads"),
                 ("charged", "charged_bytes"), ("~tok", "charged_tokens"), ("net", "net_chars"), ("~tok", "net_tokens"),
                 ("raw B", "raw_bytes"), ("shown B", "shown_bytes"))
BAR_WIDTH = 30


def parse_since(text: str) -> float:
    """A start time from a local date (2026-11-30) or an age back from now (90m, 12h, 7d, 2w)."""
    import datetime
    import re

    age = re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", text)
    if age:
        seconds = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}[age.group(2)]
        return time.time() - int(age.group(1)) * seconds
    try:
        return datetime.datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise click.BadParameter(f"{text!r} is neither a date (2026-11-30) nor an age (7d, 2w, 12h, 90m).",
                                 param_hint="--since") from None


def _bars(values: list[int]) -> list[str]:
    """One bar per value, the longest `BAR_WIDTH` characters, in eighths of a block; a net loss shows as '-'."""
    top = max([value for value in values if value > 0], default=0)
    bars = []
    for value in values:
        if value <= 0 or top == 0:
            bars.append("-" if value < 0 else "")
            continue
        eighths = max(1, round(value * BAR_WIDTH * 8 / top))
        bars.append("\u2588" * (eighths // 8) + ("", *"\u258f\u258e\u258d\u258c\u258b\u258a\u2589")[eighths % 8])
    return bars


def _print_csv(tables: list[tuple[str, list[dict[str, Any]]]]) -> None:
    """The rows of every table, one CSV with the table's name as the first column."""
    import csv

    fields = [field for _, field in _GAIN_COLUMNS]
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(["group", "key", *fields])
    for title, rows in tables:
        for row in rows:
            writer.writerow([title, row["key"], *(row[field] for field in fields)])


def _cell(row: dict[str, Any], field: str) -> str:
    return f"{row[field]:.1f}%" if field == "saved_percent" else f"{row[field]:,}"


def _gain_table(title: str, rows: list[dict[str, Any]]) -> list[str]:
    """Right-aligned columns with thousands separators, the key column as wide as its longest entry."""
    cells = [[_cell(row, field) for _, field in _GAIN_COLUMNS] for row in rows]
    widths = [max(len(heading), *(len(line[index]) for line in cells))
              for index, (heading, _) in enumerate(_GAIN_COLUMNS)]
    key_width = max(len(title), *(len(str(row["key"])) for row in rows))
    lines = ["  ".join([title.ljust(key_width), *(heading.rjust(width) for (heading, _), width
                                                   in zip(_GAIN_COLUMNS, widths, strict=True))])]
    for row, line in zip(rows, cells, strict=True):
        lines.append("  ".join([str(row["key"]).ljust(key_width),
                                *(cell.rjust(width) for cell, width in zip(line, widths, strict=True))]))
    return lines


@cli.command()
@click.option("--stored", is_flag=True, help="Print the stored index as it is, without rebuilding it first.")
@click.option("--plugin", is_flag=True, help="Name the tools as the plugin route does.")
def index(stored: bool, plugin: bool) -> None:
    """Rebuild and print the workspace index.

    The index is the text a new Claude Code window starts with: fingerprint, hot files, topics, recent sessions.
    """
    from codeoid.memory import workspace_index
    from codeoid.memory_tools import PLUGIN_TOOL_PREFIX, SETTINGS_TOOL_PREFIX
    from codeoid.store import workspace_index as stored_index

    with open_store() as db:
        workspace_id = workspace_scope(db, all_workspaces=False)
        assert workspace_id is not None
        if not stored:
            _build_workspace_index(db, workspace_id)
        current = stored_index.latest(db, workspace_id)
    if current is None:
        raise click.ClickException("No workspace index is stored yet; run `codeoid index` to build one.")
    click.echo(workspace_index.for_window(current, PLUGIN_TOOL_PREFIX if plugin else SETTINGS_TOOL_PREFIX))


@cli.command()
def reindex() -> None:
    """Rebuild the vector index from the store.

    This store's chunks of every workspace are deleted and embedded anew (on a team's server, teammates' chunks
    stay), by the memory service's indexer (started if need be), the one that indexes new episodes.
    """
    from codeoid.memory.ranking import vector_enabled

    if vector_enabled():
        from codeoid.service import client

        try:
            latest = client.reindex()
        except client.ServiceUnavailable as error:
            click.echo(f"codeoid: the memory service is unavailable ({error}); indexing in this process", err=True)
        except client.VectorsUnreachable as error:
            raise click.ClickException(f"The vector index cannot be reached: {error}") from error
        else:
            _wait_for_the_service_index(latest)
            return
    _reindex_here()


def _build_workspace_index(db: sqlite3.Connection, workspace_id: int) -> None:
    """Build the workspace index: by the memory service when vectors are on (started if need be; it holds the
    vector index's connection and numpy warm), else, or when it cannot start, here."""
    import os

    from codeoid.memory import workspace_index
    from codeoid.memory.ranking import vector_enabled

    if not vector_enabled():
        workspace_index.build(db, workspace_id, vectors=None)
        return
    from codeoid.service import client

    try:
        client.build_index(os.getcwd())
        return
    except (client.ServiceUnavailable, client.VectorsUnreachable) as error:
        click.echo(f"codeoid: the memory service could not build the index ({error}); building it here", err=True)
    from codeoid.memory.vector_index import VectorIndex
    from codeoid.store.identity import store_id

    workspace_index.build(db, workspace_id, vectors=VectorIndex(store=store_id(db)))


def _wait_for_the_service_index(latest: int) -> None:
    """Show the service's indexer embedding the store until the watermark reaches `latest`. A service that died
    meanwhile is started again and its indexer goes on from the watermark; Ctrl-C leaves it working."""
    from codeoid.service import client
    from codeoid.store import vector_progress

    def indexed(db: sqlite3.Connection, upto: int) -> int:
        return int(db.execute("SELECT count(*) FROM episodes WHERE id <= ?", (upto,)).fetchone()[0])

    with open_store() as db:
        total = indexed(db, latest)
        done = 0
        with click.progressbar(length=total, label="Indexing episodes") as bar:
            while True:
                upto = vector_progress.progress(db).indexed_upto
                now = indexed(db, min(upto, latest))
                bar.update(now - done)
                done = now
                if upto >= latest:
                    break
                try:
                    client.ensure_running()
                except client.ServiceUnavailable as error:
                    raise click.ClickException(f"The memory service stopped and cannot start again: {error}; "
                                               "run `codeoid reindex` again") from error
                time.sleep(REINDEX_POLL_SECONDS)
    click.echo(f"Indexed {plural(total, 'episode')}.")


def _reindex_here() -> None:
    """The reindex in this process, with an indexer of its own (the memory service cannot run, or vectors are off
    and someone asked anyway)."""
    from codeoid.memory.indexer import Indexer
    from codeoid.memory.vector_index import VectorIndexUnavailable, workspace_index_id
    from codeoid.store import vector_progress

    with open_store() as db:
        try:
            indexer = Indexer(db)
            for portable_id, key in db.execute("SELECT portable_id, key FROM workspaces").fetchall():
                indexer.index.forget_store(workspace_index_id(portable_id, key))
            vector_progress.reset(db)
            total = queries.count_episodes(db, include_retracted=True)
            with click.progressbar(length=total, label="Indexing episodes") as bar:
                while True:
                    count = indexer.step()
                    if count is None:  # another indexer holds a batch: it will finish it
                        time.sleep(indexer.settings.poll_seconds)
                        continue
                    if count == 0:
                        break
                    bar.update(count)
        except VectorIndexUnavailable as error:
            raise click.ClickException(f"The vector index cannot be reached: {error}") from error
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}") from error
    click.echo(f"Indexed {plural(total, 'episode')}.")
