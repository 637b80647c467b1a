"""`codeoid-compress`: a command's output, compressed by the first matching rule, the raw bytes archived first.

    codeoid-compress -- git diff                       run a command (its stdin, stderr and exit status are its own)
    git diff 2>&1 | codeoid-compress --command 'git diff'
                                                        filter a pipe, naming the command that wrote it
    ... > >(codeoid-compress --tool-use-id ID --project-dir DIR --command CMD) 2>&1
                                                        what the PreToolUse rewrite runs (`bash_wrapper`)

Under the rewrite its input is the command's stdout and stderr in one pipe, in the order the command wrote them
(as Claude Code's output file would hold them), so the rule sees what Claude Code would show and the archive keeps
those merged bytes in order; error lines are never cut (`diagnostics.STREAM_ERROR_PATTERNS`). Run with `--`, only
the command's stdout passes through it. The compressed text ends with a footer naming the raw output's id, and
the exit status is the command's. Whenever this program cannot do its job (no rule applies, the store is
unavailable, the engine fails), its input passes through unchanged, and it always reads its input to the end, so
the command writing into it never dies of a broken pipe. SIGTERM or SIGINT prints what is held, raw, at once,
then exits.
"""

from __future__ import annotations

import argparse
import os
import select
import shlex
import signal
import sys
from collections.abc import Sequence
from typing import Protocol

READ_BYTES = 1 << 20
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Sink(Protocol):
    def feed(self, chunk: bytes) -> None: ...

    def finish(self, *, exit_status: int | None) -> None: ...

    def interrupt(self) -> None: ...


class Passthrough:
    """Stdout unchanged: no rule applies, or something needed for compression is missing."""

    def __init__(self, sink: int = 1) -> None:
        self.sink = sink
        self._open = True

    def feed(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view and self._open:
            try:
                view = view[os.write(self.sink, view):]
            except OSError:
                self._open = False  # keep consuming: the writer must not die of a broken pipe

    def finish(self, *, exit_status: int | None) -> None:
        pass

    def interrupt(self) -> None:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_arguments(sys.argv[1:] if argv is None else argv)
    command = args.command if args.command is not None else shlex.join(args.argv)
    sink = _sink_for(args, command)
    if args.argv and isinstance(sink, Passthrough):
        return _exec(args.argv)
    signal_pipe = _catch_signals()
    if not args.argv:
        return 128 + signum if (signum := _pump(0, sink, signal_pipe)) else _finish(sink, None)
    import subprocess

    try:
        child = subprocess.Popen(args.argv, stdout=subprocess.PIPE)
    except OSError as error:
        print(f"codeoid-compress: cannot run {args.argv[0]}: {error.strerror}", file=sys.stderr)
        return 127 if isinstance(error, FileNotFoundError) else 126
    assert child.stdout is not None
    signum = _pump(child.stdout.fileno(), sink, signal_pipe)
    if signum:
        if signum == signal.SIGTERM and child.poll() is None:
            child.terminate()
        return 128 + signum
    status = child.wait()
    return _finish(sink, 128 - status if status < 0 else status)


def _parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="codeoid-compress",
        description="Print a command's stdout compressed by codeoid's rules; the raw bytes are archived first.",
        epilog="Either run a command after `--`, or pipe one in and name it with --command.",
    )
    parser.add_argument("--command", help="the command whose output is piped in (chooses the rule)")
    parser.add_argument("--rule", help="use this rule by name instead of choosing one from the command")
    parser.add_argument("--tool-use-id", help="the Claude Code tool call this output belongs to (names the archive)")
    parser.add_argument("--project-dir", help="where project rules live (default: the current directory)")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]: run it")
    args = parser.parse_args(argv)
    if args.argv[:1] == ["--"]:
        args.argv = args.argv[1:]
    if not args.argv and args.command is None and args.rule is None:
        parser.error("name the command: run it after `--`, or pass --command (or --rule) when piping")
    return args


def _sink_for(args: argparse.Namespace, command: str) -> Sink:
    """A relay through the rule that applies, or a passthrough when there is none or it cannot be set up."""
    try:
        from codeoid import paths
        from codeoid.compressors.engine import thresholds_from
        from codeoid.compressors.loader import load_rules, report_errors
        from codeoid.compressors.relay import RawOutputSpec, Relay
        from codeoid.exclusions import excluded_by
        from codeoid.store.raw import raw_output_id_for

        cwd = os.getcwd()
        project_dir = args.project_dir or cwd
        if excluded_by(project_dir):
            return Passthrough()  # an excluded project: nothing is archived, so nothing may be left out
        rules = load_rules(project_dir=project_dir, cache_dir=paths.cache_dir())
        report_errors(rules, to_stderr=args.tool_use_id is None)  # by hand, not under the rewrite
        rule = rules.named(args.rule) if args.rule else rules.for_command(command)
        if rule is None:
            return Passthrough()
        spec = RawOutputSpec(raw_output_id_for(args.tool_use_id), command, cwd, project_dir, args.tool_use_id)
        return Relay(rule, spec, thresholds=thresholds_from(os.environ))
    except Exception:  # noqa: BLE001 - whatever is broken, the command's output still gets through
        _log_failure("setting up")
        return Passthrough()


def _catch_signals() -> int:
    """Signals write to a pipe the read loop watches, so a signal never lands between a read and its use."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    for signum in SIGNALS:
        signal.signal(signum, lambda *_: None)
    return read_end


def _pump(source: int, sink: Sink, signal_pipe: int) -> int:
    """Copy `source` into `sink` until end of input; the signal number if one arrived first, else 0."""
    try:
        while True:
            ready, _, _ = select.select([source, signal_pipe], [], [])
            if signal_pipe in ready:
                signum = os.read(signal_pipe, 1)[0]
                sink.interrupt()
                return signum
            chunk = os.read(source, READ_BYTES)
            if not chunk:
                return 0
            sink.feed(chunk)
    except Exception:  # noqa: BLE001 - a bug of ours must not cost the command its output or its pipe
        _log_failure("relaying")
        _drain(source, sink)
        return 0


def _drain(source: int, sink: Sink) -> None:
    """After a failure of the relay itself: the rest of the input unchanged (what the relay held is lost)."""
    passthrough = Passthrough(getattr(sink, "sink", 1))
    try:
        while chunk := os.read(source, READ_BYTES):
            passthrough.feed(chunk)
    except OSError:
        pass


def _finish(sink: Sink, exit_status: int | None) -> int:
    try:
        sink.finish(exit_status=exit_status)
    except Exception:  # noqa: BLE001
        _log_failure("finishing")
    return exit_status or 0


def _exec(argv: list[str]) -> int:
    """Nothing to compress: become the command itself, so it runs exactly as typed."""
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        print(f"codeoid-compress: cannot run {argv[0]}: {error.strerror}", file=sys.stderr)
        return 127 if isinstance(error, FileNotFoundError) else 126


def _log_failure(stage: str) -> None:
    try:
        import traceback

        from codeoid.log import log

        log("compress", f"failed while {stage}; output passes through unchanged\n{traceback.format_exc()}")
    except Exception:  # noqa: BLE001
        pass


if __name__ == "__main__":
    sys.exit(main())
