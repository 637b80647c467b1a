"""Throughput and peak memory of `codeoid-compress` on a large stdout, against `cat` and a pass-through.

A file of realistic lines (a `find` listing, a `pytest -v` run) is written once, then piped through:
`cat` (the floor), `codeoid-compress` naming a command no rule applies to (pass-through), and
`codeoid-compress` naming the command whose built-in rule applies (archive + compress). Each run gets a fresh
store, so archiving the raw bytes (all of them, before anything is printed) is part of the time.

    .venv/bin/python benchmarks/compress_throughput.py [--size-mb 100] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "find listing": ("find .", lambda i: f"./src/package_{i % 97:02d}/module_{i % 1013:04d}/file_{i:08d}.py\n"),
    "pytest -v": ("pytest -v", lambda i: f"tests/test_suite_{i % 50:02d}.py::test_case_{i:08d} PASSED"
                                         f"{' ' * 20}[ {i % 100:2d}%]\n"),
}


def write_input(path: str, size: int, make: Callable[[int], str]) -> int:
    written, index = 0, 0
    with open(path, "wb") as file:
        while written < size:
            block = "".join(make(index + k) for k in range(10_000)).encode()
            file.write(block)
            written += len(block)
            index += 10_000
    return written


def run(argv: list[str], source: str, env: dict[str, str]) -> tuple[float, int, int]:
    """Wall seconds, bytes printed and peak RSS (KiB) of one run reading `source` on stdin."""
    with open(source, "rb") as stdin:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, env=env)
        assert process.stdout is not None
        printed = 0
        while chunk := process.stdout.read(1 << 20):
            printed += len(chunk)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - start
    return elapsed, printed, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    compress = str(BIN / "codeoid-compress")
    rows: list[tuple[str, str, float, float, int, float]] = []
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "XDG_CONFIG_HOME": os.path.join(scratch, "config")}
        for shape, (command, line) in SHAPES.items():
            source = os.path.join(scratch, "input")
            size = write_input(source, args.size_mb * 1_000_000, line)
            for label, argv in (("cat", ["cat"]),
                                ("codeoid-compress, no rule", [compress, "--command", "uname"]),
                                ("codeoid-compress, rule", [compress, "--command", command])):
                run_env = {**env, "CODEOID_HOME": os.path.join(scratch, f"home-{len(rows)}")}
                elapsed, printed, peak_kib = run(argv, source, run_env)
                rows.append((shape, label, size / elapsed / 1e6, elapsed, printed, peak_kib / 1024))
            os.remove(source)
    if args.markdown:
        print(f"| input ({args.size_mb} MB) | through | MB/s | seconds | bytes out | peak RSS MB |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        for shape, label, rate, elapsed, printed, peak in rows:
            print(f"| {shape} | {label} | {rate:.1f} | {elapsed:.1f} | {printed:,} | {peak:.0f} |")
        return
    for shape, label, rate, elapsed, printed, peak in rows:
        print(f"{shape:<14} {label:<27} {rate:7.1f} MB/s {elapsed:7.1f} s  out {printed:>12,} B  peak {peak:5.0f} MB")


if __name__ == "__main__":
    main()
