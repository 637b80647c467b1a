"""How long a rotation keeps the user waiting, and how big the seed is.

The real `claude` TUI runs under `codeoid run` against the scripted fake API (the e2e rig). Each round fills the
window past the soft threshold, types the next prompt and measures from the moment the UserPromptSubmit hook handed
that prompt over (and blocked it) to the moment the fresh window's first request, carrying the seed and the prompt,
reaches the API. The split shows where the time goes: ending the old `claude` tree, and starting the new one up to
its first request (Claude Code's own start-up, MCP connection included).

    .venv/bin/python benchmarks/rotation.py [--rounds 10] [--markdown]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codeoid.rotation.seed import split_seeded  # noqa: E402
from codeoid.text import estimate_tokens  # noqa: E402
from tests.e2e.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.e2e.rig import ClaudeRig, find_claude  # noqa: E402
from tests.e2e.test_rotation_e2e import filled, ready, small, turn  # noqa: E402

TARGET_SECONDS = 5.0


def measure(rounds: int) -> tuple[list[dict[str, float]], list[str]]:
    claude = find_claude()
    if claude is None:
        raise SystemExit("no claude binary: set CODEOID_CLAUDE_BIN or put claude on PATH")
    root = Path(tempfile.mkdtemp(prefix="codeoid-rotation-bench-"))
    timings, seeds = [], []
    try:
        with FakeAnthropic() as api:
            rig = ClaudeRig(root, api, claude)
            rig.install_codeoid()
            term = rig.supervise(env={"CODEOID_AUTO_ROTATE": "1", "CODEOID_ROTATE_MIN_TURNS": "1"})
            try:
                ready(rig, term)
                for number in range(1, rounds + 1):
                    turn(rig, term, f"work item {number}: a prompt that fills the window", filled("filled", 185_000))
                    rig.wait_for_state(lambda state: state["due"] == "soft")
                    requests_before = len(api.main_requests)
                    api.add(small(f"fresh answer {number}", 4_000))
                    term.type_line(f"follow-up {number} in a fresh window")
                    state = rig.wait_for_state(lambda state, n=number: state["rotation_count"] == n
                                               and state["tokens"] == 4_000, timeout=60)
                    first = api.main_requests[requests_before]
                    rotation = state["last_rotation"]
                    timings.append({
                        "total": first.received_at - rotation["requested_at"],
                        "end_old": rotation["old_window_ended_at"] - rotation["requested_at"],
                        "start_new": first.received_at - rotation["fresh_window_started_at"],
                    })
                    texts = [block.get("text", "") for block in first.messages[-1]["content"]]
                    seed = split_seeded(next(text for text in texts if text.startswith("<rotation_context>")))[0]
                    seeds.append(seed or "")
            finally:
                term.close()
                rig.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return timings, seeds


def report(timings: list[dict[str, float]], seeds: list[str], markdown: bool) -> str:
    def row(name: str, key: str) -> str:
        values = sorted(timing[key] for timing in timings)
        p95 = values[max(0, round(0.95 * len(values)) - 1)]
        median = statistics.median(values)
        return (f"| {name} | {median:.2f} | {p95:.2f} |" if markdown
                else f"{name:<48} median {median:6.2f} s   p95 {p95:6.2f} s")

    sizes = [len(seed) for seed in seeds]
    lines = [f"| rotation ({len(timings)} rounds) | median s | p95 s |", "| --- | ---: | ---: |"] if markdown else []
    lines += [row("blocked prompt -> fresh window's first request", "total"),
              row("  ending the old claude tree", "end_old"),
              row("  fresh claude start -> its first request", "start_new")]
    seed_line = (f"seed: {min(sizes)}-{max(sizes)} characters, about {estimate_tokens(seeds[-1])} tokens "
                 f"(target total <= {TARGET_SECONDS:.0f} s)")
    return "\n".join([*lines, "", seed_line])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--markdown", action="store_true")
    options = parser.parse_args()
    timings, seeds = measure(options.rounds)
    print(report(timings, seeds, options.markdown))


if __name__ == "__main__":
    main()
