"""specs/keys_and_doors.yaml, the credit-assignment benchmark's world: five
decisions, the first two depending on which side room holds the key, and a
reward only when the treasure room is reached."""

from __future__ import annotations

import pytest

from .recipe_helpers import load, play, totals


@pytest.fixture(scope="module")
def world():  # type: ignore[no-untyped-def]
    return load("keys_and_doors")


def test_samples_put_the_key_on_either_side(world) -> None:  # type: ignore[no-untyped-def]
    samples = world.load_samples(limit=200)
    assert {s["key_room"] for s in samples} == {"west", "east"}


@pytest.mark.parametrize("side,back", [("west", "east"), ("east", "west")])
def test_the_five_decisions_reach_the_treasure(world, side: str, back: str) -> None:  # type: ignore[no-untyped-def]
    sample = {"id": "s", "key_room": side, "colour": "red"}
    path = [f"go[{side}]", "take[key]", f"go[{back}]", "open[door]", "go[north]"]
    trajectory = play(world, sample, path)
    assert trajectory.success and trajectory.termination == "done"
    assert [s.rewards.get("treasure", 0.0) for s in trajectory.steps] == [0, 0, 0, 0, 1.0]


@pytest.mark.parametrize(
    "actions,error",
    [
        (["go[east]", "take[key]"], "there is no key here"),  # the key is west
        (["go[west]", "take[key]", "go[west]"], "a wall blocks the way"),  # the way back is east
        (["open[door]"], "the door is locked"),
        (["go[west]", "open[door]"], "there is no door here"),
        (["go[north]"], "the door is closed"),
    ],
)
def test_a_wrong_decision_is_an_error_and_earns_nothing(world, actions, error) -> None:  # type: ignore[no-untyped-def]
    trajectory = play(world, {"id": "s", "key_room": "west", "colour": "red"}, actions)
    assert error in str(trajectory.steps[len(actions) - 1].observation)
    assert not trajectory.success and totals(trajectory).get("treasure", 0.0) == 0.0


def test_the_held_out_split_is_balanced_over_what_the_task_depends_on(world) -> None:  # type: ignore[no-untyped-def]
    # a greedy policy that ignores the prompt walks one way: on a balanced held-out set
    # it scores the same whichever way that is (docs/algorithms.md)
    held_out = world.load_samples(split="test", limit=32)
    for start in range(0, 32, 8):
        block = held_out[start : start + 8]
        assert len({(s["key_room"], s["colour"]) for s in block}) == 8
    train = world.load_samples(limit=64)
    assert len({(s["key_room"], s["colour"]) for s in train[:8]}) < 8  # independent draws
