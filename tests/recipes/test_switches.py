"""specs/switches.yaml, the per-step task of the credit-assignment benchmark: four
independent decisions, each rewarded as it is made."""

from __future__ import annotations

import itertools

import pytest

from .recipe_helpers import load, play, totals


@pytest.fixture(scope="module")
def world():  # type: ignore[no-untyped-def]
    return load("switches")


def test_the_held_out_split_holds_every_colouring_once_per_sixteen(world) -> None:  # type: ignore[no-untyped-def]
    held_out = world.load_samples(split="test", limit=32)
    for block in (held_out[:16], held_out[16:]):
        assert sorted(tuple(s["lamps"]) for s in block) == sorted(
            itertools.product(("red", "green"), repeat=4)
        )
    train = world.load_samples(limit=200)
    assert {lamp for s in train for lamp in s["lamps"]} == {"red", "green"}
    assert all(len(s["lamps"]) == 4 for s in train)


@pytest.mark.parametrize("lamps", [["red", "green", "green", "red"], ["green"] * 4])
def test_each_switch_is_rewarded_when_set_and_the_fourth_ends_the_episode(world, lamps) -> None:  # type: ignore[no-untyped-def]
    sample = {"id": "s", "lamps": lamps}
    right = ["up" if lamp == "red" else "down" for lamp in lamps]
    actions = [f"set[{p}]" for p in right[:2]] + [
        f"set[{'down' if p == 'up' else 'up'}]" for p in right[2:]
    ]
    trajectory = play(world, sample, actions)
    assert trajectory.termination == "done" and not trajectory.success
    assert [s.rewards.get("switch", 0.0) for s in trajectory.steps] == [0.25, 0.25, 0.0, 0.0]
    assert f"The lamp over switch 2 is {lamps[1]}." in str(trajectory.steps[0].observation)

    solved = play(world, sample, [f"set[{p}]" for p in right])
    assert solved.success and totals(solved)["switch"] == 1.0


def test_a_position_that_is_not_up_or_down_sets_nothing(world) -> None:  # type: ignore[no-untyped-def]
    trajectory = play(world, {"id": "s", "lamps": ["red"] * 4}, ["set[left]", "set[up]"] * 3)
    first, second = trajectory.steps[:2]
    assert "a switch goes up or down, not left" in str(first.observation)
    assert first.rewards.get("switch", 0.0) == 0.0
    assert "Switch 1 is up." in str(second.observation) and second.rewards["switch"] == 0.25
    # six turns, three of them wasted: the episode ends at max_steps with three switches set
    assert trajectory.termination == "max_steps" and totals(trajectory)["switch"] == 0.75
