"""Compile time per spec, and the per-step cost of generated code.

1. `compile_spec` (check + lower + emit + ruff format) on every shipped and
   valid spec: median of `--runs`.
2. Environment steps per second of the generated calculator env against the
   hand-written one in tests/runtime/helpers.py, each driven by the same loop
   and the same oracle turns with a zero-cost scripted policy, so the figure
   is the env's own overhead (parsing, tools, rewards, bookkeeping).

    .venv/bin/python benchmarks/compile_speed.py [--runs 5] [--episodes 400]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from runtime.helpers import CalculatorEnv, calculator_oracle, calculator_samples  # noqa: E402

from agentspec.compiler.build import compile_spec, import_spec  # noqa: E402
from agentspec.runtime import (  # noqa: E402
    AgentEnvLoop,
    FullHistory,
    LoopConfig,
    SamplingParams,
    ScriptedPolicy,
)
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer  # noqa: E402


def compile_times(runs: int) -> list[tuple[str, float]]:
    specs = [
        ROOT / "specs" / "calculator.yaml",
        *sorted((ROOT / "tests/specs/valid").glob("*.yaml")),
    ]
    out = []
    for spec in specs:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            compile_spec(spec)
            times.append(time.perf_counter() - start)
        out.append((spec.stem, statistics.median(times)))
    return out


def steps_per_second(make_flow, samples, episodes: int) -> float:  # type: ignore[no-untyped-def]
    async def play() -> int:
        trajectories = await asyncio.gather(
            *(make_flow(sample).run(sample) for sample in (samples * episodes)[:episodes])
        )
        return sum(len(t.steps) for t in trajectories)

    start = time.perf_counter()
    steps = asyncio.run(play())
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=400)
    args = parser.parse_args()

    for name, seconds in compile_times(args.runs):
        print(f"compile {name:<24} {seconds * 1000:7.1f} ms (median of {args.runs})")

    tokenizer = ByteTokenizer()
    config = LoopConfig(max_steps=4, sampling=SamplingParams(max_new_tokens=4000))
    samples = calculator_samples(50)

    def handwritten(sample):  # type: ignore[no-untyped-def]
        return AgentEnvLoop(
            CalculatorEnv, ScriptedPolicy(calculator_oracle, tokenizer), tokenizer, config=config
        )

    module = import_spec(ROOT / "specs" / "calculator.yaml")

    def generated(sample):  # type: ignore[no-untyped-def]
        flow = module.FLOW_CLASS(ScriptedPolicy(calculator_oracle, tokenizer), tokenizer)
        flow.config, flow.context = config, FullHistory()  # the hand-written loop's settings
        return flow

    steps_per_second(handwritten, samples, 50)  # warm up imports and caches
    steps_per_second(generated, samples, 50)
    results: dict[str, list[float]] = {"hand-written": [], "generated": []}
    for _ in range(args.runs):
        results["hand-written"].append(steps_per_second(handwritten, samples, args.episodes))
        results["generated"].append(steps_per_second(generated, samples, args.episodes))
    hand = statistics.median(results["hand-written"])
    gen = statistics.median(results["generated"])
    print(f"hand-written calculator env: {hand:8.0f} env steps/s")
    print(f"generated calculator env:    {gen:8.0f} env steps/s")
    print(f"generated / hand-written:    {gen / hand:.2f}x throughput")


if __name__ == "__main__":
    from machine import with_load_average

    with_load_average(main)
