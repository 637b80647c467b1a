"""`codeoid ui`: the local web viewer (`codeoid.viewer`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from codeoid.cli.group import cli


@cli.command(epilog="""\b
Examples:
  codeoid ui              serve on a free port and print the URL (with its one-run token)
  codeoid ui --open       the same, and open it in the default browser
  codeoid ui --port 8765  a fixed port, still on 127.0.0.1 only""")
@click.option("--port", default=0, type=click.IntRange(0, 65535), help="Port on 127.0.0.1 (default: a free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the URL in the default web browser.")
@click.option("--allow-retract", is_flag=True,
              help="Let episode pages retract their episode (undoable with `codeoid restore`).")
def ui(port: int, open_browser: bool, allow_retract: bool) -> None:
    """Browse the store in a local web viewer.

    Sessions with their rotations and forks, each session's timeline verbatim, search ranked as recall ranks,
    savings over time and status. Read-only unless --allow-retract, on 127.0.0.1, behind a token that is new on
    every run; Ctrl-C stops it.
    """
    from codeoid import paths
    from codeoid.viewer.server import bind, new_token, serve

    data_dir = Path(paths.data_dir_location())
    if not (data_dir / "store.db").is_file():
        raise click.ClickException(f"Nothing is stored in {data_dir} yet: start Claude Code with codeoid installed "
                                   "(`codeoid install`), then run `codeoid ui` again.")
    try:
        listener = bind(port)
    except OSError as error:
        raise click.BadParameter(f"port {port} on 127.0.0.1 cannot be used: {error.strerror}.",
                                 param_hint="--port") from error

    def ready(url: str) -> None:
        mode = "episodes can be retracted" if allow_retract else "read-only"
        click.echo(f"codeoid ui: {url}  ({mode}; Ctrl-C stops it)")
        sys.stdout.flush()
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    serve(listener, new_token(), data_dir=data_dir, project_dir=Path(os.getcwd()), on_ready=ready,
          allow_retract=allow_retract)
