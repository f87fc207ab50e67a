"""Worst-case parse time of adversarial model outputs, per tool-call format.

A model early in RL writes anything; parsing must stay linear in the length of
what it wrote. For each format and each adversarial shape (a unit repeated up
to the length), this times ``parse()`` on a 10k- and a 100k-character output
(the fastest of several runs, in CPU time of this process, so other work on a
shared machine does not count) and prints the ratio: about 10 for linear time,
about 100 for quadratic. It is also timed at twice the length (ratio about 2
for linear time, 4 for quadratic). A summary gives, per format, the worst 100k
time over all shapes. The ``extract`` builtin on repeated ``<answer>`` tags
(the calculator recipe's reward) is timed the same way. Exits 1 if, above the
noise floor, a 10k→100k ratio exceeds ``--max-ratio`` or a 100k→200k ratio
exceeds ``--max-double-ratio`` (generous linear-time checks).

    .venv/bin/python benchmarks/parse_worst_case.py [--chars 100000]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from agentspec.formats import available_formats, get_format
from agentspec.stdlib.text import extract

CALL = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'
HARMONY_CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.calculator <|constrain|>json"
    '<|message|>{"expression": "1+1"}<|call|>'
)

# Shapes every format meets: reasoning tags and plain garbage.
COMMON: dict[str, str] = {
    "think opens": "<think>",
    "think closes": "</think>",
    "think blocks": "<think>x</think>",
    "garbage": "\x00z#{[",
}

# Each shape repeats a unit up to the output's length.
SHAPES: dict[str, dict[str, str]] = {
    "hermes": {
        "close tags": "</tool_call>",
        "open tags": "<tool_call>",
        "valid calls": CALL,
        "open + bracket": "<tool_call>[",
        "open + quote": '<tool_call>"',
        "open + object": '<tool_call>{"name": "',
    },
    "json": {
        "open brackets": "[",
        "open braces": "{",
        "fenced": "```json\n",
        "call-like keys": '{"name": ',
        "whitespace": " \n\t",
        "huge number": "9",
    },
    "react": {
        "action lines": "Action: x\n",
        "input lines": "Action Input: {\n",
        "observations": "Observation:\n",
        "final answers": "Final Answer: x\n",
        "fences": "```\n",
    },
    "bracket": {
        "brackets": "a[",
        "closing": "]",
        "many words": "search[x] ",
        "lines": "go[a]\n",
        "backticks": "`",
    },
    "harmony": {
        "start tokens": "<|start|>",
        "message tokens": "<|message|>",
        "headers": "<|start|>assistant<|channel|>commentary to=functions.x",
        "valid calls": HARMONY_CALL,
        "open JSON": "<|start|>assistant<|channel|>commentary to=functions.x<|message|>{",
        "analysis": "<|start|>assistant<|channel|>analysis<|message|>hmm<|end|>",
        "recipients": " to=",
    },
}


@dataclass(frozen=True)
class Row:
    parser: str
    shape: str
    small: float
    large: float
    double: float

    @property
    def ratio(self) -> float:
        return self.large / max(self.small, 1e-9)

    @property
    def double_ratio(self) -> float:
        return self.double / max(self.large, 1e-9)


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def best_time(fn: Callable[[], object], runs: int) -> float:
    """The fastest of ``runs`` calls, in CPU seconds of this process (other load does not count)."""
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def measure(parser: str, shape: str, unit: str, run: Callable[[str], object], n: int) -> Row:
    small, large, double = _repeat(unit, n // 10), _repeat(unit, n), _repeat(unit, 2 * n)
    return Row(
        parser,
        shape,
        best_time(lambda: run(small), 20),
        best_time(lambda: run(large), 9),
        best_time(lambda: run(double), 9),
    )


def all_rows(n: int) -> list[Row]:
    rows: list[Row] = []
    for name in available_formats():
        parse = get_format(name).parse
        for shape, unit in {**SHAPES.get(name, {}), **COMMON}.items():
            rows.append(measure(name, shape, unit, parse, n))
    for shape, unit in {
        "open answer tags": "<answer>",
        "open-close pairs": "<answer>1</answer>",
    }.items():
        rows.append(
            measure("extract", shape, unit, lambda t: extract(t, "<answer>(.*?)</answer>"), n)
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chars", type=int, default=100_000)
    parser.add_argument("--max-ratio", type=float, default=25.0, help="10k->100k, quadratic ~100")
    parser.add_argument(
        "--max-double-ratio", type=float, default=3.0, help="100k->200k, quadratic ~4"
    )
    parser.add_argument(
        "--noise-floor-ms", type=float, default=1.0, help="ignore ratios of faster 100k runs"
    )
    args = parser.parse_args()
    n = args.chars
    rows = all_rows(n)
    k = n // 1000
    print(
        f"{'parser':<8} {'output shape':<16} {k // 10:>6}k  {k:>7}k  {2 * k:>7}k"
        f"  {k // 10}k->{k}k  {k}k->{2 * k}k"
    )
    for r in rows:
        print(
            f"{r.parser:<8} {r.shape:<16} {r.small * 1e3:5.2f}ms {r.large * 1e3:6.2f}ms"
            f" {r.double * 1e3:6.2f}ms {r.ratio:9.1f} {r.double_ratio:10.1f}"
        )
    print(f"\nworst case per parser at {k}k characters (ratios above the noise floor)")
    failed = False
    for parser_name in dict.fromkeys(r.parser for r in rows):
        mine = [r for r in rows if r.parser == parser_name]
        slowest = max(mine, key=lambda r: r.large)
        timed = [r for r in mine if r.large * 1e3 >= args.noise_floor_ms]
        ratio = max((r.ratio for r in timed), default=0.0)
        double_ratio = max((r.double_ratio for r in timed), default=0.0)
        failed |= ratio > args.max_ratio or double_ratio > args.max_double_ratio
        print(
            f"{parser_name:<8} {slowest.large * 1e3:6.2f} ms ({slowest.shape});"
            f" worst ratio {k // 10}k->{k}k {ratio:.1f} (linear ~10, quadratic ~100),"
            f" {k}k->{2 * k}k {double_ratio:.1f} (linear ~2, quadratic ~4)"
        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    from machine import with_load_average

    with_load_average(main)
