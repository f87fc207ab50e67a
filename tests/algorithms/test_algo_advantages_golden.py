"""Golden tests: every estimator on a tiny example computed by hand (arithmetic in the comments)."""

from __future__ import annotations

import math

import pytest
import torch

from agentspec.runtime.algorithms import (
    ESTIMATORS,
    AdvantageConfig,
    AdvantageOutput,
    StepRow,
    UnknownNameError,
    add_opd_advantages,
    collate_steps,
    compute_advantages,
)

EPS = 1e-6


def rows_of(spec: list[tuple[str, str, float, int]], **extra: list) -> list[StepRow]:
    """(traj, group, reward, response length) per step, steps numbered in order per trajectory."""
    counter: dict[str, int] = {}
    out = []
    for i, (traj, group, reward, length) in enumerate(spec):
        step = counter.get(traj, 0)
        counter[traj] = step + 1
        fields = {k: v[i] for k, v in extra.items()}
        out.append(StepRow(traj, step, group, reward, response_length=length, **fields))
    return out


def step_tensor(per_step: list[float], lengths: list[int]) -> torch.Tensor:
    width = max(lengths)
    out = torch.zeros((len(per_step), width), dtype=torch.float64)
    for i, (v, n) in enumerate(zip(per_step, lengths, strict=True)):
        out[i, :n] = v
    return out


def test_step_gae_by_hand() -> None:
    # One trajectory, three steps: r = [0, 0, 1], V(s_t) = [0.5, 0.6, 0.8], γ = 0.9, λ = 0.5.
    rows = rows_of(
        [("a", "g", 0.0, 2), ("a", "g", 0.0, 1), ("a", "g", 1.0, 3)], value=[0.5, 0.6, 0.8]
    )
    batch = collate_steps(rows, dtype=torch.float64)
    out = compute_advantages("step_gae", batch, AdvantageConfig(gamma=0.9, lam=0.5, whiten=False))
    # δ2 = 1 + 0.9·0   − 0.8 = 0.2        A2 = 0.2
    # δ1 = 0 + 0.9·0.8 − 0.6 = 0.12       A1 = 0.12 + 0.45·0.2  = 0.21
    # δ0 = 0 + 0.9·0.6 − 0.5 = 0.04       A0 = 0.04 + 0.45·0.21 = 0.1345
    adv = [0.1345, 0.21, 0.2]
    torch.testing.assert_close(out.advantages, step_tensor(adv, [2, 1, 3]))
    # returns = A + V = [0.6345, 0.81, 1.0]
    torch.testing.assert_close(out.returns, torch.tensor([0.6345, 0.81, 1.0], dtype=torch.float64))

    # Whitened over the 3 steps, not the 6 tokens: mean = 0.5445 / 3 = 0.1815,
    # unbiased var = (0.047² + 0.0285² + 0.0185²) / 2 = 0.0033635 / 2 = 0.00168175.
    white = compute_advantages("step_gae", batch, AdvantageConfig(gamma=0.9, lam=0.5, whiten=True))
    expected = [(a - 0.1815) / math.sqrt(0.00168175 + 1e-8) for a in adv]
    torch.testing.assert_close(white.advantages, step_tensor(expected, [2, 1, 3]))
    per_step = white.advantages[:, 0]
    assert per_step.mean().item() == pytest.approx(0.0, abs=1e-9)  # zero mean over steps
    tokens = white.advantages[batch.response_mask]
    assert tokens.mean().item() != pytest.approx(0.0, abs=1e-3)  # but not over tokens


def test_token_gae_by_hand() -> None:
    # One trajectory, step 0 = 2 tokens (V = 0.1, 0.2) with reward 0.5, step 1 = 1 token
    # (V = 0.4) with reward 1. Concatenated: V = [0.1, 0.2, 0.4], r = [0, 0.5, 1.0].
    rows = rows_of([("a", "g", 0.5, 2), ("a", "g", 1.0, 1)], token_values=[[0.1, 0.2], [0.4]])
    batch = collate_steps(rows, dtype=torch.float64, pad_to=3)
    out = compute_advantages("token_gae", batch, AdvantageConfig(gamma=0.9, lam=0.5, whiten=False))
    # j=2: δ = 1.0 + 0.9·0   − 0.4 = 0.6     A = 0.6
    # j=1: δ = 0.5 + 0.9·0.4 − 0.2 = 0.66    A = 0.66 + 0.45·0.6  = 0.93
    # j=0: δ = 0   + 0.9·0.2 − 0.1 = 0.08    A = 0.08 + 0.45·0.93 = 0.4985
    expected = torch.tensor([[0.4985, 0.93, 0.0], [0.6, 0.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(out.advantages, expected)
    # returns = A + V = [0.5985, 1.13] and [1.0]
    torch.testing.assert_close(
        out.returns, torch.tensor([[0.5985, 1.13, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    )
    # γ = λ = 1: A_j = Σ_{k≥j} r_k − V_j = [1.5 − 0.1, 1.5 − 0.2, 1.0 − 0.4]
    flat = compute_advantages("token_gae", batch, AdvantageConfig(whiten=False))
    torch.testing.assert_close(
        flat.advantages, torch.tensor([[1.4, 1.3, 0.0], [0.6, 0.0, 0.0]], dtype=torch.float64)
    )


def test_token_gae_reward_of_empty_step_goes_to_previous_token() -> None:
    # Step 1 produced no token: its reward 2.0 lands on step 0's last token.
    rows = rows_of(
        [("a", "g", 0.0, 1), ("a", "g", 2.0, 0), ("a", "g", 1.0, 1)],
        token_values=[[0.0], [], [0.0]],
    )
    batch = collate_steps(rows, dtype=torch.float64)
    out = compute_advantages("token_gae", batch, AdvantageConfig(whiten=False))
    # tokens: [t0 (r = 2.0), t2 (r = 1.0)], V = 0: A = [3.0, 1.0]
    torch.testing.assert_close(
        out.advantages, torch.tensor([[3.0], [0.0], [1.0]], dtype=torch.float64)
    )


def _group_rows() -> list[StepRow]:
    # group g: a returns 0 + 1 = 1, b returns 0, c returns 0.5 + 0 + 0 = 0.5; group h: d alone.
    return rows_of(
        [
            ("a", "g", 0.0, 2),
            ("a", "g", 1.0, 1),
            ("b", "g", 0.0, 3),
            ("c", "g", 0.5, 1),
            ("c", "g", 0.0, 1),
            ("c", "g", 0.0, 2),
            ("d", "h", 7.0, 2),
        ]
    )


LENGTHS = [2, 1, 3, 1, 1, 2, 2]


def test_grpo_by_hand() -> None:
    batch = collate_steps(_group_rows(), dtype=torch.float64)
    out = compute_advantages("grpo", batch, AdvantageConfig())
    # group g: mean = (1 + 0 + 0.5)/3 = 0.5; unbiased std = sqrt((0.25 + 0.25 + 0)/2) = 0.5
    # a: 0.5/0.5 = 1, b: −1, c: 0 (per trajectory, on every step); d is alone: 0.
    s = 0.5 / (0.5 + EPS)
    torch.testing.assert_close(out.advantages, step_tensor([s, s, -s, 0, 0, 0, 0], LENGTHS))
    # Dr.GRPO: no std: a = 0.5, b = −0.5, c = 0
    dr = compute_advantages("grpo", batch, AdvantageConfig(norm_by_std=False))
    torch.testing.assert_close(dr.advantages, step_tensor([0.5, 0.5, -0.5, 0, 0, 0, 0], LENGTHS))


def test_rloo_by_hand() -> None:
    batch = collate_steps(_group_rows(), dtype=torch.float64)
    out = compute_advantages("rloo", batch, AdvantageConfig())
    # a: 1 − (0 + 0.5)/2 = 0.75; b: 0 − (1 + 0.5)/2 = −0.75; c: 0.5 − (1 + 0)/2 = 0; d alone: 0
    torch.testing.assert_close(
        out.advantages, step_tensor([0.75, 0.75, -0.75, 0, 0, 0, 0], LENGTHS)
    )


def test_reinforce_by_hand() -> None:
    rows = rows_of([("a", "g", 1.0, 1), ("a", "g", 0.0, 2), ("a", "g", 2.0, 1), ("b", "g", 0.5, 1)])
    batch = collate_steps(rows, dtype=torch.float64)
    out = compute_advantages("reinforce", batch, AdvantageConfig(gamma=0.5))
    # a: G2 = 2, G1 = 0 + 0.5·2 = 1, G0 = 1 + 0.5·1 = 1.5; b: G0 = 0.5
    torch.testing.assert_close(out.advantages, step_tensor([1.5, 1.0, 2.0, 0.5], [1, 2, 1, 1]))
    base = compute_advantages("reinforce", batch, AdvantageConfig(gamma=0.5, batch_baseline=True))
    # baseline = (1.5 + 1 + 2 + 0.5)/4 = 1.25
    torch.testing.assert_close(
        base.advantages, step_tensor([0.25, -0.25, 0.75, -0.75], [1, 2, 1, 1])
    )


def test_gigpo_by_hand() -> None:
    # group g: τ1 visits anchors [s0, s1] with r = [0, 1]; τ2 visits [s0, s1, s1] with r = 0.
    # group h: τ3 visits s0 once (same anchor as in g, other group: not grouped with them).
    rows = rows_of(
        [
            ("t1", "g", 0.0, 1),
            ("t1", "g", 1.0, 2),
            ("t2", "g", 0.0, 1),
            ("t2", "g", 0.0, 1),
            ("t2", "g", 0.0, 3),
            ("t3", "h", 5.0, 1),
        ],
        anchor=["s0", "s1", "s0", "s1", "s1", "s0"],
    )
    batch = collate_steps(rows, dtype=torch.float64)
    out = compute_advantages(
        "gigpo", batch, AdvantageConfig(gamma=0.5, omega=1.0, norm_by_std=False)
    )
    # episode: R1 = 1, R2 = 0, mean 0.5 → A^E = [+0.5, −0.5]; τ3 alone → 0
    # step returns (γ = 0.5): τ1 = [0 + 0.5·1, 1] = [0.5, 1]; τ2 = [0, 0, 0]; τ3 = [5]
    # anchor (g, s0): {0.5, 0}    mean 0.25 → [+0.25, −0.25]
    # anchor (g, s1): {1, 0, 0}   mean 1/3  → [+2/3, −1/3, −1/3]
    # anchor (h, s0): {5}         singleton → 0
    expected = [0.5 + 0.25, 0.5 + 2 / 3, -0.5 - 0.25, -0.5 - 1 / 3, -0.5 - 1 / 3, 0.0]
    torch.testing.assert_close(out.advantages, step_tensor(expected, [1, 2, 1, 1, 3, 1]))
    # 6 steps in 3 anchor groups → mean size 2; one of six steps is a singleton
    assert out.metrics["gigpo/anchor_group_size_mean"] == pytest.approx(2.0)
    assert out.metrics["gigpo/singleton_fraction"] == pytest.approx(1 / 6)

    # with std normalisation and ω = 0.5:
    # A^E: std{1, 0} = sqrt(0.5) → ±0.5/sqrt(0.5)
    # (g, s0): std{0.5, 0} = sqrt(0.125);  (g, s1): std{1, 0, 0} = sqrt(1/3)
    std = compute_advantages("gigpo", batch, AdvantageConfig(gamma=0.5, omega=0.5))
    e = 0.5 / (math.sqrt(0.5) + EPS)
    s0 = 0.25 / (math.sqrt(0.125) + EPS)
    s1_hi, s1_lo = (2 / 3) / (math.sqrt(1 / 3) + EPS), (-1 / 3) / (math.sqrt(1 / 3) + EPS)
    expected = [
        e + 0.5 * s0,
        e + 0.5 * s1_hi,
        -e - 0.5 * s0,
        -e + 0.5 * s1_lo,
        -e + 0.5 * s1_lo,
        0.0,
    ]
    torch.testing.assert_close(std.advantages, step_tensor(expected, [1, 2, 1, 1, 3, 1]))


def test_opd_by_hand() -> None:
    rows = rows_of(
        [("a", "g", 3.0, 2)], old_log_probs=[[-1.0, -2.0]], teacher_log_probs=[[-1.5, -1.0]]
    )
    batch = collate_steps(rows, dtype=torch.float64, pad_to=3)
    out = compute_advantages("opd", batch, AdvantageConfig(opd_beta=0.5))
    # A = −β (log π_s − log π_t): −0.5·(−1 + 1.5) = −0.25, −0.5·(−2 + 1) = +0.5; task reward ignored
    torch.testing.assert_close(
        out.advantages, torch.tensor([[-0.25, 0.5, 0.0]], dtype=torch.float64)
    )
    # reverse KL estimate = mean(log π_s − log π_t) = (0.5 − 1)/2 = −0.25
    assert out.metrics["opd/reverse_kl"] == pytest.approx(-0.25)
    # mixed with a task advantage of 1 at weight 0.5: 0.5 + [−0.25, 0.5]
    task = AdvantageOutput(batch.broadcast(torch.ones(1, dtype=torch.float64)))  # 1 per token
    mixed = add_opd_advantages(task, batch, beta=0.5, task_weight=0.5)
    torch.testing.assert_close(
        mixed.advantages, torch.tensor([[0.25, 1.0, 0.0]], dtype=torch.float64)
    )


def test_registry_lists_and_rejects() -> None:
    assert set(ESTIMATORS.names()) >= {
        "step_gae",
        "token_gae",
        "grpo",
        "rloo",
        "reinforce",
        "gigpo",
        "opd",
    }
    assert ESTIMATORS.get("step_gae").critic == "step"
    assert ESTIMATORS.get("token_gae").critic == "token"
    assert ESTIMATORS.get("grpo").critic == "none"
    batch = collate_steps(_group_rows())
    with pytest.raises(UnknownNameError, match=r"valid names: gigpo, grpo.*Did you mean 'grpo'"):
        compute_advantages("grppo", batch, AdvantageConfig())
    with pytest.raises(ValueError, match=r"needs StepBatch fields \['values'\]"):
        compute_advantages("step_gae", batch, AdvantageConfig())
    with pytest.raises(ValueError, match="anchor_ids"):
        compute_advantages("gigpo", batch, AdvantageConfig())


@pytest.mark.parametrize(
    "bad", [{"gamma": 1.5}, {"lam": -0.1}, {"epsilon": 0.0}, {"opd_beta": -1.0}]
)
def test_config_rejects_bad_values(bad: dict) -> None:
    with pytest.raises(ValueError):
        AdvantageConfig(**bad)


def test_config_rejects_unknown_keys() -> None:
    with pytest.raises(TypeError):
        AdvantageConfig(gama=0.9)  # type: ignore[call-arg]
