"""Stream raw stdout through one rule: bytes in, compressed bytes out, constant memory, an account of removals.

The caller (`codeoid-compress`) has already archived the raw bytes, so the engine may drop lines, but only as
the rule says and never by changing one: kept lines are written byte for byte (non-UTF-8 too), and every line
the engine adds starts with `MARKER`. Small outputs pass through unchanged, as does any output that the rule
would not make smaller; both are decided by holding the first `hold_bytes` before writing anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple

from codeoid.compressors.pipeline import MARKER, MarkerCollision, Pipeline
from codeoid.compressors.rules import Rule

__all__ = ["MARKER", "CompressResult", "CompressionError", "Compressor", "Thresholds", "compress_bytes", "footer",
           "thresholds_from"]


class CompressionError(Exception):
    """The engine cannot go on with this stream; the caller passes the rest through (see `Compressor.abandon`)."""


class Thresholds(NamedTuple):
    """When compression is worth it. An output under either minimum passes through unchanged."""

    min_lines: int = 40
    min_bytes: int = 1024
    # Held before anything is written: an output that ends within it is sent raw if compressing saves too little.
    hold_bytes: int = 256 * 1024
    # Compressed output must be at least this many bytes smaller than raw: it will also carry a footer of about
    # 200 bytes, and a compression that saves less than its footer costs the model more than the raw output.
    min_saving: int = 512
    # A line longer than this stops compression: the rest of the output passes through unchanged.
    max_line_bytes: int = 1 << 20
    # The size a rule aims for when its `[rule.budget]` does not say (0: no limit); see `rules.Budget`.
    budget_lines: int = 60
    budget_bytes: int = 4096
    # The most characters a compressed output may ever put in the window, footer included, whatever the raw size
    # and whatever the rule keeps (0: no ceiling); from CODEOID_CEILING. Under it, a failure's output reaches the
    # model whole (Claude Code cuts a failed command's result past about 10,000 characters).
    ceiling: int = 8000


class CompressResult(NamedTuple):
    """What happened to one output, for the footer and the savings ledger."""

    rule: str
    raw_bytes: int
    raw_lines: int
    output_bytes: int
    removed: dict[str, int]  # lines removed, per operation ("dropped", "head/tail", a collapse label...)
    # Why (part of) the output went through unchanged: "below threshold", "not smaller", "line over ... bytes",
    # "raw output contains codeoid marker lines", "abandoned"; None when the whole output was compressed.
    passthrough: str | None

    @property
    def lines_removed(self) -> int:
        return sum(self.removed.values())

    def describe(self) -> str:
        """One line for the footer: `rule pytest: 1,180 of 1,254 lines removed (1,100 passing tests, 80 dropped)`."""
        if not self.lines_removed:
            reason = f" ({self.passthrough})" if self.passthrough else ""
            return f"rule {self.rule}: nothing removed{reason}"
        parts = ", ".join(f"{count:,} {reason}" for reason, count in
                          sorted(self.removed.items(), key=lambda pair: -pair[1]))
        return f"rule {self.rule}: {self.lines_removed:,} of {self.raw_lines:,} lines removed ({parts})"


DEFAULT_THRESHOLDS = Thresholds()
# Of the ceiling, what the footer `codeoid-compress` adds after the engine's output may take.
FOOTER_RESERVE = 400
# The smallest ceiling that leaves a compressed output room to say anything.
MIN_CEILING = 2000


def thresholds_from(env: Mapping[str, str]) -> Thresholds:
    """The engine's defaults, with the global budget (for rules whose TOML sets none) from CODEOID_BUDGET_LINES
    and CODEOID_BUDGET_BYTES and the ceiling from CODEOID_CEILING (0: none; at least `MIN_CEILING`); a value
    that is not a whole number is ignored."""
    budget = {}
    for key, name in (("budget_lines", "CODEOID_BUDGET_LINES"), ("budget_bytes", "CODEOID_BUDGET_BYTES"),
                      ("ceiling", "CODEOID_CEILING")):
        value = env.get(name, "").strip()
        if value.isdigit():
            budget[key] = int(value)
    if budget.get("ceiling"):
        budget["ceiling"] = max(budget["ceiling"], MIN_CEILING)
    return Thresholds()._replace(**budget)


def footer(raw_id: str, description: str) -> str:
    """The last line of a compressed output, after `MARKER`: what was removed and how to page the raw bytes.
    `codeoid-compress` and the after-the-fact PostToolUse compression name their raw output the same way."""
    return (f"{description}. Exact output: {raw_id} (get_episode(\"{raw_id}\"), "
            f"or `codeoid show {raw_id} --raw`)")


_HOLD, _STREAM, _PASS = range(3)


class Compressor:
    """One output through one rule. `feed` chunks, then `finish`; write whatever each returns, in order.

    `feed` and `finish` raise only CompressionError (an engine bug arrives wrapped in one); after it the stream
    is the caller's: write `abandon()`'s chunks, then the rest of the input unchanged.
    """

    def __init__(self, rule: Rule, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> None:
        self.rule = rule
        self.thresholds = thresholds
        self._pipeline = Pipeline(rule, budget_lines=thresholds.budget_lines, budget_bytes=thresholds.budget_bytes,
                                  ceiling=max(thresholds.ceiling - FOOTER_RESERVE, 1) if thresholds.ceiling else 0)
        self._mode = _HOLD
        self._held: list[bytes] = []
        self._held_size = 0
        self._partial = b""
        self._raw_bytes = 0
        self._raw_lines = 0
        self._output_bytes = 0
        self._passthrough: str | None = None
        self._finished = False
        self._had_partial_at_end = False
        self._unpushed = b""  # lines of a chunk not yet pushed when the pipeline raised

    def feed(self, chunk: bytes) -> bytes:
        if self._finished:
            raise CompressionError("feed() after finish()")
        try:
            return self._feed(chunk)
        except CompressionError:
            raise
        except Exception as error:
            raise CompressionError(f"engine failed: {error!r}") from error

    def finish(self) -> bytes:
        if self._finished:
            raise CompressionError("finish() called twice")
        try:
            return self._finish()
        except CompressionError:
            raise
        except Exception as error:
            raise CompressionError(f"engine failed: {error!r}") from error

    def _feed(self, chunk: bytes) -> bytes:
        self._raw_bytes += len(chunk)
        self._raw_lines += chunk.count(b"\n")
        if self._mode == _PASS:
            return self._count(chunk)
        if self._mode == _HOLD:
            self._held.append(chunk)
            self._held_size += len(chunk)
            if self._held_size <= self.thresholds.hold_bytes:
                return b""
            self._mode = _STREAM
            chunk = b"".join(self._held)
            self._held = []
        return self._count(self._split(chunk))

    def _finish(self) -> bytes:
        self._finished = True
        if self._partial or (self._mode == _HOLD and self._held and not self._held[-1].endswith(b"\n")):
            self._raw_lines += 1
        if self._mode == _PASS:
            return b""
        if self._mode == _HOLD:
            return self._count(self._finish_held())
        out = self._split_last()
        self._pipeline.close(complete=True, newline_at_end=not self._had_partial_at_end)
        return self._count(out + self._pipeline.take())

    def abandon(self) -> Iterator[bytes]:
        """After an exception: the raw bytes consumed but not yet written. Later input is the caller's to copy."""
        self._finished = True
        self._passthrough = "abandoned"
        if self._mode == _HOLD:
            yield from self._held
        elif self._mode == _STREAM:
            self._pipeline.flush_held()
            yield self._pipeline.take()
            yield MARKER + b"compression stopped by an error; the rest is unchanged\n"
            yield from self._pipeline.raw_buffered()
            yield self._unpushed
            yield self._partial
        self._held = []
        self._partial = self._unpushed = b""
        self._mode = _PASS

    @property
    def result(self) -> CompressResult:
        return CompressResult(
            rule=self.rule.name,
            raw_bytes=self._raw_bytes,
            raw_lines=self._raw_lines,
            output_bytes=self._output_bytes,
            removed={reason: count for reason, count in self._pipeline.removed.items() if count},
            passthrough=self._passthrough,
        )

    # -- internals -----------------------------------------------------------------------------------------------

    def _count(self, data: bytes) -> bytes:
        self._output_bytes += len(data)
        return data

    def _finish_held(self) -> bytes:
        raw = b"".join(self._held)
        self._held = []
        lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") or not raw else 1)
        if lines < self.thresholds.min_lines or len(raw) < max(self.thresholds.min_bytes, self.rule.min_bytes):
            self._passthrough = "below threshold"
            return raw
        self._mode = _STREAM
        compressed = self._split(raw) + self._split_last()
        if self._mode == _PASS:
            return compressed
        self._pipeline.close(complete=True, newline_at_end=not self._had_partial_at_end)
        compressed += self._pipeline.take()
        if len(compressed) + self.thresholds.min_saving > len(raw):
            self._passthrough = "not smaller"
            self._pipeline.removed.clear()
            return raw
        return compressed

    def _split(self, chunk: bytes) -> bytes:
        """Push the complete lines of `chunk` (after any partial line held from before); return what is ready."""
        data = self._partial + chunk if self._partial else chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        pipeline = self._pipeline
        for index, line in enumerate(lines):
            try:
                pipeline.push(line)
            except MarkerCollision:
                rest = b"\n".join(lines[index:]) + b"\n" + self._partial
                self._partial = b""
                return self._switch_to_passthrough("raw output contains codeoid marker lines", rest)
            except Exception:
                self._unpushed = b"".join(line + b"\n" for line in lines[index:])
                raise
        if len(self._partial) > self.thresholds.max_line_bytes:
            rest, self._partial = self._partial, b""
            return self._switch_to_passthrough(f"a line over {self.thresholds.max_line_bytes:,} bytes", rest)
        return pipeline.take()

    def _split_last(self) -> bytes:
        """Push the final line when the output does not end in a newline."""
        if self._mode != _STREAM or not self._partial:
            return b""
        self._had_partial_at_end = True
        line, self._partial = self._partial, b""
        try:
            self._pipeline.push(line)
        except MarkerCollision:
            return self._switch_to_passthrough("raw output contains codeoid marker lines", line)
        return b""

    def _switch_to_passthrough(self, reason: str, rest: bytes) -> bytes:
        """Write what was decided so far, say why, then `rest` and everything after it unchanged."""
        self._pipeline.close(complete=False)
        self._mode = _PASS
        self._passthrough = reason
        note = MARKER + f"{reason}: the rest of the output is unchanged\n".encode()
        return self._pipeline.take() + note + rest


def compress_bytes(rule: Rule, raw: bytes, thresholds: Thresholds = DEFAULT_THRESHOLDS,
                   chunk_size: int = 1 << 16) -> tuple[bytes, CompressResult]:
    """Compress a whole output held in memory (tests, benchmarks); streams it in chunks like a real pipe."""
    compressor = Compressor(rule, thresholds)
    parts = [compressor.feed(raw[start:start + chunk_size]) for start in range(0, len(raw), chunk_size)]
    parts.append(compressor.finish())
    return b"".join(parts), compressor.result
