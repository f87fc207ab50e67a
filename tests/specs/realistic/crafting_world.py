"""The procedural worlds of crafting.yaml: a goal, the raw resources lying
around, a starting inventory, and the shortest plan that crafts the goal
(the oracle plays it). `agentspec` calls `levels(split=…)` through the spec's
`data.source: generator:crafting_world:levels`."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

RECIPES: dict[str, dict[str, int]] = {
    "plank": {"log": 1},
    "stick": {"plank": 1},
    "table": {"plank": 4},
    "torch": {"stick": 1, "coal": 1},
    "pickaxe": {"plank": 3, "stick": 2},
    "ladder": {"stick": 3},
}
GOALS = ("table", "torch", "pickaxe", "ladder")


def levels(*, split: str = "train", count: int = 200, seed: int = 0) -> Iterator[dict[str, Any]]:
    rng = random.Random(f"{split}:{seed}")
    for i in range(count):
        goal = GOALS[i % len(GOALS)]
        inventory = {"plank": rng.randint(0, 2)} if rng.random() < 0.5 else {}
        plan, gathered = _plan(goal, inventory)
        world = {resource: n + rng.randint(0, 1) for resource, n in gathered.items()}
        world.setdefault("stone", rng.randint(1, 3))  # lies around, makes nothing
        yield {
            "id": f"{split}-{i}",
            "goal": goal,
            "inventory": {k: n for k, n in inventory.items() if n},
            "world": world,
            "plan": plan,
        }


def _plan(goal: str, inventory: dict[str, int]) -> tuple[list[str], dict[str, int]]:
    """The actions that make one `goal` from `inventory` (ingredients first),
    and how many of each raw resource they gather."""
    held = dict(inventory)
    actions: list[str] = []
    gathered: dict[str, int] = {}

    def make(item: str) -> None:
        recipe = RECIPES.get(item)
        if recipe is None:
            gathered[item] = gathered.get(item, 0) + 1
            actions.append(f"gather[{item}]")
        else:
            # Making one ingredient can use up another (a stick takes a plank).
            while any(held.get(k, 0) < n for k, n in recipe.items()):
                make(next(k for k, n in recipe.items() if held.get(k, 0) < n))
            for ingredient, needed in recipe.items():
                held[ingredient] -= needed
            actions.append(f"craft[{item}]")
        held[item] = held.get(item, 0) + 1

    make(goal)
    return actions, gathered
