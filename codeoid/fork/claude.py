"""Forking onto Claude Code: canonical turns written as a Claude Code transcript, resumed with `--resume`.

Claude Code's native way to start from a history is resuming a transcript (`claude-code-protocol.md` section 6):
`<config dir>/projects/<encoded project dir>/<session id>.jsonl`, one JSON line per record. Observed on 2.1.332
against the scripted API: a transcript holding only `user` and `assistant` lines (uuid/parentUuid chain,
sessionId, cwd, version, timestamp; one line per content block, as Claude Code writes them) is resumed under
the same session id, and the first request's `messages` carry every line as a real message block: prompts,
text, `tool_use` and `tool_result` with `is_error`. A transcript filed under another project directory is not
found ("No conversation found"), and Claude Code shortens project directory names over 200 characters with a
hash it does not document; for such a directory the fork falls back to the structured first message
(`codeoid.fork.seed.first_message`) in a fresh session instead.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeoid import paths
from codeoid.fork.seed import first_message
from codeoid.fork.turns import ToolCall, Turn, UserMessage
from codeoid.rotation.claude_args import ClaudeArgs, backing_argv
from codeoid.rotation.routes import Wiring

# The Claude Code version whose transcript format this writes (`version` on every line).
TRANSCRIPT_VERSION = "2.1.332"
MAX_PROJECT_DIR_NAME = 200
# The model named on the history's assistant lines when the parent's is not recorded.
UNKNOWN_MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True)
class ClaudeStart:
    """How the fork's first `claude` starts: resuming the written transcript, or with a first message."""

    claude_session_id: str
    transcript_path: Path | None  # written, for a native start
    transcript_bytes: int  # the hooks read the transcript from here on: what precedes is the parent's
    first_message: str | None  # for the fallback start

    def claude_args(self) -> list[str]:
        """The arguments that pick this conversation (the first message, if any, goes last as the prompt)."""
        if self.transcript_path is not None:
            return ["--resume", self.claude_session_id]
        return ["--session-id", self.claude_session_id]

    def interactive_args(self, user_args: list[str]) -> list[str]:
        """`codeoid run`'s arguments for the fork: the user's options, the conversation, the first message."""
        prompt = ["--", self.first_message] if self.first_message is not None else []
        return [*user_args, *self.claude_args(), *prompt]

    def print_argv(self, claude_bin: str, user: ClaudeArgs, wiring: Wiring, prompt: str) -> list[str]:
        """`claude -p` for one prompt in the fork, with codeoid wired in as `codeoid run` wires it."""
        if self.first_message is not None:
            prompt = f"{self.first_message}\n\n{prompt}"
        options = [*user.options, self.claude_args(), ["-p"]]
        return backing_argv(claude_bin, ClaudeArgs(options=options, prompt=[prompt]), first=True,
                            session_id=self.claude_session_id, settings=wiring.settings, prompt=None,
                            extra=wiring.extra_args)


def transcript_dir(config_dir: Path, project_dir: str) -> Path | None:
    """Where Claude Code files the transcripts of a project directory; None when it would shorten the name."""
    name = re.sub(r"[^A-Za-z0-9]", "-", project_dir)
    if len(name) > MAX_PROJECT_DIR_NAME:
        return None
    return config_dir / "projects" / name


def prepare(turns: list[Turn], notice: str, *, config_dir: Path, project_dir: str, model: str | None) -> ClaudeStart:
    """Write the transcript the fork resumes (or, where that cannot work, build its first message)."""
    claude_session_id = str(uuid.uuid4())
    directory = transcript_dir(config_dir, project_dir)
    if directory is None:
        return ClaudeStart(claude_session_id, None, 0, first_message(notice, turns))
    records = transcript_records(turns, notice, session_id=claude_session_id, cwd=project_dir,
                                 model=model or UNKNOWN_MODEL)
    data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")
    directory.mkdir(mode=paths.DIR_MODE, parents=True, exist_ok=True)  # Claude Code's own folder: modes left as found
    path = directory / f"{claude_session_id}.jsonl"
    fd = paths.open_private(str(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    return ClaudeStart(claude_session_id, path, len(data), None)


def transcript_records(turns: list[Turn], notice: str, *, session_id: str, cwd: str,
                       model: str) -> list[dict[str, Any]]:
    """The transcript lines of a conversation: the notice opens the first prompt as a block of its own; what the
    user typed mid-turn is a text block in the user message that follows the step it came after."""
    writer = _Writer(session_id=session_id, cwd=cwd, model=model)
    for index, turn in enumerate(turns):
        prompt: str | list[dict[str, Any]] = turn.user
        if index == 0:
            prompt = [{"type": "text", "text": notice}, {"type": "text", "text": turn.user}]
        writer.user(prompt)
        for step in turn.steps:
            if isinstance(step, ToolCall):
                writer.tool_call(step)
            elif isinstance(step, UserMessage):
                if step.text.strip():
                    writer.user_text(step.text)
            elif step.strip():
                writer.assistant_block({"type": "text", "text": step})
        writer.end_message()
    return writer.records


class _Writer:
    """Chains records by uuid; an assistant message lasts until its tool call's result, one line per block."""

    def __init__(self, *, session_id: str, cwd: str, model: str) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.model = model
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.message_id: str | None = None
        self.timestamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def user(self, content: str | list[dict[str, Any]]) -> None:
        self.end_message()
        self._add("user", {"role": "user", "content": content})

    def user_text(self, text: str) -> None:
        """Words the user typed mid-turn. The API wants user and assistant messages to alternate, so after a tool
        call they join the user message that holds its result, after the result (where Claude Code put them);
        after the assistant's text they start a user message."""
        last = self.records[-1]["message"] if self.records else None
        if last is None or last["role"] != "user":
            self.user([{"type": "text", "text": text}])
            return
        content = last["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        last["content"] = [*content, {"type": "text", "text": text}]

    def assistant_block(self, block: dict[str, Any]) -> None:
        if self.message_id is None:
            self.message_id = f"msg_fork_{uuid.uuid4().hex[:24]}"
        stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
        self._add("assistant", {
            "id": self.message_id, "type": "message", "role": "assistant", "model": self.model,
            "content": [block], "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": 0},
        })

    def tool_call(self, call: ToolCall) -> None:
        self.assistant_block({"type": "tool_use", "id": call.call_id, "name": call.name, "input": call.input})
        self.end_message()
        self._add("user", {"role": "user", "content": [
            {"tool_use_id": call.call_id, "type": "tool_result", "content": call.output, "is_error": call.is_error}
        ]})

    def end_message(self) -> None:
        self.message_id = None

    def _add(self, kind: str, message: dict[str, Any]) -> None:
        record_uuid = str(uuid.uuid4())
        self.records.append({
            "parentUuid": self.parent, "isSidechain": False, "type": kind, "message": message, "uuid": record_uuid,
            "timestamp": self.timestamp, "userType": "external", "cwd": self.cwd, "sessionId": self.session_id,
            "version": TRANSCRIPT_VERSION,
        })
        self.parent = record_uuid
