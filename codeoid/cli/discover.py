"""`codeoid discover`: the Bash output that reached the model's window uncompressed, by command shape and reason,
so a user sees which allow rule or rule file would save the most."""

from __future__ import annotations

import json
import shlex
import time

import click

from codeoid.cli.common import open_store, scope_option, session_id_of, workspace_scope
from codeoid.cli.group import cli


@cli.command()
@click.option("--session", "session_ref", metavar="SESSION",
              help="Only this codeoid session's Bash calls: its id, a unique prefix of it, or its name.")
@click.option("--since", "since_days", type=click.FloatRange(min=0), help="Only calls of the last N days.")
@click.option("--limit", default=15, show_default=True, type=click.IntRange(1, 1000), help="Command shapes shown.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole account as JSON.")
@scope_option
def discover(session_ref: str | None, since_days: float | None, limit: int, as_json: bool,
             all_workspaces: bool) -> None:
    """Find the Bash output compression missed.

    The command shapes that put the most bytes into the window uncompressed, and why (no rule; not allowed by your
    permission rules, with the allow rule that would let codeoid compress it; a construct the rewrite steps aside
    from; under the size floor). Where the rewrite steps aside, PostToolUse compresses the output after the fact,
    except a failed command's or one at Claude Code's 30,000-character cap: the reason then says which.

    \b
    Examples:
      codeoid discover
      codeoid discover --since 7 --json
    """
    from codeoid.hooks.discover import discover as replay_history

    since = time.time() - since_days * 86400 if since_days is not None else 0.0
    with open_store() as db:
        session_id = session_id_of(db, session_ref, param_hint="--session") if session_ref else None
        workspace_id = None if session_id else workspace_scope(db, all_workspaces)
        report = replay_history(db, workspace_id=workspace_id, session_id=session_id, since=since)
    if as_json:
        click.echo(json.dumps(report.as_dict(limit), indent=2))
        return
    if not report.calls:
        click.echo("No Bash call is stored here yet.")
        return
    click.echo(f"{report.calls:,} Bash calls put {report.window_bytes:,} characters into the window; "
               f"{report.compressed_calls:,} went through compression ({report.compressed_bytes:,} characters shown).")
    if report.persisted_calls:
        click.echo(f"{report.persisted_calls:,} over Claude Code's cap it saved to a file itself, showing only a "
                   f"preview ({report.persisted_bytes:,} characters): not missed.")
    click.echo(f"Missed: {report.missed_bytes:,} characters ({report.missed_share:.0%}) reached it uncompressed.")
    if not report.shapes:
        return
    click.echo("")
    for reason, size in report.by_reason().items():
        click.echo(f"  {reason}: {size:,} characters ({size / report.window_bytes:.0%})")
    click.echo("")
    shapes = report.top(limit)
    width = max(len(shape.shape) for shape in shapes)
    click.echo(f"{'command'.ljust(width)}  {'calls':>6}  {'chars':>12}  {'share':>5}  why")
    for shape in shapes:
        why = shape.reason + (f": allow it with {shape.allow_rule}" if shape.allow_rule else "")
        click.echo(f"{shape.shape.ljust(width)}  {shape.calls:>6,}  {shape.bytes:>12,}  "
                   f"{shape.bytes / report.window_bytes:>5.0%}  {why}")
    allow_rules = report.by_allow_rule()
    if allow_rules:
        click.echo("")
        click.echo("Allow rules that would let codeoid compress what it had to leave whole (failures included, which "
                   "only the rewrite can compress):")
        for rule, size, calls, failed in allow_rules[:limit]:
            failures = f", {failed:,} failed" if failed else ""
            click.echo(f"  {rule}: {size / report.window_bytes:.0%} of the window ({size:,} bytes, {calls:,} "
                       f"calls{failures}); add it with: codeoid allow {shlex.quote(rule)}")
    click.echo("")
    click.echo("Decisions are replayed with today's rules and permission settings, in the default permission mode.")

