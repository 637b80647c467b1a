"""`codeoid-hook EVENT`: the one executable Claude Code runs for every registered event.

The contract with the user's session is absolute: whatever happens (even a broken installation that fails
to import), exit 0, print nothing but a valid answer, never a traceback. So this module imports nothing of
codeoid at load time, and everything below runs inside one guard.

Imports stay light on purpose (no click, no chromadb): this process starts once per tool call.
"""

import sys


def main() -> int:
    event = sys.argv[1] if len(sys.argv) > 1 else ""
    try:
        from codeoid.hooks.dispatch import run

        output = run(event, sys.stdin.buffer.read())
        if output:
            sys.stdout.write(output)
            sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - the session must never see our failure
        _log_failure(event)
    return 0


def _log_failure(event: str) -> None:
    try:
        import traceback

        from codeoid.log import log

        log("hook", f"{event}: unexpected failure, event passed through\n{traceback.format_exc()}")
    except BaseException:  # noqa: BLE001 - not even the log is available; stay silent
        pass


if __name__ == "__main__":
    sys.exit(main())
