"""Setting codeoid up in Claude Code and checking it: `install`, `uninstall`, `doctor`."""

from __future__ import annotations

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
@AGENT_OPTION
def install(scope: str, force: bool, agent: str) -> None:
    """Register codeoid's hooks and MCP server in an agent CLI.

    Without --agent, in Claude Code; --agent codex|gemini registers them in that CLI's own configuration instead.

    Also adds the allow rule for codeoid's tools, the status line and the /rotate, /recall and /gain commands.
    Running it again changes nothing; restart running Claude Code sessions afterwards.
    """
    if agent != "claude":
        _agent_route("install", agent)
        return
    from codeoid.setup import install as installer

    try:
        outcome = installer.install(scope, force=force)  # type: ignore[arg-type]
    except installer.InstallError as error:
        raise click.ClickException(str(error)) from error
    print_outcome(outcome, nothing="Already installed; nothing changed.")


@cli.command()
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True)
@AGENT_OPTION
def uninstall(scope: str, agent: str) -> None:
    """Remove codeoid from an agent CLI (Claude Code by default).

    Takes out codeoid's hooks, MCP server, allow rule, status line and slash commands, only codeoid's own entries,
    keeping a backup of each file it changes, and stops the memory service. The store is left alone.
    """
    if agent != "claude":
        _agent_route("uninstall", agent)
        return
    import os

    from codeoid import paths
    from codeoid.setup import install as installer

    try:
        outcome = installer.uninstall(scope)  # type: ignore[arg-type]
    except installer.InstallError as error:
        raise click.ClickException(str(error)) from error
    print_outcome(outcome, nothing="Not installed; nothing changed.")
    # What runs now is the code being taken out; an install that stays starts it again on demand. A data dir that
    # was never made is not made here.
    if os.path.isdir(os.path.join(paths.data_dir_location(), "service")):
        from codeoid.service import lifecycle

        running = lifecycle.running_service()
        lifecycle.stop_service()  # also forgets the state a killed one left
        if running is not None:
            click.echo(f"Stopped the memory service (pid {running.pid}).")


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
    from codeoid.health.checks import health_report
    from codeoid.setup.doctor import doctor_report

    findings = [*doctor_report(), *health_report(Path(paths.data_dir_location()), Path.cwd())]
    if as_json:
        click.echo(json.dumps([finding._asdict() for finding in findings], indent=2))
    else:
        for finding in findings:
            click.echo(f"[{finding.status:>4}] {finding.sentence}")
    if any(finding.status == "fail" for finding in findings):
        sys.exit(1)
