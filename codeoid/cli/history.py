"""Reading what the store holds: `sessions`, `timeline`, `show`, `search`, `gain`, and the indexes (`index`,
`reindex`)."""

from __future__ import annotations

import sqlite3
import sys
import time
from typing import Any

import click

from codeoid.cli.common import format_time, open_store, print_json, scope_option, workspace_scope
from codeoid.cli.group import cli
from codeoid.store import db as store_db
from codeoid.store import queries, raw


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON.")
@scope_option
def sessions(as_json: bool, all_workspaces: bool) -> None:
    """List codeoid sessions, newest activity first."""
    with open_store() as db:
        rows = queries.sessions(db, workspace_id=workspace_scope(db, all_workspaces))
        if as_json:
            for row in rows:
                row["backing"] = queries.backing_sessions(db, row["id"])
            print_json(rows)
            return
    for row in rows:
        lineage = f"  forked from {row['forked_from']} at turn {row['at_turn']}" if row["forked_from"] else ""
        name = f" ({row['name']})" if row["name"] else ""
        click.echo(
            f"{row['id']}{name}  {format_time(row['last_activity'])}  {row['turn_count']} turns"
            f"  {row['episodes']} episodes  {row['rotation_count']} rotations  {row['workspace']}{lineage}"
        )


@cli.command()
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0), help="0 is the newest page.")
@click.option("--session", "session_id", help="Only this codeoid session.")
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON, episode text whole.")
@scope_option
def timeline(limit: int, offset: int, session_id: str | None, as_json: bool, all_workspaces: bool) -> None:
    """The history in order, one line per episode (the newest page by default)."""
    with open_store() as db:
        workspace_id = None if session_id else workspace_scope(db, all_workspaces)
        rows = queries.timeline(db, workspace_id=workspace_id, session_id=session_id, offset=offset, limit=limit)
        lineage = queries.session_lineage(db, session_id) if session_id else []
    if as_json:
        print_json(rows)
        return
    if len(lineage) > 1:
        click.echo(f"session {session_id} is forked from {lineage[1][0]} at turn {lineage[1][1]}; its history "
                   "starts with what it inherited:")
        for ancestor, upto in lineage[1:]:
            click.echo(f"  turns up to {upto} of {ancestor}, marked [from {ancestor[:8]}]")
    for row in rows:
        state = "" if row["state"] == "live" else f" [{row['state']}]"
        inherited = f" [from {row['session_id'][:8]}]" if session_id and row["session_id"] != session_id else ""
        when = format_time(row["created_at"])
        click.echo(f"{row['id']:>6}  {when}  {row['kind']:<9}{state}{inherited} {row['summary']}")


@cli.command()
@click.argument("episode_id")
@click.option("--raw", "as_raw", is_flag=True, help="Write the exact stored bytes (raw output or episode text).")
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON.")
def show(episode_id: str, as_raw: bool, as_json: bool) -> None:
    """Show one episode (a number) or raw output (`raw-...`) in full."""
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
        for field in ("id", "kind", "state", "tool_name", "original_command", "command", "exit_status",
                      "session_id", "turn", "created_at", "raw_output_id", "summary"):
            if row.get(field) is not None and not (field == "command" and row["command"] == row["original_command"]):
                value = format_time(row[field]) if field == "created_at" else row[field]
                click.echo(f"{field}: {value}")
        click.echo("")
        click.echo(row["text"])


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
    """Find episodes by words and meaning (BM25 and the vector index fused, as the MCP server's recall)."""
    from codeoid.memory import retrieval  # the vector stack loads only for a search

    if not query.strip():
        raise click.ClickException("The query is empty.")
    with open_store() as db:
        found = retrieval.recall_ranked(db, query, workspace_id=workspace_scope(db, all_workspaces), limit=limit)
    if found.fallback:
        click.echo(f"BM25 only: {found.fallback}.", err=True)
    if as_json:
        print_json(found.rows)
        return
    if not found.rows:
        click.echo("No episode matches.")
    for row in found.rows:
        when = format_time(row["created_at"])
        click.echo(f"{row['id']:>6}  {row['score']:8.4f}  {when}  {row['kind']:<9} {row['summary']}")


@cli.command()
@click.option("--session", "session_id", help="Only the raw outputs of this codeoid session.")
@click.option("--json", "as_json", is_flag=True, help="Print every account as JSON.")
@scope_option
def gain(session_id: str | None, as_json: bool, all_workspaces: bool) -> None:
    """Bytes and estimated tokens compression kept out of the model's window, per rule, per session and in
    total, less what the model read back of the raw outputs (charged back on every read)."""
    from codeoid.store import ledger

    with open_store() as db:
        workspace_id = None if session_id else workspace_scope(db, all_workspaces)
        accounts = ledger.gain(db, workspace_id=workspace_id, session_id=session_id)
        hint = ledger.missed_hint(*ledger.missed(db, workspace_id=workspace_id, session_id=session_id))
    if as_json:
        print_json(accounts)
        return
    if not accounts["total"]["runs"]:
        click.echo("No compressed output is recorded here yet.")
        if hint:
            click.echo(hint)
        return
    click.echo("Sizes in bytes; ~tok is estimated tokens (4 bytes a token). saved = raw - shown; "
               "net = saved - charged (what the model read back).")
    for title, rows in (("rule", accounts["by_rule"]), ("session", accounts["by_session"]),
                        ("", [accounts["total"]])):
        click.echo("")
        for line in _gain_table(title, rows):
            click.echo(line)
    if hint:
        click.echo("")
        click.echo(hint)


_GAIN_COLUMNS = (("runs", "runs"), ("raw", "raw_bytes"), ("shown", "shown_bytes"), ("saved", "saved_bytes"),
                 ("~tok", "saved_tokens"), ("reads", "reads"), ("charged", "charged_bytes"),
                 ("~tok", "charged_tokens"), ("net", "net_bytes"), ("~tok", "net_tokens"))


def _gain_table(title: str, rows: list[dict[str, Any]]) -> list[str]:
    """Right-aligned columns with thousands separators, the key column as wide as its longest entry."""
    cells = [[f"{row[field]:,}" for _, field in _GAIN_COLUMNS] for row in rows]
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
    """Rebuild and print the workspace index: the text a new Claude Code window starts with."""
    from codeoid.memory import workspace_index
    from codeoid.memory.ranking import vector_enabled
    from codeoid.memory_tools import PLUGIN_TOOL_PREFIX, SETTINGS_TOOL_PREFIX
    from codeoid.store import workspace_index as stored_index

    with open_store() as db:
        workspace_id = workspace_scope(db, all_workspaces=False)
        assert workspace_id is not None
        if not stored:
            vectors = None
            if vector_enabled():
                from codeoid.memory.vector_index import VectorIndex
                from codeoid.store.identity import store_id

                vectors = VectorIndex(store=store_id(db))
            workspace_index.build(db, workspace_id, vectors=vectors)
        current = stored_index.latest(db, workspace_id)
    if current is None:
        raise click.ClickException("No workspace index is stored yet; run `codeoid index` to build one.")
    click.echo(workspace_index.for_window(current, PLUGIN_TOOL_PREFIX if plugin else SETTINGS_TOOL_PREFIX))


@cli.command()
def reindex() -> None:
    """Rebuild the vector index from the store: this store's chunks of every workspace deleted and embedded anew
    (on a team's server, teammates' chunks stay)."""
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
                    if count is None:  # a running MCP server's indexer holds a batch: it will finish it
                        time.sleep(indexer.settings.poll_seconds)
                        continue
                    if count == 0:
                        break
                    bar.update(count)
        except VectorIndexUnavailable as error:
            raise click.ClickException(f"The vector index cannot be reached: {error}") from error
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}") from error
    click.echo(f"Indexed {total} episodes.")
