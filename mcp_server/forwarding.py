"""The thin server's tools: each is the `MemoryTools` method itself as far as the SDK can tell (same name,
signature and docstring, through `functools.wraps`), but its body forwards the call to the memory service.

So the tools are defined once, in `codeoid.mcp_server.tools`, and the service calls those same methods: what
`tools/list` shows and what the service runs cannot drift apart, and a tool gaining a parameter needs no change
here. The SDK validates the arguments against the signature before the call; they travel as JSON, with who is
asking (this server's project dir, its parent `claude` and the session it names), which is how the service scopes
the answer. When the service cannot be started the method runs here instead, BM25 only, and recall says so.

Either way a tool's refusal (codeoid's `ToolError`, which the service reports as a 422) reaches the SDK as the
SDK's own `ToolError`, which it shows the model as an `isError` result without a traceback.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import asdict

from mcp.server.mcpserver.exceptions import ToolError

from codeoid.log import log
from codeoid.mcp_server import tools
from codeoid.mcp_server.tools import Caller
from codeoid.memory import retrieval
from codeoid.service import client


def forwarding(method: Callable[..., str], project_dir: str) -> Callable[..., str]:
    """`method` (a bound `MemoryTools` method) as a tool whose calls the memory service answers."""
    signature = inspect.signature(method)
    here = answered_here(method)

    @functools.wraps(method)
    def forward(*args: object, **kwargs: object) -> str:
        arguments = dict(signature.bind(*args, **kwargs).arguments)
        caller = {"project_dir": project_dir, **asdict(Caller.of_this_process())}
        try:
            return client.call_tool(method.__name__, arguments, caller)
        except client.ToolFailed as refusal:
            raise ToolError(str(refusal)) from None
        except client.ServiceUnavailable as error:
            log("mcp", f"{method.__name__} answered in-process: {error}")
            with retrieval.without_vectors(f"the memory service is unavailable ({error})"):
                return here(*args, **kwargs)

    return forward


def answered_here(method: Callable[..., str]) -> Callable[..., str]:
    """`method` (a bound `MemoryTools` method) as a tool run in this process (`CODEOID_VECTOR=off`, or the
    fallback when the service cannot start)."""

    @functools.wraps(method)
    def run(*args: object, **kwargs: object) -> str:
        try:
            return method(*args, **kwargs)
        except tools.ToolError as refusal:
            raise ToolError(str(refusal)) from None

    return run
