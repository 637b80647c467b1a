"""What Claude Code alone puts in the model's window for one Bash call: the baseline every saving is measured by.

Claude Code never shows the model a long Bash output as it is (docs/claude-code-tool-output.md, "What the model
reads"; the protocol notes, section 9b):

- a successful output of more than `PERSIST_BYTES` bytes is saved to a file, and the model reads a
  `<persisted-output>` note naming the file with a preview of the output's first `PREVIEW_CHARS` characters;
- a failed command's result is `Exit code N` and the output's first `FAILURE_BYTES` bytes, and when that
  is long its first and last `FAILURE_KEEP` characters around a `... [N characters truncated] ...` line;
- anything else is shown whole, without its trailing newlines.

`window` builds that text from an output and its exit status; `window_size` gives its size from the output's
size alone, which is all the store keeps of an output's shape (the savings ledger, `codeoid discover`, the
benchmark). Both count characters, as the window does; a size in bytes stands for as many characters. Plain
functions, no imports: the store and the hooks use them.
"""

from __future__ import annotations

# Over this many bytes (UTF-8) a successful output is saved to a file and previewed.
PERSIST_BYTES = 30_000
# A failed command's result keeps this many bytes (UTF-8) of the output...
FAILURE_BYTES = 30_000
# ...and, when that is longer than twice this plus the marker, only its first and last this many.
FAILURE_KEEP = 5_000
# The preview of a persisted output: its first this many characters, cut back to a line end in the second half.
PREVIEW_CHARS = 2_000
# Where a persisted output is saved, as long as a typical path is: the note names the file, and the window pays
# for its name (`~/.claude/projects/<project slug>/<session id>/tool-results/<id>.txt`).
TYPICAL_SAVED_PATH = ("/home/user/.claude/projects/-home-user-src-project/"
                      "0b1e5a9c-4f3d-4e2a-9c6b-7d8e9f0a1b2c/tool-results/b7kboaa4k.txt")


def window(output: str, exit_code: int | None = 0, *, saved_to: str = TYPICAL_SAVED_PATH) -> str:
    """The `tool_result` text the model reads for a Bash call that printed `output` (stdout and stderr merged)
    and exited with `exit_code` (None: not known, taken as success)."""
    text = output.rstrip()
    if exit_code:
        head = text.encode("utf-8", "surrogatepass")[:FAILURE_BYTES].decode("utf-8", "ignore")
        return _failure(f"Exit code {exit_code}\n{head}" if text else f"Exit code {exit_code}")
    if len(text.encode("utf-8", "surrogatepass")) > PERSIST_BYTES:
        return _persisted(text, len(output.encode("utf-8", "surrogatepass")), saved_to)
    return text


def window_size(size: int, exit_code: int | None = 0, *, saved_to: str = TYPICAL_SAVED_PATH) -> int:
    """How many characters `window` gives for an output of `size` characters (or bytes), without the text: a
    persisted output's preview is taken as full. `size` is taken as the output without its trailing newlines."""
    if exit_code:
        prefix = len(f"Exit code {exit_code}\n") if size else len(f"Exit code {exit_code}")
        kept = prefix + min(size, FAILURE_BYTES)
        cut = 2 * FAILURE_KEEP + len(_truncation_line(kept - 2 * FAILURE_KEEP))
        return cut if cut < kept else kept
    if size > PERSIST_BYTES:
        return len(_persisted("x" * (PREVIEW_CHARS + 1), size, saved_to))
    return size


def persisted(output: str, exit_code: int | None, size: int | None = None) -> bool:
    """Whether Claude Code saves this output to a file and shows the model a preview (`size`: its bytes, when
    `output` is only the part of it one has)."""
    if exit_code:
        return False
    return (size if size is not None else len(output.rstrip().encode("utf-8", "surrogatepass"))) > PERSIST_BYTES


def _failure(text: str) -> str:
    """The first and last `FAILURE_KEEP` characters around the truncation line, when that is shorter."""
    middle = len(text) - 2 * FAILURE_KEEP
    if middle <= 0:
        return text
    cut = text[:FAILURE_KEEP] + _truncation_line(middle) + text[-FAILURE_KEEP:]
    return cut if len(cut) < len(text) else text


def _truncation_line(characters: int) -> str:
    return f"\n\n... [{characters} characters truncated] ...\n\n"


def _persisted(text: str, size: int, saved_to: str) -> str:
    preview, more = _preview(text)
    return ("<persisted-output>\n"
            f"Output too large ({_size(size)}). Full output saved to: {saved_to}\n\n"
            f"Preview (first 2KB):\n{preview}{chr(10) + '...' if more else ''}\n</persisted-output>")


def _preview(text: str) -> tuple[str, bool]:
    if len(text) <= PREVIEW_CHARS:
        return text, False
    head = text[:PREVIEW_CHARS]
    line_end = head.rfind("\n")
    return (head[:line_end] if line_end > PREVIEW_CHARS // 2 else head), True


def _size(size: int) -> str:
    """Claude Code's size: `106.3KB`, `1.3MB`."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"


# PostToolUse hands the hooks at most this many characters of a Bash output; a longer one was persisted.
HOOK_CHARS = 30_000


def stored_window_size(size: int, failed: bool) -> int:
    """The window a Bash result took, from the size of the text the hooks stored for it: a success of
    `HOOK_CHARS` or more is one Claude Code persisted (the hooks see at most that much of it), so the window held
    its preview note; a failure's text is already Claude Code's cut (or the whole output, cut the same way)."""
    if failed:
        return min(size, window_size(size, 1))
    return window_size(PERSIST_BYTES + 1) if size >= HOOK_CHARS else size


def stored_persisted(size: int, failed: bool) -> bool:
    """Whether a stored Bash result of `size` characters is one Claude Code persisted and previewed."""
    return not failed and size >= HOOK_CHARS
