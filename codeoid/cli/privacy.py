"""Keeping things out of memory: `exclude` a project, `retract` episodes (an undoable hide) and `restore` them."""

from __future__ import annotations

import os
from typing import Any

import click

from codeoid import exclusions
from codeoid.cli.common import open_store
from codeoid.cli.group import cli
from codeoid.store import db as store_db
from codeoid.store import queries
from codeoid.text import one_line

MAX_EPISODES_AT_ONCE = 10_000


@cli.command(epilog="""\b
Examples:
  codeoid exclude ~/work/secret-client   nothing there is recorded any more
  codeoid exclude --list                 what is excluded
  codeoid exclude --remove ~/work/secret-client""")
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--remove", is_flag=True, help="Record this project again.")
@click.option("--list", "show", is_flag=True, help="Print the excluded projects.")
def exclude(directory: str | None, remove: bool, show: bool) -> None:
    """Keep a project out of codeoid from now on.

    DIRECTORY (default: the current one) must exist. From now on its hooks store nothing, Bash output there is not
    compressed or archived, and recall there answers that nothing is kept. What was stored before stays;
    `codeoid retract` takes it back.
    """
    listing = exclusions.list_file()
    if show:
        for entry in exclusions.entries():
            click.echo(entry)
        return
    target = os.path.realpath(os.path.expanduser(directory or os.getcwd()))
    if not remove and not os.path.isdir(target):
        raise click.BadParameter(f"{target} is not a directory: give an existing project directory (a typo would "
                                 "leave the real one recorded).", param_hint="DIRECTORY")
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


@cli.command(epilog="""\b
Examples:
  codeoid retract 42          one episode
  codeoid retract 42 57-60    several, with a range""")
@click.argument("episodes", nargs=-1, required=True)
def retract(episodes: tuple[str, ...]) -> None:
    """Take episodes back (a pasted password, say).

    EPISODES are ids or ranges such as 40-45. They are hidden from recall, timeline, get_episode and the vector
    index, and kept in the store (`codeoid show` reads them, `codeoid restore` gives them back). Ids that are not
    stored are named; if none is, the command fails.
    """
    from codeoid.store import retraction

    ids = _episode_ids(episodes)
    with open_store() as db:
        try:
            changed = retraction.retract(db, ids)
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}; nothing was retracted.") from error
        stored = _stored(db, ids)
        summaries = {change.episode_id: queries.get_episode(db, change.episode_id) for change in changed}
    for change in changed:
        row = summaries[change.episode_id] or {}
        click.echo(f"retracted {change.episode_id} (was {change.before}): {one_line(str(row.get('summary')), 100)}")
    _say_untouched(ids, changed, stored, "already retracted")


@cli.command()
@click.argument("episodes", nargs=-1, required=True)
def restore(episodes: tuple[str, ...]) -> None:
    """Give retracted episodes back.

    EPISODES are ids or ranges such as 40-45; they become searchable and indexed again.
    """
    from codeoid.store import retraction

    ids = _episode_ids(episodes)
    with open_store() as db:
        try:
            changed = retraction.restore(db, ids)
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}; nothing was restored.") from error
        stored = _stored(db, ids)
    for change in changed:
        click.echo(f"restored {change.episode_id} ({change.after})")
    _say_untouched(ids, changed, stored, "not retracted")


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


def _stored(db: Any, ids: list[int]) -> set[int]:
    """Which of `ids` the store holds at all (in any state)."""
    low, high = ids[0], ids[-1]
    return {int(row[0]) for row in db.execute("SELECT id FROM episodes WHERE id BETWEEN ? AND ?", (low, high))}


def _say_untouched(ids: list[int], changed: list[Any], stored: set[int], why: str) -> None:
    """Name what was left alone because it already was as asked, apart from what is not stored at all; when
    nothing at all was stored, fail (exit 1), so a script sees the typo."""
    done = {change.episode_id for change in changed}
    as_asked = [episode for episode in ids if episode in stored and episode not in done]
    missing = [episode for episode in ids if episode not in stored]
    if as_asked:
        click.echo(f"left as they were ({why}): {_id_list(as_asked)}", err=True)
    if missing:
        click.echo(f"not stored: {_id_list(missing)}", err=True)
    if not stored.intersection(ids):
        raise click.ClickException("None of those episodes is stored; `codeoid timeline` lists their ids.")


def _id_list(ids: list[int]) -> str:
    """Ids with runs written as ranges: 3, 7-12, 40."""
    runs: list[list[int]] = []
    for episode in ids:
        if runs and episode == runs[-1][1] + 1:
            runs[-1][1] = episode
        else:
            runs.append([episode, episode])
    return ", ".join(str(low) if low == high else f"{low}-{high}" for low, high in runs)
