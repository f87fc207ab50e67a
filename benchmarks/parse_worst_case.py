"""Worst-case parse time of adversarial model outputs, per tool-call format.

A model early in RL writes anything; parsing must stay linear in the length of
what it wrote. For each format and each adversarial shape, this times
`parse()` on a 100k-character output and on one twice as long, and prints the
ratio (about 2 for linear time, about 4 for quadratic). The `extract` builtin
on repeated `<answer>` tags (the calculator recipe's reward) is timed the same
way. Exits 1 if a ratio exceeds `--max-ratio` (a generous linear-time check).

    .venv/bin/python benchmarks/parse_worst_case.py [--chars 100000] [--max-ratio 3.5]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from agentspec.runtime.formats import get_format
from agentspec.stdlib.text import extract

CALL = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'

# Each shape repeats a unit up to n characters.
SHAPES: dict[str, dict[str, str]] = {
    "hermes": {
        "close tags": "</tool_call>",
        "open tags": "<tool_call>",
        "valid calls": CALL,
        "nested braces": "<tool_call>" + "[",
        "garbage": "\x00z#{",
    },
    "json": {
        "open brackets": "[",
        "fenced": "```json\n",
        "call-like keys": '{"name": ',
        "whitespace": " \n\t",
        "huge number": "9",
    },
    "react": {
        "action lines": "Action: x\n",
        "input lines": "Action Input: {\n",
        "observations": "Observation:\n",
        "garbage": "\x00z#{",
    },
    "bracket": {
        "brackets": "a[",
        "closing": "]",
        "many words": "search[x] ",
        "lines": "go[a]\n",
    },
}


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def best_time(fn: Callable[[], object], runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chars", type=int, default=100_000)
    parser.add_argument("--max-ratio", type=float, default=3.5)
    args = parser.parse_args()
    n = args.chars
    rows: list[tuple[str, str, float, float]] = []

    def measure(name: str, shape: str, unit: str, run: Callable[[str], object]) -> None:
        small, large = _repeat(unit, n), _repeat(unit, 2 * n)
        rows.append((name, shape, best_time(lambda: run(small)), best_time(lambda: run(large))))

    for name, shapes in SHAPES.items():
        for shape, unit in shapes.items():
            measure(name, shape, unit, get_format(name).parse)
    for shape, unit in {
        "open answer tags": "<answer>",
        "open-close pairs": "<answer>1</answer>",
    }.items():
        measure("extract", shape, unit, lambda text: extract(text, "<answer>(.*?)</answer>"))
    print(f"{'parser':<8} {'output':<18} {n // 1000}k chars   {2 * n // 1000}k chars   ratio")
    worst = 0.0
    for name, shape, small, large in rows:
        ratio = large / max(small, 1e-6)
        worst = max(worst, ratio if small > 1e-3 else 0.0)  # sub-millisecond: timer noise
        print(f"{name:<8} {shape:<18} {small * 1e3:8.2f} ms {large * 1e3:9.2f} ms   {ratio:4.1f}")
    print(f"worst ratio over cases above 1 ms: {worst:.1f} (linear ~2, quadratic ~4)")
    sys.exit(0 if worst <= args.max_ratio else 1)


if __name__ == "__main__":
    main()
