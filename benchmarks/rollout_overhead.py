"""Rollout overhead of the agentspec runtime (issue 3).

Measures, on this machine:

1. env steps per second with a zero-latency tool and a policy that answers
   instantly (the runtime's own cost per step: context building, parsing, tool
   dispatch, step recording);
2. with a tool that takes 100 ms, the wall time of 32 concurrent episodes
   divided by the wall time of one (1.0 = perfect overlap; target <= 1.3);
3. with a tiny HFPolicy (hidden 64, 2 layers) generating, the share of rollout
   wall time spent outside the model (target <= 5 %).

Run: ``python benchmarks/rollout_overhead.py [--json out.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from typing import Any, ClassVar

from agentspec.runtime import (
    AgentEnvLoop,
    BaseTool,
    LoopConfig,
    SamplingParams,
    ScriptedPolicy,
    ToolContext,
    ToolEnv,
    run_episodes,
)

CALL = '<tool_call>{"name": "echo", "arguments": {"text": "ping"}}</tool_call>'


class Echo(BaseTool):
    name = "echo"
    description = "Echo the text back, after `latency` seconds."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }

    def __init__(self, latency: float) -> None:
        super().__init__()
        self.latency = latency

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
        if self.latency:
            await asyncio.sleep(self.latency)
        return args["text"]


def _loop(
    policy: Any, tok: Any, latency: float, steps: int, max_new_tokens: int = 64, fmt: str = "hermes"
) -> AgentEnvLoop:
    config = LoopConfig(
        max_steps=steps,
        sampling=SamplingParams(max_new_tokens=max_new_tokens, seed=0, ignore_eos=True),
        end_on_response_truncated=False,
        max_concurrent_tool_calls=64,
    )
    return AgentEnvLoop(
        lambda: ToolEnv([Echo(latency)], fmt, system_prompt="Call echo."),
        policy,
        tok,
        config=config,
    )


def _wall(loop: AgentEnvLoop, n: int) -> tuple[float, int]:
    start = time.perf_counter()
    trajs = asyncio.run(run_episodes(loop, [{"prompt": "Echo ping."}] * n))
    return time.perf_counter() - start, sum(len(t.steps) for t in trajs)


def steps_per_second(tok: Any) -> float:
    loop = _loop(ScriptedPolicy([CALL], tok), tok, latency=0.0, steps=8)
    _wall(loop, 8)  # warm-up
    rates = []
    for _ in range(3):
        wall, steps = _wall(loop, 256)
        rates.append(steps / wall)
    return statistics.median(rates)


def concurrency_ratio(tok: Any) -> tuple[float, float, float]:
    loop = _loop(ScriptedPolicy([CALL], tok), tok, latency=0.1, steps=5)
    one = statistics.median(_wall(loop, 1)[0] for _ in range(3))
    many = statistics.median(_wall(loop, 32)[0] for _ in range(3))
    return many / one, one, many


def outside_model_share(model: Any, tok: Any) -> tuple[float, float, float, int]:
    from agentspec.runtime.policies.hf import HFPolicy

    policy = HFPolicy(model, tok)
    # react: the untrained model's text is a parse error, so every episode runs all
    # its steps; ignore_eos: every response is 64 tokens, as in a steady rollout.
    loop = _loop(policy, tok, latency=0.0, steps=4, max_new_tokens=64, fmt="react")
    _wall(loop, 8)  # warm-up
    policy.model_seconds = 0.0
    wall, steps = _wall(loop, 64)
    return 1.0 - policy.model_seconds / wall, wall, policy.model_seconds, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    import torch

    from agentspec.runtime.text.tiny_model import build_tiny

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    texts = [
        f"Call echo. Echo ping. {CALL} <tool_response>\nping\n</tool_response> {i}"
        for i in range(500)
    ]
    model, tok = build_tiny(texts, vocab_size=1024, seed=0)

    sps = steps_per_second(tok)
    ratio, one, many = concurrency_ratio(tok)
    share, wall, model_s, steps = outside_model_share(model, tok)
    figures = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}",
        "zero_latency_env_steps_per_s": round(sps),
        "latency_100ms_wall_1_episode_s": round(one, 3),
        "latency_100ms_wall_32_episodes_s": round(many, 3),
        "latency_100ms_ratio_32_over_1": round(ratio, 3),
        "hf_tiny_64_episodes_wall_s": round(wall, 3),
        "hf_tiny_model_s": round(model_s, 3),
        "hf_tiny_steps": steps,
        "hf_tiny_share_outside_model": round(share, 4),
    }
    print(f"machine: {figures['machine']}")
    print(f"zero-latency tool, instant policy: {sps:,.0f} env steps/s (256 episodes x 8 steps)")
    print(
        f"100 ms tool, 5 steps: 1 episode {one:.3f} s, 32 concurrent {many:.3f} s -> ratio {ratio:.3f} (target <= 1.3)"
    )
    print(
        f"tiny HFPolicy, 64 episodes x 4 steps x 64 new tokens: wall {wall:.2f} s, model {model_s:.2f} s "
        f"-> {100 * share:.1f} % outside the model (target <= 5 %)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    from machine import with_load_average

    with_load_average(main)
