"""docs/algorithms.md "Adding an algorithm", run as written: a new estimator, a new loss
and a preset, used through the public entry points (registries restored afterwards)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from agentspec.core.presets import ALGORITHMS, Algorithm
from agentspec.runtime.algorithms import (
    ESTIMATORS,
    POLICY_LOSSES,
    AdvantageConfig,
    PolicyLossConfig,
    StepRow,
    actor_loss,
    aggregation_weights,
    collate_steps,
    compute_advantages,
)
from agentspec.runtime.backends.verl.run_folder import algorithm_overrides

DOC = Path(__file__).resolve().parents[2] / "docs" / "algorithms.md"


def _section_code(title: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else None]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


@contextmanager
def _documented_algorithm() -> Iterator[Algorithm]:
    """Run the section's code blocks; the registries get their old entries back after."""
    registries = (ESTIMATORS, POLICY_LOSSES, ALGORITHMS)
    saved = [dict(r._entries) for r in registries]
    try:
        namespace: dict[str, object] = {"__name__": "docs_algorithms_example"}
        blocks = _section_code("Adding an algorithm")
        assert len(blocks) == 2
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), namespace)
        yield ALGORITHMS.get("sign_pg")
    finally:
        for registry, entries in zip(registries, saved, strict=True):
            registry._entries.clear()
            registry._entries.update(entries)


@pytest.fixture
def doc_algorithm() -> Iterator[Algorithm]:
    with _documented_algorithm() as algorithm:
        yield algorithm


def _batch() -> tuple[list[StepRow], torch.Tensor]:
    half, three_quarters, quarter = math.log(0.5), math.log(0.75), math.log(0.25)
    rows = [
        # group A: returns 1, 0, 0.5 (mean 0.5); group B: a single trajectory
        StepRow("a1", 0, "A", 1.0, old_log_probs=[half, half], log_probs=[half, three_quarters]),
        StepRow("a2", 0, "A", 0.0, old_log_probs=[half], log_probs=[quarter]),
        StepRow("a2", 1, "A", 0.0, old_log_probs=[half], log_probs=[quarter]),
        StepRow("a3", 0, "A", 0.5, old_log_probs=[half], log_probs=[half]),
        StepRow("b1", 0, "B", 3.0, old_log_probs=[half], log_probs=[half]),
    ]
    expected = torch.tensor([[1.0, 1.0], [-1.0, 0.0], [-1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    return rows, expected


def test_the_documented_algorithm_trains_through_the_public_path(
    doc_algorithm: Algorithm,
) -> None:
    assert (doc_algorithm.estimator, doc_algorithm.loss) == ("group_sign", "truncated_is")
    rows, expected_advantages = _batch()
    batch = collate_steps(rows)

    # sign(R − mean_G R): a1 above the mean, a2 below, a3 on it; a group of one gets 0
    out = compute_advantages(doc_algorithm.estimator, batch, AdvantageConfig())
    assert torch.equal(out.advantages, expected_advantages)

    assert batch.log_probs is not None and batch.old_log_probs is not None
    log_probs = batch.log_probs.clone().requires_grad_(True)
    weights = aggregation_weights(batch.response_mask, batch.traj_ids, "token-mean")
    config = PolicyLossConfig(clip_low=0.2, clip_high=0.2)
    loss = actor_loss(
        doc_algorithm.loss,
        log_probs,
        batch.old_log_probs,
        out.advantages,
        batch.response_mask,
        weights,
        config,
    )
    # ℓ = −min(ρ, 1.2)·A·log π over 6 tokens: a1's ratios 1 and 1.5 (truncated to 1.2),
    # a2's 0.5 and 0.5; a3 and b1 have A = 0
    a1 = -1.0 * math.log(0.5) - 1.2 * math.log(0.75)
    a2 = 2 * (0.5 * math.log(0.25))
    assert float(loss.loss) == pytest.approx((a1 + a2) / 6, abs=1e-6)
    loss.loss.backward()
    assert log_probs.grad is not None
    grad = log_probs.grad[batch.response_mask]
    expected_grad = torch.tensor([-1.0, -1.2, 0.5, 0.5, 0.0, 0.0]) / 6
    assert torch.allclose(grad, expected_grad, atol=1e-6)


def test_the_documented_algorithm_maps_to_verl(doc_algorithm: Algorithm) -> None:
    o = algorithm_overrides(doc_algorithm, {"algorithm": "sign_pg", "clip_ratio": 0.3})
    assert o["algorithm.adv_estimator"] == "agentspec_group_sign"
    assert o["actor_rollout_ref.actor.policy_loss.loss_mode"] == "agentspec_truncated_is"
    assert o["critic.enable"] == "False"
    assert (
        o["actor_rollout_ref.actor.clip_ratio_low"],
        o["actor_rollout_ref.actor.clip_ratio_high"],
    ) == ("0.3", "0.3")


def test_the_example_registers_and_the_registries_are_restored() -> None:
    before = (ALGORITHMS.names(), ESTIMATORS.names(), POLICY_LOSSES.names())
    with _documented_algorithm():
        assert "sign_pg" in ALGORITHMS and "group_sign" in ESTIMATORS
        assert "truncated_is" in POLICY_LOSSES
    assert (ALGORITHMS.names(), ESTIMATORS.names(), POLICY_LOSSES.names()) == before
