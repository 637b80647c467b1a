# ruff: noqa: E501
"""The scripted week of the `week` set: sixteen sessions over twelve simulated days of maintaining marshmallow.

`make_corpus.py` plays them through the real `claude` CLI against the scripted fake API, in a clone of marshmallow
with codeoid's hooks installed: every Bash command really runs in the clone (through codeoid's PreToolUse rewrite),
Read and Edit really read and change its files, and the hooks store what happened. A session is a dict:

- `key`: `sNN`, the prefix of its episode keys; `days_ago` and `hour`: when it happens, in days before the day the
  benchmark is prepared and hours after that day's UTC midnight;
- `before`: what teammates did before it, which no session sees happen (`plant`: a commit that changes a file,
  made as that teammate at the simulated time; `shell`: any commands, such as making a branch);
- `turns`: the prompts, each with `at` (minutes after the session's start), its `steps` (the model's tool calls,
  with `say` text that goes with the next call) and `answer` (the text that closes the turn).

Episode keys: `sNN.pT` is turn T's prompt, `sNN.aT` its closing answer, and a step's `key` names its tool call as
`sNN.<key>`. A command, an edit's old text or an answer may be a function of the run (`Ctx`): the hash a log just
printed, the conflict git just wrote, a timing the benchmark just measured.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PRIYA = ("Priya Nair", "priya.nair@example.org")
MARCO = ("Marco Bianchi", "marco.bianchi@example.org")


@dataclass
class Ctx:
    """What a step computed at reply time can see: the project and the results of the turn's calls so far."""

    project: Path
    results: dict[str, str]  # step key -> tool result text, this turn
    last: str  # the newest tool result's text

    def first_hash(self) -> str:
        found = re.search(r"\b([0-9a-f]{7,12})\b", self.last)
        assert found, self.last[:500]
        return found.group(1)

    def number(self, key: str, pattern: str) -> str:
        found = re.search(pattern, self.results[key])
        assert found, (pattern, self.results[key][-1500:])
        return found.group(1)


Text = str | Callable[[Ctx], str]


def bash(command: Text, key: str | None = None, expect: int = 0, description: str = "") -> dict[str, Any]:
    return {"tool": "Bash", "command": command, "key": key, "expect": expect, "description": description}


def read(path: str, key: str | None = None, offset: int | None = None, limit: int | None = None) -> dict[str, Any]:
    return {"tool": "Read", "path": path, "key": key, "offset": offset, "limit": limit}


def edit(path: str, old: Text, new: str, key: str | None = None) -> dict[str, Any]:
    return {"tool": "Edit", "path": path, "old": old, "new": new, "key": key}


def write(path: str, content: str, key: str | None = None) -> dict[str, Any]:
    return {"tool": "Write", "path": path, "content": content, "key": key}


def say(text: str) -> dict[str, Any]:
    """Assistant text sent with the next tool call, in the same message."""
    return {"say": text}


def plant(path: str, old: str, new: str, message: str, who: tuple[str, str], days_ago: int, hour: float
          ) -> dict[str, Any]:
    return {"do": "plant", "path": path, "old": old, "new": new, "message": message, "who": who,
            "days_ago": days_ago, "hour": hour}


def shell(command: str, who: tuple[str, str], days_ago: int, hour: float) -> dict[str, Any]:
    return {"do": "shell", "command": command, "who": who, "days_ago": days_ago, "hour": hour}


def turn(at: float, prompt: str, steps: list[dict[str, Any]], answer: Text) -> dict[str, Any]:
    return {"at": at, "prompt": prompt, "steps": steps, "answer": answer}


# -- what the teammates change ------------------------------------------------------------------------------------

CI_OLD = """  tests:
    name: ${{ matrix.name }}
    runs-on: ubuntu-latest"""
CI_NEW = """  tests:
    name: ${{ matrix.name }}
    runs-on: ubuntu-22.04"""
CI_MESSAGE = """CI: pin the test jobs to ubuntu-22.04

ubuntu-latest moved to 24.04 last week and setup-python has no 3.9 build for
it yet, which broke the py39 job on every pull request. Pin the test matrix to
ubuntu-22.04 until that lands; the other jobs can stay on ubuntu-latest."""

LENGTH_OLD = "        if self.max is not None and length > self.max:"
LENGTH_BAD = "        if self.max is not None and length >= self.max:"
LENGTH_MESSAGE = """Tighten Length bounds check

Use >= for the upper bound so Length reads the same way as the other
range checks in validate.py. Callers that pass max=None are not affected.
Found while reviewing the validators for the signup form work."""

DECIMAL_OLD = "            num = num.quantize(self.places, rounding=self.rounding)"
DECIMAL_BAD = "            num = num.quantize(self.places)"
DECIMAL_MESSAGE = """Simplify Decimal quantize call

The rounding argument duplicates what the decimal context already says,
so let quantize take it from the context.

Measured with performance/benchmark.py --object-count 200:
41.3 usec/dump before, 39.8 after."""

ISO_UTILS_ANCHOR = "def validate_unknown_parameter_value(obj: typing.Any) -> str:"
ISO_UTILS_NEW = '''_iso8601_duration_re = re.compile(
    r"P(?:(?P<weeks>\\d+(?:\\.\\d+)?)W)?(?:(?P<days>\\d+(?:\\.\\d+)?)D)?"
    r"(?:T(?:(?P<hours>\\d+(?:\\.\\d+)?)H)?(?:(?P<minutes>\\d+(?:\\.\\d+)?)M)?"
    r"(?:(?P<seconds>\\d+(?:\\.\\d+)?)S)?)?$"
)


def from_iso_duration(value: str) -> dt.timedelta:
    """Parse an ISO 8601 duration such as ``P1DT2H30M`` into a timedelta.

    Years and months are not supported: they have no fixed length.
    """
    match = _iso8601_duration_re.match(value)
    if not match or value.endswith(("P", "T")):
        raise ValueError("Not a valid ISO 8601 duration")
    parts = {k: float(v) for k, v in match.groupdict().items() if v is not None}
    return dt.timedelta(**parts)


def validate_unknown_parameter_value(obj: typing.Any) -> str:'''
ISO_FIELD_OLD = """    def _deserialize(self, value, attr, data, **kwargs):
        try:
            value = self.serialization_type(value)"""
ISO_FIELD_NEW = """    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, str) and value.startswith("P"):
            try:
                return utils.from_iso_duration(value)
            except ValueError as error:
                raise self.make_error("invalid") from error
        try:
            value = self.serialization_type(value)"""
ISO_TESTS_IMPORT_OLD = "import datetime as dt\nfrom collections import namedtuple\n"
ISO_TESTS_IMPORT_NEW = "import datetime as dt\nimport math\nfrom collections import namedtuple\n"
ISO_TESTS_ANCHOR = "# Regression test for https://github.com/marshmallow-code/marshmallow/issues/540\n"
ISO_TESTS_NEW = '''@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("P1D", dt.timedelta(days=1)),
        ("PT2H30M", dt.timedelta(hours=2, minutes=30)),
        ("P1W2DT3H4M5S", dt.timedelta(weeks=1, days=2, hours=3, minutes=4, seconds=5)),
        ("PT0.5S", dt.timedelta(milliseconds=500)),
    ],
)
def test_from_iso_duration(value, expected):
    assert utils.from_iso_duration(value) == expected


@pytest.mark.parametrize("value", ["P", "PT", "P1M", "P1Y2D", "1D", "PT1H2"])
def test_from_iso_duration_invalid(value):
    with pytest.raises(ValueError, match="ISO 8601 duration"):
        utils.from_iso_duration(value)


# Regression test for https://github.com/marshmallow-code/marshmallow/issues/540
'''
ISO_DESER_ANCHOR = "    def test_timedelta_field_deserialization(self):\n"
ISO_DESER_NEW = '''    def test_timedelta_field_deserialization_iso_duration(self):
        field = fields.TimeDelta()
        assert field.deserialize("P1DT2H") == dt.timedelta(days=1, hours=2)
        with pytest.raises(ValidationError, match="Not a valid period of time."):
            field.deserialize("P1M")

    def test_timedelta_field_deserialization(self):
'''
ISO_MESSAGE = """Accept ISO 8601 durations in TimeDelta

TimeDelta now parses strings such as "P1DT2H30M" when they start with "P";
weeks, days, hours, minutes and seconds are supported, fractions too.
Years and months are rejected on purpose: P1M has no fixed length, so it
cannot become a timedelta. Numeric strings such as "42" keep working."""
CHANGELOG_HEAD = "Changelog\n---------\n\n"
ISO_CHANGELOG = """3.24.0 (unreleased)
*******************

Features:

- ``fields.TimeDelta`` accepts ISO 8601 duration strings such as ``"P1DT2H"``
  (weeks, days, hours, minutes and seconds).

"""
ISO_CHANGELOG_MESSAGE = "Add changelog entry for ISO 8601 durations"

PREFIX_OLD = '                    prefix = field_name + "."'
PREFIX_BAD = '                    prefix = attr_name + "."'
PREFIX_MESSAGE = """Use attribute names for nested partial paths

partial= paths should name attributes, the way only= and exclude= do,
rather than the keys of the input data."""

MERGE_OLD = """            errors = dict(errors1)
            for key, val in errors2.items():
                if key in errors:
                    errors[key] = merge_errors(errors[key], val)
                else:
                    errors[key] = val
            return errors"""
MERGE_BAD = "            return {**errors1, **errors2}"
MERGE_MESSAGE = """Speed up merge_errors for two dicts

Replace the per-key loop with a single dict merge. merge_errors shows up
at 18% of load time in the nested many=True profile from the reporting job."""

TZ_OLD = """        offset = 60 * int(tzinfo[1:3]) + offset_mins
        if tzinfo[0] == "-":
            offset = -offset
"""
TZ_BAD = """        offset = 60 * int(tzinfo[1:3]) + offset_mins
"""
TZ_MESSAGE = """Drop redundant sign handling in from_iso_datetime

get_fixed_timezone already derives the sign from the offset."""

UNKNOWN_OLD = """                fields = {
                    field_obj.data_key if field_obj.data_key is not None else field_name
                    for field_name, field_obj in self.load_fields.items()
                }"""
UNKNOWN_BAD = "                fields = set(self.load_fields)"
UNKNOWN_MESSAGE = """Simplify unknown-field detection

load_fields is already keyed by name, so there is no need to rebuild a set
of keys on every load call."""

# -- what the sessions write --------------------------------------------------------------------------------------

RELEASE_1 = """3.23.1 (2026-11-27)
*******************

Bug fixes:

- ``validate.Length`` accepts values whose length equals ``max`` again.
- ``fields.Decimal`` honours its ``rounding`` argument again when quantizing.

"""
RELEASE_2_OLD = """3.24.0 (unreleased)
*******************

Features:

- ``fields.TimeDelta`` accepts ISO 8601 duration strings such as ``"P1DT2H"``
  (weeks, days, hours, minutes and seconds).
"""
RELEASE_2_NEW = """3.24.0 (2026-12-03)
*******************

Features:

- ``fields.TimeDelta`` accepts ISO 8601 duration strings such as ``"P1DT2H"``
  (weeks, days, hours, minutes and seconds).

Bug fixes:

- Error messages for the same field are merged instead of overwritten.
- ``utils.from_iso_datetime`` keeps the sign of negative UTC offsets.
- Unknown-field detection honours ``data_key`` again.
"""
RESOLVED_CHANGELOG = ISO_CHANGELOG + RELEASE_1


def conflict_block(ctx: Ctx) -> str:
    """The conflicted region git wrote into CHANGELOG.rst, read off the file as the model read it."""
    text = (ctx.project / "CHANGELOG.rst").read_text()
    start, end = text.index("<<<<<<< "), text.index(">>>>>>> ")
    end = text.index("\n", end) + 1
    return text[start:end]


REPRO = '''from marshmallow import Schema, fields


class AddressSchema(Schema):
    street = fields.Str(required=True)
    city = fields.Str(required=True)


class CustomerSchema(Schema):
    name = fields.Str(required=True)
    address = fields.Nested(AddressSchema, data_key="billingAddress")


payload = {"name": "Ada", "billingAddress": {"street": "1 Main St"}}
print(CustomerSchema().load(payload, partial=("billingAddress.city",)))
'''
ONLY_BENCH = '''import sys
import timeit

sys.path.insert(0, "performance")
from benchmark import Author, Quote, QuoteSchema  # noqa: E402
import datetime as dt  # noqa: E402

rows = [
    Quote(i, Author(i, "Foo", "Bar", 42, 66, "123 Fake St"), "Hello World",
          dt.datetime(2019, 7, 4, tzinfo=dt.timezone.utc), "The World", 34, 3, 70)
    for i in range(10_000)
]
full = QuoteSchema(many=True)
narrow = QuoteSchema(many=True, only=("id", "content", "author.first", "author.last"))
for name, schema in (("all fields", full), ("id, content, author names", narrow)):
    best = min(timeit.repeat(lambda: schema.dump(rows), number=1, repeat=3))
    print(f"{name}: {best * 1000:.0f} ms for 10,000 rows")
'''
PARTIAL_TEST_ANCHOR = "    def test_nested_partial_default(self):\n"
PARTIAL_TEST_NEW = '''    def test_nested_partial_tuple_with_data_key(self):
        class SchemaA(Schema):
            x = fields.Integer(required=True)
            y = fields.Integer(required=True)

        class SchemaB(Schema):
            z = fields.Nested(SchemaA, data_key="zee")

        # Partial paths name the keys of the input, as the data does.
        result = SchemaB().load({"zee": {"y": 42}}, partial=("zee.x",))
        assert result["z"]["y"] == 42

    def test_nested_partial_default(self):
'''


PASSED = r"(\d+) passed"
SECONDS = r"passed in ([0-9.]+)s"
RESULT = r"Result: ([0-9.]+)"


def _ms(ctx: Ctx, label: str) -> str:
    return ctx.number("only_bench", rf"{re.escape(label)}: (\d+) ms")


SESSIONS: list[dict[str, Any]] = [
    {"key": "s01", "days_ago": 11, "hour": 9.3,
     "before": [plant(".github/workflows/build-release.yml", CI_OLD, CI_NEW, CI_MESSAGE, PRIYA, 12, 17.5)],
     "turns": [
         turn(0, "I'm taking over day-to-day maintenance of our marshmallow fork from Priya this sprint. Before I touch "
                 "anything, give me a map of the package: what lives where, and what path a value takes when a schema "
                 "dumps an object.",
              [say("I'll start with the layout of the source tree."),
               bash("ls src/marshmallow tests docs", "ls"),
               read("src/marshmallow/__init__.py", "read_init"),
               bash('grep -n "^class \\|    def " src/marshmallow/fields.py', "grep_fields"),
               read("src/marshmallow/schema.py", "read_dump", offset=505, limit=50),
               read("src/marshmallow/fields.py", "read_serialize", offset=318, limit=30)],
              "Here's the map.\n\n"
              "- `schema.py`: `Schema`, its metaclass (which collects the declared fields) and `SchemaOpts` for the "
              "`class Meta` options.\n"
              "- `fields.py`: the field classes, all subclasses of `Field`: `String`, `Integer`, `Decimal`, `DateTime`, "
              "`TimeDelta`, `Nested`, `List`, `Dict`, `Method`, `Function` and so on.\n"
              "- `validate.py`: validators such as `Length`, `Range`, `Email`, `OneOf`.\n"
              "- `decorators.py`: the `@pre_load` / `@post_dump` / `@validates` hooks; `error_store.py` collects "
              "error messages; `class_registry.py` lets `Nested` name a schema by string; `utils.py` has the ISO date "
              "parsing and `get_value`.\n\n"
              "On dump, `Schema.dump` runs any pre-dump hooks, then `Schema._serialize` walks `dump_fields` and calls "
              "each field's `serialize(attr_name, obj, accessor=self.get_attribute)`. `Field.serialize` fetches the "
              "attribute (dotted paths and dict keys work), substitutes `dump_default` when it is missing, and hands "
              "the value to the subclass's `_serialize`, which does the actual conversion. The result is keyed by the "
              "field's `data_key` when it has one, and post-dump hooks run last. Loading is the mirror image with "
              "`deserialize` / `_deserialize`, plus validation and the handling of keys no field claims."),
         turn(18, "Does the suite pass on a clean checkout? And roughly how long does a full run take on this box?",
              [bash("python -m pytest", "suite")],
              lambda ctx: (
                  f"Clean checkout, clean run: all {ctx.number('suite', PASSED)} tests passed in about "
                  f"{round(float(ctx.number('suite', SECONDS)))} seconds, so running everything before "
                  "each commit costs nothing. The output is one line per test because pyproject.toml sets "
                  "`addopts = \"-v --tb=short\"` for pytest.")),
         turn(41, "What's been happening in the repo lately? Anything from Priya I should know about?",
              [bash("git log -12", "log")],
              "Mostly release housekeeping. 3.23.0 went out in October (Python 3.13 officially supported, 3.8 "
              "dropped), followed by dependabot bumps of the documentation toolchain (Sphinx, sphinx-issues, "
              "autodocsumm) and an update of the sponsor link in the README. Priya's one commit on top of that "
              "touches only the CI workflow: it pins the runner image of the test matrix. The library code itself "
              "hasn't changed since the release."),
     ]},
    {"key": "s02", "days_ago": 11, "hour": 14.5, "before": [],
     "turns": [
         turn(0, "Quick sanity check of my environment before I start changing things: which Python is this, what's "
                 "installed in the venv, and is the linter happy with the tree?",
              [bash("which python && python --version", "python"),
               bash("pip list", "pip_list"),
               bash("ruff check --no-fix src tests", "ruff")],
              "You're on CPython 3.11.7 from the project's virtualenv. Besides marshmallow itself (installed "
              "editable from this checkout, so your edits take effect without reinstalling) it holds the test "
              "dependencies, pytest 9.2.0 and simplejson 4.3.0, plus ruff 0.6.9, the version the pre-commit config pins. The lint run over src and tests "
              "came back clean. I passed `--no-fix` because the repository's ruff settings turn automatic fixing on, "
              "and I didn't want it rewriting files behind your back."),
         turn(12, "Is there a contributor guide? How do they want the dev environment set up and the tests run?",
              [bash("cat CONTRIBUTING.rst", "contributing")],
              "Yes, CONTRIBUTING.rst. Setup is a fork and clone, a virtualenv, `pip install -e '.[dev]'` (which pulls "
              "in the test extra, tox and pre-commit), then `pre-commit install` so formatting and linting run on "
              "staged files at commit time. For tests: `pytest` for a quick run against your current interpreter, "
              "and `tox` to run the suite on every supported Python plus the lint and docs environments; `tox -e docs` "
              "builds the documentation. We already have everything needed for plain pytest runs here."),
     ]},
    {"key": "s03", "days_ago": 10, "hour": 9.65,
     "before": [plant("src/marshmallow/validate.py", LENGTH_OLD, LENGTH_BAD, LENGTH_MESSAGE, PRIYA, 11, 18.1)],
     "turns": [
         turn(0, "Support ticket from the accounts team: their signup form rejects a username that is exactly 20 "
                 "characters long, and the field is declared with max=20. Can you figure out whether that's on our side?",
              [bash("python -m pytest -q tests/test_validate.py", "fail", expect=1),
               bash("git log -3 --format='%h %an %ad %s' --date=short -- src/marshmallow/validate.py", "log"),
               bash(lambda ctx: f"git show {ctx.first_hash()}", "show"),
               read("src/marshmallow/validate.py", "read", offset=400, limit=25),
               edit("src/marshmallow/validate.py", LENGTH_BAD, LENGTH_OLD, "fix"),
               bash("python -m pytest -q tests/test_validate.py", "pass")],
              "It's ours. Priya's commit from last night changed the upper-bound comparison in `Length.__call__` "
              "from `>` to `>=`, which makes `max` exclusive: a value whose length equals the limit now raises. The "
              "validator tests caught it too (`test_length_min` and `test_length_max`, e.g. `Length(1, 3)(\"foo\")`). "
              "I restored the strict comparison and the validate tests are green again. Nothing is committed yet."),
         turn(14, "Good catch. Commit it, and mention the accounts team's ticket ACC-2291 in the message.",
              [bash('git commit -am "Fix Length rejecting values exactly at max" -m "Regression from the bounds '
                    'cleanup: max became exclusive. Reported by the accounts team in ACC-2291."', "commit")],
              "Committed on dev as \"Fix Length rejecting values exactly at max\"; the body names the regression and "
              "the ticket."),
     ]},
    {"key": "s04", "days_ago": 10, "hour": 15.2, "before": [],
     "turns": [
         turn(0, "Somebody from billing pinged me: loading their webhook payloads blows up with 'Unknown field.' for "
                 "keys they don't care about. Is that a marshmallow bug, and what should they do?",
              [bash('grep -rn "Unknown field" src docs', "grep"),
               read("docs/quickstart.rst", "read_docs", offset=392, limit=42)],
              "Not a bug, it's the default policy. Since 3.0 a schema refuses input keys that no field claims: the "
              "`unknown` option defaults to RAISE, and each stray key is reported with the schema's \"unknown\" error "
              "message. They have three ways to relax it: `unknown = EXCLUDE` in the schema's `class Meta` drops the "
              "extra keys silently, `INCLUDE` passes them through without validation, and `unknown=` on a single "
              "`load()` call overrides whatever the class says. For webhook payloads from a third party that grow "
              "new keys over time, EXCLUDE in Meta is the usual choice."),
     ]},
    {"key": "s05", "days_ago": 9, "hour": 10.1,
     "before": [plant("src/marshmallow/fields.py", DECIMAL_OLD, DECIMAL_BAD, DECIMAL_MESSAGE, PRIYA, 10, 18.7)],
     "turns": [
         turn(0, "The invoicing people say totals are a cent off on some invoices since they moved to our dev build. "
                 "They use a Decimal field with two places and ROUND_UP. Can you dig into it?",
              [say("I'll run the whole suite first to see whether anything already catches it."),
               bash("python -m pytest", "suite_fail", expect=1),
               bash("git log -S'rounding=self.rounding' --oneline", "pickaxe"),
               bash(lambda ctx: f"git show --format='%h %an %ad%n%s' --date=short {ctx.first_hash()}", "show"),
               read("src/marshmallow/fields.py", "read", offset=1095, limit=12),
               edit("src/marshmallow/fields.py", DECIMAL_BAD, DECIMAL_OLD, "fix"),
               bash("python -m pytest -q tests/test_serialization.py tests/test_deserialization.py", "pass"),
               bash('git commit -am "Restore rounding argument in Decimal quantize" -m "Without it every Decimal '
                    'field rounded with the context default (ROUND_HALF_EVEN) whatever it was given."', "commit")],
              "Found it, fixed and committed. `Decimal._format_num` no longer passed `rounding=self.rounding` to "
              "`quantize` (Priya's \"simplify\" commit from yesterday evening), so every Decimal field rounded with the "
              "thread's context default, ROUND_HALF_EVEN, whatever it was configured with: with places=2 and ROUND_UP "
              "an amount like 12.341 became 12.34 instead of 12.35. The full run showed it as three failures, one "
              "rounding test in deserialization and two Decimal tests in serialization. The argument is back, both "
              "test modules pass, and the commit says why."),
         turn(25, "While we're at it: would it make sense to let apps set the default rounding mode globally instead "
                  "of per field?",
              [bash('grep -rn "getcontext\\|rounding" src/marshmallow', "grep")],
              "I'd rather not. When a field gets no `rounding`, `quantize` already falls back to the current thread's "
              "decimal context, so an app that wants ROUND_HALF_UP everywhere can set `decimal.getcontext().rounding` "
              "once at startup, or wrap a load in `decimal.localcontext()`. A library-level switch would be a second "
              "source of truth that can silently disagree with the context, and it would leak between unrelated "
              "schemas in the same process. Invoicing should keep passing `rounding=` on their money fields "
              "explicitly; that's the one setting that can't be overridden by accident."),
     ]},
    {"key": "s06", "days_ago": 9, "hour": 16.3, "before": [],
     "turns": [
         turn(0, "The nightly reporting export dumps around 10k rows and the ops folks think serialization is the slow "
                 "part. How fast is dumping, actually?",
              [say("There is a benchmark script in the repo; let me see what it measures before running it."),
               bash("cat performance/benchmark.py", "cat_bench"),
               bash("python performance/benchmark.py --iterations=100 --repeat=3", "bench"),
               bash("python performance/benchmark.py --object-count 10000 --iterations 1 --repeat 3", "bench_10k")],
              lambda ctx: (
                  "Dumping isn't free, but it's unlikely to be what makes the export slow. The bundled benchmark dumps "
                  "quote objects that each carry a nested author, a datetime and a handful of numbers: with 100 "
                  f"iterations of 20 objects it came out at {ctx.number('bench', RESULT)} microseconds per "
                  f"object, and with 10,000 objects in one call at {ctx.number('bench_10k', RESULT)}, "
                  "so the cost per row stays flat as the list grows. For their 10k rows that is about "
                  f"{10_000 * float(ctx.number('bench_10k', RESULT)) / 1e6:.1f} s of serialization. If the export "
                  "takes minutes, the time is going into the queries or the file writing, not into marshmallow.")),
         turn(20, "Would limiting the dump to the columns they actually use help much?",
              [write("/tmp/only_bench.py", ONLY_BENCH, "write_bench"),
               bash("python /tmp/only_bench.py", "only_bench")],
              lambda ctx: (
                  f"Yes, roughly in proportion to what you drop: 10,000 rows took {_ms(ctx, 'all fields')} ms with "
                  f"every field and {_ms(ctx, 'id, content, author names')} ms with only the id, the content and the "
                  "author's first and last name (`only=` with dotted paths into the nested author). The nested "
                  "schema is the expensive part: every row runs a second schema plus its post-dump hook. So trimming "
                  "the author down is the cheapest win if the report allows it; but since even the full dump is a "
                  "matter of a second or less, I'd profile the export before anyone rewrites anything.")),
     ]},
    {"key": "s07", "days_ago": 8, "hour": 11.0,
     "before": [
         shell("git checkout -q -b priya/timedelta-iso", PRIYA, 8, 8.0),
         plant("src/marshmallow/utils.py", ISO_UTILS_ANCHOR, ISO_UTILS_NEW, "", PRIYA, 8, 8.1),
         plant("src/marshmallow/fields.py", ISO_FIELD_OLD, ISO_FIELD_NEW, "", PRIYA, 8, 8.1),
         plant("tests/test_utils.py", ISO_TESTS_IMPORT_OLD, ISO_TESTS_IMPORT_NEW, "", PRIYA, 8, 8.1),
         plant("tests/test_utils.py", ISO_TESTS_ANCHOR, ISO_TESTS_NEW, "", PRIYA, 8, 8.1),
         plant("tests/test_deserialization.py", ISO_DESER_ANCHOR, ISO_DESER_NEW, ISO_MESSAGE, PRIYA, 8, 8.15),
         plant("CHANGELOG.rst", CHANGELOG_HEAD, CHANGELOG_HEAD + ISO_CHANGELOG, ISO_CHANGELOG_MESSAGE, PRIYA, 8, 8.6),
         shell("git checkout -q dev", PRIYA, 8, 8.7),
     ],
     "turns": [
         turn(0, "Priya pushed a branch before switching teams, priya/timedelta-iso, and asked me to review it. Can you "
                 "go through it with me?",
              [bash("git log -8 priya/timedelta-iso", "log"),
               bash("git diff dev...priya/timedelta-iso", "diff"),
               bash("git checkout -q priya/timedelta-iso && python -m pytest -q tests/test_utils.py "
                    "tests/test_deserialization.py -k 'duration or timedelta'; git checkout -q dev", "branch_tests")],
              "Review of priya/timedelta-iso (two commits: the feature, then a changelog entry):\n\n"
              "- The approach is sound. `TimeDelta._deserialize` only tries the new `utils.from_iso_duration` when "
              "the input is a string that starts with \"P\", so numeric strings like \"42\" take the old path, and a "
              "malformed duration surfaces as the field's usual \"Not a valid period of time.\" error.\n"
              "- The pattern covers weeks, days and the time part, with fractions; calendar units are refused.\n"
              "- Her tests pass on the branch (the duration and timedelta subset of test_utils and "
              "test_deserialization).\n"
              "- Nits: every component goes through float, so sub-second values pick up float rounding, and a "
              "leading sign (\"-P1D\") isn't accepted.\n"
              "- The changelog entry opens a new 3.24.0 section at the top, which will collide with whatever we "
              "write for a patch release.\n\n"
              "My suggestion: approve, but merge after we cut 3.23.1, so the patch release carries only the two "
              "regression fixes and the feature waits for 3.24.0."),
         turn(15, "Agreed. Should we also accept months, say as 30 days, so people stop hitting that error?",
              [],
              "I'd keep them out. A month is 28 to 31 days and a year 365 or 366, so any fixed conversion is wrong "
              "for part of the calendar, and a timedelta has no way to say \"one calendar month\". Quietly turning "
              "P1M into 30 days would produce dates that drift by a day or two with no error anywhere. Callers who "
              "really mean 30 days can send P30D; callers who mean calendar months need a date-aware type, not this "
              "field."),
     ]},
    {"key": "s08", "days_ago": 7, "hour": 9.5, "before": [],
     "turns": [
         turn(0, "Let's cut a patch release with the two fixes from this week, 3.23.1. Get the changelog and version "
                 "ready and make sure everything passes.",
              [bash("git log 3.23.0..HEAD", "log"),
               read("CHANGELOG.rst", "read_changelog", limit=20),
               edit("CHANGELOG.rst", CHANGELOG_HEAD, CHANGELOG_HEAD + RELEASE_1, "changelog"),
               read("pyproject.toml", "read_pyproject", limit=5),
               edit("pyproject.toml", 'version = "3.23.0"', 'version = "3.23.1"', "version"),
               bash("python -m pytest", "suite")],
              lambda ctx: (
                  "Ready to release: CHANGELOG.rst has a 3.23.1 section dated today with the `Length` and `Decimal` "
                  "fixes under \"Bug fixes\", pyproject.toml says 3.23.1, and the full suite is green "
                  f"({ctx.number('suite', PASSED)} passed). Since the 3.23.0 tag the log holds, besides the two "
                  "regressions and their fixes, only upstream's October docs and dependency bumps and Priya's CI pin, "
                  "none of which belongs in user-facing notes. Nothing is committed yet; say the word and I'll commit "
                  "and tag.")),
         turn(9, "Go ahead: commit and tag it.",
              [bash('git commit -am "Bump version to 3.23.1 and update changelog"', "commit"),
               bash('git tag -a 3.23.1 -m "marshmallow 3.23.1"', "tag"),
               bash("git log --oneline --decorate -4", "log_after")],
              "Done: the release commit is on dev and the annotated tag 3.23.1 points at it. Publishing is still a "
              "manual step (the workflow's build job runs when a tag is pushed), so nothing has left this machine "
              "yet."),
     ]},
    {"key": "s09", "days_ago": 4, "hour": 10.25, "before": [],
     "turns": [
         turn(0, "The patch release is out, so let's bring in Priya's duration branch now.",
              [bash("git merge --no-ff priya/timedelta-iso", "merge", expect=1),
               read("CHANGELOG.rst", "read_conflict", limit=40),
               edit("CHANGELOG.rst", conflict_block, RESOLVED_CHANGELOG, "resolve"),
               bash("git add CHANGELOG.rst && git commit --no-edit", "merge_commit"),
               bash("python -m pytest", "suite"),
               bash("git log --graph --oneline -6", "graph")],
              lambda ctx: (
                  "Merged. Git stopped on a single conflict, in CHANGELOG.rst: both sides had opened a section at the "
                  "top of the file, ours for 3.23.1 and Priya's unreleased 3.24.0. I kept both, the unreleased "
                  "section first, and concluded with the default merge message. After the merge the whole suite is "
                  f"green at {ctx.number('suite', PASSED)} tests, her new duration cases included.")),
     ]},
    {"key": "s10", "days_ago": 3, "hour": 9.5,
     "before": [plant("src/marshmallow/schema.py", PREFIX_OLD, PREFIX_BAD, PREFIX_MESSAGE, MARCO, 4, 17.3)],
     "turns": [
         turn(0, "Before I push the merge, run the linters over everything.",
              [bash("ruff check --no-fix src tests", "ruff", expect=1),
               read("tests/test_utils.py", "read", limit=12),
               edit("tests/test_utils.py", "import datetime as dt\nimport math\n", "import datetime as dt\n", "fix"),
               bash("ruff check --no-fix src tests", "ruff_clean"),
               bash('git commit -am "Remove unused import from the duration tests"', "commit")],
              "One finding, and it came in with the branch: an import of the math module at the top of "
              "tests/test_utils.py that nothing uses (F401). I deleted the line, the second lint run is clean, and "
              "the cleanup is committed on its own so the merge commit stays as Priya's branch left it."),
     ]},
    {"key": "s11", "days_ago": 3, "hour": 14.0,
     "before": [plant("src/marshmallow/error_store.py", MERGE_OLD, MERGE_BAD, MERGE_MESSAGE, MARCO, 3, 12.2)],
     "turns": [
         turn(0, "The mobile team says a signup with a malformed phone number used to come back with two messages "
                 "for the phone field, the format error and our 'already registered' check, and now they only get "
                 "one of them. That started with today's build.",
              [bash("python -m pytest -q tests/test_error_store.py tests/test_decorators.py tests/test_schema.py",
                    "fail", expect=1),
               bash("git log -3 --format='%h %an %ad %s' --date=short -- src/marshmallow/error_store.py", "log"),
               bash(lambda ctx: f"git show {ctx.first_hash()}", "show"),
               read("src/marshmallow/error_store.py", "read", offset=28),
               edit("src/marshmallow/error_store.py", MERGE_BAD, MERGE_OLD, "fix"),
               bash("python -m pytest -q", "suite_pass"),
               bash('git commit -am "Merge error dicts deeply again" -m "A shallow dict merge dropped the first '
                    'message when two validators reported the same field."', "commit")],
              "Marco's speed-up from around noon replaced the recursive merge in `error_store.merge_errors` with a "
              "plain `{**errors1, **errors2}`. That's fine while the two dicts have different keys, but when both "
              "carry an entry for the same field the later one simply replaces the earlier, so a field validator's "
              "message and a schema validator's message for `phone` can no longer coexist. Seven tests flagged it, "
              "among them `test_merging_dict_and_dict` and `test_multiple_validators_merge_dict_errors`. I restored "
              "the per-key recursive merge; the complete suite passes again and the fix is committed. If the "
              "profile he quotes matters, the loop already skips the recursion for keys that are new, so there is "
              "little to win there anyway."),
     ]},
    {"key": "s12", "days_ago": 2, "hour": 11.0, "before": [],
     "turns": [
         turn(0, "I wanted to preview the docs locally but the build errors out immediately. Where does that come from?",
              [bash("sphinx-build docs docs/_build", "sphinx", expect=127),
               bash("python -m sphinx --version", "sphinx_module", expect=1),
               bash("cat tox.ini", "tox")],
              "Nothing is wrong with the docs themselves: Sphinx just isn't installed in this virtualenv, so the "
              "shell can't find the command and Python can't import the module. We only installed the `tests` extra. "
              "The documentation toolchain is the `docs` extra in pyproject.toml, and tox's `docs` environment "
              "installs it (`extras = docs`) before running `sphinx-build docs/ docs/_build`. Either "
              "`pip install -e '.[docs]'` here, or `tox -e docs` to keep it in its own environment."),
         turn(10, "While I'm at it: which Python versions does CI actually test, and on what runner?",
              [bash("cat .github/workflows/build-release.yml", "workflow")],
              "The test matrix has two entries, 3.9 and 3.13 (the oldest and newest supported), each running the "
              "matching tox environment. The mypy and docs jobs use 3.13 and the package build 3.11. The test jobs "
              "run on ubuntu-22.04 because of Priya's pin; every other job is still on ubuntu-latest."),
         turn(25, "Different thing, my own side project: its tests pass on my laptop but CI fails with "
                  "ModuleNotFoundError for the package itself. Where does that usually come from?",
              [bash('grep -n "src\\|norecursedirs\\|addopts" pyproject.toml tox.ini', "grep_layout")],
              "Nine times out of ten it's the src layout. When the package lives under src/, `import yourpkg` only "
              "works once the package is installed into the environment (or pytest is told `pythonpath = [\"src\"]`). "
              "On your laptop an editable install from months ago makes it importable; CI checks out fresh and runs "
              "pytest without installing, so the import fails before a single test runs. This repo has the same "
              "layout and gets away with it because every tox environment installs the package first (tox installs "
              "the project unless `skip_install` is set, with `extras = tests` on top). Add `pip install -e .` to "
              "the CI job before pytest, or set `pythonpath` in the pytest config."),
     ]},
    {"key": "s13", "days_ago": 1, "hour": 9.8,
     "before": [plant("src/marshmallow/utils.py", TZ_OLD, TZ_BAD, TZ_MESSAGE, MARCO, 2, 18.5)],
     "turns": [
         turn(0, "A customer in Chicago says the times they send us come back shifted by hours. Their payloads look "
                 "like 2026-12-01T08:15:00-06:00. Can you reproduce?",
              [bash("python -c \"from marshmallow import fields; "
                    "print(fields.DateTime().deserialize('2026-12-01T08:15:00-06:00').isoformat())\"", "repro"),
               bash("python -m pytest -q tests/test_utils.py tests/test_deserialization.py", "fail", expect=1),
               bash("git log -S'offset = -offset' --format='%h %an %ad %s' --date=short", "pickaxe"),
               read("src/marshmallow/utils.py", "read", offset=146, limit=22),
               edit("src/marshmallow/utils.py", TZ_BAD, TZ_OLD, "fix"),
               bash("python -c \"from marshmallow import fields; "
                    "print(fields.DateTime().deserialize('2026-12-01T08:15:00-06:00').isoformat())\"", "repro_fixed"),
               bash("python -m pytest tests/test_utils.py tests/test_deserialization.py", "pass"),
               bash('git commit -am "Keep the sign of negative UTC offsets in from_iso_datetime"', "commit")],
              "Reproduced: the -06:00 input came back as 08:15 at +06:00, twelve hours away from the instant they "
              "meant. Marco's cleanup last night removed the two lines that negate the offset when it "
              "starts with a minus, on the theory that `get_fixed_timezone` handles the sign; it only formats the "
              "name from an offset that is already signed, it never sees the string. The suite agreed: four "
              "failures, the -06:00 and -03:00 cases in test_utils and test_deserialization. With the negation back, "
              "the same call prints -06:00, those tests pass, and the fix is committed."),
     ]},
    {"key": "s14", "days_ago": 1, "hour": 15.5,
     "before": [plant("src/marshmallow/schema.py", UNKNOWN_OLD, UNKNOWN_BAD, UNKNOWN_MESSAGE, MARCO, 1, 12.0)],
     "turns": [
         turn(0, "I'd like to ship 3.24.0 today with the duration feature and this week's fixes. First make sure the "
                 "full suite is green.",
              [bash("python -m pytest", "suite_fail", expect=1),
               bash("git log -3 --format='%h %an %ad %s' --date=short -- src/marshmallow/schema.py", "log"),
               bash(lambda ctx: f"git show {ctx.first_hash()}", "show"),
               read("src/marshmallow/schema.py", "read", offset=668, limit=20),
               edit("src/marshmallow/schema.py", UNKNOWN_BAD, UNKNOWN_OLD, "fix"),
               bash("python -m pytest -q", "suite_pass"),
               bash('git commit -am "Honour data_key when detecting unknown fields"', "commit_fix")],
              "It wasn't green: six failures, all about input keys that arrive under a `data_key` "
              "(`test_unknown_fields_deserialization_with_data_key`, `test_pluck_with_data_key` and four more). "
              "Marco's simplification at midday compared the incoming keys with the attribute names that key "
              "`load_fields`, so a field declared with a different external name had its own key reported as "
              "\"Unknown field.\" even though it had just been loaded. I put back the set of data keys; the full "
              "run passes and the fix is committed, so we're clear to release."),
         turn(20, "Great, do the release: changelog, version, tag.",
              [read("CHANGELOG.rst", "read_changelog", limit=24),
               edit("CHANGELOG.rst", RELEASE_2_OLD, RELEASE_2_NEW, "changelog"),
               read("pyproject.toml", "read_pyproject", limit=5),
               edit("pyproject.toml", 'version = "3.23.1"', 'version = "3.24.0"', "version"),
               bash('git commit -am "Bump version to 3.24.0 and update changelog"', "commit"),
               bash('git tag -a 3.24.0 -m "marshmallow 3.24.0"', "tag")],
              "3.24.0 is tagged. The changelog section is dated today and lists the ISO duration feature plus the "
              "three fixes since 3.23.1 (error messages merged deeply again, negative UTC offsets, unknown-key "
              "detection with `data_key`); pyproject.toml is bumped, and the release commit and annotated tag are on "
              "dev."),
     ]},
    {"key": "s15", "days_ago": 0, "hour": 8.3, "before": [],
     "turns": [
         turn(0, "A support ticket came in overnight: with partial loading, a nested field that has a data_key still "
                 "insists on its required subfields. They pass partial=('billingAddress.city',) and still get 'Missing "
                 "data for required field.' for city. Can you reproduce and fix it?",
              [write("/tmp/partial_repro.py", REPRO, "write_repro"),
               bash("python /tmp/partial_repro.py", "repro", expect=1),
               read("src/marshmallow/schema.py", "read", offset=640, limit=14),
               bash("git log -S'prefix = attr_name' --format='%h %an %ad %s' --date=short -- src/marshmallow/schema.py",
                    "pickaxe"),
               edit("src/marshmallow/schema.py", PREFIX_BAD, PREFIX_OLD, "fix"),
               read("tests/test_deserialization.py", "read_tests", offset=2230, limit=30),
               edit("tests/test_deserialization.py", PARTIAL_TEST_ANCHOR, PARTIAL_TEST_NEW, "add_test"),
               bash("python /tmp/partial_repro.py && python -m pytest -q tests/test_deserialization.py -k partial",
                    "verify"),
               bash('git commit -am "Use data keys for nested partial paths again" -m "Adds a regression test: no '
                    'test loaded a nested field with a data_key under partial."', "commit")],
              "Reproduced and fixed. When a load is partial, `Schema._deserialize` hands each nested field the "
              "partial paths that start with that field's prefix, minus the prefix. Since Marco's change the prefix "
              "was built from the attribute name (`address.`) rather than the key the input actually uses "
              "(`billingAddress.`), so nothing matched and the nested schema loaded as if no partial had been given. "
              "No existing test loaded a nested field with a `data_key` under a partial tuple, which is how it got "
              "through the suite and into yesterday's 3.24.0. I switched the prefix back to the data key, added a "
              "regression test beside the other nested-partial tests in test_deserialization.py, and committed both. "
              "It needs a 3.24.1."),
     ]},
    {"key": "s16", "days_ago": 0, "hour": 9.65, "before": [],
     "turns": [
         turn(0, "Can you give me a short list of what we fixed since 3.23.0 for the standup? Just the user-visible "
                 "stuff.",
              [bash("git log --stat --no-merges 3.23.0..HEAD", "log")],
              "Since 3.23.0, user-visible:\n"
              "- `Length` accepts values exactly at `max` again (3.23.1)\n"
              "- `Decimal` respects its `rounding` argument again (3.23.1)\n"
              "- `TimeDelta` accepts ISO 8601 durations such as P1DT2H (3.24.0)\n"
              "- error messages for one field are merged, not overwritten (3.24.0)\n"
              "- negative UTC offsets keep their sign when datetimes are parsed (3.24.0)\n"
              "- fields with a `data_key` are no longer reported as unknown (3.24.0)\n"
              "- partial loading works again for nested fields with a `data_key` (fixed this morning, not released)\n\n"
              "Everything but the duration feature was a regression introduced and fixed within the sprint."),
         turn(12, "Unrelated: someone suggested turning on git rerere after that changelog conflict during the merge. "
                  "What does it actually do?",
              [bash("git config --get rerere.enabled", "config", expect=1)],
              "rerere (\"reuse recorded resolution\") makes git remember how you resolved each conflicted hunk; the "
              "next time the identical conflict shows up, in a rebase, a repeated merge or a cherry-pick, it applies "
              "your earlier resolution by itself and leaves the file for you to check. It's off in this clone (the "
              "setting isn't there at all). It only pays off when the same conflict comes back, typically when a "
              "long-lived branch is rebased again and again; for a one-off clash like ours it would have saved "
              "nothing. `git config rerere.enabled true` switches it on for this repository."),
     ]},
]
