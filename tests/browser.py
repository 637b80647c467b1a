"""A real headless Chromium (Debian's package) driven over the DevTools protocol, for the viewer's browser tests.

The browser is started with `--remote-debugging-port=0` and its own profile; Chromium writes the port it chose to
`DevToolsActivePort` in that profile, so no port is fixed. One page target is attached in flattened mode over a
websocket (websocket-client), with the Runtime, Log and Page domains on, so every console message, uncaught
exception and browser-logged error (a blocked resource, a Content-Security-Policy violation) is collected.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import websocket

START_TIMEOUT = 30.0
COMMAND_TIMEOUT = 30.0


def find_chromium() -> str | None:
    return os.environ.get("CODEOID_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one page; `errors` collects everything the page logged as an error."""

    def __init__(self, executable: str, profile: Path, *, width: int = 1280, height: int = 900) -> None:
        self.process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--remote-debugging-port=0", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.errors: list[str] = []
        self.console: list[str] = []
        self.loads = 0  # load events seen so far
        self._next_id = 0
        try:
            self.socket = websocket.create_connection(self._browser_url(profile), timeout=COMMAND_TIMEOUT,
                                                      suppress_origin=True)
            target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable")
            self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                             "deviceScaleFactor": 1, "mobile": False})
        except BaseException:
            self.close()
            raise

    def _browser_url(self, profile: Path) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        active = profile / "DevToolsActivePort"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode} before it listened")
            try:
                port, path = active.read_text().split("\n")[:2]
                return f"ws://127.0.0.1:{port}{path}"
            except (OSError, ValueError):
                time.sleep(0.05)  # polling a file Chromium writes when it is up: there is nothing to wait on
        raise RuntimeError(f"chromium did not write {active} within {START_TIMEOUT}s")

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A command to the page."""
        return self._call(method, params, session=self.session)

    def _call(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None
              ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))

    def _receive(self) -> dict[str, Any]:
        message = json.loads(self.socket.recv())
        method = message.get("method")
        params = message.get("params", {})
        if method == "Page.loadEventFired":
            self.loads += 1
        elif method == "Runtime.exceptionThrown":
            self.errors.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Runtime.consoleAPICalled":
            text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
            self.console.append(f"{params.get('type')}: {text}")
            if params.get("type") in ("error", "assert"):
                self.errors.append(f"console.{params['type']}: {text}")
        elif method == "Log.entryAdded":
            entry = params["entry"]
            if entry.get("level") == "error":
                self.errors.append(f"{entry.get('source')}: {entry.get('text')} ({entry.get('url', '')})")
        return dict(message)

    def open(self, url: str) -> None:
        """Load `url` and wait for its load event."""
        before = self.loads
        self.call("Page.navigate", {"url": url})
        self._wait_for_load(before, url)

    def click(self, selector: str) -> None:
        """Click what `selector` picks (a link or a form's button) and wait for the page it leads to."""
        before = self.loads
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")
        self._wait_for_load(before, selector)

    def _wait_for_load(self, before: int, what: str) -> None:
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while self.loads == before:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: no page finished loading")
            self._receive()

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, *, selector: str | None = None) -> bytes:
        """A PNG of the viewport, or of the element `selector` picks; written to `path` and returned."""
        params: dict[str, Any] = {"format": "png"}
        if selector is not None:
            box = self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                                ".getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })()")
            params["clip"] = {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}
        data = base64.b64decode(self.call("Page.captureScreenshot", params)["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        sock = getattr(self, "socket", None)
        if sock is not None:
            sock.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
