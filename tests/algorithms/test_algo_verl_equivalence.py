"""Equivalence with verl 0.9.1's ``core_algos`` where the definitions coincide.

verl is imported once for the module (the import costs 8-14 s). It is not
skipped when missing: ``make test`` installs the ``verl`` extra, so a missing
verl is a broken environment, not a reason to pass.

Where they coincide:
- GRPO / RLOO: one-step trajectories, every prompt group of size ≥ 2 (for a
  group of one verl's GRPO uses mean 0 and std 1, ours gives 0).
- Token-level GAE: one-step trajectories (the concatenation is the row itself).
- Vanilla PPO (dual clip c = 3) with ``token-mean`` and ``seq-mean-token-mean``.
- GSPO on one-step rows = StepPO (``step-mean`` and ``trajectory-mean`` both
  equal verl's ``seq-mean-token-mean`` there).
- REINFORCE loss, clipped value loss, k1/k2/k3 KL (k3 below 10, where verl
  clamps its output; we clamp only the log-ratio, to ±20).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agentspec.runtime.algorithms import (
    AdvantageConfig,
    PolicyLossConfig,
    StepBatch,
    aggregation_weights,
    compute_advantages,
    kl_divergence,
    policy_loss,
    value_loss,
)


@pytest.fixture(scope="module")
def verl():
    from verl.trainer.ppo import core_algos
    from verl.workers.config import ActorConfig

    return core_algos, ActorConfig


SEEDS = range(5)


def _one_step_batch(
    seed: int, *, width: int = 7, min_group: int = 2
) -> tuple[StepBatch, torch.Tensor]:
    """One-step trajectories in prompt groups of ``min_group``..5, ragged right-padded responses.

    Returns the batch and verl's ``token_level_rewards`` (the reward on the last response token).
    """
    gen = torch.Generator().manual_seed(seed)
    sizes = torch.randint(min_group, 6, (4,), generator=gen).tolist()
    group_ids = torch.tensor([g for g, k in enumerate(sizes) for _ in range(k)], dtype=torch.int64)
    n = len(group_ids)
    lengths = torch.randint(1, width + 1, (n,), generator=gen)
    mask = torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)
    rewards = torch.randint(0, 3, (n,), generator=gen).to(torch.float64) + torch.rand(
        n, generator=gen, dtype=torch.float64
    ) * (seed % 2)
    token_rewards = torch.zeros((n, width), dtype=torch.float64)
    token_rewards[torch.arange(n), lengths - 1] = rewards
    batch = StepBatch(
        response_mask=mask,
        rewards=rewards,
        traj_ids=torch.arange(n, dtype=torch.int64),
        step_index=torch.zeros(n, dtype=torch.int64),
        group_ids=group_ids,
        token_values=torch.randn((n, width), generator=gen, dtype=torch.float64),
        old_log_probs=-torch.rand((n, width), generator=gen, dtype=torch.float64) * 3,
    )
    return batch, token_rewards


def _on_mask(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.where(mask, x, torch.zeros_like(x))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("norm_by_std", [True, False])
def test_grpo_matches_verl(verl, seed: int, norm_by_std: bool) -> None:
    core_algos, _ = verl
    batch, token_rewards = _one_step_batch(seed)
    mask = batch.response_mask
    ours = compute_advantages("grpo", batch, AdvantageConfig(norm_by_std=norm_by_std))
    theirs, _ = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=token_rewards,
        response_mask=mask.to(torch.float64),
        index=batch.group_ids.numpy(),
        epsilon=1e-6,
        norm_adv_by_std_in_grpo=norm_by_std,
    )
    torch.testing.assert_close(ours.advantages, _on_mask(theirs, mask))


@pytest.mark.parametrize("seed", SEEDS)
def test_rloo_matches_verl(verl, seed: int) -> None:
    core_algos, _ = verl
    batch, token_rewards = _one_step_batch(seed)
    mask = batch.response_mask
    ours = compute_advantages("rloo", batch, AdvantageConfig())
    for fn in (
        core_algos.compute_rloo_outcome_advantage,
        core_algos.compute_rloo_vectorized_outcome_advantage,
    ):
        theirs, _ = fn(
            token_level_rewards=token_rewards,
            response_mask=mask.to(torch.float64),
            index=batch.group_ids.numpy(),
        )
        torch.testing.assert_close(ours.advantages, _on_mask(theirs, mask))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("gamma", "lam"), [(1.0, 1.0), (0.99, 0.95), (0.9, 0.5)])
def test_token_gae_matches_verl_on_single_step_rows(
    verl, seed: int, gamma: float, lam: float
) -> None:
    core_algos, _ = verl
    batch, token_rewards = _one_step_batch(seed, min_group=1)
    mask = batch.response_mask
    ours = compute_advantages(
        "token_gae", batch, AdvantageConfig(gamma=gamma, lam=lam, whiten=True)
    )
    theirs_adv, theirs_ret = core_algos.compute_gae_advantage_return(
        token_level_rewards=token_rewards,
        values=batch.token_values,
        response_mask=mask.to(torch.float64),
        gamma=gamma,
        lam=lam,
    )
    torch.testing.assert_close(ours.advantages, _on_mask(theirs_adv, mask))
    assert ours.returns is not None
    torch.testing.assert_close(ours.returns, _on_mask(theirs_ret, mask))


def _log_probs(batch: StepBatch, seed: int, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed + 100)
    assert batch.old_log_probs is not None
    logp = batch.old_log_probs + scale * torch.randn(
        batch.old_log_probs.shape, generator=gen, dtype=torch.float64
    )
    adv = torch.randn(batch.old_log_probs.shape, generator=gen, dtype=torch.float64)
    return logp, adv


def _actor_config(ActorConfig, low: float, high: float):
    return ActorConfig(
        strategy="fsdp",
        rollout_n=1,
        ppo_micro_batch_size_per_gpu=1,
        clip_ratio=low,
        clip_ratio_low=low,
        clip_ratio_high=high,
        clip_ratio_c=3.0,
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("verl_mode", "our_mode"), [("token-mean", "token-mean"), ("seq-mean-token-mean", "step-mean")]
)
def test_vanilla_ppo_matches_verl(verl, seed: int, verl_mode: str, our_mode: str) -> None:
    core_algos, ActorConfig = verl
    batch, _ = _one_step_batch(seed, min_group=1)
    mask = batch.response_mask
    logp, adv = _log_probs(
        batch, seed, scale=0.4
    )  # big enough that many tokens clip, some dual-clip
    cfg = PolicyLossConfig(clip_low=0.2, clip_high=0.28, dual_clip_c=3.0)
    w = aggregation_weights(mask, batch.traj_ids, our_mode, dtype=torch.float64)  # type: ignore[arg-type]

    ours_lp = logp.clone().requires_grad_()
    ours = policy_loss("ppo_clip", ours_lp, batch.old_log_probs, adv, mask, w, cfg)  # type: ignore[arg-type]
    ours.loss.backward()
    theirs_lp = logp.clone().requires_grad_()
    theirs, metrics = core_algos.compute_policy_loss_vanilla(
        old_log_prob=batch.old_log_probs,
        log_prob=theirs_lp,
        advantages=adv,
        response_mask=mask.to(torch.float64),
        loss_agg_mode=verl_mode,
        config=_actor_config(ActorConfig, 0.2, 0.28),
    )
    theirs.backward()
    torch.testing.assert_close(ours.loss, theirs)
    torch.testing.assert_close(ours_lp.grad, _on_mask(theirs_lp.grad, mask))
    assert ours.metrics["actor/clipfrac"] == pytest.approx(metrics["actor/pg_clipfrac"], abs=1e-6)
    assert ours.metrics["actor/clipfrac_lower"] == pytest.approx(
        metrics["actor/pg_clipfrac_lower"], abs=1e-6
    )
    assert 0 < ours.metrics["actor/clipfrac"] < 1


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("verl_mode", "our_mode"),
    [
        ("seq-mean-token-mean", "step-mean"),
        ("seq-mean-token-mean", "trajectory-mean"),
        ("token-mean", "token-mean"),
    ],
)
def test_gspo_on_one_step_rows_matches_steppo(
    verl, seed: int, verl_mode: str, our_mode: str
) -> None:
    core_algos, ActorConfig = verl
    batch, _ = _one_step_batch(seed, min_group=1)
    mask = batch.response_mask
    logp, _ = _log_probs(batch, seed, scale=0.05)
    gen = torch.Generator().manual_seed(seed + 7)
    adv = batch.broadcast(
        torch.randn(batch.num_steps, generator=gen, dtype=torch.float64)
    )  # one A per step
    cfg = PolicyLossConfig(clip_low=0.02, clip_high=0.03)  # GSPO-sized ranges: some steps clip
    w = aggregation_weights(mask, batch.traj_ids, our_mode, dtype=torch.float64)  # type: ignore[arg-type]

    ours_lp = logp.clone().requires_grad_()
    ours = policy_loss("steppo", ours_lp, batch.old_log_probs, adv, mask, w, cfg)  # type: ignore[arg-type]
    ours.loss.backward()
    theirs_lp = logp.clone().requires_grad_()
    theirs, _ = core_algos.compute_policy_loss_gspo(
        old_log_prob=batch.old_log_probs,
        log_prob=theirs_lp,
        advantages=adv,
        response_mask=mask.to(torch.float64),
        loss_agg_mode=verl_mode,
        config=_actor_config(ActorConfig, 0.02, 0.03),
    )
    theirs.backward()
    torch.testing.assert_close(ours.loss, theirs)
    torch.testing.assert_close(ours_lp.grad, _on_mask(theirs_lp.grad, mask))
    assert 0 < ours.metrics["actor/clipfrac"] < 1


@pytest.mark.parametrize("seed", SEEDS)
def test_reinforce_loss_matches_verl(verl, seed: int) -> None:
    core_algos, ActorConfig = verl
    batch, _ = _one_step_batch(seed, min_group=1)
    mask = batch.response_mask
    logp, adv = _log_probs(batch, seed, scale=0.1)
    w = aggregation_weights(mask, batch.traj_ids, "token-mean", dtype=torch.float64)
    ours = policy_loss("reinforce", logp, batch.old_log_probs, adv, mask, w, PolicyLossConfig())  # type: ignore[arg-type]
    theirs, _ = core_algos.compute_policy_loss_reinforce(
        rollout_log_prob=batch.old_log_probs,
        log_prob=logp,
        advantages=adv,
        response_mask=mask.to(torch.float64),
        loss_agg_mode="token-mean",
        config=_actor_config(ActorConfig, 0.2, 0.2),
    )
    torch.testing.assert_close(ours.loss, theirs)


@pytest.mark.parametrize("seed", SEEDS)
def test_value_loss_matches_verl(verl, seed: int) -> None:
    core_algos, _ = verl
    batch, _ = _one_step_batch(seed, min_group=1)
    mask = batch.response_mask
    gen = torch.Generator().manual_seed(seed)
    shape = mask.shape
    old_v = torch.randn(shape, generator=gen, dtype=torch.float64)
    v = old_v + 0.5 * torch.randn(shape, generator=gen, dtype=torch.float64)
    ret = torch.randn(shape, generator=gen, dtype=torch.float64)
    w = aggregation_weights(mask, batch.traj_ids, "token-mean", dtype=torch.float64)
    ours = value_loss(v, old_v, ret, w, clip_range=0.2)
    theirs, clipfrac = core_algos.compute_value_loss(
        vpreds=v,
        returns=ret,
        values=old_v,
        response_mask=mask.to(torch.float64),
        cliprange_value=0.2,
        loss_agg_mode="token-mean",
    )
    torch.testing.assert_close(ours.loss, theirs)
    assert ours.metrics["critic/vf_clipfrac"] == pytest.approx(float(clipfrac), abs=1e-6)


@pytest.mark.parametrize(
    ("ours_name", "verl_name"), [("k1", "k1"), ("k2", "k2"), ("k3", "low_var_kl")]
)
def test_kl_estimators_match_verl(verl, ours_name: str, verl_name: str) -> None:
    core_algos, _ = verl
    gen = torch.Generator().manual_seed(0)
    # |log π − log π_ref| < 2.5 keeps k3 below 10, where verl clamps its output and we do not
    logp = -torch.rand((6, 9), generator=gen, dtype=torch.float64) * 2.5
    ref = -torch.rand((6, 9), generator=gen, dtype=torch.float64) * 2.5
    ours = kl_divergence(logp, ref, ours_name)  # type: ignore[arg-type]
    theirs = core_algos.kl_penalty(logp, ref, verl_name)
    torch.testing.assert_close(ours, theirs)


def test_verl_registry_names_we_mirror_exist(verl) -> None:
    core_algos, _ = verl
    # the verl backend will register ours beside these; the names they mirror must still be there
    for name in ("gae", "grpo", "rloo"):
        assert core_algos.get_adv_estimator_fn(name) is not None
    for name in ("vanilla", "gspo"):
        assert core_algos.get_policy_loss_fn(name) is not None
    assert isinstance(np.asarray([1]), np.ndarray)
