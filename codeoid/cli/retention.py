"""Keeping the data dir within its budget (`gc`) and deleting for good (`forget`); the work is in
`codeoid.store.retention`."""

from __future__ import annotations

import json

import click

from codeoid import paths
from codeoid.cli.common import open_store
from codeoid.cli.group import cli
from codeoid.cli.privacy import _episode_ids
from codeoid.store import db as store_db
from codeoid.store import retention


def human(size: int) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if abs(size) >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


@cli.command()
@click.option("--apply", "apply_plan", is_flag=True, help="Do it (without this, only say what would go).")
@click.option("--budget", help="Disk budget for this run, e.g. 500MB (default: CODEOID_DISK_BUDGET, "
                               "[retention] budget in config.toml, else 2GB).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan and outcome as JSON.")
def gc(apply_plan: bool, budget: str | None, as_json: bool) -> None:
    """Bring the data dir under its disk budget.

    Raw outputs of the oldest archived episodes expire first (their compressed text stays, marked "raw expired"),
    then those episodes' vectors; never a live window's. Also sweeps incomplete raw outputs and quarantined files
    past their grace period. A dry run unless --apply.
    """
    try:
        limit = retention.parse_size(budget) if budget else retention.disk_budget()
    except retention.RetentionConfigError as error:
        raise click.ClickException(str(error)) from error
    data_dir = paths.data_dir()
    with open_store() as db:
        planned = retention.plan(db, data_dir, budget=limit)
        outcome = None
        if apply_plan and not planned.empty:
            try:
                outcome = retention.apply(db, planned, data_dir)
            except store_db.StoreUnavailable as error:
                raise click.ClickException(f"The store is busy: {error}; run gc again.") from error
    if as_json:
        click.echo(json.dumps({"plan": planned.__dict__, "outcome": outcome.__dict__ if outcome else None},
                              indent=2))
        return
    click.echo(f"data dir {data_dir}: {human(planned.used)} of a {human(limit)} budget")
    verb = "expired" if outcome else "would expire"
    click.echo(f"raw outputs {verb}: {len(planned.expire_raw)} "
               f"({human(sum(size for _, size in planned.expire_raw))}, oldest archived first)")
    click.echo(f"incomplete raw outputs {'swept' if outcome else 'to sweep'}: {len(planned.incomplete_raw)}")
    click.echo(f"vector chunks {verb} for episodes: {len(planned.expire_vectors)}")
    click.echo(f"quarantined files {'removed' if outcome else 'to remove'}: {len(planned.old_quarantine)}")
    if outcome:
        click.echo(f"now {human(outcome.used_after)}" + (" (vacuumed)" if outcome.vacuumed else ""))
        for note in outcome.notes:
            click.echo(note)
        if outcome.expired_vectors:
            click.echo(_vector_removal())
    elif planned.empty:
        click.echo("nothing to do")
    else:
        click.echo("dry run: nothing changed; `codeoid gc --apply` does it")
    if planned.projected > limit:
        click.echo(f"still over the budget after this ({human(planned.projected)}): what remains is episode text "
                   "and live windows, which gc never removes; `codeoid forget` deletes episodes for good", err=True)


def _vector_removal() -> str:
    """Expired vectors are queued for the indexer, which removes their chunks from Chroma: the memory service's,
    started now if need be, so they go at once rather than with the next session."""
    from codeoid.memory.ranking import vector_enabled

    if not vector_enabled():
        return "their chunks leave the vector index when semantic memory is next on (CODEOID_VECTOR=off now)"
    from codeoid.service import client

    try:
        info = client.ensure_running()
    except client.ServiceUnavailable as error:
        return f"their chunks leave the vector index when an indexer next runs (the memory service: {error})"
    return f"the memory service's indexer (pid {info.pid}) is removing their chunks from the vector index"


@cli.command()
@click.argument("episodes", nargs=-1, required=True)
@click.option("--vacuum", is_flag=True, help="Rewrite the database file afterwards so no free page is left.")
def forget(episodes: tuple[str, ...], vacuum: bool) -> None:
    """Delete episodes for good (no undo, unlike retract).

    EPISODES are ids or ranges such as 40-45: their text, input, response, raw output, full-text entries and
    vectors go. A tombstone (id, time, "forgotten") keeps the timeline in order.
    """
    ids = _episode_ids(episodes)
    with open_store() as db:
        try:
            done = retention.forget(db, ids, vacuum=vacuum)
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}; nothing was forgotten.") from error
    for episode_id in done.episode_ids:
        click.echo(f"forgot {episode_id}")
    if done.raw_outputs:
        click.echo(f"deleted {done.raw_outputs} raw output(s)")
    for note in done.notes:
        click.echo(note, err=True)
    untouched = sorted(set(ids) - set(done.episode_ids))
    if untouched:
        click.echo(f"left as they were (already forgotten or not stored): {', '.join(map(str, untouched))}", err=True)
