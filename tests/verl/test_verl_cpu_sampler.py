"""The CPU stand-in for vLLM (`verl/cpu/rollout.py`'s `HFServer`): a seed samples the
same episodes whatever order the concurrent requests reach it in, so a CPU verl run
with a seed is reproducible and the verl tests' checks do not depend on thread timing."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentspec.runtime.backends.verl.cpu.rollout import HFServer
from agentspec.runtime.text.tiny_model import build_tiny

PARAMS = {"max_tokens": 12, "temperature": 1.0}


def sampled(server: HFServer, prompts: list[list[int]]) -> dict[int, list[list[int]]]:
    """Each prompt's sampled continuations, in the order the prompt's requests were asked."""

    async def ask_all() -> list[list[int]]:
        outs = await asyncio.gather(*(server.generate(p, PARAMS) for p in prompts))
        return [o.token_ids for o in outs]

    by_prompt: dict[int, list[list[int]]] = {}
    for prompt, ids in zip(prompts, asyncio.run(ask_all()), strict=True):
        by_prompt.setdefault(prompt[0], []).append(ids)
    return by_prompt


def test_a_seed_samples_the_same_whatever_the_order_of_requests(tmp_path: Path) -> None:
    model = build_tiny(["the cat sat on the mat", "a dog ran in the park"] * 8, tmp_path / "m")
    del model
    prompts = [[5, 6, 7], [9, 10], [5, 6, 7], [9, 10], [11]]
    forward = sampled(HFServer(str(tmp_path / "m"), seed=3), prompts)
    backward = sampled(HFServer(str(tmp_path / "m"), seed=3), prompts[::-1])
    # a prompt's requests are interchangeable: the same multiset of samples
    assert {k: sorted(v) for k, v in forward.items()} == {k: sorted(v) for k, v in backward.items()}
    # not vacuous: two requests of one prompt draw different streams, another seed others
    assert forward[5][0] != forward[5][1]
    other = sampled(HFServer(str(tmp_path / "m"), seed=4), prompts)
    assert other != forward
