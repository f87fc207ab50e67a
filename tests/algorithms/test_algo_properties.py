"""Property tests: masks, padding, observation holes, row order and trajectory weighting.

- Observation and padding tokens never receive advantage or gradient, even when
  they hold NaN.
- Adding padding (columns, masked holes inside rows, empty padding rows) or
  reordering rows changes nothing.
- Under ``trajectory-mean`` a trajectory with 10 steps weighs what one with 1 does.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from algo_helpers import (
    add_padding_rows,
    batch_of,
    fill_padding,
    random_rows,
    regather,
    spread_with_holes,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from agentspec.runtime.algorithms import (
    AGGREGATION_MODES,
    ESTIMATORS,
    POLICY_LOSSES,
    AdvantageConfig,
    PolicyLossConfig,
    StepBatch,
    actor_loss,
    aggregation_weights,
    compute_advantages,
    entropy_from_logits,
)

CONFIG = AdvantageConfig(gamma=0.9, lam=0.8)
LOSS_CONFIG = PolicyLossConfig(
    clip_low=0.2, clip_high=0.28, dual_clip_c=3.0, entropy_coef=0.01, kl_coef=0.1
)
PROPS = settings(max_examples=20, deadline=None)
seeds = st.integers(min_value=0, max_value=100_000)


def _rows(seed: int, empty: bool):
    return random_rows(seed, n_groups=1 + seed % 3, max_steps=1 + seed % 5, empty_steps=empty)


def _permute(batch: StepBatch, perm: torch.Tensor) -> StepBatch:
    kw = {}
    for f in batch.__dataclass_fields__:
        v = getattr(batch, f)
        kw[f] = v[perm] if v is not None else None
    return StepBatch(**kw)


@PROPS
@given(seed=seeds, empty=st.booleans())
def test_off_mask_positions_get_exactly_zero_advantage(seed: int, empty: bool) -> None:
    batch, _ = spread_with_holes(fill_padding(batch_of(_rows(seed, empty))), seed)
    for name in ESTIMATORS:
        out = compute_advantages(name, batch, CONFIG)
        assert torch.isfinite(out.advantages).all(), name
        assert torch.count_nonzero(out.advantages[~batch.response_mask]) == 0, name
        if out.returns is not None and out.returns.dim() == 2:
            assert torch.count_nonzero(out.returns[~batch.response_mask]) == 0, name


@PROPS
@given(seed=seeds, empty=st.booleans(), pads=st.integers(0, 3))
def test_padding_and_observation_holes_change_no_advantage(
    seed: int, empty: bool, pads: int
) -> None:
    rows = _rows(seed, empty)
    plain = batch_of(rows)
    padded = batch_of(add_padding_rows(rows, pads, seed), pad_to=plain.response_mask.shape[1] + 2)
    holed, cols = spread_with_holes(fill_padding(padded), seed + 1)
    n = len(rows)
    for name in ESTIMATORS:
        ref = compute_advantages(name, plain, CONFIG)
        got = compute_advantages(name, holed, CONFIG)
        width = plain.response_mask.shape[1]
        torch.testing.assert_close(
            regather(got.advantages, cols)[:n, :width], ref.advantages, msg=name
        )
        if ref.returns is not None and got.returns is not None:
            if ref.returns.dim() == 1:
                torch.testing.assert_close(got.returns[:n], ref.returns, msg=name)
            else:
                torch.testing.assert_close(
                    regather(got.returns, cols)[:n, :width], ref.returns, msg=name
                )
        for key, value in ref.metrics.items():
            if key.startswith(("gigpo/", "opd/")):
                assert abs(got.metrics[key] - value) < 1e-9, (name, key)


@PROPS
@given(seed=seeds, empty=st.booleans())
def test_reordering_rows_and_relabelling_ids_changes_nothing(seed: int, empty: bool) -> None:
    batch = batch_of(_rows(seed, empty))
    perm = torch.randperm(batch.num_steps, generator=torch.Generator().manual_seed(seed))
    shuffled = _permute(batch, perm)
    relabelled = replace(
        shuffled, traj_ids=shuffled.traj_ids * 7919 + 13, group_ids=1000 - shuffled.group_ids
    )
    for name in ESTIMATORS:
        ref = compute_advantages(name, batch, CONFIG)
        for other in (shuffled, relabelled):
            got = compute_advantages(name, other, CONFIG)
            torch.testing.assert_close(got.advantages, ref.advantages[perm], msg=name)
            if ref.returns is not None and got.returns is not None:
                torch.testing.assert_close(got.returns, ref.returns[perm], msg=name)


def _loss_inputs(batch: StepBatch, seed: int):
    gen = torch.Generator().manual_seed(seed)
    shape = batch.response_mask.shape
    adv = torch.randn(shape, generator=gen, dtype=torch.float64)
    entropy = torch.rand(shape, generator=gen, dtype=torch.float64)
    ref = batch.old_log_probs - 0.1 * torch.rand(shape, generator=gen, dtype=torch.float64)  # type: ignore[operator]
    return adv, entropy, ref


@PROPS
@given(seed=seeds, mode=st.sampled_from(AGGREGATION_MODES))
def test_no_gradient_or_loss_from_off_mask_tokens(seed: int, mode: str) -> None:
    batch, _ = spread_with_holes(batch_of(_rows(seed, True)), seed)
    adv, entropy, ref = _loss_inputs(batch, seed)
    nan = torch.full_like(adv, float("nan"))
    mask = batch.response_mask
    adv, entropy, ref = (torch.where(mask, x, nan) for x in (adv, entropy, ref))
    w = aggregation_weights(mask, batch.traj_ids, mode, dtype=torch.float64)  # type: ignore[arg-type]
    assert batch.log_probs is not None and batch.old_log_probs is not None
    for name in POLICY_LOSSES:
        logp = batch.log_probs.clone().requires_grad_()
        out = actor_loss(
            name,
            logp,
            batch.old_log_probs,
            adv,
            mask,
            w,
            LOSS_CONFIG,
            entropy=entropy,
            ref_log_probs=ref,
        )
        out.loss.backward()
        assert logp.grad is not None
        assert torch.isfinite(out.loss), name
        assert torch.isfinite(logp.grad).all(), name
        assert torch.count_nonzero(logp.grad[~mask]) == 0, name
        assert torch.count_nonzero(out.token_loss[~mask]) == 0, name


@PROPS
@given(seed=seeds, mode=st.sampled_from(AGGREGATION_MODES), pads=st.integers(0, 3))
def test_losses_ignore_padding_and_row_order(seed: int, mode: str, pads: int) -> None:
    rows = _rows(seed, False)
    plain = batch_of(rows)
    adv, entropy, ref = _loss_inputs(plain, seed)
    holed, cols = spread_with_holes(
        fill_padding(batch_of(add_padding_rows(rows, pads, seed))), seed + 1
    )
    n = len(rows)
    width = plain.response_mask.shape[1]

    def spread(x: torch.Tensor) -> torch.Tensor:
        out = torch.full(holed.response_mask.shape, float("nan"), dtype=x.dtype)
        out[torch.arange(n).unsqueeze(1), cols[:n, :width]] = x
        return out

    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    for name in POLICY_LOSSES:
        results = []
        for b, a, e, r in (
            (plain, adv, entropy, ref),
            (holed, spread(adv), spread(entropy), spread(ref)),
            (_permute(plain, perm), adv[perm], entropy[perm], ref[perm]),
        ):
            w = aggregation_weights(b.response_mask, b.traj_ids, mode, dtype=torch.float64)  # type: ignore[arg-type]
            assert b.log_probs is not None and b.old_log_probs is not None
            out = actor_loss(
                name,
                b.log_probs,
                b.old_log_probs,
                a,
                b.response_mask,
                w,
                LOSS_CONFIG,
                entropy=e,
                ref_log_probs=r,
            )
            results.append(out.loss)
        torch.testing.assert_close(results[1], results[0], msg=name)
        torch.testing.assert_close(results[2], results[0], msg=name)


@PROPS
@given(seed=seeds)
def test_every_trajectory_weighs_the_same_however_many_steps(seed: int) -> None:
    batch = batch_of(add_padding_rows(_rows(seed, True), 2, seed))
    w = aggregation_weights(
        batch.response_mask, batch.traj_ids, "trajectory-mean", dtype=torch.float64
    )
    per_traj = torch.zeros(batch.num_trajectories, dtype=torch.float64).index_add_(
        0, batch.traj_index, w.sum(dim=1)
    )
    valid = batch.valid_trajectories
    n_valid = int(valid.sum())
    if n_valid:  # a batch whose steps all have empty responses has nothing to weigh
        torch.testing.assert_close(
            per_traj[valid], torch.full((n_valid,), 1 / n_valid, dtype=torch.float64)
        )
    assert torch.count_nonzero(per_traj[~valid]) == 0
    assert torch.count_nonzero(w[~batch.response_mask]) == 0


def test_entropy_is_finite_for_extreme_logits() -> None:
    logits = torch.tensor([[0.0, -1e9, 50.0], [1e4, 1e4, -1e4]])
    assert torch.isfinite(entropy_from_logits(logits)).all()
