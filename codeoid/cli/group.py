"""The one click group every `codeoid` command hangs on."""

from __future__ import annotations

import click

from codeoid import __version__


@click.group()
@click.version_option(__version__, prog_name="codeoid")
def cli() -> None:
    """codeoid keeps every turn of your Claude Code sessions verbatim and pages it back on demand."""
