"""The registry, the StepBatch invariants, collate_steps, and the no-verl rule."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import agentspec.runtime.algorithms as algorithms
from agentspec.runtime.algorithms import (
    ESTIMATORS,
    AdvantageConfig,
    AdvantageOutput,
    DuplicateNameError,
    Registry,
    StepBatch,
    StepRow,
    UnknownNameError,
    advantages,
    collate_steps,
    register_estimator,
)


def test_registry_decorator_duplicates_and_unknown_names() -> None:
    reg: Registry[object] = Registry("widget")

    @reg.register("alpha")
    def alpha() -> int:
        return 1

    reg.add("beta", alpha)
    assert reg.get("alpha") is alpha
    assert reg.names() == ("alpha", "beta")
    assert "alpha" in reg and "gamma" not in reg and len(reg) == 2
    with pytest.raises(DuplicateNameError, match="widget 'alpha' is already registered"):
        reg.add("alpha", alpha)
    with pytest.raises(UnknownNameError) as info:
        reg.get("alpah")
    assert info.value.valid == ("alpha", "beta")
    assert (
        str(info.value) == "unknown widget 'alpah'; valid names: alpha, beta. Did you mean 'alpha'?"
    )
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnknownNameError, match=r"valid names: \(none\)"):
        Registry("empty").get("x")


def test_estimator_names_cannot_be_registered_twice() -> None:
    with pytest.raises(DuplicateNameError, match="advantage estimator 'grpo'"):

        @register_estimator("grpo")
        def other(batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
            raise AssertionError

    assert ESTIMATORS.get("grpo").fn is advantages.grpo  # the first registration stands


def _batch(**over: torch.Tensor) -> StepBatch:
    kw = {
        "response_mask": torch.tensor([[True, False], [True, True], [True, True]]),
        "rewards": torch.tensor([0.0, 1.0, 0.5]),
        "traj_ids": torch.tensor([4, 4, 9]),
        "step_index": torch.tensor([1, 0, 0]),
        "group_ids": torch.tensor([0, 0, 0]),
    }
    kw.update(over)
    return StepBatch(**kw)


def test_step_batch_layout() -> None:
    b = _batch()
    assert b.num_steps == 3 and b.num_trajectories == 2 and b.max_steps == 2
    assert b.traj_index.tolist() == [0, 0, 1]
    grid = b.to_grid(b.rewards, fill=-1.0)
    assert grid.tolist() == [
        [1.0, 0.0],
        [0.5, -1.0],
    ]  # trajectory 4: step 0 reward 1, step 1 reward 0
    assert b.from_grid(grid).tolist() == b.rewards.tolist()
    assert b.broadcast(torch.tensor([1.0, 2.0, 3.0])).tolist() == [
        [1.0, 0.0],
        [2.0, 2.0],
        [3.0, 3.0],
    ]


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"step_index": torch.tensor([1, 1, 0])}, "no gaps or repeats"),
        ({"step_index": torch.tensor([2, 0, 0])}, "no gaps or repeats"),
        ({"step_index": torch.tensor([1, 0, 1])}, "no gaps or repeats"),
        ({"step_index": torch.tensor([-1, 0, 0])}, "non-negative"),
        ({"group_ids": torch.tensor([0, 1, 0])}, "share one group id"),
        ({"response_mask": torch.ones((3, 2))}, "bool"),
        ({"rewards": torch.tensor([0, 1, 2])}, "rewards must be a float tensor"),
        ({"traj_ids": torch.tensor([4.0, 4.0, 9.0])}, "traj_ids must be an int64"),
        ({"values": torch.zeros(2)}, r"values must be a float tensor of shape \(3,\)"),
        (
            {"old_log_probs": torch.zeros((3, 3))},
            r"old_log_probs must be a float tensor of shape \(3, 2\)",
        ),
    ],
)
def test_step_batch_rejects_inconsistent_inputs(over: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _batch(**over)


def test_collate_steps_from_ragged_lists() -> None:
    rows = [
        StepRow(
            "uuid-b", 0, ("prompt", 2), 1.0, anchor={"page": "x"}.get("page"), old_log_probs=[-0.5]
        ),
        StepRow("uuid-a", 1, ("prompt", 1), 0.0, anchor="y", old_log_probs=[-1.0, -2.0, -3.0]),
        StepRow("uuid-a", 0, ("prompt", 1), 2.0, anchor="x", old_log_probs=[]),
    ]
    b = collate_steps(rows, pad_to=4)
    assert b.response_mask.tolist() == [
        [True, False, False, False],
        [True, True, True, False],
        [False, False, False, False],
    ]
    assert b.traj_ids.tolist() == [0, 1, 1]
    assert b.group_ids.tolist() == [0, 1, 1]
    assert b.anchor_ids is not None and b.anchor_ids.tolist() == [0, 1, 0]  # "x" twice → same id
    assert b.old_log_probs is not None
    assert b.old_log_probs.tolist() == [[-0.5, 0, 0, 0], [-1.0, -2.0, -3.0, 0], [0, 0, 0, 0]]
    assert b.values is None and b.log_probs is None
    assert b.valid_steps.tolist() == [True, True, False]


def test_collate_steps_errors() -> None:
    with pytest.raises(ValueError, match="inconsistent response lengths"):
        collate_steps([StepRow("a", 0, "g", 0.0, response_length=2, log_probs=[-1.0])])
    with pytest.raises(ValueError, match="no response_length"):
        collate_steps([StepRow("a", 0, "g", 0.0)])
    with pytest.raises(ValueError, match="value must be given for every step or for none"):
        collate_steps([StepRow("a", 0, "g", 0.0, 1, value=1.0), StepRow("a", 1, "g", 0.0, 1)])
    with pytest.raises(ValueError, match="pad_to=1 is shorter"):
        collate_steps([StepRow("a", 0, "g", 0.0, 2)], pad_to=1)


def test_empty_batch() -> None:
    b = replace(collate_steps([]), values=torch.zeros(0), token_values=torch.zeros((0, 0)))
    assert b.num_steps == 0 and b.num_trajectories == 0
    for name in ("grpo", "rloo", "reinforce", "step_gae", "token_gae"):
        out = algorithms.compute_advantages(name, b, AdvantageConfig())
        assert out.advantages.shape == (0, 0)


PACKAGE = Path(algorithms.__file__).parent


def test_package_never_imports_verl() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n == "verl" or n.startswith("verl.") for n in names), (
                f"{path.name} imports {names}"
            )
    code = "import sys, agentspec.runtime.algorithms; print('verl' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_public_api_is_exported() -> None:
    for name in algorithms.__all__:
        assert getattr(algorithms, name) is not None


def test_clip_range_per_algorithm() -> None:
    from agentspec.core.presets import (
        ALGORITHMS,
        DEFAULT_STEP_CLIP_RATIO,
        clip_range,
    )
    from agentspec.spec.model import TrainingSpec

    steppo, ppo = ALGORITHMS.get("steppo"), ALGORITHMS.get("ppo")
    default = DEFAULT_STEP_CLIP_RATIO
    assert clip_range(steppo, TrainingSpec()) == (default, default)
    assert clip_range(steppo, {}) == (default, default)
    assert clip_range(steppo, TrainingSpec(step_clip_ratio=0.04)) == (0.04, 0.04)
    paper = TrainingSpec(step_clip_low=3e-4, step_clip_high=4e-4, clip_ratio=0.28)
    assert clip_range(steppo, paper) == (3e-4, 4e-4)
    assert clip_range(steppo, {"step_clip_ratio": 0.1, "step_clip_high": 0.3}) == (0.1, 0.3)
    assert clip_range(ppo, paper) == (0.28, 0.28)  # token ratios ignore the step range


def test_step_clip_preset_names_the_papers_range() -> None:
    from agentspec.core.presets import ALGORITHMS, clip_range
    from agentspec.core.registry import UnknownNameError
    from agentspec.spec.model import TrainingSpec

    steppo = ALGORITHMS.get("steppo")
    paper = TrainingSpec(step_clip_preset="steppo_paper", step_clip_ratio=0.1)
    assert clip_range(steppo, paper) == (3e-4, 4e-4)  # the preset replaces the symmetric ε
    widened = TrainingSpec(step_clip_preset="steppo_paper", step_clip_high=0.01)
    assert clip_range(steppo, widened) == (3e-4, 0.01)  # an explicit side still wins
    assert clip_range(ALGORITHMS.get("ppo"), paper) == (0.2, 0.2)
    with pytest.raises(UnknownNameError, match="Did you mean 'steppo_paper'"):
        clip_range(steppo, {"step_clip_preset": "steppo_papr"})
    with pytest.raises(ValueError, match="steppo_paper"):
        TrainingSpec(step_clip_preset="gspo")
