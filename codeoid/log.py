"""One append-only log under the data dir, for the reasons a hook or the compressor chose to step aside.

Hooks must never print to the terminal or the model, so everything that went wrong is written here.
Stdlib `logging` is avoided on purpose: its import and handler set-up cost a hook a few milliseconds.
"""

from __future__ import annotations

import os
import time

from codeoid import paths

MAX_LOG_BYTES = 5 * 1024 * 1024


def log(component: str, message: str) -> None:
    """Append one line; never raises (a logging failure must not become the user's problem)."""
    try:
        path = paths.log_path()
        if os.path.exists(path) and os.stat(path).st_size > MAX_LOG_BYTES:
            os.replace(path, path + ".1")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        line = f"{stamp} {component}[{os.getpid()}] {message}".replace("\n", "\n    ") + "\n"
        fd = paths.open_private(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, line.encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
    except Exception:  # noqa: BLE001 - the log is the last resort; there is nowhere left to report to
        pass
