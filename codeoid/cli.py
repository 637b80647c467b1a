"""`codeoid`: install into Claude Code, check the installation, and read what the store holds.

Thin commands over library functions: options are parsed and results printed here, the work lives in
`codeoid.install`, `codeoid.doctor` and `codeoid.store`. Every read command can print JSON with every
field and the episode text whole.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from codeoid import __version__, exclusions, ingest, retrieval
from codeoid.render import one_line
from codeoid.store import db as store_db
from codeoid.store import queries, raw

if TYPE_CHECKING:
    from codeoid.fork.launch import Launch


@click.group()
@click.version_option(__version__, prog_name="codeoid")
def cli() -> None:
    """codeoid keeps every turn of your Claude Code sessions verbatim and pages it back on demand."""


@cli.command()
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
              help="user: ~/.claude/settings.json for every project; project: this project's settings.local.json.")
@click.option("--force", is_flag=True, help="Install even though codeoid is active as a Claude Code plugin.")
def install(scope: str, force: bool) -> None:
    """Register codeoid's hooks and MCP server with Claude Code."""
    from codeoid import install as installer

    try:
        outcome = installer.install(scope, force=force)  # type: ignore[arg-type]
    except installer.InstallError as error:
        raise click.ClickException(str(error)) from error
    _print_outcome(outcome, nothing="Already installed; nothing changed.")


@cli.command()
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True)
def uninstall(scope: str) -> None:
    """Remove codeoid's hooks, MCP server and allow rule (only codeoid's own entries; backups are kept)."""
    from codeoid import install as installer

    try:
        outcome = installer.uninstall(scope)  # type: ignore[arg-type]
    except installer.InstallError as error:
        raise click.ClickException(str(error)) from error
    _print_outcome(outcome, nothing="Not installed; nothing changed.")


def _print_outcome(outcome: Any, *, nothing: str) -> None:
    for path in outcome.written:
        click.echo(f"wrote {path}")
    for path in outcome.removed:
        click.echo(f"removed {path}")
    for path in outcome.backups:
        click.echo(f"backup {path}")
    for note in outcome.notes:
        click.echo(note)
    if not (outcome.written or outcome.removed):
        click.echo(nothing)


@cli.command()
def doctor() -> None:
    """Check the installation, versions, permissions and backlog, in words; exit 1 if anything failed."""
    from codeoid.doctor import doctor_report

    findings = doctor_report()
    for finding in findings:
        click.echo(f"[{finding.status:>4}] {finding.sentence}")
    if any(finding.status == "fail" for finding in findings):
        sys.exit(1)


@contextmanager
def _store() -> Iterator[sqlite3.Connection]:
    """Open the store for reading, landing any spooled events first so what is printed is complete."""
    try:
        db = store_db.connect()
    except store_db.StoreUnavailable as error:
        raise click.ClickException(f"The store cannot be opened: {error}") from error
    try:
        try:
            ingest.replay_backlog(db)
        except (store_db.StoreUnavailable, store_db.StoreCorrupt):
            pass  # still busy: reading what is committed is the best we can do
        yield db
    finally:
        db.close()


def _scope_option(fn: Any) -> Any:
    return click.option("--all-workspaces", "all_workspaces", is_flag=True,
                        help="Include every workspace, not only the one of the current directory.")(fn)


def _workspace_id(db: sqlite3.Connection, all_workspaces: bool) -> int | None:
    if all_workspaces:
        return None
    found = queries.workspace_id_for(db, os.getcwd())
    if found is None:
        raise click.ClickException(
            f"Nothing is stored for the workspace of {os.getcwd()}; run inside a project codeoid has seen, "
            "or pass --all-workspaces."
        )
    return found


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON.")
@_scope_option
def sessions(as_json: bool, all_workspaces: bool) -> None:
    """List codeoid sessions, newest activity first."""
    with _store() as db:
        rows = queries.sessions(db, workspace_id=_workspace_id(db, all_workspaces))
        if as_json:
            for row in rows:
                row["backing"] = queries.backing_sessions(db, row["id"])
            _print_json(rows)
            return
    for row in rows:
        lineage = f"  forked from {row['forked_from']} at turn {row['at_turn']}" if row["forked_from"] else ""
        name = f" ({row['name']})" if row["name"] else ""
        click.echo(
            f"{row['id']}{name}  {_time(row['last_activity'])}  {row['turn_count']} turns  {row['episodes']} episodes"
            f"  {row['rotation_count']} rotations  {row['workspace']}{lineage}"
        )


@cli.command()
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0), help="0 is the newest page.")
@click.option("--session", "session_id", help="Only this codeoid session.")
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON, episode text whole.")
@_scope_option
def timeline(limit: int, offset: int, session_id: str | None, as_json: bool, all_workspaces: bool) -> None:
    """The history in order, one line per episode (the newest page by default)."""
    with _store() as db:
        workspace_id = None if session_id else _workspace_id(db, all_workspaces)
        rows = queries.timeline(db, workspace_id=workspace_id, session_id=session_id, offset=offset, limit=limit)
        lineage = queries.session_lineage(db, session_id) if session_id else []
    if as_json:
        _print_json(rows)
        return
    if len(lineage) > 1:
        click.echo(f"session {session_id} is forked from {lineage[1][0]} at turn {lineage[1][1]}; its history "
                   "starts with what it inherited:")
        for ancestor, upto in lineage[1:]:
            click.echo(f"  turns up to {upto} of {ancestor}, marked [from {ancestor[:8]}]")
    for row in rows:
        state = "" if row["state"] == "live" else f" [{row['state']}]"
        inherited = f" [from {row['session_id'][:8]}]" if session_id and row["session_id"] != session_id else ""
        click.echo(f"{row['id']:>6}  {_time(row['created_at'])}  {row['kind']:<9}{state}{inherited} {row['summary']}")


@cli.command()
@click.argument("episode_id")
@click.option("--raw", "as_raw", is_flag=True, help="Write the exact stored bytes (raw output or episode text).")
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON.")
def show(episode_id: str, as_raw: bool, as_json: bool) -> None:
    """Show one episode (a number) or raw output (`raw-...`) in full."""
    with _store() as db:
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
        _print_json(row)
    else:
        for field in ("id", "kind", "state", "tool_name", "original_command", "command", "exit_status",
                      "session_id", "turn", "created_at", "raw_output_id", "summary"):
            if row.get(field) is not None and not (field == "command" and row["command"] == row["original_command"]):
                value = _time(row[field]) if field == "created_at" else row[field]
                click.echo(f"{field}: {value}")
        click.echo("")
        click.echo(row["text"])


def _show_raw_output(db: sqlite3.Connection, raw_id: str, *, as_raw: bool, as_json: bool) -> None:
    found = raw.get_raw_output(db, raw_id)
    if found is None:
        raise click.ClickException(f"No raw output {raw_id}.")
    if as_raw:
        for chunk in raw.iter_raw_stdout(db, raw_id):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        return
    stdout = raw.read_raw_stdout(db, raw_id).decode("utf-8", "backslashreplace")
    fields = {name: getattr(found, name) for name in found.__dataclass_fields__}
    fields["stderr"] = (found.stderr or b"").decode("utf-8", "backslashreplace")
    if as_json:
        _print_json({**fields, "stdout": stdout})
        return
    for name in ("id", "command", "cwd", "exit_status", "duration_ms", "stdout_size", "complete", "created_at"):
        click.echo(f"{name}: {_time(fields[name]) if name == 'created_at' else fields[name]}")
    click.echo("")
    click.echo(stdout)


@cli.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--remove", is_flag=True, help="Record this project again.")
@click.option("--list", "show", is_flag=True, help="Print the excluded projects.")
def exclude(directory: str | None, remove: bool, show: bool) -> None:
    """Keep a project out of codeoid (default: the current directory): from now on its hooks store nothing,
    Bash output there is not compressed or archived, and recall there answers that nothing is kept. What was
    stored before stays; `codeoid retract` takes it back."""
    listing = exclusions.list_file()
    if show:
        for entry in exclusions.entries():
            click.echo(entry)
        return
    target = os.path.realpath(os.path.expanduser(directory or os.getcwd()))
    current = _read_lines(listing)
    if remove:
        kept = [line for line in current if os.path.realpath(os.path.expanduser(line.strip())) != target]
        if len(kept) == len(current):
            raise click.ClickException(f"{target} is not in {listing}" + (
                f"; it is excluded by {exclusions.excluded_by(target)!r}" if exclusions.excluded_by(target) else ""))
        _write_lines(listing, kept)
        click.echo(f"codeoid records {target} again.")
        return
    if exclusions.excluded_by(target) is None:
        _write_lines(listing, [*current, target])
    click.echo(f"codeoid records nothing in {target} from now on.")


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as file:
            return [line.rstrip("\n") for line in file]
    except FileNotFoundError:
        return []


def _write_lines(path: str, lines: list[str]) -> None:
    from codeoid import paths

    paths.data_dir()
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = paths.open_private(temporary, os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.writelines(f"{line}\n" for line in lines)
    os.replace(temporary, path)


@cli.command()
@click.argument("episodes", nargs=-1, required=True)
def retract(episodes: tuple[str, ...]) -> None:
    """Take episodes back (ids, or ranges such as 40-45): hidden from recall, timeline, get_episode and the
    vector index, kept in the store (`codeoid show` reads them, `codeoid restore` gives them back)."""
    from codeoid.store import retraction

    ids = _episode_ids(episodes)
    with _store() as db:
        try:
            changed = retraction.retract(db, ids)
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}; nothing was retracted.") from error
        summaries = {change.episode_id: queries.get_episode(db, change.episode_id) for change in changed}
    for change in changed:
        row = summaries[change.episode_id] or {}
        click.echo(f"retracted {change.episode_id} (was {change.before}): {one_line(str(row.get('summary')), 100)}")
    _say_untouched(ids, changed, "already retracted or not stored")


@cli.command()
@click.argument("episodes", nargs=-1, required=True)
def restore(episodes: tuple[str, ...]) -> None:
    """Give retracted episodes back (ids, or ranges such as 40-45): searchable and indexed again."""
    from codeoid.store import retraction

    ids = _episode_ids(episodes)
    with _store() as db:
        try:
            changed = retraction.restore(db, ids)
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}; nothing was restored.") from error
    for change in changed:
        click.echo(f"restored {change.episode_id} ({change.after})")
    _say_untouched(ids, changed, "not retracted or not stored")


MAX_EPISODES_AT_ONCE = 10_000


def _episode_ids(arguments: tuple[str, ...]) -> list[int]:
    ids: list[int] = []
    for argument in arguments:
        first, dash, last = argument.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise click.BadParameter(f"{argument!r} is not an episode id (42) or a range of them (40-45).")
        low, high = int(first), int(last) if dash else int(first)
        if high < low or high - low >= MAX_EPISODES_AT_ONCE:
            raise click.BadParameter(f"{argument!r}: give a range from low to high, at most "
                                     f"{MAX_EPISODES_AT_ONCE:,} episodes.")
        ids.extend(range(low, high + 1))
    return sorted(set(ids))


def _say_untouched(ids: list[int], changed: list[Any], why: str) -> None:
    untouched = sorted(set(ids) - {change.episode_id for change in changed})
    if untouched:
        click.echo(f"left as they were ({why}): {', '.join(map(str, untouched))}", err=True)


@cli.command()
@click.argument("query")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Print every field as JSON, episode text whole.")
@_scope_option
def search(query: str, limit: int, as_json: bool, all_workspaces: bool) -> None:
    """Find episodes by words and meaning (BM25 and the vector index fused, as the MCP server's recall)."""
    if not query.strip():
        raise click.ClickException("The query is empty.")
    with _store() as db:
        found = retrieval.recall_ranked(db, query, workspace_id=_workspace_id(db, all_workspaces), limit=limit)
    if found.fallback:
        click.echo(f"BM25 only: {found.fallback}.", err=True)
    if as_json:
        _print_json(found.rows)
        return
    if not found.rows:
        click.echo("No episode matches.")
    for row in found.rows:
        when = _time(row["created_at"])
        click.echo(f"{row['id']:>6}  {row['score']:8.4f}  {when}  {row['kind']:<9} {row['summary']}")


@cli.command()
@click.option("--session", "session_id", help="Only the raw outputs of this codeoid session.")
@click.option("--json", "as_json", is_flag=True, help="Print every account as JSON.")
@_scope_option
def gain(session_id: str | None, as_json: bool, all_workspaces: bool) -> None:
    """Bytes and estimated tokens compression kept out of the model's window, per rule, per session and in
    total, less what the model read back of the raw outputs (charged back on every read)."""
    from codeoid.store import ledger

    with _store() as db:
        workspace_id = None if session_id else _workspace_id(db, all_workspaces)
        accounts = ledger.gain(db, workspace_id=workspace_id, session_id=session_id)
    if as_json:
        _print_json(accounts)
        return
    if not accounts["total"]["runs"]:
        click.echo("No compressed output is recorded here yet.")
        return
    click.echo("Sizes in bytes; ~tok is estimated tokens (4 bytes a token). saved = raw - shown; "
               "net = saved - charged (what the model read back).")
    for title, rows in (("rule", accounts["by_rule"]), ("session", accounts["by_session"]),
                        ("", [accounts["total"]])):
        click.echo("")
        for line in _gain_table(title, rows):
            click.echo(line)


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
def reindex() -> None:
    """Rebuild the vector index from the store: this store's chunks of every workspace deleted and embedded anew
    (on a team's server, teammates' chunks stay)."""
    from codeoid.indexer import Indexer
    from codeoid.store import vector_progress
    from codeoid.vector_index import VectorIndexUnavailable, workspace_index_id

    with _store() as db:
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


@cli.command()
@click.option("--stored", is_flag=True, help="Print the stored index as it is, without rebuilding it first.")
@click.option("--plugin", is_flag=True, help="Name the tools as the plugin route does.")
def index(stored: bool, plugin: bool) -> None:
    """Rebuild and print the workspace index: the text a new Claude Code window starts with."""
    from codeoid import workspace_index
    from codeoid.ranking import vector_enabled
    from codeoid.rotation.seed import PLUGIN_TOOL_PREFIX, SETTINGS_TOOL_PREFIX
    from codeoid.store import workspace_index as stored_index

    with _store() as db:
        workspace_id = _workspace_id(db, all_workspaces=False)
        assert workspace_id is not None
        if not stored:
            vectors = None
            if vector_enabled():
                from codeoid.store.identity import store_id
                from codeoid.vector_index import VectorIndex

                vectors = VectorIndex(store=store_id(db))
            workspace_index.build(db, workspace_id, vectors=vectors)
        current = stored_index.latest(db, workspace_id)
    if current is None:
        raise click.ClickException("No workspace index is stored yet; run `codeoid index` to build one.")
    click.echo(workspace_index.for_window(current, PLUGIN_TOOL_PREFIX if plugin else SETTINGS_TOOL_PREFIX))


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("claude_args", nargs=-1, type=click.UNPROCESSED)
def run(claude_args: tuple[str, ...]) -> None:
    """Run claude under the supervisor: rotate into a fresh window instead of compacting (all arguments go to
    claude; thresholds: CODEOID_AUTO_ROTATE=1 for 90%, 97% always)."""
    sys.exit(_supervise(list(claude_args), project_dir=os.getcwd()))


def _supervise(claude_args: list[str], *, project_dir: str, session_id: str | None = None) -> int:
    """Run claude under the supervisor in `project_dir` (as `codeoid run` does), for a new codeoid session or,
    given `session_id`, for that one (a fork); returns the exit code to leave with."""
    from pathlib import Path

    from codeoid.fork.backends import BackendMissing, find_binary
    from codeoid.rotation import claude_args as args_module
    from codeoid.rotation.config import ConfigError, load_config
    from codeoid.rotation.routes import detect_wiring
    from codeoid.rotation.supervisor import Supervisor

    excluded = exclusions.excluded_by(project_dir)
    if excluded is not None:
        raise click.ClickException(f"{project_dir} is excluded from codeoid ({excluded!r}): nothing is recorded "
                                   "there, so there is nothing to rotate from. Run claude directly, or "
                                   "`codeoid exclude --remove` it.")
    try:
        claude_bin = find_binary("claude")
        user = args_module.parse(claude_args)
        config = load_config()
        wiring = detect_wiring(user, Path(project_dir).resolve())
        supervisor = Supervisor(user, claude_bin=claude_bin, config=config, wiring=wiring, project_dir=project_dir,
                                session_id=session_id)
    except (BackendMissing, args_module.ArgsError, ConfigError) as error:
        raise click.ClickException(str(error)) from error
    return supervisor.run()


@cli.command()
@click.argument("session")
@click.argument("claude_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--at", "at_turn", type=click.IntRange(1), help="Fork after this turn (default: the last one).")
@click.option("--backend", type=click.Choice(["claude", "codex", "gemini"]), default="claude", show_default=True)
@click.option("--name", help="A name for the new session (codeoid sessions shows it; codeoid fork accepts it).")
@click.option("--print", "print_prompt", metavar="PROMPT",
              help="Send one prompt to the fork without a terminal (claude -p, codex exec, gemini --prompt) and "
                   "print the answer.")
@click.option("--no-start", is_flag=True, help="Prepare the fork and print how to start it, without starting it.")
@click.option("--window", "window_tokens", type=click.IntRange(1000),
              help="The target model's context window in tokens (default: from the --model given to claude; "
                   "200,000 for codex and gemini).")
def fork(session: str, claude_args: tuple[str, ...], at_turn: int | None, backend: str, name: str | None,
         print_prompt: str | None, no_start: bool, window_tokens: int | None) -> None:
    """Start a new, independent session from SESSION's conversation up to a turn; SESSION is untouched.

    SESSION is a codeoid session id (or a unique prefix), a session name, or a Claude Code session id.
    By default the fork starts interactively: on claude under the supervisor, as `codeoid run` would, with the
    arguments after `--` (e.g. `-- --model claude-sonnet-4-5`); on codex or gemini as that CLI itself, with
    codeoid's memory tools but without codeoid's hooks: when that CLI exits, codeoid stores the fork's new turns
    from the CLI's own session record (`codeoid fork-capture` does it later, e.g. after --no-start).
    """
    import shlex
    import subprocess
    from pathlib import Path

    from codeoid.fork.fork import ForkError, ForkRequest, create_fork
    from codeoid.fork.launch import Launch
    from codeoid.rotation import claude_args as args_module
    from codeoid.rotation.routes import detect_wiring
    from codeoid.rotation.supervisor import SESSION_ENV

    if print_prompt is not None and no_start:
        raise click.ClickException("--print starts the fork; --no-start does not: give one of them.")
    if backend != "claude" and claude_args:
        raise click.ClickException(f"Arguments after -- go to claude; give {backend} its options in its own "
                                   "configuration.")
    try:
        user = args_module.parse(list(claude_args))
    except args_module.ArgsError as error:
        raise click.ClickException(str(error)) from error
    if args_module.picks_conversation(user):
        raise click.ClickException("The fork picks its own conversation: leave out --resume, --continue, "
                                   "--session-id and --fork-session.")
    wiring = detect_wiring(user, Path.cwd().resolve())
    request = ForkRequest(session=session, at_turn=at_turn, backend=backend, name=name, project_dir=os.getcwd(),
                          model=user.value("--model"), window_tokens=window_tokens, tool_prefix=wiring.tool_prefix,
                          prompt=print_prompt)
    with _store() as db:
        try:
            made = create_fork(db, request, now=time.time())
        except ForkError as error:
            raise click.ClickException(str(error)) from error
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}") from error
    kept = (f"all {made.total_turns} turns" if made.kept_turns == made.total_turns
            else f"the newest {made.kept_turns} of {made.total_turns} turns (recall finds the rest)")
    click.echo(f"Forked session {made.parent_id} at turn {made.at_turn} into {made.session_id}: {kept}.", err=True)
    start = made.start
    if isinstance(start, Launch):
        _start_agent(backend, start, session_id=made.session_id, no_start=no_start)
        return
    if no_start:
        args = " ".join(shlex.quote(arg) for arg in start.interactive_args(list(claude_args)))
        click.echo(f"Start it with: cd {shlex.quote(made.project_dir)} && codeoid run {args}")
        return
    if print_prompt is not None:
        argv = start.print_argv(made.backend_binary, user, wiring, print_prompt)
        sys.exit(subprocess.call(argv, cwd=made.project_dir, env={**os.environ, SESSION_ENV: made.session_id}))
    sys.exit(_supervise(start.interactive_args(list(claude_args)), project_dir=made.project_dir,
                        session_id=made.session_id))


def _start_agent(backend: str, launch: Launch, *, session_id: str, no_start: bool) -> None:
    """Start a Codex or Gemini fork as its translator says: the CLI itself in the fork's directory, not under
    codeoid's supervisor (which drives Claude Code only). No hooks run there, so once the CLI exits its own
    session record is read back into the fork's session; then codeoid exits with the CLI's status."""
    import shlex

    for path in launch.edited:
        click.echo(f"Registered codeoid's MCP server in {path}.", err=True)
    click.echo(f"codeoid has no hooks in {backend}: the fork's turns there are stored from {backend}'s own session "
               f"record when {backend} exits, and the fork can recall codeoid's memory of this workspace through "
               "codeoid's MCP server.", err=True)
    if no_start:
        assignments = " ".join(f"{key}={shlex.quote(value)}" for key, value in launch.env.items())
        click.echo(f"Start it with: cd {shlex.quote(str(launch.cwd))} && {assignments} {shlex.join(launch.argv)}")
        click.echo(f"When it exits, store its turns with: codeoid fork-capture {session_id}")
        return
    status = _run_in_foreground(launch.argv, cwd=launch.cwd, env={**os.environ, **launch.env})
    _capture_fork(backend, session_id)
    sys.exit(status)


def _run_in_foreground(argv: list[str], *, cwd: Any, env: dict[str, str]) -> int:
    """Run the agent CLI as a child on this terminal and return its exit status (128 + N when signal N ended it).

    codeoid stays to read the CLI's record afterwards, so while it waits it ignores SIGINT and SIGQUIT: Ctrl-C
    reaches the CLI (same terminal, same process group), which decides what it means, and not codeoid. The
    handlers are set after the child starts, which would otherwise inherit the ignoring."""
    import signal
    import subprocess

    sys.stdout.flush()
    sys.stderr.flush()
    child = subprocess.Popen(argv, cwd=cwd, env=env)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    try:
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code


def _capture_fork(backend: str, session_id: str) -> None:
    """Store the fork's turns from the CLI's record. Whatever goes wrong (a busy store, an unreadable record, a
    format this codeoid does not know) is logged and told, never raised: the CLI's exit status must reach the
    caller, and `codeoid fork-capture` can try again."""
    from codeoid.fork.capture import capture_fork
    from codeoid.log import log

    try:
        db = store_db.connect()
        try:
            stored = capture_fork(db, session_id, now=time.time())
        finally:
            db.close()
    except Exception as error:  # noqa: BLE001 - see the docstring
        log("fork", f"storing the turns of fork {session_id} from {backend} failed: {error!r}")
        click.echo(f"codeoid could not store the fork's turns from {backend} ({error}); run `codeoid fork-capture "
                   f"{session_id}` to try again.", err=True)
        return
    click.echo(f"Stored {stored} new episodes from {backend}'s record in session {session_id}.", err=True)


@cli.command("fork-capture")
@click.argument("session")
def fork_capture(session: str) -> None:
    """Store what a Codex or Gemini fork did, from that CLI's own session record.

    `codeoid fork` does this when the CLI exits; run it for a fork started with --no-start, or one whose codeoid
    was killed before the CLI exited. SESSION names the fork as `codeoid fork` accepts a session. Repeating it
    stores only what is new.
    """
    from codeoid.fork.capture import NotCapturable, capture_fork
    from codeoid.fork.fork import ForkError, find_session

    with _store() as db:
        try:
            session_id = find_session(db, session).session_id
            stored = capture_fork(db, session_id, now=time.time())
        except (ForkError, NotCapturable) as error:
            raise click.ClickException(str(error)) from error
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}") from error
        except OSError as error:
            raise click.ClickException(f"The fork's session record cannot be read: {error}") from error
    click.echo(f"Stored {stored} new episodes in session {session_id}.")


@cli.command()
@click.option("--session", "session_id", help="The codeoid session to rotate (default: the one running here).")
def rotate(session_id: str | None) -> None:
    """Rotate a running `codeoid run` session into a fresh window now, from another terminal."""
    from codeoid.rotation.remote import NoSupervisor, request_rotation

    try:
        info = request_rotation(session=session_id, directory=os.getcwd())
    except NoSupervisor as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"Asked session {info.get('session_id')} to rotate; its fresh window waits for the next prompt.")


@cli.command(hidden=True)
@click.option("--chain", help="The user's own status line command, run first with the same input.")
def statusline(chain: str | None) -> None:
    """Claude Code's status line: occupancy and rotation counter (reads Claude Code's JSON on stdin)."""
    from codeoid.rotation.statusline import run as render_status_line

    sys.stdout.write(render_status_line(sys.stdin.buffer.read(), chain, os.environ))


def _time(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _print_json(value: Any) -> None:
    """Rows print every field; a tool episode's `response` is printed whole, as Claude Code reported it."""
    def whole(row: Any) -> Any:
        if isinstance(row, dict) and "response" in row and "text" in row:
            return {**row, "response": queries.tool_response(row)}
        return row

    value = [whole(row) for row in value] if isinstance(value, list) else whole(value)
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def main() -> None:
    cli()

