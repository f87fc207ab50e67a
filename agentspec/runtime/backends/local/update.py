"""The update: epochs × minibatches of the algorithm's policy loss, the critic's value loss.

for each epoch, for each minibatch of trajectories:
    forward the policy on the minibatch's rows → log-probs (and logits) at response tokens
    actor loss (+ the teacher's distillation loss)  → the policy's optimiser step
    value loss                                       → the critic's optimiser step
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch

from agentspec.core.presets import Algorithm, clip_range, kl_coef
from agentspec.runtime.algorithms import (
    LossOutput,
    PolicyLossConfig,
    StepBatch,
    actor_loss,
    aggregation_weights,
    entropy_from_logits,
    teacher_topk,
    topk_distillation_loss,
    value_loss,
)
from agentspec.runtime.backends.local.device import autocast
from agentspec.runtime.backends.local.models import Models
from agentspec.runtime.backends.local.scoring import Scored
from agentspec.runtime.backends.local.tensors import (
    ResponseTokens,
    Rollout,
    StepIndex,
    pad_rows,
    response_log_probs,
    shared_prefix,
)
from agentspec.spec.model import TrainingSpec


@dataclass
class Minibatch:
    """Some trajectories' rows (on the models' device) and their steps."""

    steps: list[int]  # step rows of the iteration's StepBatch
    index: StepIndex  # where those steps' response tokens are in `ids`
    ids: torch.Tensor  # (B, L)
    attention: torch.Tensor  # (B, L)
    weights: torch.Tensor  # (n, T) aggregation weights; they sum to 1 over the minibatch


def minibatches(
    rollout: Rollout, weights: torch.Tensor, cfg: TrainingSpec, models: Models
) -> Iterator[Minibatch]:
    """`cfg.epochs` passes over the trajectories in random order, `cfg.minibatch_size` at a time."""
    pad = models.tokenizer.pad_token_id or 0
    order = torch.Generator().manual_seed(cfg.seed)
    n_traj = len(rollout.trajectories)
    for _ in range(cfg.epochs):
        permutation = torch.randperm(n_traj, generator=order).tolist()
        for start in range(0, n_traj, cfg.minibatch_size):
            chosen = set(permutation[start : start + cfg.minibatch_size])
            rows = [r for r, t in enumerate(rollout.row_traj) if t in chosen]
            steps = [i for i, ref in enumerate(rollout.steps) if ref.traj in chosen]
            if not steps:
                continue
            index = StepIndex.of(
                [rollout.steps[i] for i in steps], {r: k for k, r in enumerate(rows)}, rollout.width
            )
            ids, attention = (
                t.to(models.device) for t in pad_rows([rollout.rows[r] for r in rows], pad)
            )
            w = weights[steps]
            w = w / w.sum().clamp(min=1e-12)  # each minibatch is a mean over its trajectories
            yield Minibatch(steps, index, ids, attention, w)


def update(
    rollout: Rollout,
    batch: StepBatch,
    advantages: torch.Tensor,
    returns: torch.Tensor | None,
    scored: Scored,
    models: Models,
    cfg: TrainingSpec,
    algorithm: Algorithm,
    *,
    train_policy: bool = True,
) -> dict[str, float]:
    """Epochs of minibatch gradient steps; returns the mean of each loss metric.
    With ``train_policy`` False only the critic steps (its warm-up).

    With `scored.old_log_probs` None the policy was not scored beforehand: the
    whole batch is one minibatch, and its first forward pass, on the policy that
    sampled the rollout, gives the old log-probs (filled into `scored`).
    """
    clip_low, clip_high = clip_range(algorithm, cfg)
    loss_config = PolicyLossConfig(
        clip_low=clip_low,
        clip_high=clip_high,
        entropy_coef=cfg.entropy_coef,
        kl_coef=kl_coef(algorithm, cfg),
    )
    weights = aggregation_weights(batch.response_mask, batch.traj_ids, "trajectory-mean")
    totals: dict[str, list[float]] = {}
    for minibatch in minibatches(rollout, weights, cfg, models):
        metrics = (
            policy_step(
                minibatch, batch, advantages, scored, models, cfg, algorithm.loss, loss_config
            )
            if train_policy
            else {}
        )
        if models.critic is not None and returns is not None:
            metrics.update(critic_step(models, cfg, minibatch, scored, returns))
        for key, value in metrics.items():
            totals.setdefault(key, []).append(value)
    return with_aliases({k: sum(v) / len(v) for k, v in totals.items()})


def policy_step(
    minibatch: Minibatch,
    batch: StepBatch,
    advantages: torch.Tensor,
    scored: Scored,
    models: Models,
    cfg: TrainingSpec,
    loss_name: str,
    loss_config: PolicyLossConfig,
) -> dict[str, float]:
    """One gradient step of the policy on `minibatch`; returns its loss metrics."""
    steps, mask = minibatch.steps, batch.response_mask[minibatch.steps]
    with autocast(models.device):
        tokens = response_log_probs(
            models.policy, minibatch.ids, minibatch.attention, minibatch.index, cfg.temperature
        )
    log_probs = tokens.log_probs.cpu()  # the losses run on the CPU; gradients flow back
    if scored.old_log_probs is None:
        _take_old_log_probs(scored, batch, steps, log_probs)
    assert scored.old_log_probs is not None
    out = actor_loss(
        loss_name,
        log_probs,
        scored.old_log_probs[steps],
        advantages[steps],
        mask,
        minibatch.weights,
        loss_config,
        entropy=_entropy(tokens, mask, with_gradient=bool(cfg.entropy_coef)),
        ref_log_probs=scored.ref_log_probs[steps] if scored.ref_log_probs is not None else None,
    )
    loss = out.loss
    metrics = {k: float(v) for k, v in out.metrics.items()}
    if models.teacher is not None and cfg.opd_topk:
        distill = distillation_loss(models.teacher, minibatch, tokens, mask, cfg)
        loss = loss + distill.loss.cpu()
        metrics.update({k: float(v) for k, v in distill.metrics.items()})
    models.optimizers["policy"].zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(models.policy.parameters(), cfg.max_grad_norm)
    models.optimizers["policy"].step()
    metrics["loss/policy"] = float(loss.detach())
    metrics["actor/grad_norm"] = float(grad_norm)  # before clipping
    return metrics


def _entropy(tokens: ResponseTokens, mask: torch.Tensor, with_gradient: bool) -> torch.Tensor:
    """Per-token entropy `(n, T)`, 0 off the mask: a loss term when the entropy bonus is
    on, else only a metric, computed without a graph (0 × H in the loss moved no gradient)."""
    with torch.set_grad_enabled(with_gradient and torch.is_grad_enabled()):
        entropy = entropy_from_logits(tokens.logits).cpu()
    return torch.where(mask, entropy, 0.0)


def _take_old_log_probs(
    scored: Scored, batch: StepBatch, steps: list[int], log_probs: torch.Tensor
) -> None:
    """The first forward pass of an unscored batch: the sampling policy's log-probs."""
    if len(steps) != batch.response_mask.shape[0]:
        raise AssertionError("old log-probs from the update need the batch as one minibatch")
    scored.old_log_probs = torch.where(batch.response_mask, log_probs.detach(), 0.0)


def distillation_loss(
    teacher: Any,
    minibatch: Minibatch,
    student: ResponseTokens,
    mask: torch.Tensor,
    cfg: TrainingSpec,
) -> LossOutput:
    """On-policy distillation with the teacher's logits at hand: β · KL(π_student ‖ π_teacher),
    the reverse KL over the teacher's top-k tokens at every response position of the
    student's own samples (GKD, Agarwal et al. 2024), on the models' device; β is
    `opd_beta`, the distillation's weight in both of OPD's forms."""
    device = student.logits.device
    with torch.no_grad(), autocast(device):
        teacher_tokens = response_log_probs(
            teacher, minibatch.ids, minibatch.attention, minibatch.index, cfg.temperature
        )
        top_log_probs, top_ids = teacher_topk(teacher_tokens.logits, cfg.opd_topk)
    out = topk_distillation_loss(
        student.logits,
        top_log_probs,
        top_ids,
        mask.to(device),
        minibatch.weights.to(device),
        "reverse_kl",
    )
    return replace(out, loss=cfg.opd_beta * out.loss)


def critic_step(
    models: Models,
    cfg: TrainingSpec,
    minibatch: Minibatch,
    scored: Scored,
    returns: torch.Tensor,
) -> dict[str, float]:
    """One gradient step of the critic on `minibatch`; returns the value loss (before
    `value_coef`) and the gradient norm before clipping."""
    index, steps, weights = minibatch.index, minibatch.steps, minibatch.weights
    with autocast(models.device):
        prefix = shared_prefix(minibatch.ids, index.first_read())
        position_values = models.critic(minibatch.ids, minibatch.attention, prefix)
        position_values = position_values.float().cpu()
    if returns.dim() == 1:  # step-level: V(state before the step) against the step's return
        assert scored.values is not None
        step_weights = weights.sum(dim=1)
        out = value_loss(
            index.states(position_values), scored.values[steps], returns[steps], step_weights
        )
    else:  # token-level: V before each response token
        assert scored.token_values is not None
        values = index.tokens(torch.nn.functional.pad(position_values[:, :-1], (1, 0)))
        out = value_loss(values, scored.token_values[steps], returns[steps], weights)
    loss = cfg.value_coef * out.loss
    models.optimizers["critic"].zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(models.critic.parameters(), cfg.max_grad_norm)
    models.optimizers["critic"].step()
    return {"loss/value": float(out.loss.detach()), "critic/grad_norm": float(grad_norm)}


def with_aliases(metrics: dict[str, float]) -> dict[str, float]:
    """Add the common names dashboards look for: `actor/kl`, `actor/clip_fraction`."""
    if "actor/kl_loss" in metrics:
        metrics["actor/kl"] = metrics["actor/kl_loss"]
    for key in list(metrics):
        if key.startswith("actor/clipfrac") and "actor/clip_fraction" not in metrics:
            metrics["actor/clip_fraction"] = metrics[key]
    return metrics
