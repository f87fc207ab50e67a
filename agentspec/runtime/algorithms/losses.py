"""Policy losses, loss aggregation, entropy bonus, KL to a reference, value loss.

Shapes: ``n`` step rows, ``T`` padded response length, ``V`` vocabulary.

Aggregation is done with explicit per-token *weights* ``(n, T)`` built once per
mini-batch by :func:`aggregation_weights` and then multiplied into the
per-token loss and summed. Because the normalisation lives in the weights, a
mini-batch split into micro-batches (or data-parallel shards) gives exactly the
same gradient when the micro-batch losses are summed: slice the weights with the
rows. All losses sanitise positions outside ``response_mask`` first, so padding
holding any value (even inf or NaN) gets neither loss nor gradient.

Every policy loss has the signature of :data:`PolicyLossFn` and is looked up by
name in :data:`POLICY_LOSSES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, get_args

import torch
from torch import Tensor

from agentspec.core.presets import VALUE_CLIP
from agentspec.core.registry import Registry

__all__ = [
    "AGGREGATION_MODES",
    "POLICY_LOSSES",
    "AggregationMode",
    "KLEstimator",
    "LossOutput",
    "PolicyLossConfig",
    "PolicyLossFn",
    "actor_loss",
    "aggregate",
    "aggregation_weights",
    "entropy_from_logits",
    "kl_divergence",
    "policy_loss",
    "ppo_clip_loss",
    "reinforce_loss",
    "steppo_loss",
    "value_loss",
]

AggregationMode = Literal["token-mean", "step-mean", "trajectory-mean"]
AGGREGATION_MODES: tuple[str, ...] = get_args(AggregationMode)
KLEstimator = Literal["k1", "k2", "k3"]

_MAX_LOG_RATIO = 20.0  # |log π/π_old| is clamped to this before exp (as verl)
_MAX_STEP_LOG_RATIO = 10.0  # StepPO/GSPO: upper clamp of the step log-ratio (as verl's GSPO)


@dataclass(frozen=True)
class LossOutput:
    """A scalar loss with its per-token terms and diagnostics.

    Attributes:
        loss: scalar; ``(token_loss * weights).sum()`` (+ any extra terms).
        token_loss: ``(n, T)`` (or the shape of the input) per-token loss before
            aggregation; 0 off the mask.
        metrics: namespaced scalars (``"actor/clipfrac"``, ``"critic/vf_loss"``).
    """

    loss: Tensor
    token_loss: Tensor
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PolicyLossConfig:
    """Settings of the actor loss.

    Attributes:
        clip_low: ε_low: the ratio is clipped below at 1 − ε_low.
        clip_high: ε_high: the ratio is clipped above at 1 + ε_high (DAPO's
            "clip-higher" when larger than ``clip_low``). StepPO/GSPO use
            ranges of about 3e-4 to 4e-4 since the step ratio is a geometric mean.
        dual_clip_c: dual-clip constant c > 1 for ``ppo_clip`` (Ye et al. 2020):
            for negative advantages the loss is capped at −A·c. None disables it.
        entropy_coef: weight of the entropy bonus (subtracted from the loss).
        kl_coef: weight of the KL penalty to the reference policy.
        kl_estimator: ``"k1"``, ``"k2"`` or ``"k3"`` (see :func:`kl_divergence`).
    """

    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip_c: float | None = None
    entropy_coef: float = 0.0
    kl_coef: float = 0.0
    kl_estimator: KLEstimator = "k3"

    def __post_init__(self) -> None:
        if not 0.0 <= self.clip_low < 1.0:
            raise ValueError(f"clip_low must be in [0, 1), got {self.clip_low}")
        if self.clip_high < 0.0:
            raise ValueError(f"clip_high must be >= 0, got {self.clip_high}")
        if self.dual_clip_c is not None and self.dual_clip_c <= 1.0:
            raise ValueError(f"dual_clip_c must be > 1, got {self.dual_clip_c}")
        if self.kl_estimator not in get_args(KLEstimator):
            raise ValueError(
                f"kl_estimator must be one of {get_args(KLEstimator)}, got {self.kl_estimator!r}"
            )


# ----------------------------------------------------------------------------
# aggregation
# ----------------------------------------------------------------------------


def aggregation_weights(
    response_mask: Tensor,
    traj_ids: Tensor,
    mode: AggregationMode = "trajectory-mean",
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Per-token weights that turn a per-token loss into a scalar by a weighted sum.

    The weights are 0 off the mask and sum to 1 over the batch (0 if the mask
    is empty). With ``N`` valid trajectories, ``S_τ`` valid steps in τ, ``n_s``
    valid rows, ``|y_s|`` tokens in step s and ``K`` tokens in the batch:

    - ``"trajectory-mean"``: w = 1 / (N · S_τ · |y_s|). Every trajectory weighs
      1/N however many steps it has; inside it every step weighs the same,
      inside a step every token (the fix for the per-step-row bias of rLLM
      #512 / Agent-R1 PR #85).
    - ``"step-mean"``: w = 1 / (n_s · |y_s|). Every step row weighs the same
      (verl's ``seq-mean-token-mean`` with one row per step, as in StepPO).
    - ``"token-mean"``: w = 1 / K. Every token weighs the same (verl's
      ``token-mean``).

    Args:
        response_mask: ``(n, T)`` bool.
        traj_ids: ``(n,)`` int64 trajectory of each row.
        mode: one of :data:`AGGREGATION_MODES`.

    Returns:
        ``(n, T)`` weights of ``dtype``.
    """
    m = response_mask.to(dtype)
    tokens = m.sum(dim=1)  # |y_s|, (n,)
    valid = (tokens > 0).to(dtype)
    if mode == "token-mean":
        return m / m.sum().clamp(min=1)
    per_token = m / tokens.clamp(min=1).unsqueeze(1)  # each valid row sums to 1
    if mode == "step-mean":
        return per_token / valid.sum().clamp(min=1)
    if mode == "trajectory-mean":
        inv = torch.unique(traj_ids, return_inverse=True)[1]
        steps_in_traj = m.new_zeros(int(inv.max().item()) + 1 if inv.numel() else 0).index_add_(
            0, inv, valid
        )
        n_traj = (steps_in_traj > 0).to(dtype).sum()
        row = valid / steps_in_traj[inv].clamp(min=1) / n_traj.clamp(min=1)
        return per_token * row.unsqueeze(1)
    raise ValueError(
        f"unknown aggregation mode {mode!r}; valid modes: {', '.join(AGGREGATION_MODES)}"
    )


def aggregate(values: Tensor, weights: Tensor) -> Tensor:
    """Weighted sum ``Σ w·x`` over positions with nonzero weight (others are ignored, even if NaN)."""
    keep = weights != 0
    return torch.where(keep, values, values.new_zeros(())).mul(weights).sum()


def _clean(x: Tensor, mask: Tensor) -> Tensor:
    """``x`` with positions outside ``mask`` set to 0, so they carry no value and no gradient."""
    return torch.where(mask, x, x.new_zeros(()))


def _masked_mean(x: Tensor, mask: Tensor) -> float:
    return float(x[mask].float().mean()) if bool(mask.any()) else 0.0


# ----------------------------------------------------------------------------
# policy losses
# ----------------------------------------------------------------------------

PolicyLossFn = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, PolicyLossConfig], LossOutput]
"""``(log_probs, old_log_probs, advantages, response_mask, weights, config) -> LossOutput``.

``log_probs`` ``(n, T)`` carries the gradient; ``old_log_probs`` (sampler),
``advantages`` ``(n, T)`` and ``weights`` ``(n, T)`` (from
:func:`aggregation_weights`) are constants; ``response_mask`` ``(n, T)`` bool.
"""

POLICY_LOSSES: Registry[PolicyLossFn] = Registry("policy loss")


def register_loss(name: str) -> Callable[[PolicyLossFn], PolicyLossFn]:
    """Decorator: register a policy loss under ``name`` (duplicates are rejected), as
    :func:`~agentspec.runtime.algorithms.advantages.register_estimator` does estimators."""
    return POLICY_LOSSES.register(name)


@register_loss("ppo_clip")
def ppo_clip_loss(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    weights: Tensor,
    config: PolicyLossConfig,
) -> LossOutput:
    """PPO's clipped surrogate on token ratios, with optional dual clip.

    Schulman et al. 2017, "Proximal Policy Optimization Algorithms",
    arXiv:1707.06347, eq. 7 (L^CLIP);
    dual clip: Ye et al. 2020, "Mastering Complex Control in MOBA Games with
    Deep RL", arXiv:1912.09729. Per token j, with r_j = π(y_j)/π_old(y_j)::

        ℓ_j = max(−A_j r_j, −A_j clip(r_j, 1 − ε_low, 1 + ε_high))
        ℓ_j = min(ℓ_j, −A_j c)            if A_j < 0 and dual_clip_c = c

    Shapes: all ``(n, T)``; returns the scalar ``Σ w ℓ``.
    """
    mask = response_mask
    adv = _clean(advantages, mask)
    log_ratio = (_clean(log_probs, mask) - _clean(old_log_probs, mask)).clamp(
        -_MAX_LOG_RATIO, _MAX_LOG_RATIO
    )
    ratio = torch.exp(log_ratio)
    loss1 = -adv * ratio
    loss2 = -adv * ratio.clamp(1.0 - config.clip_low, 1.0 + config.clip_high)
    token_loss = torch.maximum(loss1, loss2)
    metrics = {
        "actor/clipfrac": _masked_mean((loss2 > loss1).float(), mask),
        "actor/ppo_kl": _masked_mean(-log_ratio.detach(), mask),
    }
    if config.dual_clip_c is not None:
        cap = -adv * config.dual_clip_c
        capped = (adv < 0) & (token_loss > cap)
        token_loss = torch.where(adv < 0, torch.minimum(token_loss, cap), token_loss)
        metrics["actor/clipfrac_lower"] = _masked_mean(capped.float(), mask)
    token_loss = _clean(token_loss, mask)
    return LossOutput(aggregate(token_loss, weights), token_loss, metrics)


@register_loss("steppo")
def steppo_loss(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    weights: Tensor,
    config: PolicyLossConfig,
) -> LossOutput:
    """StepPO: one clipped importance ratio per agent step (GSPO applied per step).

    Zheng et al. 2025, "Group Sequence Policy Optimization", arXiv:2507.18071:
    the sequence ratio and its GSPO-token form, with a step row in place of a sequence, as StepPO
    (Wang et al. 2026, arXiv:2604.18401) runs verl's ``gspo`` loss on step
    rows. For step i with response y_i::

        s_i   = exp( (1/|y_i|) Σ_j log π(y_ij)/π_old(y_ij) )     geometric mean
        s_ij  = sg[s_i] · π(y_ij) / sg[π(y_ij)]                   value s_i
        ℓ_ij  = max(−A_ij s_ij, −A_ij clip(s_ij, 1 − ε_low, 1 + ε_high))

    With an advantage constant over the step (all step-level estimators) and
    weights uniform inside a step (all aggregation modes), the gradient is that
    of the step-level objective max(−A s_i, −A clip(s_i)); a clipped step
    carries no gradient. ``dual_clip_c`` is not used. The step log-ratio is
    clamped above at 10 (as verl).

    Shapes: all ``(n, T)``; returns the scalar ``Σ w ℓ``.
    """
    mask = response_mask
    adv = _clean(advantages, mask)
    logp = _clean(log_probs, mask)
    log_ratio = logp - _clean(old_log_probs, mask)
    n_tok = mask.sum(dim=1, keepdim=True).clamp(min=1)
    step_log_ratio = log_ratio.sum(dim=1, keepdim=True) / n_tok  # (n, 1)
    token_log_ratio = (step_log_ratio.detach() + logp - logp.detach()).clamp(
        max=_MAX_STEP_LOG_RATIO
    )
    ratio = torch.exp(token_log_ratio)
    loss1 = -adv * ratio
    loss2 = -adv * ratio.clamp(1.0 - config.clip_low, 1.0 + config.clip_high)
    token_loss = _clean(torch.maximum(loss1, loss2), mask)
    valid = mask.any(dim=1)
    step_clipped = ((loss2 > loss1) & mask).any(dim=1)
    # What PPO's token clip at the same range would have cut (a diagnostic only): tokens
    # whose own ratio is out of range on the side where the clip binds, as `actor/clipfrac`
    # counts them for `ppo_clip`.
    token_ratio = log_ratio.detach().clamp(max=_MAX_LOG_RATIO).exp()
    token_clipped = -adv * token_ratio.clamp(1.0 - config.clip_low, 1.0 + config.clip_high) > (
        -adv * token_ratio
    )
    metrics = {
        "actor/clipfrac": _masked_mean(step_clipped.float(), valid),
        "actor/step_ratio_mean": _masked_mean(step_log_ratio.detach().exp().squeeze(1), valid),
        "actor/ppo_kl": _masked_mean(-log_ratio.detach(), mask),
        "actor/token_clipfrac": _masked_mean(token_clipped.float(), mask),
    }
    return LossOutput(aggregate(token_loss, weights), token_loss, metrics)


@register_loss("reinforce")
def reinforce_loss(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    weights: Tensor,
    config: PolicyLossConfig,
) -> LossOutput:
    """REINFORCE: ``ℓ_j = −A_j log π(y_j)`` (Williams 1992). No ratio, no clip.

    ``old_log_probs`` only feeds the ``actor/ppo_kl`` metric; ``config`` is unused.

    Shapes: all ``(n, T)``; returns the scalar ``Σ w ℓ``.
    """
    mask = response_mask
    logp = _clean(log_probs, mask)
    token_loss = _clean(-_clean(advantages, mask) * logp, mask)
    metrics = {"actor/ppo_kl": _masked_mean((_clean(old_log_probs, mask) - logp).detach(), mask)}
    return LossOutput(aggregate(token_loss, weights), token_loss, metrics)


def policy_loss(
    name: str,
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    weights: Tensor,
    config: PolicyLossConfig,
) -> LossOutput:
    """Run the policy loss registered as ``name`` (raises ``UnknownNameError`` listing valid names)."""
    return POLICY_LOSSES.get(name)(
        log_probs, old_log_probs, advantages, response_mask, weights, config
    )


# ----------------------------------------------------------------------------
# entropy, KL, actor total, critic
# ----------------------------------------------------------------------------


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of the categorical distribution at each position.

    ``H = logsumexp(z) − Σ_v softmax(z)_v z_v``. Shapes: ``(..., V)`` → ``(...)``.
    """
    return torch.logsumexp(logits, dim=-1) - (torch.softmax(logits, dim=-1) * logits).sum(dim=-1)


def kl_divergence(
    log_probs: Tensor, ref_log_probs: Tensor, estimator: KLEstimator = "k3"
) -> Tensor:
    """Per-token estimate of KL(π ‖ π_ref) on tokens sampled from π.

    J. Schulman, "Approximating KL Divergence" (2020), with
    log r = log π_ref(y) − log π(y)::

        k1 = −log r                 unbiased, high variance, can be negative
        k2 = ½ (log r)²             biased, low variance; its gradient is that of KL
        k3 = (r − 1) − log r        unbiased, low variance, ≥ 0 ("low_var_kl")

    log r is clamped to [−20, 20] for k3 before exp. Shapes: ``(n, T)`` → ``(n, T)``.
    """
    log_r = ref_log_probs - log_probs
    if estimator == "k1":
        return -log_r
    if estimator == "k2":
        return 0.5 * log_r.square()
    if estimator == "k3":
        log_r = log_r.clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
        return torch.exp(log_r) - 1.0 - log_r
    raise ValueError(
        f"unknown KL estimator {estimator!r}; valid: {', '.join(get_args(KLEstimator))}"
    )


def actor_loss(
    name: str,
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    weights: Tensor,
    config: PolicyLossConfig,
    *,
    entropy: Tensor | None = None,
    ref_log_probs: Tensor | None = None,
) -> LossOutput:
    """Policy loss − entropy_coef · H + kl_coef · KL(π ‖ π_ref), all aggregated with ``weights``.

    Args:
        name: a policy loss in :data:`POLICY_LOSSES`.
        entropy: ``(n, T)`` per-token entropy (:func:`entropy_from_logits`);
            required when ``config.entropy_coef`` is nonzero, logged if given.
        ref_log_probs: ``(n, T)`` reference-policy log-probs of the same tokens;
            required when ``config.kl_coef`` is nonzero, logged if given.
    """
    out = policy_loss(name, log_probs, old_log_probs, advantages, response_mask, weights, config)
    total, token_loss = out.loss, out.token_loss
    metrics = dict(out.metrics)
    metrics["actor/pg_loss"] = float(out.loss.detach())
    if config.entropy_coef and entropy is None:
        raise ValueError("entropy_coef is nonzero but no entropy was given")
    if config.kl_coef and ref_log_probs is None:
        raise ValueError("kl_coef is nonzero but no ref_log_probs were given")
    if entropy is not None:
        ent = _clean(entropy, response_mask)
        ent_term = aggregate(ent, weights)
        metrics["actor/entropy"] = float(ent_term.detach())
        total = total - config.entropy_coef * ent_term
        token_loss = token_loss - config.entropy_coef * ent
    if ref_log_probs is not None:
        kl = _clean(
            kl_divergence(
                _clean(log_probs, response_mask),
                _clean(ref_log_probs, response_mask),
                config.kl_estimator,
            ),
            response_mask,
        )
        kl_term = aggregate(kl, weights)
        metrics["actor/kl_loss"] = float(kl_term.detach())
        total = total + config.kl_coef * kl_term
        token_loss = token_loss + config.kl_coef * kl
    return LossOutput(total, token_loss, metrics)


def value_loss(
    values: Tensor,
    old_values: Tensor,
    returns: Tensor,
    weights: Tensor,
    clip_range: float | None = VALUE_CLIP,
) -> LossOutput:
    """Clipped value loss of the critic.

    PPO's value clipping (OpenAI baselines ppo2; Andrychowicz et al. 2021,
    "What Matters in On-Policy RL", arXiv:2006.05990, studies it)::

        v_clip = clip(v, v_old − ε, v_old + ε)
        ℓ = ½ max((v − R)², (v_clip − R)²)          (½ (v − R)² if clip_range is None)

    Shapes: any, all equal; ``(n,)`` with per-step weights for step-level GAE
    (e.g. ``aggregation_weights(mask.any(1, keepdim=True), traj_ids)[:, 0]``),
    ``(n, T)`` for token-level GAE. Positions with zero weight are ignored.
    """
    keep = weights != 0
    v, v_old, ret = _clean(values, keep), _clean(old_values, keep), _clean(returns, keep)
    loss1 = (v - ret).square()
    if clip_range is None:
        token_loss = 0.5 * loss1
        clipfrac = 0.0
    else:
        v_clip = v_old + (v - v_old).clamp(-clip_range, clip_range)
        loss2 = (v_clip - ret).square()
        token_loss = 0.5 * torch.maximum(loss1, loss2)
        clipfrac = _masked_mean((loss2 > loss1).float(), keep)
    token_loss = _clean(token_loss, keep)
    loss = aggregate(token_loss, weights)
    metrics = {
        "critic/vf_loss": float(loss.detach()),
        "critic/vf_clipfrac": clipfrac,
        "critic/vpred_mean": _masked_mean(v.detach(), keep),
    }
    return LossOutput(loss, token_loss, metrics)
