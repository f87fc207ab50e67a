"""The user code of all_reward_events.yaml: a unit converter and its samples."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

FACTORS = {"m": 1.0, "km": 1000.0, "cm": 0.01, "mi": 1609.344}


def convert(quantity: float, unit: str, target: str) -> float | None:
    """`quantity` in `unit`, expressed in `target` (None for an unknown unit)."""
    if unit not in FACTORS or target not in FACTORS:
        return None
    return quantity * FACTORS[unit] / FACTORS[target]


def samples(*, split: str = "train", count: int = 100) -> Iterator[dict[str, Any]]:
    """Conversion questions: `generator:my_units.conversions:samples`."""
    rng = random.Random(split)
    units = sorted(FACTORS)
    for index in range(count):
        unit, target = rng.sample(units, 2)
        quantity = float(rng.randint(1, 100))
        yield {
            "id": f"{split}-{index}",
            "quantity": quantity,
            "unit": unit,
            "target": target,
            "expected": convert(quantity, unit, target),
        }
