"""Procedural worlds for the per-sample-state recipes: a gridworld and an
airline service desk. Both are generated from a seed, so they work on any
machine, and every sample carries what its oracle needs (a shortest path; the
resolution of the customer's request).
"""

from __future__ import annotations

import copy
import random
from collections import deque
from collections.abc import Iterator
from typing import Any

from agentspec.stdlib.data import DataError, Sample, register_generator, split_seed

MOVES = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}


def shortest_path(
    rows: list[str], start: tuple[int, int], goal: tuple[int, int]
) -> list[str] | None:
    """Moves (`up`, `down`, `left`, `right`) of a shortest path, or None if the goal is walled off."""
    previous: dict[tuple[int, int], tuple[tuple[int, int], str] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            moves: list[str] = []
            while previous[cell] is not None:
                cell, move = previous[cell]  # type: ignore[misc]
                moves.append(move)
            return moves[::-1]
        for move, (dx, dy) in MOVES.items():
            x, y = cell[0] + dx, cell[1] + dy
            inside = 0 <= y < len(rows) and 0 <= x < len(rows[0])
            if inside and rows[y][x] != "#" and (x, y) not in previous:
                previous[(x, y)] = (cell, move)
                queue.append((x, y))
    return None


@register_generator("gridworld", fields=("id", "rows", "start", "goal", "path"))
def gridworld(
    *,
    split: str = "train",
    seed: int = 0,
    count: int = 10_000,
    width: int = 6,
    height: int = 6,
    wall_density: float = 0.25,
    min_distance: int = 4,
    max_distance: int = 16,
) -> Iterator[Sample]:
    """Mazes for specs/gridworld.yaml: `rows` (`#` walls, `.` floor), a `start`
    and a `goal` ([x, y]) with the goal reachable in `min_distance` to
    `max_distance` moves, and `path`, a shortest path (the oracle's moves)."""
    if width < 2 or height < 2 or not 0 <= wall_density < 1:
        raise DataError("gridworld: need width, height >= 2 and 0 <= wall_density < 1")
    rng = random.Random(split_seed(split, seed))
    cells = [(x, y) for y in range(height) for x in range(width)]
    index = 0
    for _ in range(count * 100):
        if index == count:
            return
        walls = {c for c in cells if rng.random() < wall_density}
        free = [c for c in cells if c not in walls]
        if len(free) < 2:
            continue
        start, goal = rng.sample(free, 2)
        rows = [
            "".join("#" if (x, y) in walls else "." for x in range(width)) for y in range(height)
        ]
        path = shortest_path(rows, start, goal)
        if path is None or not min_distance <= len(path) <= max_distance:
            continue
        yield {
            "id": f"{split}-{index}",
            "rows": rows,
            "start": list(start),
            "goal": list(goal),
            "path": path,
        }
        index += 1
    raise DataError("gridworld: could not place enough reachable goals; lower wall_density")


AIRPORTS = ["SFO", "JFK", "ORD", "SEA", "BOS", "DEN"]
CABINS = ["basic", "economy", "business"]
NAMES = ["ana", "ben", "chen", "dara", "eli", "fay", "gus", "hana"]


def _flights(rng: random.Random, route: tuple[str, str], dates: list[str]) -> dict[str, Any]:
    """Flights on the customer's route (several, different prices) and elsewhere."""
    flights: dict[str, Any] = {}
    numbers = rng.sample(range(100, 1000), 8)
    prices = rng.sample(range(120, 600, 10), 8)  # distinct: "the cheapest" is one flight
    for number, price in zip(numbers[:4], prices[:4], strict=True):
        flights[f"F{number}"] = {
            "origin": route[0],
            "destination": route[1],
            "date": rng.choice(dates),
            "price": price,
            "seats": rng.randint(0, 4),
        }
    for number, price in zip(numbers[4:], prices[4:], strict=True):
        origin, destination = rng.sample(AIRPORTS, 2)
        flights[f"F{number}"] = {
            "origin": origin,
            "destination": destination,
            "date": rng.choice(dates),
            "price": price,
            "seats": rng.randint(1, 4),
        }
    return flights


def _resolve(db: dict[str, Any], request: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The database after a policy-abiding agent handled `request`, and how (for the oracle)."""
    after = copy.deepcopy(db)
    reservation = after["reservations"][request["reservation"]]
    if request["kind"] == "cancel":
        if reservation["cabin"] == "basic":
            return after, {"kind": "refuse", "flight": ""}
        reservation["status"] = "cancelled"
        after["flights"][reservation["flight"]]["seats"] += reservation["passengers"]
        return after, {"kind": "cancel", "flight": ""}
    old = after["flights"][reservation["flight"]]
    options = [
        (f["price"], fid)
        for fid, f in sorted(after["flights"].items())
        if fid != reservation["flight"]
        and f["origin"] == old["origin"]
        and f["destination"] == old["destination"]
        and f["seats"] >= reservation["passengers"]
    ]
    if not options:
        return after, {"kind": "refuse", "flight": ""}
    _, new = min(options)
    old["seats"] += reservation["passengers"]
    after["flights"][new]["seats"] -= reservation["passengers"]
    reservation["flight"] = new
    return after, {"kind": "change", "flight": new}


@register_generator(
    "airline_service",
    fields=("id", "user", "reservation", "kind", "db", "expected_db", "resolution"),
)
def airline_service(
    *, split: str = "train", seed: int = 0, count: int = 10_000
) -> Iterator[Sample]:
    """Customer requests for specs/airline_service.yaml, each over its own
    database of flights and reservations: `db`, the `user` asking, the
    `reservation` and `kind` (`change` to the cheapest other flight on the same
    route with enough seats, or `cancel`) of the request, `expected_db` (the
    database once the request is handled by the policy) and `resolution` (what
    the oracle does: change, cancel or refuse)."""
    rng = random.Random(split_seed(split, seed))
    dates = ["2025-05-01", "2025-05-02", "2025-05-03"]
    for index in range(count):
        route = tuple(rng.sample(AIRPORTS, 2))
        flights = _flights(rng, route, dates)  # type: ignore[arg-type]
        on_route = [fid for fid, f in flights.items() if f["origin"] == route[0]]
        owner, other = rng.sample(NAMES, 2)
        reservations = {}
        for number, user in zip(
            rng.sample(range(1000, 10000), 3), (owner, other, owner), strict=True
        ):
            reservations[f"R{number}"] = {
                "user": user,
                "flight": rng.choice(on_route),
                "passengers": rng.randint(1, 2),
                "cabin": rng.choice(CABINS),
                "status": "booked",
            }
        db = {"flights": flights, "reservations": reservations}
        reservation = next(r for r, v in reservations.items() if v["user"] == owner)
        request = {"kind": rng.choice(["change", "change", "cancel"]), "reservation": reservation}
        expected, resolution = _resolve(db, request)
        yield {
            "id": f"{split}-{index}",
            "user": owner,
            "reservation": reservation,
            "kind": request["kind"],
            "db": db,
            "expected_db": expected,
            "resolution": resolution,
        }
