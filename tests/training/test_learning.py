"""The learning check: from the same weak warm start and seed, every algorithm
raises greedy success on a task where only RL can (tests/training/pick_door.yaml),
and the same run with its advantage's sign flipped does not.

The check is the margin (greedy success from ≤ 0.1 to ≥ 0.9 within six
iterations), so a loss or estimator that trains in the wrong direction, or not at
all, fails it; distillation's check is `test_opd_student_moves_towards_its_teacher`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from agentspec.runtime.algorithms import (
    ESTIMATORS,
    AdvantageConfig,
    AdvantageOutput,
    StepBatch,
)
from agentspec.runtime.backends.local import train

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
TASK = HERE / "pick_door.yaml"
DEMO = HERE / "pick_door_demo.yaml"
ALGORITHMS_THAT_LEARN = ("steppo", "ppo", "grpo", "rloo", "gigpo", "token_gae", "reinforce")


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="module")
def warm_start(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Behaviour cloning of the demonstrator (three wrong doors in four), once."""
    run = train(DEMO, tmp_path_factory.mktemp("demo") / "run", {})
    return run / "checkpoints" / "iter_000000" / "policy"


def greedy_success(tmp_path: Path, warm_start: Path, algorithm: str) -> list[float]:
    settings = {"algorithm": algorithm, "model": str(warm_start), "seed": 0}
    run = train(TASK, tmp_path / algorithm, settings)
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [row["eval/success"] for row in map(json.loads, lines) if "eval/success" in row]


def learned(curve: list[float]) -> bool:
    return curve[0] <= 0.1 and curve[-1] >= 0.9


@pytest.mark.parametrize("algorithm", ALGORITHMS_THAT_LEARN)
def test_every_algorithm_learns_what_behaviour_cloning_got_wrong(
    tmp_path: Path, warm_start: Path, algorithm: str
) -> None:
    curve = greedy_success(tmp_path, warm_start, algorithm)
    assert learned(curve), f"{algorithm}: greedy success {curve}"


@contextmanager
def flipped(estimator: str) -> Iterator[None]:
    """The estimator registered as `estimator` with its advantages negated, for the
    duration (the registry gets its entry back after)."""
    original = ESTIMATORS.get(estimator)

    def negated(batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
        out = original.fn(batch, config)
        return replace(out, advantages=-out.advantages)

    ESTIMATORS._entries[estimator] = replace(original, fn=negated)
    try:
        yield
    finally:
        ESTIMATORS._entries[estimator] = original


@pytest.mark.parametrize(
    ("algorithm", "estimator"),
    [("grpo", "grpo"), ("steppo", "step_gae"), ("ppo", "step_gae")],
    ids=["group: grpo", "critic: steppo", "critic: ppo"],
)
def test_a_flipped_advantage_sign_fails_the_check(
    tmp_path: Path, warm_start: Path, algorithm: str, estimator: str
) -> None:
    """Once per family of estimator: the group's (GRPO) and the critic's (step-level
    GAE, under StepPO's step clip and PPO's token clip); the multi-step check
    (test_credit_check.py) flips the critic's again where credit spans steps."""
    with flipped(estimator):
        curve = greedy_success(tmp_path, warm_start, algorithm)
    assert not learned(curve), f"greedy success {curve}"
    assert max(curve) <= 0.1  # it never found the left door
