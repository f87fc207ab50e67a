"""A group of equal returns carries no signal: every group-relative estimator gives exactly 0.

In float32 the mean of seven 2.7s is off by one rounding unit, and dividing that
by (std + ε) used to hand the whole group a large advantage of one sign
(−0.19 for GRPO, −0.38 for GiGPO's step groups). The statistics are now taken in
float64 with an exact equal-group check; these tests hold for any value and
group size, in float32 and float64.
"""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from agentspec.runtime.algorithms import AdvantageConfig, StepRow, collate_steps, compute_advantages
from agentspec.runtime.algorithms.advantages import whiten

DTYPES = (torch.float32, torch.float64)
NAMED_VALUES = (2.7, 1 / 3, 1e6, -2.7, -1e6, 0.1, 16.2, 0.0)

values = st.one_of(
    st.sampled_from(NAMED_VALUES),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
)


def equal_return_rows(value: float, group_size: int, steps: int) -> list[StepRow]:
    """One group of ``group_size`` trajectories, each of ``steps`` steps rewarded ``value``."""
    return [
        StepRow(
            traj_id=f"t{k}",
            step_index=s,
            group_id="g",
            reward=value,
            response_length=3,
            anchor=("room", s),  # step s of every trajectory shares an anchor state
            value=0.0,
            token_values=[0.0, 0.0, 0.0],
        )
        for k in range(group_size)
        for s in range(steps)
    ]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    value=values,
    group_size=st.integers(min_value=2, max_value=12),
    steps=st.integers(min_value=1, max_value=6),
    norm_by_std=st.booleans(),
)
def test_group_relative_estimators_give_zero_for_equal_returns(
    value: float, group_size: int, steps: int, norm_by_std: bool
) -> None:
    config = AdvantageConfig(gamma=0.95, norm_by_std=norm_by_std)
    for dtype in DTYPES:
        batch = collate_steps(equal_return_rows(value, group_size, steps), dtype=dtype)
        for name in ("grpo", "rloo", "gigpo"):
            out = compute_advantages(name, batch, config)
            assert torch.equal(out.advantages, torch.zeros_like(out.advantages)), (name, dtype)


def test_issue_reproducer_seven_trajectories_of_2_7() -> None:
    # the reported case: −0.1896 for all seven (one step), +0.62 with six steps each
    for steps in (1, 6):
        batch = collate_steps(equal_return_rows(2.7, 7, steps), dtype=torch.float32)
        for name in ("grpo", "rloo", "gigpo"):
            out = compute_advantages(name, batch, AdvantageConfig())
            assert out.advantages.abs().max().item() == 0.0, name


@settings(max_examples=60, deadline=None, derandomize=True)
@given(value=values, n=st.integers(min_value=1, max_value=40))
def test_whitening_equal_values_gives_zero(value: float, n: int) -> None:
    for dtype in DTYPES:
        x = torch.full((n, 3), value, dtype=dtype)
        valid = torch.ones_like(x, dtype=torch.bool)
        valid[:, 2] = False
        x[:, 2] = float("nan")  # masked entries are never read
        assert torch.equal(whiten(x, valid), torch.zeros_like(x))


def test_unequal_groups_still_normalise() -> None:
    # the exact-zero rule applies only to constant groups: one differing return restores signal
    rows = equal_return_rows(2.7, 4, 1)
    rows[0] = StepRow(traj_id="t0", step_index=0, group_id="g", reward=3.7, response_length=3)
    rows = [StepRow(r.traj_id, r.step_index, r.group_id, r.reward, r.response_length) for r in rows]
    out = compute_advantages("grpo", collate_steps(rows), AdvantageConfig())
    per_traj = out.advantages[:, 0]
    assert per_traj[0] > 0 and (per_traj[1:] < 0).all()
    assert abs(float(per_traj.sum())) < 1e-5
