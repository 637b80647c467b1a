"""Engine throughput on large synthetic outputs, and what choosing a rule costs a fresh process.

Throughput: a pytest -v run, a grep -rn and a find listing, each generated to --megabytes, streamed through
`Compressor` in 64 KiB chunks as `codeoid-compress` would. Rule load: `load_rules` with no cache (every TOML
file parsed), with a warm cache, and the import of `codeoid.compressors` in a fresh interpreter.

    .venv/bin/python benchmarks/compression/engine_speed.py [--megabytes 100]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

from codeoid.compressors import Compressor, load_rules

CHUNK = 1 << 16
NO_USER_RULES = "/nonexistent/codeoid-user-rules"


def pytest_lines() -> Iterator[bytes]:
    index = 0
    while True:
        index += 1
        if index % 500 == 0:
            yield b"tests/test_mod%04d.py::test_case_%07d FAILED                     [ 50%%]\n" % (index % 97, index)
        else:
            yield b"tests/test_mod%04d.py::test_case_%07d PASSED                     [ 50%%]\n" % (index % 97, index)


def grep_lines() -> Iterator[bytes]:
    index = 0
    while True:
        index += 1
        yield b"src/package/module_%05d.py:%d:    value = compute(self, item)  # match here\n" % (index // 40, index)


def find_lines() -> Iterator[bytes]:
    index = 0
    while True:
        index += 1
        yield b"./src/pkg%03d/sub%03d/file_%07d.py\n" % (index // 3000, index // 100 % 1000, index)


def stream(rule_command: str, lines: Callable[[], Iterator[bytes]], megabytes: int) -> tuple[float, int, int]:
    rule = load_rules(user_dir=NO_USER_RULES).for_command(rule_command)
    assert rule is not None
    chunk_lines: list[bytes] = []
    source = lines()
    while sum(map(len, chunk_lines)) < CHUNK:
        chunk_lines.append(next(source))
    chunk = b"".join(chunk_lines)  # one realistic chunk, repeated, so generation does not dominate the timing
    engine = Compressor(rule)
    written = 0
    start = time.perf_counter()
    for _ in range(megabytes * (1 << 20) // len(chunk)):
        written += len(engine.feed(chunk))
    written += len(engine.finish())
    elapsed = time.perf_counter() - start
    return engine.result.raw_bytes / elapsed / 1e6, engine.result.raw_bytes, written


def timed(function: Callable[[], object], runs: int = 30) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=100)
    args = parser.parse_args()
    for name, command, lines in (("pytest -v", "pytest -v", pytest_lines), ("grep -rn", "grep -rn x .", grep_lines),
                                 ("find", "find .", find_lines)):
        speed, raw, written = stream(command, lines, args.megabytes)
        print(f"{name:10} {raw / 1e6:8.1f} MB in, {written / 1e3:9.1f} kB out: {speed:6.1f} MB/s")
    with tempfile.TemporaryDirectory() as cache:
        cold = timed(lambda: load_rules(user_dir=NO_USER_RULES))
        load_rules(user_dir=NO_USER_RULES, cache_dir=cache)
        warm = timed(lambda: load_rules(user_dir=NO_USER_RULES, cache_dir=cache))
    rules = load_rules(user_dir=NO_USER_RULES)
    match = timed(lambda: rules.for_command("cd sub && python -m pytest -x tests | tail -50"), runs=200)
    print(f"load_rules: {cold:.2f} ms parsing every file, {warm:.2f} ms from the cache; "
          f"resolve + match one command: {match:.3f} ms")
    imports = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import codeoid.compressors"], check=True)
        imports.append(time.perf_counter() - start)
    baseline = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        baseline.append(time.perf_counter() - start)
    print(f"fresh interpreter importing codeoid.compressors: {statistics.median(imports) * 1000:.0f} ms "
          f"(python -c pass: {statistics.median(baseline) * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
