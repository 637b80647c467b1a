"""Savings on the corpus: every fixture through codeoid's rules and, beside it, what rtk made of the same run.

For each fixture (tests/fixtures/compress, made by make_fixtures.py) it prints raw bytes, codeoid's bytes and
rtk's bytes (rtk's output of the same command in the same repository state, or raw where rtk has no rewrite),
estimated tokens saved, and the fidelity check: codeoid against every clause of the contract, rtk against the
clauses that do not assume kept lines are verbatim (rtk rewrites lines, so that clause cannot apply to it).
Fixtures captured without rtk (no `rtk_command` in the manifest) show "n/a" and count for neither side of the
rtk comparison. Totals per kind of output follow the table.

    .venv/bin/python benchmarks/compression/savings.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from codeoid.compressors import compress_bytes, load_rules
from codeoid.text import estimate_tokens

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "compress"
sys.path.insert(0, str(ROOT / "tests" / "compressors"))

from detectors import DETECTORS_BY_KIND, violations  # noqa: E402  (test helpers, found through sys.path)


def tokens(data: bytes) -> int:
    return estimate_tokens(data.decode("utf-8", "replace"))


def rtk_violations(kind: str, raw: bytes, output: bytes) -> list[str]:
    return [problem for detector in DETECTORS_BY_KIND[kind] for problem in detector(raw, output)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args()
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
