"""specs/gridworld.yaml and specs/airline_service.yaml: per-sample state from
generated worlds. Each oracle reaches 1.0 through `agentspec run`; random
policies — the random-token policy and a random player of valid actions —
score far lower; the policy's guards refuse violations with their messages
and the penalty."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from .recipe_helpers import load, play, run, totals


@pytest.mark.parametrize(
    ("spec", "component"), [("gridworld", "goal"), ("airline_service", "database")]
)
def test_oracle_scores_one_and_random_far_below(spec: str, component: str, tmp_path: Path) -> None:
    oracle = run(spec, "oracle", 40, tmp_path / "oracle")
    assert oracle.success_rate == 1.0 and oracle.component(component) == 1.0
    assert all(t["termination"] == "done" for t in oracle.trajectories)
    randomly = run(spec, "random", 10, tmp_path / "random")
    assert randomly.component(component) <= 0.1 and randomly.success_rate <= 0.1


@pytest.fixture(scope="module")
def grid():  # type: ignore[no-untyped-def]
    return load("gridworld")


def test_gridworld_samples_differ_and_paths_are_shortest(grid) -> None:  # type: ignore[no-untyped-def]
    from agentspec.stdlib.worlds import shortest_path

    samples = grid.load_samples(limit=50)
    assert len({json.dumps(s["rows"]) for s in samples}) > 40
    for s in samples[:10]:
        assert shortest_path(s["rows"], tuple(s["start"]), tuple(s["goal"])) == s["path"]


def test_gridworld_random_walk_of_valid_moves_is_far_below_the_oracle(grid) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(0)
    samples = grid.load_samples(limit=30)
    reached = 0.0
    for sample in samples:
        moves = [f"move[{rng.choice(['up', 'down', 'left', 'right'])}]" for _ in range(24)]
        reached += totals(play(grid, sample, moves)).get("goal", 0.0)
    assert reached / len(samples) <= 0.3


def test_gridworld_walls_and_edges_are_errors_that_cost(grid) -> None:  # type: ignore[no-untyped-def]
    sample = {
        "id": "g",
        "rows": [".#", ".."],
        "start": [0, 0],
        "goal": [1, 1],
        "path": ["down", "right"],
    }
    trajectory = play(grid, sample, ["move[up]", "move[right]", "move[down]", "move[right]"])
    texts = [s.observation or "" for s in trajectory.steps]
    assert "the edge of the map blocks the way" in texts[0]  # row -1 is not the last row
    assert "a wall blocks the way" in texts[1]
    assert trajectory.success and totals(trajectory) == pytest.approx({"bump": -0.1, "goal": 1.0})


@pytest.fixture(scope="module")
def desk():  # type: ignore[no-untyped-def]
    return load("airline_service")


def call(tool: str, **arguments: str) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call>"


def a_sample(desk, kind: str, resolution: str):  # type: ignore[no-untyped-def]
    return next(
        s
        for s in desk.load_samples(limit=300)
        if s["kind"] == kind and s["resolution"]["kind"] == resolution
    )


def test_cancelling_a_basic_reservation_is_refused_with_the_policy(desk) -> None:  # type: ignore[no-untyped-def]
    sample = a_sample(desk, "cancel", "refuse")
    reservation = sample["reservation"]
    actions = [
        call("get_reservation", reservation_id=reservation),
        call("cancel_reservation", reservation_id=reservation),
        "I am sorry, I cannot cancel it.",
    ]
    trajectory = play(desk, sample, actions)
    assert "Policy: basic-cabin reservations cannot be cancelled." in (
        trajectory.steps[1].observation or ""
    )
    assert totals(trajectory) == {"policy_violation": -0.5, "database": 1.0}  # db untouched


def test_acting_on_another_customers_reservation_is_refused(desk) -> None:  # type: ignore[no-untyped-def]
    sample = a_sample(desk, "change", "change")
    other = next(r for r, v in sample["db"]["reservations"].items() if v["user"] != sample["user"])
    trajectory = play(desk, sample, [call("cancel_reservation", reservation_id=other), "Done."])
    assert f"Policy: reservation {other} belongs to another customer." in (
        trajectory.steps[0].observation or ""
    )
    assert totals(trajectory) == {"policy_violation": -0.5, "database": 0.0}


def test_a_change_to_another_route_is_refused_and_the_wrong_flight_scores_zero(desk) -> None:  # type: ignore[no-untyped-def]
    sample = a_sample(desk, "change", "change")
    db = sample["db"]
    booked = db["flights"][db["reservations"][sample["reservation"]]["flight"]]
    elsewhere = next(f for f, v in db["flights"].items() if v["origin"] != booked["origin"])
    actions = [
        call("get_reservation", reservation_id=sample["reservation"]),
        call("change_flight", reservation_id=sample["reservation"], flight_id=elsewhere),
        "Done.",
    ]
    trajectory = play(desk, sample, actions)
    assert "Policy: a change must keep the origin and destination." in (
        trajectory.steps[1].observation or ""
    )
    assert totals(trajectory) == {"policy_violation": -0.5, "database": 0.0}
