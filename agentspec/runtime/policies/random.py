"""A policy that samples token ids uniformly: the floor any trained policy must beat."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from agentspec.runtime.episode.policy import Generation, SamplingParams


class RandomPolicy:
    """Uniform over `vocab_size` ids; stops at `eos_token_id` or `max_new_tokens`.

    Each token's log-prob is −log(vocab_size), exactly what it was sampled with.
    """

    def __init__(self, vocab_size: int, eos_token_id: int | None, seed: int = 0) -> None:
        self.vocab_size = vocab_size
        self.eos_token_id = eos_token_id
        self.rng = random.Random(seed)

    async def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]:
        logprob = -math.log(self.vocab_size)
        out = []
        for _ in prompts:
            ids: list[int] = []
            finish = "length"
            while len(ids) < params.max_new_tokens:
                token = self.rng.randrange(self.vocab_size)
                ids.append(token)
                if token == self.eos_token_id:
                    finish = "stop"
                    break
            out.append(Generation(ids, [logprob] * len(ids), finish))
        return out
