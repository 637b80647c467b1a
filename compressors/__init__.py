'''The rule engine: turns a command's raw output into compressed output, given rules. Knows nothing of Claude Code.

Raw output is archived before it reaches this package, which is what makes dropping lines safe; the engine's
promise is the fidelity contract of DESIGN §5: kept lines are byte-identical raw lines in raw order, every line
it adds starts with `MARKER` (`b"[codeoid] "`), and each rule keeps errors, failures, tracebacks, distinct
warnings, failing test ids, changed files and files with search hits (with their counts), error lines as programs
print them on stderr (kept by every rule, `diagnostics.STREAM_ERROR_PATTERNS`), and always the output's last
non-blank line. Outputs under 40 lines or 1 KB, or that would not shrink, pass through unchanged.

Public API
----------
Parsing (`command.py`, tree-sitter-bash):
    parse(command: str) -> ShellCommand      never raises; `.understood`, `.invocation`, `.background`,
                                             `.stdout_redirected`, `.stdout_leaves` (not onto stderr), `.heredoc`,
                                             `.calls_exit`, `.defines_function`, `.subshell`, `.substitution`,
                                             `.compound`, `.programs`
    resolve(command: str) -> Invocation | None   `Invocation(program, args, launchers)` of the last stage, after
                                             `VAR=x`, `cd dir &&`, launchers (`python -m`, `npx`, `uv run`...)
Rules (`rules.py`, `loader.py`):
    load_rules(*, project_dir=None, user_dir=None, cache_dir=None) -> RuleSet   never raises for a bad file
    RuleSet.match(invocation) -> Rule | None,  RuleSet.for_command(command) -> Rule | None,  RuleSet.errors,
        RuleSet.rebuilt (the files were read now, not from the cache)
    loader.report_errors(rules, to_stderr=...)   a log line per broken file when rebuilt; stderr lines by hand
    RuleError(path, line, message)           str() is "file:line: message"
Engine (`engine.py`):
    Compressor(rule, thresholds=Thresholds()) with .feed(chunk) -> bytes, .finish() -> bytes,
        .abandon() -> Iterator[bytes], .result -> CompressResult
    CompressResult(rule, raw_bytes, raw_lines, output_bytes, removed, passthrough); .describe() for a footer
    compress_bytes(rule, raw) -> (bytes, CompressResult)   whole outputs in memory (tests, benchmarks)
    CompressionError, Thresholds(min_lines=40, min_bytes=1024, hold_bytes=256 KiB, min_saving=512,
        max_line_bytes=1 MiB, budget_lines=60, budget_bytes=4096, ceiling=8000), MARKER
    The ceiling (CODEOID_CEILING) caps a compressed output, footer included, whatever the rule keeps: past it
    the failing tests (one short line each, with their reports' raw lines) or the index stay named first, then
    the closing line, the first failure report and the rest in raw order; every cut names its raw lines.
    Kept lines are held until the output ends (or 2 MiB of them are held) so the budget can be spent; then
    they are written with the index or group table first. A cut reads
    "[codeoid] 380 lines cut (context lines), raw lines 120-499".

Usage, as `codeoid-compress` would::

    from codeoid.compressors import MARKER, Compressor, load_rules, parse

    shell = parse(command)          # the rewrite hook reads the same parse for its safety decisions
    rules = load_rules(project_dir=cwd, cache_dir=home / "cache")
    report_errors(rules, to_stderr=by_hand)  # a broken user or project file: say so; the other rules apply
    rule = rules.match(shell.invocation) if shell.invocation else None
    if rule is None:
        ...                         # copy stdin to stdout unchanged
    engine = Compressor(rule)
    try:
        for chunk in iter(lambda: stdin.read1(1 << 16), b""):
            stdout.write(engine.feed(chunk))   # often b"": the engine holds the first 256 KiB
        tail = engine.finish()
        stdout.write(tail)
    except Exception:               # CompressionError, or a bug: pass the rest through
        for piece in engine.abandon():
            stdout.write(piece)
        ...                         # then copy the rest of stdin unchanged
    result = engine.result          # result.removed: lines per operation; result.passthrough: why not
    if result.lines_removed:        # finish() may end without a newline when the raw output did
        stdout.write(MARKER + f"raw output {raw_id}: {result.describe()}".encode() + b"\\n")

On SIGTERM/SIGINT write `abandon()`'s chunks (the raw bytes the engine still holds) and stop.

Rule files
----------
TOML, one `[[rule]]` table per rule. Built-in packs live in `compressors/rules/`; user rules in
`~/.config/codeoid/rules/*.toml` (or `$XDG_CONFIG_HOME`), project rules in `<project>/.codeoid/rules/*.toml`. A rule
with the name of a lower layer's rule replaces it (`enabled = false` switches it off); a new rule goes before
the lower layers' rules. The first enabled rule that matches applies::

    [[rule]]
    name = "pytest"                       # required, unique
    description = "why it drops what it drops"
    keep = ['^={3,} .* ={3,}$', '^(?:FAILED|ERROR) \\S']   # always kept
    drop = ['^platform ', '^\\s*$']        # removed silently (counted in the footer)
    diagnostics = true                    # also keep the engine's error/traceback/warning patterns (default)
    dedupe = true                         # identical consecutive lines: one, then a count (default)
    long_line = 2000                      # lines over this many bytes are omitted unless kept
    min_bytes = 8000                      # an output smaller than this passes whole (default: the engine's 1 KB)
    head = 200                            # keep the first 200 lines the operations above leave...
    tail = 20                             # ...and the last 20; one marker counts the middle

    [[rule.collapse]]                     # a run of lines matching any pattern keeps its first `keep` lines
    label = "passed/skipped tests"
    patterns = ['::\\S+ PASSED']
    keep = 0

    [rule.item]                           # per-item budgets: a failure, a diff's file, a file's search hits
    start = '^_{3,} (.+?) _{3,}$'         # starts an item, group 1 names it (or `key`: group 1 of every line)
    end = '^={3,}'                        # optional: ends the item
    drop = ['^ ']                         # optional: dropped only inside items
    count = ':$'                          # optional: which lines the summary counts (default all)
    head = 30                             # first lines of each item...
    tail = 10                             # ...and last lines
    label = "lines"                       # summary: "[codeoid] NAME: 40 lines in all, 20 lines not shown"
    summary = true

    tally = { added = '^\\+' }              # optional: named counts of the item's lines matching each pattern
    index = "{name} +{added}"              # optional: a line per item at the top ({first}/{last}: raw lines)
    index_title = "{items} files"          # optional: the index's first line, with the tallies' totals
    index_dense = "{name} +{added}"        # optional: past the ceiling, several items to a line when one each won't fit
    fields = { subject = '^    (\\S.*)' }  # optional digest: the item becomes one line from its fields,
    digest = "{subject}[[ (+{body} lines)]]"   # tallies and {lines}; a [[...]] part goes when its fields are 0/empty

    [rule.failures]                       # test runs: failure reports grouped by cause (failure_groups.py)
    begin = '^=+ FAILURES =+$'            # optional: reports only after this line
    start = '^_{3,} (.+?) _{3,}$'         # starts one failure's report, group 1 names the test
    end = '^=+ .* =+$'                    # optional: ends the report, belongs to none
    head = 1                              # first lines of every report kept (the test id)
    reason = ['^E\\s']                     # why it failed: kept in every report, `reason_lines` (6) each
    message = '^E\\s+(\\S.*)$'              # the first (or, `last_message = true`, last) match: the cause's message
    frame = '^\\s*File "([^"]+)", line (\\d+)'   # a frame's location before its code: path, line
    frame_after = '^(\\S+):(\\d+): '        # or after it (pytest's long form)
    frame_lines = 2                       # code lines kept beside a kept frame
    pointer = ['^>']                      # the failing line in a frame's code
    library = ['site-packages/']          # frame paths that are not the project's
    innermost_first = false               # true where stacks list the raising frame first (JS, Rust)
    captured = '^-+ Captured .* -+$'      # captured output, `captured_lines` (10) kept in a cause's first report
    budget = 60                           # traceback lines for all first reports together

    [rule.codes]                          # linters, compilers, logs: diagnostics grouped by code
    line = '^(?P<path>[^:]+):(?P<line>\\d+):\\d+: (?P<code>[A-Z]+\\d+) (?P<message>.*)$'   # a diagnostic's first line
    at = '^\\s*--> (?P<path>.+?):(?P<line>\\d+):\\d+$'   # optional: its location on a later line (ruff, rustc)
    file = '^(/\\S+)$'                     # optional: a header naming the file of the lines below (eslint)
    context = ['^\\s']                      # lines that belong to the diagnostic above (code frames, notes)
    keep = 1                              # diagnostics shown whole per code; the others are cut, named by the
    label = "diagnostics"                 #   table at the top: "F401 ×37: src/a.py:3,7 src/b.py:12"
    table_bytes = 3000                    # past it, the codes with most locations name files with counts
    stay = false                          # true: the first of each code is never cut (a log's first error)

    [rule.group]                          # listings: per-group budget, one summary line at the end
    by = "extension"                      # or "directory" (`depth` levels below where the listing starts), or
    keep = 6                              #   "section" with `section = '^(.+):$'` (ls -R's headers)
    path = '(\\S+)$'                      # group 1 is the path on the line (default: the whole line)
    extensions = false                    # true: a table at the top, every group with its entries by extension

    [rule.budget]                         # the size to aim for (default from Thresholds; 0 = no limit)
    lines = 150
    bytes = 8192
    rest = "context lines"                # what lines matching no tier are called when cut
    fair = true                           # share each tier between items (or groups); false: first lines first
    min_share = 6                         # under this many lines each, whole shares for the first items instead
    [[rule.budget.tier]]                  # spent before the lines of later tiers and the rest
    label = "changed lines"
    patterns = ['^[-+]']

    [rule.columns]                        # tables: of the first `fields` columns of rows matching `row`, those
    row = '^[-dl][-rwx]{9}'               #   the same on every row are named once and left out (the rows
    fields = 8                            #   shown become codeoid's lines)

    [rule.match]                          # or several [[rule.match]] tables: any one applies
    program = ["pytest", "py.test"]       # the resolved program's basename
    subcommand = ["test", "run test*"]    # globs over the leading positional words
    args_any = ["-v"]                     # applies only with one of these (`-l` also matches `-rl`)
    args_none = ["--json"]                # never with one of these
    options_with_value = ["-C"]           # `git -C dir status` has the subcommand `status`

Patterns are Python regular expressions searched in the first 4 KiB of each line (decoded as UTF-8 with
surrogateescape). Order of decisions per line: the rule's `keep`, then `drop` and `item.drop`, then `collapse`,
then the engine's diagnostics, then `long_line`, the item budget, the group budget and `head`/`tail`; once the
output ends, the budget. Lines kept by `keep` or the diagnostics, and the closing line, are never cut by it.
With `codes`, a line matching `codes.line` (or a context line below it) is decided first: counted under its
code (group `code`, else its `message` with quoted parts, numbers and ids made generic) at its location (`path`
and `line`, from `at`, `file`, or, with none of them, the raw line number), then kept for the rule's other
operations if it is one of the first `keep` of its code or matches `keep`, else cut. The table comes out of the
budget first. Lines of a failure report are decided by `failures` when the report ends, before anything else: the first
report of each cause keeps a trimmed traceback (`failures.budget` lines over all of them, at most the rule's
budget lines), later ones their first lines, reasons and kept lines, and one marker per run of them names the
count and raw lines cut; a report with no reason and no message goes through the operations above. What
`failures` keeps counts against the rule's budget first and is never cut by it: the budget cuts the other lines.
'''

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the rewrite hook imports this package, and typing costs it
if TYPE_CHECKING:
    from typing import Any

    from codeoid.compressors.command import Invocation, ShellCommand, parse, resolve
    from codeoid.compressors.engine import (
        MARKER,
        CompressionError,
        Compressor,
        CompressResult,
        Thresholds,
        compress_bytes,
    )
    from codeoid.compressors.loader import RuleSet, default_user_dir, load_rules
    from codeoid.compressors.rules import Rule, RuleError

# Exported names by module, imported on first use: the rewrite hook needs only `command` and `loader`, and the
# engine's compiled patterns would add to every Bash call's wait.
_EXPORTS = {
    "command": ("Invocation", "ShellCommand", "parse", "resolve"),
    "engine": ("MARKER", "CompressionError", "Compressor", "CompressResult", "Thresholds", "compress_bytes"),
    "loader": ("RuleSet", "default_user_dir", "load_rules"),
    "rules": ("Rule", "RuleError"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = [
    "MARKER", "CompressResult", "CompressionError", "Compressor", "Invocation", "Rule", "RuleError", "RuleSet",
    "ShellCommand", "Thresholds", "compress_bytes", "default_user_dir", "load_rules", "parse", "resolve",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
