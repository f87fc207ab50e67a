"""A tiny external environment for the `environment` starter spec (`agentspec init`).

Copy it into your project and change it: an adapter is any
:class:`~agentspec.runtime.compiled.env.EnvironmentAdapter` with async
``reset(sample) -> str`` and ``step(command) -> str`` that keeps ``info`` up to
date (``done`` ends the episode; every key is readable as ``env.NAME``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agentspec.runtime.compiled.env import EnvironmentAdapter

__all__ = ["CodeLock"]


class CodeLock(EnvironmentAdapter):
    """A combination lock whose code is the answer to the sample's question."""

    def __init__(self, max_attempts: int = 3) -> None:
        self.max_attempts = max_attempts
        self.code = 0
        self.info: dict[str, Any] = {}

    async def reset(self, sample: Mapping[str, Any]) -> str:
        self.code = int(sample["answer"])
        self.info = {"done": False, "won": False, "attempts": 0}
        return f"A lock asks: {sample['question']} Enter the answer as `enter N`."

    async def step(self, command: str) -> str:
        match = re.fullmatch(r"enter\s+(-?\d+)", command.strip(), flags=re.IGNORECASE)
        if match is None:
            return "The lock only understands `enter N`."
        self.info["attempts"] += 1
        guess = int(match.group(1))
        if guess == self.code:
            self.info.update(done=True, won=True)
            return "Click. The lock opens."
        if self.info["attempts"] >= self.max_attempts:
            self.info["done"] = True
            return "The lock jams. Too many wrong codes."
        return f"Wrong code: the answer is {'higher' if guess < self.code else 'lower'}."
