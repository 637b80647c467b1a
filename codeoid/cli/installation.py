"""Setting codeoid up in Claude Code and checking it: `install`, `uninstall`, `doctor`."""

from __future__ import annotations

import sys

import click

from codeoid.cli.common import print_outcome
from codeoid.cli.group import cli


@cli.command()
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
              help="user: ~/.claude/settings.json for every project; project: this project's settings.local.json.")
@click.option("--force", is_flag=True, help="Install even though codeoid is active as a Claude Code plugin.")
def install(scope: str, force: bool) -> None:
    """Register codeoid's hooks and MCP server with Claude Code."""
    from codeoid.setup import install as installer

    try:
        outcome = installer.install(scope, force=force)  # type: ignore[arg-type]
    except installer.InstallError as error:
        raise click.ClickException(str(error)) from error
    print_outcome(outcome, nothing="Already installed; nothing changed.")


@cli.command()
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True)
def uninstall(scope: str) -> None:
    """Remove codeoid's hooks, MCP server and allow rule (only codeoid's own entries; backups are kept)."""
    from codeoid.setup import install as installer

    try:
        outcome = installer.uninstall(scope)  # type: ignore[arg-type]
    except installer.InstallError as error:
        raise click.ClickException(str(error)) from error
    print_outcome(outcome, nothing="Not installed; nothing changed.")


@cli.command()
def doctor() -> None:
    """Check the installation, versions, permissions and backlog, in words; exit 1 if anything failed."""
    from codeoid.setup.doctor import doctor_report

    findings = doctor_report()
    for finding in findings:
        click.echo(f"[{finding.status:>4}] {finding.sentence}")
    if any(finding.status == "fail" for finding in findings):
        sys.exit(1)
