"""The switch panel of specs/panel.yaml and specs/panel_end.yaml: its samples and
the demonstrator its warm start clones.

A panel has :data:`SWITCHES` switches in a row, each under a red or a green lamp:
2 ** 12 = 4,096 colourings. A fixed quarter of them (1,024, the same on every
machine and for every seed) is held out: the ``test`` split draws only from them,
every other split only from the other 3,072, so held-out evaluation sees colourings
that training never shows.

The obvious rule (red: up, green: down) is what the prompt states and what
:func:`follow_the_lamps` does; the spec's reward also knows which switches are wired
backwards, which neither the prompt nor the demonstrator says.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from agentspec.stdlib.data import Sample, register_generator, split_seed

SWITCHES = 12
COLOURINGS = 2**SWITCHES
HELD_OUT = COLOURINGS // 4


def colouring(pattern: int) -> list[str]:
    """The lamps of colouring number ``pattern`` (bit i set: lamp i + 1 is green)."""
    return [("red", "green")[(pattern >> bit) & 1] for bit in range(SWITCHES)]


def held_out_patterns() -> frozenset[int]:
    """The held-out quarter of the colourings: a fixed draw, independent of any seed
    (``random.Random`` of a text seeds through SHA-512, the same on every platform)."""
    return frozenset(random.Random("panel:held-out").sample(range(COLOURINGS), HELD_OUT))


@register_generator("panel", fields=("id", "lamps"))
def panel(*, split: str = "train", seed: int = 0, count: int = 10_000) -> Iterator[Sample]:
    """Panels of twelve lamps. ``test`` (the held-out split): the 1,024 held-out
    colourings, every 1,024 samples each once in a random order; any other split:
    independent draws from the other 3,072."""
    rng = random.Random(split_seed(split, seed))
    held_out = held_out_patterns()
    pool = sorted(held_out) if split == "test" else sorted(set(range(COLOURINGS)) - held_out)
    index = 0
    while index < count:
        batch = rng.sample(pool, len(pool)) if split == "test" else [rng.choice(pool)]
        for pattern in batch[: count - index]:
            yield {"id": f"{split}-{index}", "lamps": colouring(pattern)}
            index += 1


def follow_the_lamps(sample: Mapping[str, Any]) -> list[str]:
    """The demonstrator of the panel's warm start (`training.warm_start_demonstrator`):
    every switch set as the prompt says (red: up, green: down), the backwards ones
    included, so it sets only the others right and never succeeds."""
    return [f"set[{'up' if lamp == 'red' else 'down'}]" for lamp in sample["lamps"]]
