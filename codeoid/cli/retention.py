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
    then those episodes' vectors; never a live window's. Also sweeps incomplete raw outputs, unfinished spool
    writes (a hook killed while spooling; each counted as a lost event) and quarantined files past their grace
    period. A dry run unless --apply.
    """
    from codeoid.capture import spool

    try:
        limit = retention.parse_size(budget) if budget else retention.disk_budget()
    except retention.RetentionConfigError as error:
        raise click.ClickException(str(error)) from error
    data_dir = paths.data_dir()
    orphans = spool.orphans()
    orphan_bytes = sum(size for _, size in orphans)
    with open_store() as db:
        planned = retention.plan(db, data_dir, budget=limit)
        planned.projected -= orphan_bytes
        outcome = None
        swept = spool.sweep_orphans() if apply_plan and orphans else None
        if apply_plan and not planned.empty:
            try:
                outcome = retention.apply(db, planned, data_dir)
            except store_db.StoreUnavailable as error:
                raise click.ClickException(f"The store is busy: {error}; run gc again.") from error
    over = _over_budget(planned.projected, limit)
    if as_json:
        click.echo(json.dumps({
            "plan": {**planned.__dict__, "spool_orphans": [{"path": path, "bytes": size} for path, size in orphans]},
            "outcome": outcome.__dict__ if outcome else None,
            "spool_orphans_swept": {"rescued": swept.rescued, "removed_and_counted_lost": swept.removed,
                                    "freed_bytes": swept.freed_bytes} if swept else None,
            "over_budget": over is not None, "note": over}, indent=2))
        return
    click.echo(f"data dir {data_dir}: {human(planned.used)} of a {human(limit)} budget")
    verb = "expired" if outcome else "would expire"
    click.echo(f"raw outputs {verb}: {len(planned.expire_raw)} "
               f"({human(sum(size for _, size in planned.expire_raw))}, oldest archived first)")
    click.echo(f"incomplete raw outputs {'swept' if outcome else 'to sweep'}: {len(planned.incomplete_raw)}")
    click.echo(f"vector chunks {verb} for episodes: {len(planned.expire_vectors)}")
    click.echo(f"quarantined files {'removed' if outcome else 'to remove'}: {len(planned.old_quarantine)}")
    if swept is not None:
        click.echo(f"unfinished spool writes swept: {swept.removed} removed ({human(swept.freed_bytes)}, each counted "
                   f"as a lost event; `codeoid doctor` lists them), {swept.rescued} rescued for replay")
    elif orphans:
        click.echo(f"unfinished spool writes to sweep: {len(orphans)} ({human(orphan_bytes)}, hooks killed while "
                   "spooling)")
    if outcome:
        click.echo(f"now {human(outcome.used_after)}" + (" (vacuumed)" if outcome.vacuumed else ""))
        for note in outcome.notes:
            click.echo(note)
        if outcome.expired_vectors:
            click.echo(_vector_removal())
    elif planned.empty and not orphans:
        click.echo("nothing to do")
    elif not apply_plan:
        click.echo("dry run: nothing changed; `codeoid gc --apply` does it")
    if over is not None:
        click.echo(over, err=True)


def _over_budget(projected: int, limit: int) -> str | None:
    """The note for a data dir gc cannot bring under its budget, or None when it can."""
    if projected <= limit:
        return None
    return (f"still over the budget after this ({human(projected)} of {human(limit)}): what remains is episode text "
            "and live windows, which gc never removes; `codeoid forget` deletes episodes for good")


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
    vectors go (from a team's Chroma server too: what its own files keep is said). A tombstone (id, time,
    "forgotten") keeps the timeline in order.
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
    if done.vacuumed:
        click.echo("vacuumed the store: no free page keeps old bytes")
    for note in done.notes:
        click.echo(note, err=True)
    if done.episode_ids:
        from codeoid.memory.forgetting import remove_vectors_now

        with open_store() as db:
            purged = remove_vectors_now(db, done.episode_ids)
        for line in purged.said:
            click.echo(line)
        for note in purged.notes:
            click.echo(f"not purged: {note}", err=True)
    untouched = sorted(set(ids) - set(done.episode_ids))
    if untouched:
        click.echo(f"left as they were (already forgotten or not stored): {', '.join(map(str, untouched))}", err=True)
