"""specs/keys_and_chests.yaml, the longer task of the credit-assignment benchmark:
nine decisions, four of them depending on the sample, and a reward only when the
treasure room is reached."""

from __future__ import annotations

import pytest

from .recipe_helpers import load, play, totals

WEST = {"id": "s", "small_key_room": "west", "chest_room": "east", "colour": "red"}


@pytest.fixture(scope="module")
def world():  # type: ignore[no-untyped-def]
    return load("keys_and_chests")


def test_samples_put_the_small_key_on_either_side_and_the_chest_opposite(world) -> None:  # type: ignore[no-untyped-def]
    samples = world.load_samples(limit=200)
    assert {s["small_key_room"] for s in samples} == {"west", "east"}
    assert all(s["chest_room"] != s["small_key_room"] for s in samples)


def test_the_held_out_split_is_balanced_over_side_and_colour(world) -> None:  # type: ignore[no-untyped-def]
    held_out = world.load_samples(split="test", limit=16)
    for block in (held_out[:8], held_out[8:]):
        assert len({(s["small_key_room"], s["colour"]) for s in block}) == 8
        assert all(s["chest_room"] != s["small_key_room"] for s in block)


@pytest.mark.parametrize("key,chest", [("west", "east"), ("east", "west")])
def test_the_nine_decisions_reach_the_treasure(world, key: str, chest: str) -> None:  # type: ignore[no-untyped-def]
    sample = {"id": "s", "small_key_room": key, "chest_room": chest, "colour": "red"}
    path = [
        f"go[{key}]",
        "take[key]",
        f"go[{chest}]",
        f"go[{chest}]",
        "open[chest]",
        "take[key]",
        f"go[{key}]",
        "open[door]",
        "go[north]",
    ]
    trajectory = play(world, sample, path)
    assert trajectory.success and trajectory.termination == "done"
    assert [s.rewards.get("treasure", 0.0) for s in trajectory.steps] == [0] * 8 + [1.0]
    assert "door key" in str(trajectory.steps[5].observation)


@pytest.mark.parametrize(
    "actions,error",
    [
        (["go[east]", "take[key]"], "there is no key here"),  # the small key is west
        (["go[west]", "take[key]", "go[west]"], "a wall blocks the way"),
        (["go[east]", "open[chest]"], "the chest is locked"),  # no small key yet
        (["go[west]", "take[key]", "take[key]"], "there is no key here"),  # taken already
        (["go[west]", "take[key]", "go[east]", "open[door]"], "the door is locked"),
        (["go[west]", "open[chest]"], "there is no chest here"),
        (["go[north]"], "the door is closed"),
    ],
)
def test_a_wrong_decision_is_an_error_and_earns_nothing(world, actions, error) -> None:  # type: ignore[no-untyped-def]
    trajectory = play(world, WEST, actions)
    assert error in str(trajectory.steps[len(actions) - 1].observation)
    assert not trajectory.success and totals(trajectory).get("treasure", 0.0) == 0.0
