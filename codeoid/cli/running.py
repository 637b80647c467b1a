"""Running Claude Code with codeoid: `run` under the rotation supervisor, `rotate`, `fork` onto any backend,
`fork-capture`, and the status line."""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from codeoid import exclusions
from codeoid.store import db as store_db

if TYPE_CHECKING:
    from codeoid.fork.launch import Launch
from codeoid.cli.common import open_store, plural, session_id_of
from codeoid.cli.group import cli


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("claude_args", nargs=-1, type=click.UNPROCESSED)
def run(claude_args: tuple[str, ...]) -> None:
    """Run claude, rotating windows instead of compacting.

    Starts claude under codeoid's supervisor, which continues the session in a fresh window when the context
    fills (97%, or 90% with CODEOID_AUTO_ROTATE=1) or on /rotate. All arguments go to claude, e.g.
    `codeoid run --model claude-sonnet-4-5`.
    """
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


@cli.command(epilog="""\b
Examples:
  codeoid fork c4cf --at 12                   turns 1-12 of session c4cf..., on claude under the supervisor
  codeoid fork c4cf --backend codex           the whole conversation, continued in Codex
  codeoid fork review --print "Summarize"     one answer from a fork of the session named `review`""")
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
    """Start a new session from another's conversation.

    The fork takes SESSION's conversation up to a turn; SESSION is untouched. SESSION is a codeoid session id (or a
    unique prefix), a session name, or a Claude Code session id. By default the fork starts interactively: on claude
    under the supervisor, as `codeoid run` would, with the arguments after `--` (e.g. `-- --model
    claude-sonnet-4-5`); on codex or gemini as that CLI itself, with codeoid's memory tools but without codeoid's
    hooks: when that CLI exits, codeoid stores the fork's new turns from the CLI's own session record (`codeoid
    fork-capture` does it later, e.g. after --no-start).
    """
    import shlex
    import subprocess
    from dataclasses import replace
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
    with open_store() as db:
        request = replace(request, session=session_id_of(db, session, param_hint="SESSION"))
        try:
            made = create_fork(db, request, now=time.time())
        except ForkError as error:
            raise click.ClickException(str(error)) from error
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}") from error
    kept = (f"all {plural(made.total_turns, 'turn')}" if made.kept_turns == made.total_turns
            else f"the newest {made.kept_turns:,} of {plural(made.total_turns, 'turn')} (recall finds the rest)")
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
    if _hooked(backend):
        click.echo(f"codeoid's hooks in {backend} store the fork's turns there as they happen, and the fork can recall "
                   "codeoid's memory of this workspace through codeoid's MCP server.", err=True)
    else:
        click.echo(f"codeoid has no hooks in {backend}: the fork's turns there are stored from {backend}'s own "
                   f"session record when {backend} exits, and the fork can recall codeoid's memory of this workspace "
                   "through codeoid's MCP server.", err=True)
    if no_start:
        assignments = " ".join(f"{key}={shlex.quote(value)}" for key, value in launch.env.items())
        click.echo(f"Start it with: cd {shlex.quote(str(launch.cwd))} && {assignments} {shlex.join(launch.argv)}")
        click.echo(f"When it exits, store its turns with: codeoid fork-capture {session_id}")
        return
    from codeoid.rotation.supervisor import SESSION_ENV

    # With codeoid's hooks installed in the CLI (`codeoid install --agent`), they store the run into the fork's
    # session by this variable, and the read-back below leaves that run alone.
    env = {**os.environ, **launch.env, SESSION_ENV: session_id}
    status = _run_in_foreground(launch.argv, cwd=launch.cwd, env=env)
    _capture_fork(backend, session_id)
    sys.exit(status)


def _hooked(backend: str) -> bool:
    """Whether `codeoid install --agent BACKEND` put codeoid's hooks, all of them, into that CLI."""
    from codeoid.setup import agents

    try:
        return backend in agents.recorded_agents() and not agents.installed(backend)
    except agents.InstallError:
        return False


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
    click.echo(f"Stored {plural(stored, 'new episode')} from {backend}'s record in session {session_id}.", err=True)


@cli.command("fork-capture")
@click.argument("session")
def fork_capture(session: str) -> None:
    """Store what a Codex or Gemini fork did.

    Reads it from that CLI's own session record.

    `codeoid fork` does this when the CLI exits; run it for a fork started with --no-start, or one whose codeoid
    was killed before the CLI exited. SESSION names the fork as `codeoid fork` accepts a session. Repeating it
    stores only what is new.
    """
    from codeoid.fork.capture import NotCapturable, capture_fork
    from codeoid.fork.fork import ForkError

    with open_store() as db:
        session_id = session_id_of(db, session, param_hint="SESSION")
        try:
            stored = capture_fork(db, session_id, now=time.time())
        except (ForkError, NotCapturable) as error:
            raise click.ClickException(str(error)) from error
        except store_db.StoreUnavailable as error:
            raise click.ClickException(f"The store is busy: {error}") from error
        except OSError as error:
            raise click.ClickException(f"The fork's session record cannot be read: {error}") from error
    click.echo(f"Stored {plural(stored, 'new episode')} in session {session_id}.")


@cli.command(epilog="""\b
Examples:
  codeoid rotate                  the `codeoid run` session running in this directory
  codeoid rotate --session c4cf   that session (a unique id prefix or its name)""")
@click.option("--session", "session_ref", metavar="SESSION",
              help="The codeoid session to rotate: its id, a unique prefix, or its name (default: the one running "
                   "here).")
def rotate(session_ref: str | None) -> None:
    """Rotate a running `codeoid run` session now.

    Asks the supervisor, from another terminal, to continue the session in a fresh context window; the fresh
    window waits for the next prompt.
    """
    from codeoid.rotation.remote import NoSupervisor, request_rotation

    session_id = None
    if session_ref is not None:
        with open_store() as db:
            session_id = session_id_of(db, session_ref, param_hint="--session")
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
