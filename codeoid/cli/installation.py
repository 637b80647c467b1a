"""Setting codeoid up in Claude Code and checking it: `install`, `uninstall`, `doctor`."""

from __future__ import annotations

import os
import sys

import click

from codeoid.cli.common import print_outcome
from codeoid.cli.group import cli

AGENT_OPTION = click.option(
    "--agent", type=click.Choice(["claude", "codex", "gemini"]), default="claude", show_default=True,
    help="The agent CLI: Claude Code, or Codex ($CODEX_HOME) or Gemini CLI (~/.gemini/settings.json) at user scope.")


def _agent_route(action: str, agent: str) -> None:
    """install/uninstall for Codex or Gemini CLI (`codeoid.setup.agents`)."""
    from codeoid.setup import agents

    try:
        if action == "install":
            outcome = agents.install(agent, codex_binary=_codex_binary() if agent == "codex" else None)
        else:
            outcome = agents.uninstall(agent)
    except agents.InstallError as error:
        raise click.ClickException(str(error)) from error
    print_outcome(outcome, nothing="Already installed; nothing changed." if action == "install"
                  else "Not installed; nothing changed.")


def _codex_binary() -> str | None:
    from codeoid.fork.backends import BackendMissing, find_binary

    try:
        return find_binary("codex")
    except BackendMissing:
        return None


@cli.command()
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
              help="user: ~/.claude/settings.json for every project; project: this project's settings.local.json.")
@click.option("--force", is_flag=True, help="Install even though codeoid is active as a Claude Code plugin.")
@click.option("--path/--no-path", "link", default=True, show_default=True,
              help="Link codeoid's commands into your bin directory (~/.local/bin), as pipx does.")
@click.option("--links-only", is_flag=True,
              help="Only link the commands; for the plugin route, where the plugin brings the hooks and server.")
@AGENT_OPTION
def install(scope: str, force: bool, link: bool, links_only: bool, agent: str) -> None:
    """Register codeoid in an agent CLI and put it on PATH.

    Without --agent, in Claude Code; --agent codex|gemini registers them in that CLI's own configuration instead.

    Also adds the allow rule for codeoid's tools, the status line and the /rotate, /recall and /gain commands,
    and links codeoid's commands into $CODEOID_BIN_DIR, else $XDG_BIN_HOME, else ~/.local/bin. Running it again
    changes nothing; restart running Claude Code sessions afterwards.
    """
    if links_only:
        _link_commands()
        return
    if agent != "claude":
        _agent_route("install", agent)
    else:
        from codeoid.setup import install as installer

        try:
            outcome = installer.install(scope, force=force)  # type: ignore[arg-type]
        except installer.InstallError as error:
            raise click.ClickException(str(error)) from error
        print_outcome(outcome, nothing="Already installed; nothing changed.")
    if link:
        _link_commands()


def _link_commands() -> None:
    from pathlib import Path

    from codeoid.setup import bin_links
    from codeoid.setup.hook_table import installed_executable

    outcome = bin_links.link_commands(Path(installed_executable("codeoid")).parent)
    for path in outcome.linked:
        click.echo(f"linked {path} -> {path.readlink()}")
    for note in outcome.notes():
        click.echo(note)
    if not outcome.linked and not outcome.left_alone:
        click.echo(f"codeoid's commands are linked in {outcome.bin_dir} already.")


@cli.command()
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True)
@click.option("--purge", is_flag=True, help="Also delete the data dir: every session codeoid stored. Asks first.")
@click.option("--yes", is_flag=True, help="With --purge: delete without asking.")
@AGENT_OPTION
def uninstall(scope: str, purge: bool, yes: bool, agent: str) -> None:
    """Remove codeoid from an agent CLI and stop what it runs.

    Takes out codeoid's hooks, MCP server, allow rule, status line and slash commands, only codeoid's own entries,
    keeping a backup of each file it changes; removes codeoid's links from your bin directory once no install is
    left; stops the memory service and the local Chroma server and checks that none is left; and says what stays.
    The data dir, which holds every stored session, is deleted only with --purge.
    """
    if agent != "claude":
        _agent_route("uninstall", agent)
        return
    from codeoid import paths
    from codeoid.setup import bin_links
    from codeoid.setup import install as installer

    try:
        outcome = installer.uninstall(scope)  # type: ignore[arg-type]
        installed = installer.recorded_installs()
    except installer.InstallError as error:
        raise click.ClickException(str(error)) from error
    print_outcome(outcome, nothing="Not installed; nothing changed.")
    if not installed:
        links = bin_links.unlink_commands()
        for path in [*links.removed, *links.removed_dirs]:
            click.echo(f"removed {path}")
    for note in installer.other_routes_note():
        click.echo(note)
    data_dir = paths.data_dir_location()
    _stop_processes(data_dir)
    _say_what_stays(data_dir, purge=purge, yes=yes)


def _stop_processes(data_dir: str) -> None:
    """Stop the background processes, check that none is left, and name the ones that end with a session."""
    from codeoid.setup import processes

    stopped = processes.background_processes(data_dir)
    if os.path.isdir(data_dir):  # a stop must not create the data dir of an install that never ran
        from codeoid.memory import chroma_server
        from codeoid.service import lifecycle

        # Through their own stop first: it takes each one's lock and forgets its state, so no client trusts a dead
        # one; then whatever is still found (a state file lost, a stop that failed) is ended directly.
        lifecycle.stop_service(timeout=processes.STOP_TIMEOUT_SECONDS)
        chroma_server.stop_server(timeout=processes.STOP_TIMEOUT_SECONDS)
        processes.end_all(processes.background_processes(data_dir))
    left = processes.background_processes(data_dir)
    if left:
        raise click.ClickException(
            f"Could not stop {', '.join(entry.label() for entry in left)}: end them with `kill -9 "
            f"{' '.join(str(entry.pid) for entry in left)}`.")
    if stopped:
        click.echo(f"Stopped the {', '.join(entry.label() for entry in stopped)}; no codeoid background process is "
                   "left.")
    sessions = processes.session_processes(data_dir)
    if sessions:
        click.echo(f"Still running until their sessions end: {', '.join(entry.label() for entry in sessions)}. "
                   "Restart those Claude Code sessions (or end `codeoid run` / `codeoid ui`) so none uses codeoid.")


def _say_what_stays(data_dir: str, *, purge: bool, yes: bool) -> None:
    import shutil
    import sys

    from codeoid.setup.processes import directory_size

    if not os.path.isdir(data_dir):
        click.echo("No data dir was ever created; nothing stays.")
    elif purge:
        size = _megabytes(directory_size(data_dir))
        if not yes:
            click.confirm(f"Delete {data_dir} ({size}), every session codeoid stored? This cannot be undone",
                          abort=True)
        shutil.rmtree(data_dir)
        click.echo(f"Deleted the data dir {data_dir} ({size}).")
    else:
        click.echo(f"Still here: the data dir {data_dir} ({_megabytes(directory_size(data_dir))}: every session "
                   f"codeoid stored, kept so a later install finds it). Delete it with `codeoid uninstall --purge`, "
                   f"or `rm -rf {data_dir}`.")
    click.echo(f"The codeoid package stays installed in {sys.prefix}; delete that folder to remove it too.")


def _megabytes(size: int) -> str:
    return f"{size / 1024**2:,.1f} MB"


@cli.command(epilog="""\b
Examples:
  codeoid doctor          one line per check: [  ok], [info], [warn] or [fail]
  codeoid doctor --json   the same as a list of {"status", "sentence"} objects""")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def doctor(as_json: bool) -> None:
    """Check the installation and what runs behind it.

    Install route, versions, permissions and spool, then Chroma, the embedding model, the indexing backlog,
    compression rules, quarantine and unfinished raw outputs, each in a sentence that says what to do. Exits 1
    if anything failed.
    """
    import json
    from pathlib import Path

    from codeoid import paths
    from codeoid.cli.discover import allow_rule_findings
    from codeoid.health.checks import health_report
    from codeoid.setup.doctor import doctor_report

    data_dir = Path(paths.data_dir_location())
    findings = [*doctor_report(), *health_report(data_dir, Path.cwd()), *allow_rule_findings(data_dir, Path.cwd())]
    if as_json:
        click.echo(json.dumps([finding._asdict() for finding in findings], indent=2))
    else:
        for finding in findings:
            click.echo(f"[{finding.status:>4}] {finding.sentence}")
    if any(finding.status == "fail" for finding in findings):
        sys.exit(1)
