"""The engine on synthetic outputs: passthrough, byte fidelity, markers, streaming and failure modes."""

from __future__ import annotations

import tomllib
import tracemalloc
from pathlib import Path

import pytest

from codeoid.compressors import MARKER, CompressionError, Compressor, Rule, Thresholds, compress_bytes, load_rules
from codeoid.compressors.rules import rule_from_table


def make_rule(toml: str) -> Rule:
    table = tomllib.loads(toml)["rule"][0]
    return Rule.from_plain({**rule_from_table(table), "source": "test"})


HEAD_TAIL = make_rule("""
[[rule]]
name = "head-tail"
head = 5
tail = 3
[rule.match]
program = "x"
""")
NOTHING = make_rule('[[rule]]\nname = "nothing"\n[rule.match]\nprogram = "x"\n')
NO_BUDGET = Thresholds(budget_lines=0, budget_bytes=0, ceiling=0)


def numbered(count: int, width: int = 40) -> bytes:
    return b"".join(f"line {index:05d} ".ljust(width, ".").encode() + b"\n" for index in range(count))


def kept_and_added(output: bytes) -> tuple[list[bytes], list[bytes]]:
    lines = output.split(b"\n")
    return [line for line in lines if not line.startswith(MARKER)], [line for line in lines if line.startswith(MARKER)]


def test_small_output_passes_through_unchanged() -> None:
    for raw in (numbered(39), b"x" * 1000 + b"\n" + numbered(60)[:10], b"", b"no newline"):
        out, result = compress_bytes(HEAD_TAIL, raw)
        assert out == raw
        assert result.passthrough == "below threshold" or raw == b""


def test_output_under_the_rules_own_minimum_passes_whole_and_one_over_it_is_cut() -> None:
    rule = make_rule('[[rule]]\nname = "whole-under"\nmin_bytes = 8000\nhead = 5\ntail = 3\n'
                     '[rule.match]\nprogram = "x"\n')
    small, big = numbered(150), numbered(300)  # 6,000 and 12,000 bytes, both past the engine's own minimum
    out, result = compress_bytes(rule, small)
    assert out == small and result.passthrough == "below threshold"
    out, result = compress_bytes(rule, big)
    assert result.removed == {"head/tail": 292}


def test_a_source_file_the_model_cats_reaches_it_whole_unless_it_is_big() -> None:
    cat = load_rules(user_dir="/nonexistent/codeoid-user-rules").for_command("cat performance/benchmark.py")
    assert cat is not None and cat.name == "cat"
    source = b"".join(b"    value_%d = compute(%d)  # step\n" % (index, index) for index in range(150))
    assert 4000 < len(source) < 8000
    out, result = compress_bytes(cat, source)
    assert out == source and result.passthrough == "below threshold"
    out, result = compress_bytes(cat, source * 4)
    assert result.removed == {"head/tail": 500}  # its first 60 and last 40 lines stay


def test_a_patch_under_8_kb_reaches_the_model_with_every_changed_line() -> None:
    fixtures = Path(__file__).parents[1] / "fixtures" / "compress"
    patch = (fixtures / "git_log_patch_toolz.out").read_bytes()  # a real `git log -p`, 5,995 bytes
    rule = load_rules(user_dir="/nonexistent/codeoid-user-rules").for_command("git log -p -3")
    assert rule is not None and rule.name == "git-diff"
    out, result = compress_bytes(rule, patch)
    assert out == patch and result.passthrough == "below threshold"
    out, result = compress_bytes(rule, patch * 2)
    assert result.lines_removed > 0


def test_output_the_rule_would_not_shrink_passes_through_unchanged() -> None:
    raw = numbered(200)
    out, result = compress_bytes(NOTHING, raw, NO_BUDGET)
    assert out == raw and result.passthrough == "not smaller" and result.removed == {}


def test_head_and_tail_keep_their_lines_and_one_marker_names_the_raw_span() -> None:
    raw = numbered(200)
    out, result = compress_bytes(HEAD_TAIL, raw)
    lines = out.split(b"\n")
    assert lines[:5] == raw.split(b"\n")[:5]
    assert lines[5] == MARKER + b"192 lines cut, raw lines 6-197"
    assert lines[6:9] == raw.split(b"\n")[197:200]
    assert result.removed == {"head/tail": 192} and result.raw_lines == 200


def test_kept_lines_are_byte_identical_even_when_not_utf8() -> None:
    raw = b"".join(b"\xff\xfe caf\xe9 \x1b[31mred\x1b[0m \r%d\n" % index for index in range(100))
    out, _ = compress_bytes(HEAD_TAIL, raw)
    kept, added = kept_and_added(out)
    assert kept[:5] == raw.split(b"\n")[:5] and kept[-4:-1] == raw.split(b"\n")[-4:-1]
    assert len(added) == 1


def test_a_missing_final_newline_stays_missing() -> None:
    raw = numbered(200).rstrip(b"\n")
    out, _ = compress_bytes(HEAD_TAIL, raw)
    assert out.endswith(raw.rsplit(b"\n", 1)[1]) and not out.endswith(b"\n")


def test_chunk_boundaries_do_not_change_the_output() -> None:
    raw = numbered(3000)
    whole, _ = compress_bytes(HEAD_TAIL, raw, chunk_size=len(raw))
    for chunk_size in (1, 7, 4096):
        assert compress_bytes(HEAD_TAIL, raw, chunk_size=chunk_size)[0] == whole
    streamed, _ = compress_bytes(HEAD_TAIL, raw, Thresholds(hold_bytes=0), chunk_size=100)
    assert streamed == whole


def test_the_closing_line_survives_even_when_the_rule_drops_it() -> None:
    rule = make_rule('[[rule]]\nname = "d"\ndrop = ["^summary"]\n[rule.match]\nprogram = "x"\n')
    raw = numbered(100) + b"summary: 3 failed\n\n\n"
    out, _ = compress_bytes(rule, raw)
    assert b"summary: 3 failed\n" in out
    assert out.count(b"summary") == 1


def test_identical_consecutive_lines_collapse_to_one_with_a_count() -> None:
    raw = numbered(50) + b"WARNING: disk almost full\n" * 500 + b"\n" * 300 + b"done\n"
    out, result = compress_bytes(NOTHING, raw)
    assert out.count(b"WARNING: disk almost full\n") == 1
    assert MARKER + b"previous line repeated 499 more times\n" in out
    assert result.removed == {"repeats": 499 + 299}


def test_item_summary_names_the_item_and_its_count() -> None:
    rule = make_rule("""
[[rule]]
name = "search"
diagnostics = false
dedupe = false
[rule.item]
key = '^(.+?):\\d+:'
head = 2
label = "hits"
[rule.match]
program = "x"
""")
    raw = b"".join(b"src/a.py:%d: hit\n" % n for n in range(1, 41)) + b"src/b.py:1: hit\n" * 30
    out, _ = compress_bytes(rule, raw)
    # The note names the raw lines it stands for when they are one run, so get_episode can page there.
    assert MARKER + b"src/a.py: 40 hits in all, 38 lines not shown, raw lines 3-40\n" in out
    # The closing line is always kept, so b.py shows three of its 30 hits.
    assert MARKER + b"src/b.py: 30 hits in all, 27 lines not shown\n" in out
    kept, _ = kept_and_added(out)
    assert kept.count(b"src/b.py:1: hit") == 3


def test_collapse_keeps_the_first_lines_of_each_run_and_counts_the_rest() -> None:
    rule = make_rule("""
[[rule]]
name = "c"
[[rule.collapse]]
label = "passing"
patterns = [' ok$']
keep = 1
[rule.match]
program = "x"
""")
    raw = b"".join(b"tests/test_%02d ok\n" % n for n in range(60)) + b"test_x FAILED\n" + \
        b"".join(b"tests/test_%02d ok\n" % n for n in range(60, 90)) + b"2 failed\n"
    out, result = compress_bytes(rule, raw)
    assert out.split(b"\n")[:6] == [b"tests/test_00 ok",
                                    MARKER + b"59 lines cut (passing), raw lines 2-60",
                                    b"test_x FAILED", b"tests/test_60 ok",
                                    MARKER + b"29 lines cut (passing), raw lines 63-91",
                                    b"2 failed"]
    assert result.removed == {"passing": 88}


def test_diagnostics_survive_budgets_unless_the_rule_opts_out() -> None:
    raw = numbered(100) + b"Traceback (most recent call last):\n" + numbered(100) + b"ValueError: bad\n" + numbered(50)
    out, _ = compress_bytes(HEAD_TAIL, raw)
    assert b"\nTraceback (most recent call last):\n" in out and b"\nValueError: bad\n" in out
    data_rule = make_rule('[[rule]]\nname = "d"\ndiagnostics = false\nhead = 5\n[rule.match]\nprogram = "x"\n')
    assert b"ValueError" not in compress_bytes(data_rule, raw)[0]


def test_error_lines_from_stderr_survive_every_rule_even_one_without_diagnostics() -> None:
    """Under the rewrite stderr goes through the rule too; the lines programs print when something went wrong stay,
    whatever the rule's budget and whether or not it turns diagnostics off."""
    errors = [b"ls: cannot access 'missing': No such file or directory", b"bash: line 3: nope: command not found",
              b"fatal: not a git repository (or any of the parent directories): .git",
              b"cp: cannot create regular file '/x': Permission denied", b"usage: tool [-h] FILE"]
    raw = numbered(100) + b"\n".join(errors[:2]) + b"\n" + numbered(100) + b"\n".join(errors[2:]) + b"\n" + numbered(50)
    data_rule = make_rule('[[rule]]\nname = "d"\ndiagnostics = false\nhead = 5\n[rule.match]\nprogram = "x"\n')
    for rule in (HEAD_TAIL, data_rule):
        kept, _ = kept_and_added(compress_bytes(rule, raw)[0])
        assert all(error in kept for error in errors), rule.name
        assert len(kept) < 30  # the progress lines around them are cut as the rule says


def test_group_budget_keeps_a_few_per_extension_and_counts_the_rest() -> None:
    rule = make_rule("""
[[rule]]
name = "g"
dedupe = false
[rule.group]
by = "extension"
keep = 2
[rule.match]
program = "x"
""")
    raw = b"".join(b"src/file%03d.py\n" % n for n in range(80)) + b"".join(b"doc%02d.md\n" % n for n in range(10))
    out, _ = compress_bytes(rule, raw)
    # doc09.md closes the output, so it is kept beyond the budget of two.
    assert out.endswith(b"doc09.md\n" + MARKER + b"not shown: 78 *.py, 7 *.md\n")


def test_a_raw_line_that_looks_like_a_marker_stops_compression_and_says_why() -> None:
    raw = numbered(100) + MARKER + b"this came from the command\n" + numbered(100)
    out, result = compress_bytes(HEAD_TAIL, raw, Thresholds(hold_bytes=0))
    assert result.passthrough == "raw output contains codeoid marker lines"
    assert out.endswith(MARKER + b"this came from the command\n" + numbered(100))
    assert MARKER + b"raw output contains codeoid marker lines: the rest of the output is unchanged\n" in out


def test_a_line_over_the_limit_passes_the_rest_through() -> None:
    raw = numbered(100) + b"y" * 5000 + b"\n" + numbered(100)
    out, result = compress_bytes(HEAD_TAIL, raw, Thresholds(hold_bytes=0, max_line_bytes=1000), chunk_size=512)
    assert result.passthrough == "a line over 1,000 bytes"
    assert out.endswith(b"y" * 5000 + b"\n" + numbered(100))


def test_abandon_hands_back_the_raw_bytes_not_yet_written() -> None:
    raw = numbered(400)
    engine = Compressor(HEAD_TAIL, Thresholds(hold_bytes=0))
    written = engine.feed(raw[:10_000])
    rest = b"".join(engine.abandon())
    # What the engine held for the budget comes first, as decided; then the marker and the raw rest.
    decided, raw_rest = (written + rest).split(MARKER + b"compression stopped by an error; the rest is unchanged\n")
    assert decided.startswith(raw[:200].split(b"\n")[0]) and MARKER in decided
    assert raw[:10_000].endswith(raw_rest) and raw_rest
    held = Compressor(HEAD_TAIL)
    held.feed(raw[:5000])
    assert b"".join(held.abandon()) == raw[:5000]


def test_an_engine_failure_mid_stream_is_a_compression_error_and_loses_no_raw_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    raw = numbered(400)
    engine = Compressor(HEAD_TAIL, Thresholds(hold_bytes=0))
    pipeline = engine._pipeline
    real_push = pipeline.push
    pushed = []

    def failing_push(line: bytes) -> None:
        pushed.append(line)
        if len(pushed) == 300:
            raise RuntimeError("a bug")
        real_push(line)

    monkeypatch.setattr(pipeline, "push", failing_push)
    with pytest.raises(CompressionError, match="a bug"):
        engine.feed(raw)
    out = b"".join(engine.abandon())
    assert out.endswith(b"".join(line + b"\n" for line in raw.split(b"\n")[299:400]))
    assert MARKER + b"compression stopped by an error; the rest is unchanged\n" in out


def test_misuse_raises_compression_error() -> None:
    engine = Compressor(HEAD_TAIL)
    engine.finish()
    with pytest.raises(CompressionError):
        engine.feed(b"x\n")
    with pytest.raises(CompressionError):
        engine.finish()


def test_memory_stays_bounded_on_a_large_stream() -> None:
    engine = Compressor(HEAD_TAIL)
    chunk = numbered(1000, width=100)
    tracemalloc.start()
    for _ in range(100):  # 10 MB
        engine.feed(chunk)
    engine.finish()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert engine.result.raw_bytes == 100 * len(chunk)
    assert peak < 2 * 1024 * 1024


def test_describe_is_one_footer_line() -> None:
    _, result = compress_bytes(HEAD_TAIL, numbered(200))
    assert result.describe() == "rule head-tail: 192 of 200 lines removed (192 head/tail)"


# -- budgets ------------------------------------------------------------------------------------------------------

DIFF_LIKE = make_rule("""
[[rule]]
name = "diff-like"
diagnostics = false
dedupe = false
keep = ['^file ', '^@@ ']
[rule.budget]
lines = 30
bytes = 0
rest = "context lines"
[[rule.budget.tier]]
label = "changed lines"
patterns = ['^[-+]']
[rule.item]
start = '^file (\\S+)'
head = 1000
tally = { added = '^\\+', removed = '^-' }
index = "{name} +{added} -{removed}"
index_title = "{items} files changed"
[rule.match]
program = "x"
""")


LONG = ", long enough to be worth the cost of a marker line that says it was cut" + "." * 40


def diff_like(files: int, hunk_lines: int) -> bytes:
    out = []
    for number in range(files):
        out.append(f"file f{number}.py")
        out.append("@@ -1 +1 @@")
        for line in range(hunk_lines):
            out.append(f" context line {line}{LONG}")
            out.append(f"+added {line}")
            out.append(f"-removed {line}")
    return "\n".join(out).encode() + b"\n"


def test_a_budget_leaves_small_outputs_alone() -> None:
    raw = diff_like(2, 3)
    assert compress_bytes(DIFF_LIKE, raw)[0] == raw


def test_a_budget_cuts_later_tiers_first_shares_fairly_and_names_every_cut_with_its_raw_lines() -> None:
    raw = diff_like(3, 20)
    out, result = compress_bytes(DIFF_LIKE, raw)
    kept, added = kept_and_added(out)
    # Lines the rule keeps always stay, and the closing line; of the other 23 lines each file's cut costs the
    # marker that names it, and the 20 left go to changed lines, about 7 per file; none to context.
    assert [line for line in kept if line.startswith((b"file", b"@@"))] == [b"file f0.py", b"@@ -1 +1 @@",
                                                                          b"file f1.py", b"@@ -1 +1 @@",
                                                                          b"file f2.py", b"@@ -1 +1 @@"]
    assert sum(line.startswith((b"+", b"-")) for line in kept) == 21  # the closing line is one of them
    assert not any(line.startswith(b" context") for line in kept)
    assert result.removed == {"changed lines": 3 * 40 - 21, "context lines": 60}
    # Each cut says how many lines and which raw lines, so get_episode(id, lines=...) can page there.
    assert MARKER + b"49 lines cut (33 changed lines, 16 context lines), raw lines 14-62" in added


def test_an_index_names_every_item_with_its_tallies_before_the_output() -> None:
    out, _ = compress_bytes(DIFF_LIKE, diff_like(3, 20))
    assert out.split(b"\n")[:4] == [MARKER + b"3 files changed", MARKER + b"f0.py +20 -20",
                                    MARKER + b"f1.py +20 -20", MARKER + b"f2.py +20 -20"]


def test_the_rule_budget_wins_over_the_callers_and_zero_means_no_limit() -> None:
    raw = diff_like(3, 20)
    unlimited = DIFF_LIKE._replace(budget=DIFF_LIKE.budget._replace(lines=0))
    assert compress_bytes(unlimited, raw, Thresholds(budget_lines=5, ceiling=0))[0] == raw
    from_caller = DIFF_LIKE._replace(budget=DIFF_LIKE.budget._replace(lines=None))
    kept, _ = kept_and_added(compress_bytes(from_caller, raw, Thresholds(budget_lines=12))[0])
    # 12 lines: 6 kept by the rule, the closing line, then 5 for two files' first lines and their markers.
    assert sum(line.startswith((b"+", b"-")) for line in kept) == 4


def test_a_cut_cheaper_than_its_marker_is_not_made() -> None:
    short = diff_like(3, 20).replace(LONG.encode(), b"")
    kept, added = kept_and_added(compress_bytes(DIFF_LIKE, short)[0])
    assert b" context line 1" in kept and not any(b"(raw line 6)" in line for line in added)


def test_a_note_queued_as_plain_text_by_an_operation_is_written_in_raw_order() -> None:
    from codeoid.compressors.pipeline import Pipeline

    pipeline = Pipeline(HEAD_TAIL)
    pipeline.push(b"first")
    pipeline._note("said by an operation")
    pipeline.push(b"last")
    pipeline.close(complete=True)
    assert pipeline.take() == b"first\n" + MARKER + b"said by an operation\nlast\n"
