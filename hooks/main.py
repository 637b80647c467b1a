"""`codeoid-hook EVENT`: the one executable Claude Code runs for every registered event (and, as
`codeoid-hook --agent=codex|gemini EVENT`, Codex and Gemini CLI for theirs: `codeoid.hooks.agents`).

The contract with the user's session is absolute: whatever happens (even a broken installation that fails
to import), exit 0, print nothing but a valid answer, never a traceback. So this module imports nothing of
codeoid at load time: stdin is read first, everything else runs inside one guard, and if codeoid itself
anything fails the input is kept in the quarantine with plain stdlib code.

Imports stay light on purpose (no click, no chromadb): this process starts once per tool call. PreToolUse
goes to its own module, which never opens the store, so the ingest layer is not even imported on that path.
"""

import sys

AGENT_OPTION = "--agent="


def main() -> int:
    args = sys.argv[1:]
    # `--agent=codex|gemini EVENT`: that CLI's hook event (codeoid.hooks.agents); a bare EVENT is Claude Code's.
    agent = args.pop(0)[len(AGENT_OPTION):] if args and args[0].startswith(AGENT_OPTION) else None
    event = args[0] if args else ""
    raw = b""
    try:
        raw = sys.stdin.buffer.read()
        if event == "PreToolUse":
            from codeoid.hooks import pre_tool_use

            output = pre_tool_use.run(raw, agent=agent)
        elif agent is not None:
            from codeoid.hooks import agents

            output = agents.run(agent, event, raw)
        else:
            from codeoid.hooks.dispatch import run

            output = run(event, raw)
        if output:
            sys.stdout.write(output)
            sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - the session must never see our failure
        _log_failure(f"{agent}:{event}" if agent else event, raw)
    return 0


def _log_failure(event: str, raw: bytes) -> None:
    _keep_input(event, raw)
    try:
        import traceback

        from codeoid.log import log

        log("hook", f"{event}: unexpected failure, input kept in the quarantine\n{traceback.format_exc()}")
    except BaseException:  # noqa: BLE001 - codeoid cannot even be imported; the input is kept all the same
        pass


def _keep_input(event: str, raw: bytes) -> None:
    """A failure here (a broken installation, an import error) must not lose the event: write it, with plain
    stdlib code, where `codeoid doctor` looks for kept input."""
    if event.endswith("PreToolUse") or not raw:
        return  # nothing to keep: the tool runs unchanged either way
    try:
        import os
        import time

        home = os.environ.get("CODEOID_HOME") or os.path.join(
            os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "codeoid")
        quarantine = os.path.join(home, "quarantine")
        os.makedirs(quarantine, mode=0o700, exist_ok=True)
        name = os.path.join(quarantine, f"hook-input-{time.time_ns()}-{os.getpid()}-{event or 'unknown'}.bin")
        fd = os.open(name, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(raw)
    except BaseException:  # noqa: BLE001 - truly nothing left to do
        pass


if __name__ == "__main__":
    sys.exit(main())
