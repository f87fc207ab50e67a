"""The oracle of grid_push.yaml: the shortest sequence of moves that pushes
every box onto a goal, by breadth-first search over (player, boxes). The
rules are the spec's: a move into a wall is refused, a box moves when pushed
into a free cell. `oracle: {hook: grid_solver:solve}` calls `solve(sample)`."""

from __future__ import annotations

from collections import deque
from typing import Any

MOVES = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
MAX_STATES = 200_000


def solve(sample: dict[str, Any]) -> list[str]:
    rows: list[str] = sample["rows"]
    goals = frozenset(sample["goals"])
    start = (sample["start"][0], sample["start"][1], frozenset(sample["boxes"]))
    previous: dict[Any, tuple[Any, str] | None] = {start: None}
    queue = deque([start])
    while queue and len(previous) < MAX_STATES:
        state = queue.popleft()
        x, y, boxes = state
        if boxes <= goals:
            return _path(previous, state)
        for name, (dx, dy) in MOVES.items():
            nx, ny = x + dx, y + dy
            if rows[ny][nx] == "#":
                continue
            ahead, beyond = f"{nx},{ny}", f"{nx + dx},{ny + dy}"
            if ahead in boxes:
                if rows[ny + dy][nx + dx] == "#" or beyond in boxes:
                    continue
                moved = (boxes - {ahead}) | {beyond}
            else:
                moved = boxes
            following = (nx, ny, moved)
            if following not in previous:
                previous[following] = (state, name)
                queue.append(following)
    return []  # no solution: the oracle gate says so


def _path(previous: dict[Any, tuple[Any, str] | None], state: Any) -> list[str]:
    moves: list[str] = []
    step = previous[state]
    while step is not None:
        state, name = step
        moves.append(f"move[{name}]")
        step = previous[state]
    return moves[::-1]
