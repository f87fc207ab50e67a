"""specs/panel.yaml and specs/panel_end.yaml, the two reward arms of the task where
step-level credit is the whole job: twelve switches, six wired backwards, paid per
switch as it is set or the same total at the end."""

from __future__ import annotations

import pytest

from agentspec.stdlib.panel import (
    COLOURINGS,
    HELD_OUT,
    colouring,
    follow_the_lamps,
    held_out_patterns,
    panel,
)

from .recipe_helpers import load, play, totals

BACKWARDS = (2, 4, 5, 9, 10, 12)


@pytest.fixture(scope="module")
def per_step():  # type: ignore[no-untyped-def]
    return load("panel")


@pytest.fixture(scope="module")
def at_end():  # type: ignore[no-untyped-def]
    return load("panel_end")


def test_a_quarter_of_the_colourings_is_held_out_and_never_trained_on() -> None:
    held_out = held_out_patterns()
    assert len(held_out) == HELD_OUT == 1024 and COLOURINGS == 4096
    assert held_out == held_out_patterns()  # a fixed draw, not a seeded one
    as_lamps = {tuple(colouring(p)) for p in held_out}
    test = [tuple(s["lamps"]) for s in panel(split="test", count=2 * HELD_OUT)]
    # every 1,024 held-out samples are the 1,024 held-out colourings, each once
    assert set(test[:HELD_OUT]) == set(test[HELD_OUT:]) == as_lamps
    for split, seed in (("train", 0), ("train", 7), ("validation", 0)):
        drawn = {tuple(s["lamps"]) for s in panel(split=split, seed=seed, count=5000)}
        assert not drawn & as_lamps  # no held-out colouring, on any split or seed
        assert len(drawn) > 2300  # about 80 % of the other 3,072 in 5,000 draws


def test_the_spec_reads_the_generator(per_step) -> None:  # type: ignore[no-untyped-def]
    held = per_step.load_samples(split="test", limit=64)
    assert all(len(s["lamps"]) == 12 for s in held)
    ids = {tuple(colouring(p)) for p in held_out_patterns()}
    assert all(tuple(s["lamps"]) in ids for s in held)


def right_positions(lamps: list[str]) -> list[str]:
    rule = ["up" if lamp == "red" else "down" for lamp in lamps]
    return [
        ("down" if p == "up" else "up") if i + 1 in BACKWARDS else p for i, p in enumerate(rule)
    ]


@pytest.mark.parametrize("pattern", [0, 4095, 0b101001100011])
def test_per_step_pays_each_switch_as_it_is_set_and_at_end_pays_the_total_once(
    per_step, at_end, pattern: int
) -> None:  # type: ignore[no-untyped-def]
    sample = {"id": "s", "lamps": colouring(pattern)}
    demonstrated = follow_the_lamps(sample)
    assert demonstrated == [f"set[{'up' if lamp == 'red' else 'down'}]" for lamp in sample["lamps"]]
    # the lamps' rule: every switch but the six backwards ones
    paid = play(per_step, sample, demonstrated)
    assert paid.termination == "done" and not paid.success
    expected = [0.0 if i + 1 in BACKWARDS else 1 / 12 for i in range(12)]
    assert [s.rewards.get("switch", 0.0) for s in paid.steps] == pytest.approx(expected)
    at_the_end = play(at_end, sample, demonstrated)
    assert not at_the_end.success
    assert [s.rewards.get("panel", 0.0) for s in at_the_end.steps] == pytest.approx(
        [0.0] * 11 + [0.5]
    )
    # every switch by its wiring: solved on both arms, the same total
    right = [f"set[{p}]" for p in right_positions(sample["lamps"])]
    for world, component in ((per_step, "switch"), (at_end, "panel")):
        solved = play(world, sample, right)
        assert solved.success and totals(solved)[component] == pytest.approx(1.0)


def test_the_observation_names_the_next_lamp_and_its_number(per_step) -> None:  # type: ignore[no-untyped-def]
    sample = {"id": "s", "lamps": colouring(0b10)}  # lamp 2 green, the others red
    trajectory = play(per_step, sample, ["set[up]", "set[left]", "set[down]"])
    first, second, third = trajectory.steps[:3]
    assert str(first.observation) == "Observation: lamp 2: green"
    assert "a switch goes up or down, not left" in str(second.observation)
    assert str(third.observation) == "Observation: lamp 3: red"
