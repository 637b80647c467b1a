"""Savings on the corpus, in the model's window: what each command put there with Claude Code alone, with rtk,
and with codeoid on either route, and how many of its critical items the model could see.

For each fixture (tests/fixtures/compress, made by make_fixtures.py; with --heavy tests/fixtures/compress_heavy,
made by heavy_corpus.py) the window is modelled as Claude Code 2.1.332 builds it (`codeoid.claude_window`: a
success over 30,000 bytes becomes a 2 KB preview note, a failure `Exit code N` and the first and last 5,000
characters of its first 30,000 bytes):

- Claude Code alone: the raw output's window;
- rtk: its output of the same command in the same state, where the fixture has one (rtk 1.1.0 was run when the
  corpus was made; it is not installed here), else n/a;
- codeoid rewrite: `codeoid-compress`'s text (engine output and footer) through the same window;
- codeoid after the fact: what PostToolUse answers today: nothing for a failure (Claude Code takes no
  replacement), so the window is Claude Code's own; for a success the compressed text, of the whole output even
  where Claude Code persisted it (the hook reads the file it names and answers without the persisted keys).

Critical items are failing test ids, changed files and files with hits (with `git status`'s files): one is
visible when the window names it as the raw output does. The old byte table (raw bytes against codeoid's and
rtk's, with the fidelity check) is `--bytes`.

    .venv/bin/python benchmarks/compression/savings.py [--heavy] [--markdown] [--bytes]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from codeoid.claude_window import window
from codeoid.compressors import MARKER, compress_bytes, load_rules
from codeoid.compressors.engine import footer
from codeoid.text import estimate_tokens

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "compress"
sys.path.insert(0, str(ROOT / "tests" / "compressors"))

import detectors  # noqa: E402  (test helpers, found through sys.path)
from detectors import DETECTORS_BY_KIND, violations  # noqa: E402

HEAVY = ROOT / "tests" / "fixtures" / "compress_heavy"
RAW_ID = "raw-toolu_01AbCdEfGhIjKlMnOpQrStUv"  # a real id's length, for the footer


def tokens(data: bytes) -> int:
    return estimate_tokens(data.decode("utf-8", "replace"))


def rtk_violations(kind: str, raw: bytes, output: bytes) -> list[str]:
    return [problem for detector in DETECTORS_BY_KIND[kind] for problem in detector(raw, output)]


def critical_items(kind: str, raw: bytes) -> list[str]:
    """What the model must be able to see of this output: its failing tests, changed files, files with hits."""
    lines = [detectors.text(line) for line in detectors.lines_of(raw)]
    found: dict[str, None] = {}
    if kind == "tests":
        for line in lines:
            for pattern in detectors._FAILING_TEST_IDS:
                match = pattern.search(line)
                if match:
                    found[match.group(1).strip()] = None
    elif kind in ("git-diff", "git-status"):
        patterns = ((detectors._DIFF_FILE, detectors._STAT_FILE) if kind == "git-diff"
                    else (detectors._STATUS_FILE, detectors._SHORT_STATUS_FILE))
        for line in lines:
            for pattern in patterns:
                match = pattern.search(line)
                if match:
                    found.update((path.split(" -> ")[-1], None) for path in match.groups() if path)
                    break
    elif kind == "search":
        found.update((path, None) for path in detectors._hits_per_file(detectors.lines_of(raw)))
    return list(found)


def visible(item: str, text: str) -> bool:
    """Whether the window names `item` as the raw output does, or a failing test as pytest heads its report
    (`tests/a.py::Class::test_x[p]` is `Class.test_x[p]`)."""
    as_reported = item.partition("::")[2].replace("::", ".")
    return item in text or bool(as_reported) and as_reported in text


def rewrite_text(rule: object, raw: bytes) -> bytes:
    """What `codeoid-compress` prints: the raw bytes when it passes them through, else its text and footer."""
    if rule is None:
        return raw
    out, result = compress_bytes(rule, raw)  # type: ignore[arg-type]
    if not result.lines_removed:
        return out
    newline = b"" if out.endswith(b"\n") or not out else b"\n"
    return out + newline + MARKER + footer(RAW_ID, result.describe()).encode() + b"\n"


def after_text(rule: object, raw: bytes, exit_status: int) -> bytes | None:
    """What the after-the-fact compression answers for this output today; None when it leaves it alone."""
    text = raw.decode("utf-8", "replace").rstrip("\n")
    if rule is None or exit_status:
        return None
    out, result = compress_bytes(rule, text.encode())  # type: ignore[arg-type]
    if not result.lines_removed:
        return None
    newline = b"" if out.endswith(b"\n") or not out else b"\n"
    shown = out + newline + MARKER + footer(RAW_ID, result.describe()).encode()
    return shown if len(shown) < len(text.encode()) else None


def window_report(fixtures: Path, markdown: bool) -> None:
    rules = load_rules(user_dir="/nonexistent/codeoid-user-rules")
    manifest = json.loads((fixtures / "manifest.json").read_text())
    columns = ("alone", "rtk", "rewrite", "after")
    totals = {column: 0 for column in columns} | {f"{column}_seen": 0 for column in columns}
    totals |= {"raw": 0, "items": 0, "rtk_alone": 0, "rtk_items": 0, "rtk_alone_seen": 0, "rtk_runs": 0,
               "rtk_rewrite": 0, "rtk_rewrite_seen": 0}
    rows = []
    for fixture in manifest["fixtures"]:
        raw = (fixtures / f"{fixture['name']}.out").read_bytes()
        status = fixture.get("exit_status", 0)
        rule = rules.for_command(fixture["command"])
        texts: dict[str, str | None] = {"alone": window(raw.decode("utf-8", "replace"), status)}
        rtk_file = fixtures / f"{fixture['name']}.rtk.out"
        if "rtk_command" in fixture:
            theirs = rtk_file.read_bytes() if rtk_file.exists() else raw
            texts["rtk"] = window(theirs.decode("utf-8", "replace"), fixture.get("rtk_exit_status", status))
        else:
            texts["rtk"] = None
        texts["rewrite"] = window(rewrite_text(rule, raw).decode("utf-8", "replace"), status)
        after = after_text(rule, raw, status)
        texts["after"] = texts["alone"] if after is None else window(after.decode("utf-8", "replace"), 0)
        items = critical_items(fixture["kind"], raw)
        seen = {column: (sum(visible(item, text) for item in items) if text is not None else None)
                for column, text in texts.items()}
        totals["raw"] += len(raw)
        totals["items"] += len(items)
        for column in columns:
            if texts[column] is not None:
                totals[column] += len(texts[column] or "")
                totals[f"{column}_seen"] += seen[column] or 0
        if texts["rtk"] is not None:
            totals["rtk_runs"] += 1
            totals["rtk_alone"] += len(texts["alone"] or "")
            totals["rtk_items"] += len(items)
            totals["rtk_alone_seen"] += seen["alone"] or 0
            totals["rtk_rewrite"] += len(texts["rewrite"] or "")
            totals["rtk_rewrite_seen"] += seen["rewrite"] or 0
        rows.append([fixture["name"], rule.name if rule else "-", status, len(raw),
                     *(len(texts[column] or "") if texts[column] is not None else "n/a" for column in columns),
                     len(items), *(seen[column] if seen[column] is not None else "n/a" for column in columns)])
    header = ["command", "rule", "exit", "raw B", "Claude Code alone", "rtk", "codeoid rewrite",
              "codeoid after the fact", "critical items", "seen alone", "seen rtk", "seen rewrite", "seen after"]
    total_row = ["TOTAL", "", "", totals["raw"], *(totals[column] if column != "rtk" or totals["rtk_runs"] else "n/a"
                                                  for column in columns),
                 totals["items"], *(totals[f"{column}_seen"] if column != "rtk" or totals["rtk_runs"] else "n/a"
                                    for column in columns)]
    print_table(header, [*rows, total_row], markdown)
    print()
    print(f"window characters, {len(rows)} commands: Claude Code alone {totals['alone']:,}, codeoid rewrite "
          f"{totals['rewrite']:,}, codeoid after the fact {totals['after']:,}"
          + (f", rtk {totals['rtk']:,} (on the {totals['rtk_runs']} commands it was run on, where Claude Code alone "
             f"is {totals['rtk_alone']:,} and codeoid rewrite {totals['rtk_rewrite']:,})" if totals["rtk_runs"]
             else ", rtk n/a (no recorded rtk outputs)"))
    print(f"critical items visible, of {totals['items']:,}: Claude Code alone {totals['alone_seen']:,}, codeoid "
          f"rewrite {totals['rewrite_seen']:,}, codeoid after the fact {totals['after_seen']:,}"
          + (f", rtk {totals['rtk_seen']:,} of {totals['rtk_items']:,} (Claude Code alone "
             f"{totals['rtk_alone_seen']:,} there, codeoid rewrite {totals['rtk_rewrite_seen']:,})"
             if totals["rtk_runs"] else ""))


def print_table(header: list[str], rows: list[list[object]], markdown: bool) -> None:
    cells = [[f"{cell:,}" if isinstance(cell, int) else str(cell) for cell in row] for row in rows]
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if index < 2 else "---:" for index in range(len(header))) + "|")
        for row in cells:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(header[index]), *(len(row[index]) for row in cells)) for index in range(len(header))]
    for row in [header, *cells]:
        print("  ".join(cell.ljust(width) if index < 2 else cell.rjust(width)
                        for index, (cell, width) in enumerate(zip(row, widths, strict=True))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--heavy", action="store_true", help="the heavy corpus (tests/fixtures/compress_heavy)")
    parser.add_argument("--bytes", action="store_true", help="the raw-byte table with the fidelity check")
    args = parser.parse_args()
    if not args.bytes:
        window_report(HEAVY if args.heavy else FIXTURES, args.markdown)
        return
    rules = load_rules(user_dir="/nonexistent/codeoid-user-rules")
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    rows = []
    totals = {"raw": 0, "codeoid": 0, "rtk": 0, "raw_tokens": 0, "codeoid_tokens": 0, "rtk_tokens": 0}
    violation_count = {"codeoid": 0, "rtk": 0}
    groups: dict[str, dict[str, int]] = {}
    for fixture in manifest["fixtures"]:
        raw = (FIXTURES / f"{fixture['name']}.out").read_bytes()
        rule = rules.for_command(fixture["command"])
        ours = compress_bytes(rule, raw)[0] if rule is not None else raw
        rtk_file = FIXTURES / f"{fixture['name']}.rtk.out"
        rtk_ran = "rtk_command" in fixture
        theirs = rtk_file.read_bytes() if rtk_file.exists() else raw
        ours_bad = violations(fixture["kind"], raw, ours)
        theirs_bad = rtk_violations(fixture["kind"], raw, theirs)
        violation_count["codeoid"] += len(ours_bad)
        violation_count["rtk"] += len(theirs_bad)
        for key, data in (("raw", raw), ("codeoid", ours), ("rtk", theirs if rtk_ran else raw)):
            totals[key] += len(data)
            totals[f"{key}_tokens"] += tokens(data)
        group = groups.setdefault(fixture["kind"], {"raw": 0, "codeoid": 0, "rtk_raw": 0, "rtk": 0,
                                                    "codeoid_bad": 0, "rtk_bad": 0})
        group["raw"] += len(raw)
        group["codeoid"] += len(ours)
        group["codeoid_bad"] += len(ours_bad)
        if rtk_ran:
            group["rtk_raw"] += len(raw)
            group["rtk"] += len(theirs)
            group["rtk_bad"] += len(theirs_bad)
        rows.append((fixture["name"], rule.name if rule else "-", len(raw), len(ours),
                     len(theirs) if rtk_ran else "n/a", tokens(raw) - tokens(ours),
                     tokens(raw) - tokens(theirs) if rtk_ran else "n/a", len(ours_bad),
                     len(theirs_bad) if rtk_ran else "n/a", "rewrite" if rtk_file.exists() else "none"))
    header = ("fixture", "rule", "raw B", "codeoid B", "rtk B", "codeoid tok saved", "rtk tok saved",
              "codeoid violations", "rtk violations", "rtk")
    total_row = ("TOTAL", "", totals["raw"], totals["codeoid"], totals["rtk"],
                 totals["raw_tokens"] - totals["codeoid_tokens"], totals["raw_tokens"] - totals["rtk_tokens"],
                 violation_count["codeoid"], violation_count["rtk"], "")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in [*rows, total_row]:
            print("| " + " | ".join(f"{cell:,}" if isinstance(cell, int) else str(cell) for cell in row) + " |")
    else:
        print(f"{header[0]:34} {header[1]:12} {'raw':>8} {'codeoid':>8} {'rtk':>8} {'tok-c':>7} {'tok-r':>7}"
              f" {'viol-c':>6} {'viol-r':>6}")
        for row in [*rows, total_row]:
            print(f"{row[0]:34} {row[1]:12} {row[2]:8} {row[3]:8} {row[4]:>8} {row[5]:7} {row[6]:>7} {row[7]:6}"
                  f" {row[8]:>6}")
    print()
    print(f"{'kind':12} {'raw':>9} {'codeoid':>9} {'saved':>7} {'viol':>5}   {'rtk raw':>9} {'rtk':>9} {'saved':>7}"
          f" {'viol':>5}")
    for kind, group in groups.items():
        rtk_part = (f"{group['rtk_raw']:9} {group['rtk']:9} {1 - group['rtk'] / group['rtk_raw']:7.1%}"
                    f" {group['rtk_bad']:5}") if group["rtk_raw"] else f"{'n/a':>9}"
        print(f"{kind:12} {group['raw']:9} {group['codeoid']:9} {1 - group['codeoid'] / group['raw']:7.1%}"
              f" {group['codeoid_bad']:5}   {rtk_part}")
    saved = totals["raw"] - totals["codeoid"]
    rtk_saved = totals["raw"] - totals["rtk"]
    print(f"\ncodeoid saved {saved:,} of {totals['raw']:,} bytes ({saved / totals['raw']:.1%}), "
          f"{totals['raw_tokens'] - totals['codeoid_tokens']:,} tokens, {violation_count['codeoid']} violations; "
          f"rtk saved {rtk_saved:,} bytes ({rtk_saved / totals['raw']:.1%}), "
          f"{totals['raw_tokens'] - totals['rtk_tokens']:,} tokens, {violation_count['rtk']} violations "
          f"(content clauses only; fixtures without an rtk run count as raw for rtk). rtk: {manifest.get('rtk')}")


if __name__ == "__main__":
    main()
