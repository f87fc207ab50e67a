"""Compile time per spec, and the per-step cost of generated code.

1. `compile_spec` (check + lower + emit + ruff format) on every shipped and
   valid spec: median of `--runs`.
2. Environment steps per second of the generated calculator env against the
   hand-written one in tests/runtime/helpers.py, each driven by the same loop
   and the same oracle turns with a zero-cost scripted policy, so the figure
   is the env's own overhead (parsing, tools, rewards, bookkeeping). `--runs`
   repetitions; each plays `--rounds` rounds of `--episodes` concurrent
   episodes per side, the two sides taking turns round by round (so a slower
   stretch of the machine falls on both), and adds each side's rounds up. The
   ratio is the median of the per-repetition ratios, with its range.

   Each repetition is timed by two clocks, both printed: this process's CPU
   time (the default, and the headline ratio: both sides run in this one
   process, so each side's CPU seconds are its own work, which other load on
   the machine barely moves) and the wall clock (what a run waits, but on a
   shared machine one descheduled repetition decides the median). A garbage
   collection runs, untimed, before each timed repetition, and what setup left
   alive is frozen (`gc.freeze`), so no full collection lands on one side by chance.

    .venv/bin/python benchmarks/compile_speed.py [--runs 5] [--rounds 3] [--episodes 400]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
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


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def play(make_flow, samples, episodes: int) -> tuple[int, dict[str, float]]:  # type: ignore[no-untyped-def]
    """One round: the env steps of `episodes` concurrent episodes, and the seconds
    they took by each clock (this process's CPU time, the wall clock)."""

    async def episodes_played() -> int:
        trajectories = await asyncio.gather(
            *(make_flow(sample).run(sample) for sample in (samples * episodes)[:episodes])
        )
        return sum(len(t.steps) for t in trajectories)

    gc.collect()
    start = {name: clock() for name, clock in CLOCKS.items()}
    steps = asyncio.run(episodes_played())
    end = {name: clock() for name, clock in CLOCKS.items()}
    return steps, {name: end[name] - start[name] for name in CLOCKS}


def steps_per_second(sides, samples, episodes: int, rounds: int) -> list[dict[str, float]]:  # type: ignore[no-untyped-def]
    """One repetition: each side's env steps per second by each clock, over
    `rounds` rounds per side, the sides taking turns round by round."""
    steps = [0] * len(sides)
    seconds = [dict.fromkeys(CLOCKS, 0.0) for _ in sides]
    for _ in range(rounds):
        for i, make_flow in enumerate(sides):
            n, took = play(make_flow, samples, episodes)
            steps[i] += n
            for clock in CLOCKS:
                seconds[i][clock] += took[clock]
    return [{c: steps[i] / seconds[i][c] for c in CLOCKS} for i in range(len(sides))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=400, help="concurrent episodes per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side in a repetition")
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

    steps_per_second([handwritten, generated], samples, 50, 1)  # warm up imports and caches
    gc.collect()
    gc.freeze()  # what setup left alive: never collected again
    hand: list[dict[str, float]] = []
    gen: list[dict[str, float]] = []
    for _ in range(args.runs):
        hand_rate, gen_rate = steps_per_second(
            [handwritten, generated], samples, args.episodes, args.rounds
        )
        hand.append(hand_rate)
        gen.append(gen_rate)
    gc.unfreeze()
    for clock in CLOCKS:
        h = [x[clock] for x in hand]
        g = [x[clock] for x in gen]
        ratios = [b / a for a, b in zip(h, g, strict=True)]
        unit = "per CPU second (the default)" if clock == "cpu" else "per wall-clock second"
        print(
            f"{clock} clock, env steps {unit}, median (range) of {args.runs} repetitions"
            f" of {args.rounds} × {args.episodes} episodes per side:"
        )
        print(
            f"  hand-written calculator env: {statistics.median(h):8.0f} ({min(h):.0f}–{max(h):.0f})"
        )
        print(
            f"  generated calculator env:    {statistics.median(g):8.0f} ({min(g):.0f}–{max(g):.0f})"
        )
        print(
            f"  generated / hand-written:    {statistics.median(ratios):.2f}x throughput "
            f"({min(ratios):.2f}–{max(ratios):.2f}, median of per-repetition ratios)"
        )


if __name__ == "__main__":
    from machine import with_load_average

    with_load_average(main)
