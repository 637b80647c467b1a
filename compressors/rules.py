"""Rules as data: the validated form of one `[[rule]]` table, and how a rule matches an invocation.

A rule file is TOML (the format is documented in the package docstring). `rule_from_table` checks one table and
returns plain data (`dict`s of `str`/`int`/`bool`/lists) so the loader can cache it with `marshal`; `Rule.from_plain`
turns that into the typed form the engine and matcher use. Patterns are checked here, once per file change, and
compiled again only by the engine for the one rule that applies.
"""

from __future__ import annotations

from codeoid.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from codeoid.compressors.command import Invocation


class RuleError(Exception):
    """A rule file that cannot be used, with the place to fix it."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")
        self.path = path
        self.line = line
        self.message = message


class Match(NamedTuple):
    """Which invocations a rule applies to."""

    program: tuple[str, ...]
    # Each entry is one or more space-separated globs matched against the leading positional arguments, so
    # "run test*" matches `npm run test:unit`. Empty: any subcommand (or none).
    subcommand: tuple[str, ...] = ()
    args_any: tuple[str, ...] = ()
    args_none: tuple[str, ...] = ()
    # Options whose next word is their value, so `git -C dir status` has the subcommand `status`.
    options_with_value: tuple[str, ...] = ()
    # Applies only with at most this many positional words (`grep -n PATTERN FILE`: one file, no names printed).
    positional_max: int | None = None

    def applies_to(self, invocation: Invocation) -> bool:
        if invocation.program not in self.program:
            return False
        if self.args_none and any(_has_flag(invocation.args, flag) for flag in self.args_none):
            return False
        if self.args_any and not any(_has_flag(invocation.args, flag) for flag in self.args_any):
            return False
        if self.positional_max is not None and sum(
                2 if any(char in word for char in "*?[{~") else 1  # a glob may name many files
                for word in self._positional(invocation.args)) > self.positional_max:
            return False
        if not self.subcommand:
            return True
        positional = self._positional(invocation.args)
        return any(_globs_match(entry.split(), positional) for entry in self.subcommand)

    def _positional(self, args: tuple[str, ...]) -> list[str]:
        words: list[str] = []
        index = 0
        while index < len(args) and len(words) < 4:
            word = args[index]
            if word == "--":
                words.extend(args[index + 1:index + 5])
                break
            if word.startswith(("-", "+")) and len(word) > 1:
                index += 2 if word in self.options_with_value else 1
                continue
            words.append(word)
            index += 1
        return words


def _globs_match(globs: list[str], words: list[str]) -> bool:
    return len(words) >= len(globs) and all(glob_match(word, glob) for glob, word in zip(globs, words, strict=False))


def glob_match(word: str, glob: str) -> bool:
    """`fnmatch.fnmatchcase(word, glob)`. A glob with no `[` (every built-in one) is matched here, `*` any run of
    characters and `?` any one, newlines included, as fnmatch's regex does; only a `[...]` set goes to fnmatch,
    which would otherwise bring `re` and a compiled pattern per glob to every rewritten Bash call."""
    if "[" in glob:
        from fnmatch import fnmatchcase

        return fnmatchcase(word, glob)
    at = seen = 0
    star = -1  # where in `glob` the last `*` was, and from where in `word` it is taking characters
    while seen < len(word):
        if at < len(glob) and glob[at] == "*":
            star, taken = at, seen
            at += 1
        elif at < len(glob) and (glob[at] == "?" or glob[at] == word[seen]):
            at += 1
            seen += 1
        elif star != -1:
            taken += 1
            at, seen = star + 1, taken
        else:
            return False
    while at < len(glob) and glob[at] == "*":
        at += 1
    return at == len(glob)


def _has_flag(args: tuple[str, ...], flag: str) -> bool:
    """`-l` is also found inside a cluster such as `-rl`; long flags also match their `--flag=value` form."""
    for arg in args:
        if arg == flag or (flag.startswith("--") and arg.startswith(flag + "=")):
            return True
        if (len(flag) == 2 and flag[0] == "-" and flag[1] != "-" and len(arg) > 2 and arg[0] == "-"
                and arg[1] != "-" and arg[1:].isalpha() and flag[1] in arg[1:]):
            return True
    return False


class Collapse(NamedTuple):
    """A run of consecutive lines each matching one of `patterns` keeps its first `keep` lines.

    `through`: kept lines that do not end the run's marker (`pytest -v`'s FAILED lines among the PASSED ones):
    the run's cut lines on both sides of them are named by one marker after them, over the whole raw range,
    rather than one marker between every two of them."""

    label: str
    patterns: tuple[str, ...]
    keep: int = 0
    through: tuple[str, ...] = ()
    # A `through` line whose test (group 1) a failure report or the runner's list of failing tests names, by
    # the time the line is written, is cut with the run: `pytest -v`'s `id FAILED` when the report follows.
    named: str | None = None


class Item(NamedTuple):
    """Output made of items (a file's hits, a diff's file, a failure): each keeps its first `head` and last `tail`
    lines, and when it loses any, a summary names it with its count."""

    start: str | None = None  # a line matching starts an item; group 1, if any, names it
    key: str | None = None  # or: group 1 names each line's item; a change of name starts the next one
    end: str | None = None  # a line matching ends the current item and belongs to none (a diff's next commit)
    drop: tuple[str, ...] = ()  # removed silently, but only inside an item (a diff's context lines)
    # TOML `count`: the summary counts lines matching this (search hits, not context lines); default all
    count_pattern: str | None = None
    head: int = 20
    tail: int = 0
    label: str = "lines"  # what the summary counts: "src/x.py: 40 hits in all, 35 lines not shown"
    summary: bool = True
    # Named counts per item, each the lines matching its pattern: (("added", "^\\+"), ("removed", "^-")).
    tally: tuple[tuple[str, str], ...] = ()
    # An index at the top of the output, one line per item from this template ("{name} +{added} -{removed}");
    # `index_title`, if set, heads it with the totals ("{items} files changed, +{added} -{removed}").
    index_entry: str | None = None  # TOML `index`
    index_title: str | None = None
    # The index packed several items to a line, from this template ("{name} +{added} -{removed}"), when one line
    # per item does not fit the ceiling's share; None: one per line, the rest named by their raw lines.
    index_dense: str | None = None
    # A digest: each item becomes one line from this template, its fields captured by `fields` (the first
    # match of each pattern in the item; group 1, or the groups joined by spaces), `{lines}` its line count.
    # Every line of the item that no `keep` pattern keeps is left out.
    fields: tuple[tuple[str, str], ...] = ()
    digest: str | None = None


class Group(NamedTuple):
    """Listings: entries grouped by extension or directory keep `keep` each; one summary names what was left out."""

    by: str  # "extension" or "directory"
    keep: int = 5
    path: str | None = None  # group 1 is the path on the line; by default the whole line
    # directory: group by the parent's first `depth` components below the first listed path's parent (the root
    # the listing started from), so `find /usr/lib/python3.11` groups by package, not all under /usr.
    depth: int = 1
    # by = "section": a line matching this starts a section (`ls -R`'s "dir:"), group 1 naming it.
    section: str | None = None
    # A table at the top names every group with its entries by extension ("src/ 40 (35 *.py, 5 *.txt)") instead
    # of one note at the end naming what each group left out.
    extensions: bool = False


class Columns(NamedTuple):
    """Tables such as `ls -l`: of the first `fields` whitespace-separated columns of lines matching `row`, those
    the same on every such line are named once and left out; the rows shown are then codeoid's (marked) lines."""

    row: str
    fields: int


class Tier(NamedTuple):
    """A class of lines the budget is spent on before the lines of later tiers (a diff's changed lines before
    its context lines); `label` says what was cut ("context lines")."""

    label: str
    patterns: tuple[str, ...]


class Budget(NamedTuple):
    """The size a rule aims for once its other operations are done; lines the rule or the diagnostics keep, the
    closing line and codeoid's own lines are never cut. Unset sizes come from the caller (`Thresholds`); 0 means
    no limit. The rest is spent tier by tier, shared fairly between items (files, failures) within a tier."""

    lines: int | None = None
    bytes: int | None = None
    tiers: tuple[Tier, ...] = ()
    rest: str = "budget"  # what lines matching no tier are called when cut ("budget": not spelled out)
    fair: bool = True  # share each tier between items (or listing groups); False: first lines first
    min_share: int = 1  # fewer lines than this for every item: show whole shares of the first items instead


class Failures(NamedTuple):
    """A test run's failure reports grouped by cause (see `failure_groups`): the first failure of each cause keeps
    a trimmed traceback, every later one its first lines and its reasons; one note per run of them says what was
    cut and where."""

    start: str  # a line matching starts one failure's report; group 1, if any, names the test
    begin: str | None = None  # reports are looked for only after a line matching this (a FAILURES banner)
    end: str | None = None  # a line matching ends the current report and belongs to none (a summary banner)
    head: int = 1  # first lines of every report kept (its test id)
    reason: tuple[str, ...] = ()  # lines saying why it failed (assertion, error message): kept, `reason_lines` each
    reason_lines: int = 6
    message: str | None = None  # the first line matching gives the cause's message (group 1, if any)
    last_message: bool = False  # the last one does (Python tracebacks end with their exception)
    # A frame's location line, group 1 the path and group 2 the line number. `frame` comes before the frame's
    # code (Python tracebacks, JS stacks, pytest --tb=short); `frame_after` after it (pytest's long tracebacks).
    frame: str | None = None
    frame_after: str | None = None
    frame_lines: int = 2  # a kept frame's code: lines after its `frame` line, or before its `frame_after` pointer
    pointer: tuple[str, ...] = ()  # lines marking the failing line of a kept frame's code (pytest `>`, jest `> 12 |`)
    library: tuple[str, ...] = ()  # frame paths that are not the project's code (site-packages, node_modules)
    innermost_first: bool = False  # stacks list the raising frame first (JS), not last (Python)
    captured: str | None = None  # starts a report's captured output, of which `captured_lines` are kept
    captured_lines: int = 10
    # Lines of traceback detail over all first-of-a-cause reports (at most the rule's budget lines); past it they
    # keep only reasons. Spent before the rule's `Budget`, which never cuts what this operation keeps.
    budget: int = 60
    # A line outside the reports naming one failing test (group 1) and its reason (group 2): pytest's short
    # summary `FAILED id - reason`. Of consecutive such lines, those whose reason an earlier one already gave are
    # cut and named (their ids) by one note per reason. Without a group 2, the reason is the next line's, if it
    # matches `listing_reason` (group 1, or all of it): vitest's `× test` over `→ reason`.
    listing: str | None = None
    listing_reason: str | None = None
    # Report starts on consecutive lines are one report naming several tests (vitest lists every test that
    # failed with one error above it); the first of a cause shows its first test and a note names the others.
    stacked: bool = False


class Codes(NamedTuple):
    """Linter and compiler diagnostics grouped by code: a table at the top names every code with its count and
    every location (`src/a.py:3,7 src/b.py:12`), then the first `keep` diagnostics of each code are shown whole;
    the others, with their `context` lines (a code frame, a help line), are cut and named by the table."""

    # A diagnostic's first line; named groups `path` and `line` (unless `file` or `at` gives them; with neither,
    # as in a log, the raw line numbers are the locations), `code` (else the `message`, its quoted parts and
    # numbers made generic, is the code) and `message`.
    line: str
    # A line naming the file the next diagnostics are in (eslint's and pyright's file headers): group 1.
    file: str | None = None
    # Or a line after the first naming its location (ruff's and rustc's ` --> src/a.py:3:1`): groups `path`, `line`.
    at: str | None = None
    # Lines that belong to the diagnostic above them (code frames, notes): they go where it goes.
    context: tuple[str, ...] = ()
    keep: int = 1  # diagnostics shown whole per code
    # Those first lines are never cut (a log's first error of each kind, among head and tail lines); otherwise
    # they are spent like other lines, after the table, by the budget.
    stay: bool = False
    # What the table calls one ("diagnostics", "errors", "warnings").
    label: str = "diagnostics"
    # The table's size: past it, the codes with most locations name only their files with counts.
    table_bytes: int = 3000


class Rule(NamedTuple):
    """One compression rule: when it applies, and the operations that turn raw output into compressed output."""

    name: str
    match: tuple[Match, ...]  # the rule applies when any of these does
    source: str = ""  # "file:line" of the [[rule]] table, for error messages and the savings ledger
    description: str = ""
    enabled: bool = True
    keep: tuple[str, ...] = ()
    diagnostics: bool = True  # also keep the engine's error/failure/traceback/warning patterns
    drop: tuple[str, ...] = ()
    dedupe: bool = True
    long_line: int | None = None
    # An output smaller than this passes whole, whatever the rule would cut (0: the engine's own minimum). A file
    # the model cats to read costs little whole, and its middle is what it wanted.
    min_bytes: int = 0
    collapse: tuple[Collapse, ...] = ()
    item: Item | None = None
    group: Group | None = None
    failures: Failures | None = None
    head: int | None = None
    tail: int = 0
    budget: Budget = Budget()
    columns: Columns | None = None
    codes: Codes | None = None

    def applies_to(self, invocation: Invocation) -> bool:
        return self.enabled and any(match.applies_to(invocation) for match in self.match)

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> Rule:
        """The typed rule from `rule_from_table`'s plain data (as cached)."""
        fields = dict(plain)
        fields["match"] = tuple(Match(**_match_fields(match)) for match in plain["match"])
        fields["collapse"] = tuple(Collapse(c["label"], tuple(c["patterns"]), c["keep"], tuple(c.get("through", ())),
                                            c.get("named"))
                                   for c in plain["collapse"])
        item = plain["item"]
        fields["item"] = Item(**{**item, "drop": tuple(item["drop"]), "tally": tuple(map(tuple, item["tally"])),
                                 "fields": tuple(map(tuple, item["fields"]))}) if item else None
        fields["group"] = Group(**plain["group"]) if plain["group"] is not None else None
        failures: dict[str, Any] | None = plain.get("failures")
        if failures is not None:
            failures = {key: tuple(value) if isinstance(value, list) else value for key, value in failures.items()}
        fields["failures"] = Failures(**failures) if failures is not None else None
        fields["columns"] = Columns(**plain["columns"]) if plain.get("columns") else None
        codes = plain.get("codes")
        fields["codes"] = Codes(**{**codes, "context": tuple(codes["context"])}) if codes else None
        budget = plain["budget"]
        fields["budget"] = Budget(budget["lines"], budget["bytes"],
                                  tuple(Tier(tier["label"], tuple(tier["patterns"])) for tier in budget["tiers"]),
                                  budget["rest"], budget["fair"], budget["min_share"])
        for key in ("keep", "drop"):
            fields[key] = tuple(plain[key])
        return cls(**fields)


def _match_fields(plain: dict[str, Any]) -> dict[str, Any]:
    return {key: value if key == "positional_max" else tuple(value) for key, value in plain.items()}


_RULE_KEYS = {
    "name", "description", "enabled", "match", "keep", "diagnostics", "drop", "dedupe", "long_line", "min_bytes",
    "collapse", "item", "group", "failures", "head", "tail", "budget", "columns", "codes",
}
_MATCH_KEYS = {"program", "subcommand", "args_any", "args_none", "options_with_value", "positional_max"}
_COLLAPSE_KEYS = {"label", "patterns", "keep", "through", "named"}
_ITEM_KEYS = {"start", "key", "end", "drop", "count", "head", "tail", "label", "summary", "tally", "index",
              "index_title", "index_dense", "fields", "digest"}
_GROUP_KEYS = {"by", "keep", "path", "depth", "section", "extensions"}
_BUDGET_KEYS = {"lines", "bytes", "tier", "rest", "fair", "min_share"}
_TIER_KEYS = {"label", "patterns"}
_FAILURES_KEYS = set(Failures._fields)


class _Checker:
    """Validates one [[rule]] table; every complaint names the key, and the loader adds file and line."""

    def __init__(self, table: Any) -> None:
        if not isinstance(table, dict):
            raise ValueError("each [[rule]] must be a table")
        self.table = table

    def strings(self, value: Any, key: str, *, patterns: bool = False) -> list[str]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise ValueError(f"{key} must be a string or a list of strings")
        if patterns:
            for item in items:
                self.pattern(item, key)
        return list(items)

    @staticmethod
    def pattern(value: Any, key: str) -> str:
        if not isinstance(value, str):
            raise ValueError(f"{key} must be a regular expression string")
        import re  # only when a rule file is checked (a cache rebuild)

        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"{key}: bad regular expression {value!r}: {error}") from None
        return value

    @staticmethod
    def count(value: Any, key: str, *, allow_none: bool = False) -> int | None:
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{key} must be a whole number, 0 or more")
        return value

    @staticmethod
    def flag(value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false")
        return value

    @staticmethod
    def table_of(value: Any, key: str, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ValueError(f"{key} must be a table")
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise ValueError(f"unknown key {key}.{unknown[0]} (expected one of: {', '.join(sorted(allowed))})")
        return value


def rule_from_table(table: Any) -> dict[str, Any]:
    """Check one [[rule]] table and return its plain form; raises ValueError naming the bad key."""
    check = _Checker(table)
    unknown = sorted(set(table) - _RULE_KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (expected one of: {', '.join(sorted(_RULE_KEYS))})")
    name = table.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("every rule needs a name")
    enabled = check.flag(table.get("enabled", True), "enabled")
    if "match" not in table:
        if enabled:
            raise ValueError(f"rule {name!r} needs a [rule.match] table")
        return _disabled(name)
    plain_match = [_match(check, match) for match in
                   (table["match"] if isinstance(table["match"], list) else [table["match"]])]
    return {
        "name": name,
        "description": table.get("description", "") if isinstance(table.get("description", ""), str) else "",
        "enabled": enabled,
        "match": plain_match,
        "keep": check.strings(table.get("keep", []), "keep", patterns=True),
        "diagnostics": check.flag(table.get("diagnostics", True), "diagnostics"),
        "drop": check.strings(table.get("drop", []), "drop", patterns=True),
        "dedupe": check.flag(table.get("dedupe", True), "dedupe"),
        "long_line": check.count(table.get("long_line"), "long_line", allow_none=True),
        "min_bytes": check.count(table.get("min_bytes", 0), "min_bytes"),
        "collapse": [_collapse(check, entry, index) for index, entry in enumerate(_list_of(table, "collapse"))],
        "item": _item(check, table["item"]) if "item" in table else None,
        "group": _group(check, table["group"]) if "group" in table else None,
        "failures": _failures(check, table["failures"]) if "failures" in table else None,
        "head": check.count(table.get("head"), "head", allow_none=True),
        "tail": check.count(table.get("tail", 0), "tail"),
        "budget": _budget(check, table.get("budget", {})),
        "columns": _columns(check, table["columns"]) if "columns" in table else None,
        "codes": _codes(check, table["codes"]) if "codes" in table else None,
    }


def _match(check: _Checker, value: Any) -> dict[str, Any]:
    match = check.table_of(value, "match", _MATCH_KEYS)
    if "program" not in match:
        raise ValueError("match.program is required")
    return {key: check.count(entry, f"match.{key}") if key == "positional_max" else
            check.strings(entry, f"match.{key}") for key, entry in match.items()}


def _disabled(name: str) -> dict[str, Any]:
    """A rule that only switches off the rule of the same name from a lower layer."""
    return {"name": name, "description": "", "enabled": False, "match": [], "keep": [],
            "diagnostics": True, "drop": [], "dedupe": True, "long_line": None, "min_bytes": 0, "collapse": [],
            "item": None, "group": None, "failures": None, "head": None, "tail": 0, "budget": _budget(_Checker({}), {}),
            "columns": None, "codes": None}


def _list_of(table: dict[str, Any], key: str) -> list[Any]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"{key} must be an array of tables ([[rule.{key}]])")
    return value


def _collapse(check: _Checker, entry: Any, index: int) -> dict[str, Any]:
    where = f"collapse[{index}]"
    entry = check.table_of(entry, where, _COLLAPSE_KEYS)
    if "patterns" not in entry or "label" not in entry:
        raise ValueError(f"{where} needs a label and patterns")
    if not isinstance(entry["label"], str):
        raise ValueError(f"{where}.label must be a string")
    return {
        "label": entry["label"],
        "patterns": check.strings(entry["patterns"], f"{where}.patterns", patterns=True),
        "keep": check.count(entry.get("keep", 0), f"{where}.keep"),
        "through": check.strings(entry.get("through", []), f"{where}.through", patterns=True),
        "named": check.pattern(entry["named"], f"{where}.named") if "named" in entry else None,
    }


def _item(check: _Checker, value: Any) -> dict[str, Any]:
    item = check.table_of(value, "item", _ITEM_KEYS)
    if ("start" in item) == ("key" in item):
        raise ValueError("item needs exactly one of item.start and item.key")
    label = item.get("label", "lines")
    if not isinstance(label, str):
        raise ValueError("item.label must be a string")
    return {
        "start": check.pattern(item["start"], "item.start") if "start" in item else None,
        "key": check.pattern(item["key"], "item.key") if "key" in item else None,
        "end": check.pattern(item["end"], "item.end") if "end" in item else None,
        "drop": check.strings(item.get("drop", []), "item.drop", patterns=True),
        "count_pattern": check.pattern(item["count"], "item.count") if "count" in item else None,
        "head": check.count(item.get("head", 20), "item.head"),
        "tail": check.count(item.get("tail", 0), "item.tail"),
        "label": label,
        "summary": check.flag(item.get("summary", True), "item.summary"),
        "tally": _named_patterns(check, item.get("tally", {}), "item.tally"),
        "index_entry": _template(item.get("index"), "item.index"),
        "index_title": _template(item.get("index_title"), "item.index_title"),
        "index_dense": _template(item.get("index_dense"), "item.index_dense"),
        "fields": _named_patterns(check, item.get("fields", {}), "item.fields"),
        "digest": _template(item.get("digest"), "item.digest"),
    }


def _named_patterns(check: _Checker, value: Any, key: str) -> list[list[str]]:
    """`{ added = '^\\+', removed = '^-' }` as [[name, pattern], ...], in the file's order."""
    table = check.table_of(value, key, set(value) if isinstance(value, dict) else set())
    for name in table:
        if not name.isidentifier():
            raise ValueError(f"{key}.{name}: names are letters, digits and underscores")
    return [[name, check.pattern(pattern, f"{key}.{name}")] for name, pattern in table.items()]


def _template(value: Any, key: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} must be a string such as \"{{name}}: {{hits}} hits\"")
    return value


def _columns(check: _Checker, value: Any) -> dict[str, Any]:
    columns = check.table_of(value, "columns", {"row", "fields"})
    if "row" not in columns or "fields" not in columns:
        raise ValueError("columns needs row (a pattern) and fields (how many leading columns)")
    return {"row": check.pattern(columns["row"], "columns.row"), "fields": check.count(columns["fields"],
                                                                                       "columns.fields")}


def _codes(check: _Checker, value: Any) -> dict[str, Any]:
    codes = check.table_of(value, "codes", set(Codes._fields))
    if "line" not in codes:
        raise ValueError("codes.line (the pattern of a diagnostic's first line) is required")
    line = check.pattern(codes["line"], "codes.line")
    import re

    names = set(re.compile(line).groupindex)
    at = check.pattern(codes["at"], "codes.at") if "at" in codes else None
    if at is not None and not {"path", "line"} <= set(re.compile(at).groupindex):
        raise ValueError("codes.at needs the named groups (?P<path>...) and (?P<line>...)")
    if at is None and "line" in names and "path" not in names and "file" not in codes:
        raise ValueError("codes.line has a (?P<line>...) group but no (?P<path>...) (nor codes.file for the "
                         "path, nor codes.at for both); without either, the raw line numbers are the locations")
    if "code" not in names and "message" not in names:
        raise ValueError("codes.line needs a named group (?P<code>...) or (?P<message>...)")
    label = codes.get("label", "diagnostics")
    if not isinstance(label, str):
        raise ValueError("codes.label must be a string")
    return {
        "line": line,
        "file": check.pattern(codes["file"], "codes.file") if "file" in codes else None,
        "at": at,
        "context": check.strings(codes.get("context", []), "codes.context", patterns=True),
        "keep": check.count(codes.get("keep", 1), "codes.keep"),
        "stay": check.flag(codes.get("stay", False), "codes.stay"),
        "label": label,
        "table_bytes": check.count(codes.get("table_bytes", 3000), "codes.table_bytes"),
    }


def _budget(check: _Checker, value: Any) -> dict[str, Any]:
    budget = check.table_of(value, "budget", _BUDGET_KEYS)
    tiers = []
    for index, tier in enumerate(budget.get("tier", [])):
        where = f"budget.tier[{index}]"
        tier = check.table_of(tier, where, _TIER_KEYS)
        if not isinstance(tier.get("label"), str) or "patterns" not in tier:
            raise ValueError(f"{where} needs a label and patterns")
        tiers.append({"label": tier["label"],
                      "patterns": check.strings(tier["patterns"], f"{where}.patterns", patterns=True)})
    rest = budget.get("rest", "budget")
    if not isinstance(rest, str):
        raise ValueError("budget.rest must be a string")
    return {
        "lines": check.count(budget.get("lines"), "budget.lines", allow_none=True),
        "bytes": check.count(budget.get("bytes"), "budget.bytes", allow_none=True),
        "tiers": tiers,
        "rest": rest,
        "fair": check.flag(budget.get("fair", True), "budget.fair"),
        "min_share": check.count(budget.get("min_share", 1), "budget.min_share"),
    }


def _group(check: _Checker, value: Any) -> dict[str, Any]:
    group = check.table_of(value, "group", _GROUP_KEYS)
    if group.get("by") not in ("extension", "directory", "section"):
        raise ValueError('group.by must be "extension", "directory" or "section"')
    if (group["by"] == "section") != ("section" in group):
        raise ValueError('group.section (the pattern of a section\'s first line) goes with by = "section"')
    return {
        "by": group["by"],
        "keep": check.count(group.get("keep", 5), "group.keep"),
        "path": check.pattern(group["path"], "group.path") if "path" in group else None,
        "depth": check.count(group.get("depth", 1), "group.depth"),
        "section": check.pattern(group["section"], "group.section") if "section" in group else None,
        "extensions": check.flag(group.get("extensions", False), "group.extensions"),
    }


def _failures(check: _Checker, value: Any) -> dict[str, Any]:
    failures = check.table_of(value, "failures", _FAILURES_KEYS)
    if "start" not in failures:
        raise ValueError("failures.start is required")
    plain: dict[str, Any] = {}
    for key, default in Failures._field_defaults.items():
        given = failures.get(key, list(default) if isinstance(default, tuple) else default)
        where = f"failures.{key}"
        if key in ("reason", "pointer", "library"):
            plain[key] = check.strings(given, where, patterns=True)
        elif isinstance(default, bool):
            plain[key] = check.flag(given, where)
        elif isinstance(default, int):
            plain[key] = check.count(given, where)
        elif given is not None:
            plain[key] = check.pattern(given, where)
        else:
            plain[key] = None
    plain["start"] = check.pattern(failures["start"], "failures.start")
    for key in ("frame", "frame_after"):
        if plain[key] is not None and _group_count(plain[key]) < 2:
            raise ValueError(f"failures.{key} needs two groups: the path and the line number")
    if plain["listing"] is not None and _group_count(plain["listing"]) < (1 if plain["listing_reason"] else 2):
        raise ValueError("failures.listing needs two groups, the test id and its reason (or one, the test id, "
                         "with failures.listing_reason matching the line after it)")
    return plain


def _group_count(pattern: str) -> int:
    import re

    return re.compile(pattern).groups
