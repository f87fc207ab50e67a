"""Advantage estimators on step-level batches.

Every estimator has the same signature, ``(batch: StepBatch, config:
AdvantageConfig) -> AdvantageOutput``, and is looked up by name in
:data:`ESTIMATORS`; :func:`compute_advantages` is the one entry point callers
need. Shapes: ``n`` step rows, ``T`` padded response length, ``N``
trajectories, ``S`` steps of the longest trajectory.

Each estimator is vectorised over trajectories (recursions loop over the step
or token axis only, as in cleanRL's GAE); the tests compare each one with a
plain Python loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

from agentspec.core.registry import Registry
from agentspec.runtime.algorithms.batch import AdvantageOutput, StepBatch
from agentspec.runtime.algorithms.normalize import (
    group_deviation_std_count,
    group_normalize,
    whiten,
)

__all__ = [
    "ADVANTAGE_SETTINGS",
    "ESTIMATORS",
    "AdvantageConfig",
    "Estimator",
    "EstimatorFn",
    "advantage_config",
    "compute_advantages",
    "group_normalize",
    "register_estimator",
    "whiten",
]

CriticKind = Literal["none", "step", "token"]


@dataclass(frozen=True)
class AdvantageConfig:
    """Settings of the advantage estimators; each estimator reads the fields it documents.

    Attributes:
        gamma: discount γ ∈ [0, 1]. Per step for ``step_gae``, ``reinforce``
            and GiGPO's step returns; per response token for ``token_gae``.
            (GiGPO's paper uses 0.95.)
        lam: GAE λ ∈ [0, 1] (``step_gae``, ``token_gae``).
        whiten: whiten GAE advantages to zero mean and unit variance, over
            valid steps (``step_gae``) or over response tokens (``token_gae``).
        norm_by_std: GRPO / GiGPO divide by the group's standard deviation
            (+ ``epsilon``). False gives Dr.GRPO's unnormalised advantage
            (Liu et al. 2025, "Understanding R1-Zero-Like Training", arXiv:2503.20783), and
            GiGPO's ``mean_norm`` mode.
        epsilon: added to a standard deviation before dividing.
        omega: GiGPO's weight ω of the step-level (anchor-group) advantage.
        batch_baseline: ``reinforce`` subtracts the mean return-to-go over the
            batch's valid steps.
        opd_beta: β of on-policy distillation (``opd``): A = −β (log π_student −
            log π_teacher).
        opd_task_weight: ``opd`` adds this weight × the task advantage of
            ``opd_task_estimator`` (0: pure distillation, the task reward ignored).
        opd_task_estimator: the estimator of OPD's task advantage (a group
            estimator: OPD trains without a critic).
        opd_topk: > 0 when the teacher enters as a full-distribution loss over its
            top-k tokens instead (:func:`~agentspec.runtime.algorithms.distillation.topk_distillation_loss`,
            a backend with the teacher's logits at hand): ``opd`` then returns the
            weighted task advantage alone.
    """

    gamma: float = 1.0
    lam: float = 1.0
    whiten: bool = True
    norm_by_std: bool = True
    epsilon: float = 1e-6
    omega: float = 1.0
    batch_baseline: bool = False
    opd_beta: float = 1.0
    opd_task_weight: float = 0.0
    opd_task_estimator: str = "grpo"
    opd_topk: int = 0

    def __post_init__(self) -> None:
        for name in ("gamma", "lam"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v}")
        if self.epsilon <= 0:
            raise ValueError(f"epsilon must be > 0, got {self.epsilon}")
        if self.opd_beta < 0:
            raise ValueError(f"opd_beta must be >= 0, got {self.opd_beta}")
        if self.opd_task_weight < 0:
            raise ValueError(f"opd_task_weight must be >= 0, got {self.opd_task_weight}")
        if self.opd_topk < 0:
            raise ValueError(f"opd_topk must be >= 0, got {self.opd_topk}")


ADVANTAGE_SETTINGS: dict[str, Callable[[Any], Any]] = {
    "gamma": float,
    "lam": float,
    "whiten": bool,
    "norm_by_std": bool,
    "omega": float,
    "opd_beta": float,
    "opd_task_weight": float,
    "opd_topk": int,
}
"""The estimators' settings a backend passes by name (the `training` section's names),
each with its type."""


def advantage_config(
    settings: Mapping[str, Any], task_estimator: str | None = None
) -> AdvantageConfig:
    """The one way a backend builds the estimators' settings: each of
    :data:`ADVANTAGE_SETTINGS` from ``settings`` by name, one absent (or ``None``) at
    :class:`AdvantageConfig`'s default, so the backends' defaults cannot drift apart;
    ``task_estimator`` is the preset's (whose advantage OPD's task weight adds)."""
    given: dict[str, Any] = {
        name: kind(settings[name])
        for name, kind in ADVANTAGE_SETTINGS.items()
        if settings.get(name) is not None
    }
    if task_estimator:
        given["opd_task_estimator"] = task_estimator
    return AdvantageConfig(**given)


EstimatorFn = Callable[[StepBatch, AdvantageConfig], AdvantageOutput]


@dataclass(frozen=True)
class Estimator:
    """A registered estimator.

    Attributes:
        name: registry name.
        fn: the estimator.
        critic: which critic values it consumes: ``"none"``, ``"step"``
            (``StepBatch.values``) or ``"token"`` (``StepBatch.token_values``).
            Tells a trainer whether to run a critic and where, without
            branching on the name.
        requires: ``StepBatch`` fields that must not be None.
    """

    name: str
    fn: EstimatorFn
    critic: CriticKind
    requires: tuple[str, ...]


ESTIMATORS: Registry[Estimator] = Registry("advantage estimator")


def register_estimator(
    name: str, *, critic: CriticKind = "none", requires: tuple[str, ...] = ()
) -> Callable[[EstimatorFn], EstimatorFn]:
    """Decorator: register an estimator under ``name`` (duplicates are rejected)."""
    needed = {"none": (), "step": ("values",), "token": ("token_values",)}[critic]

    def decorator(fn: EstimatorFn) -> EstimatorFn:
        ESTIMATORS.add(name, Estimator(name, fn, critic, tuple(dict.fromkeys(needed + requires))))
        return fn

    return decorator


def compute_advantages(name: str, batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
    """Run the estimator registered as ``name`` on ``batch``.

    Raises:
        UnknownNameError: no estimator has that name (the message lists them).
        ValueError: the batch lacks a field the estimator needs.
    """
    est = ESTIMATORS.get(name)
    missing = [f for f in est.requires if getattr(batch, f) is None]
    if missing:
        raise ValueError(
            f"advantage estimator {name!r} needs StepBatch fields {missing}, which are None"
        )
    with torch.no_grad():
        return est.fn(batch, config)


# ----------------------------------------------------------------------------
# shared helpers (whitening and group normalisation: :mod:`.normalize`)
# ----------------------------------------------------------------------------


def _discounted_returns(batch: StepBatch, gamma: float) -> Tensor:
    """Return-to-go ``G_t = Σ_{k≥t} γ^{k−t} r_k`` of every step, ``(n,)``."""
    r = batch.to_grid(batch.rewards)
    g = torch.zeros_like(r)
    running = r.new_zeros(r.shape[0])
    for t in reversed(range(r.shape[1])):
        running = r[:, t] + gamma * running
        g[:, t] = running
    return batch.from_grid(g)


def _episode_returns(batch: StepBatch) -> Tensor:
    """Undiscounted episode return ``R(τ) = Σ_t r_t`` of every trajectory, ``(N,)``."""
    return batch.rewards.new_zeros(batch.num_trajectories).index_add_(
        0, batch.traj_index, batch.rewards
    )


def _metrics(advantages: Tensor, mask: Tensor, returns: Tensor | None = None) -> dict[str, float]:
    out: dict[str, float] = {}
    vals = advantages[mask]
    if vals.numel():
        out["adv/mean"] = float(vals.mean())
        out["adv/std"] = float(vals.std(unbiased=False))
        out["adv/abs_mean"] = float(vals.abs().mean())
        out["adv/max"] = float(vals.max())
        out["adv/min"] = float(vals.min())
    if returns is not None:
        rv = returns[mask] if returns.dim() == 2 else returns[mask.any(dim=1)]
        if rv.numel():
            out["returns/mean"] = float(rv.mean())
    return out


# ----------------------------------------------------------------------------
# estimators
# ----------------------------------------------------------------------------


@register_estimator("step_gae", critic="step")
def step_gae(batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
    """Step-level GAE: one advantage per agent step, broadcast to its tokens.

    With V_t = ``batch.values`` (critic value of the state before step t) and
    V = 0 after the last step (Schulman et al. 2016, "High-Dimensional
    Continuous Control Using GAE", arXiv:1506.02438, §3; applied per step as in StepPO,
    Wang et al. 2026, arXiv:2604.18401)::

        δ_t = r_t + γ V_{t+1} − V_t
        A_t = Σ_l (γλ)^l δ_{t+l}
        returns_t = A_t + V_t

    A_t is whitened over valid steps (not tokens), so a long response does not
    weigh more, then broadcast to the step's response tokens.

    Shapes: ``batch.values (n,)`` → ``advantages (n, T)``, ``returns (n,)``.
    """
    assert batch.values is not None
    r = batch.to_grid(batch.rewards)
    v = batch.to_grid(batch.values)  # cells past the end are 0: V after the last step is 0
    adv = torch.zeros_like(r)
    last = r.new_zeros(r.shape[0])
    n_cols = r.shape[1]
    for t in reversed(range(n_cols)):
        next_v = v[:, t + 1] if t + 1 < n_cols else torch.zeros_like(last)
        delta = r[:, t] + config.gamma * next_v - v[:, t]
        last = delta + config.gamma * config.lam * last
        adv[:, t] = last
    step_adv = batch.from_grid(adv)
    returns = step_adv + batch.values
    if config.whiten:
        step_adv = whiten(step_adv, batch.valid_steps)
    advantages = batch.broadcast(step_adv)
    return AdvantageOutput(advantages, returns, _metrics(advantages, batch.response_mask, returns))


@register_estimator("token_gae", critic="token")
def token_gae(batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
    """Token-level GAE over the trajectory's response tokens (the concatenated baseline).

    The response tokens of a trajectory's steps are concatenated in step order
    (observation tokens are not part of a row, so they neither receive
    advantage nor break the recursion; the value after the last step's last
    token is 0). Step t's reward r_t is placed on its last response token (on
    the last token before it if the step has none). Then, per token j, with
    V_j = ``token_values`` (Schulman et al. 2016, arXiv:1506.02438, §3)::

        δ_j = r_j + γ V_{j+1} − V_j,   A_j = δ_j + γλ A_{j+1},   returns_j = A_j + V_j

    The advantages are whitened over all response tokens of the batch, as in
    verl's ``compute_gae_advantage_return`` and Agent-R1's token GAE.

    Shapes: ``batch.token_values (n, T)`` → ``advantages (n, T)``,
    ``returns (n, T)`` (0 off the mask).
    """
    assert batch.token_values is not None
    mask = batch.response_mask
    lengths = mask.sum(dim=1)  # (n,)
    len_grid = batch.to_grid(lengths, fill=0)  # (N, S)
    step_offset = batch.from_grid(len_grid.cumsum(dim=1) - len_grid)  # tokens before the step, (n,)
    traj_len = len_grid.sum(dim=1)  # (N,)
    width = int(traj_len.max().item()) if traj_len.numel() else 0

    rows, cols = mask.nonzero(as_tuple=True)
    within = (mask.cumsum(dim=1) - 1)[rows, cols]
    pos = step_offset[rows] + within  # position in the concatenated sequence
    traj = batch.traj_index[rows]

    values = batch.token_values
    v_seq = values.new_zeros((batch.num_trajectories, width))
    v_seq[traj, pos] = values[rows, cols]
    r_seq = values.new_zeros((batch.num_trajectories, width))
    reward_pos = step_offset + lengths - 1  # last token at or before the step's end
    has_token = reward_pos >= 0
    r_seq.index_put_(
        (batch.traj_index[has_token], reward_pos[has_token]),
        batch.rewards[has_token].to(values.dtype),
        accumulate=True,
    )

    adv_seq = torch.zeros_like(v_seq)
    last = v_seq.new_zeros(v_seq.shape[0])
    next_v = v_seq.new_zeros(v_seq.shape[0])
    for j in reversed(range(width)):  # cells past a trajectory's end are all 0 and stay 0
        delta = r_seq[:, j] + config.gamma * next_v - v_seq[:, j]
        last = delta + config.gamma * config.lam * last
        adv_seq[:, j] = last
        next_v = v_seq[:, j]

    adv = torch.zeros_like(values)
    adv[rows, cols] = adv_seq[traj, pos]
    returns = torch.where(mask, adv + values, torch.zeros_like(adv))  # padding may hold NaN
    advantages = whiten(adv, mask) if config.whiten else adv
    return AdvantageOutput(advantages, returns, _metrics(advantages, mask, returns))


@register_estimator("grpo")
def grpo(batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
    """GRPO: episode return relative to the trajectory's prompt group.

    Per trajectory (Shao et al. 2024, "DeepSeekMath", arXiv:2402.03300, §4.1,
    outcome supervision)::

        R(τ) = Σ_t r_t
        A(τ) = (R(τ) − mean_G R) / (std_G R + ε)     (norm_by_std)
        A(τ) =  R(τ) − mean_G R                       (Dr.GRPO, Liu et al. 2025)

    over the group G of valid trajectories with the same group id (one value
    per trajectory however many steps it has; unbiased std, as torch.std).
    Broadcast to every response token of every step. A group of one gets 0
    (verl uses mean 0 and std 1 there, i.e. A = R).

    Shapes: ``advantages (n, T)``; no returns.
    """
    ret = _episode_returns(batch)
    adv, _ = group_normalize(
        ret,
        batch.trajectory_group_ids,
        batch.valid_trajectories,
        norm_by_std=config.norm_by_std,
        epsilon=config.epsilon,
    )
    advantages = batch.broadcast(adv[batch.traj_index])
    return AdvantageOutput(advantages, None, _metrics(advantages, batch.response_mask))


@register_estimator("rloo")
def rloo(batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
    """RLOO: episode return minus the mean return of the group's other trajectories.

    Ahmadian et al. 2024, "Back to Basics: Revisiting REINFORCE Style
    Optimization for Learning from Human Feedback in LLMs", arXiv:2402.14740
    (k samples per prompt)::

        A(τ_i) = R(τ_i) − 1/(k−1) Σ_{j≠i} R(τ_j) = k/(k−1) (R(τ_i) − mean_G R)

    A group of one gets 0. Broadcast to every response token of the trajectory.

    Shapes: ``advantages (n, T)``; no returns.
    """
    ret = _episode_returns(batch)
    valid = batch.valid_trajectories
    dev, _, count = group_deviation_std_count(ret, batch.trajectory_group_ids, valid)
    adv = (count / (count - 1).clamp(min=1) * dev * (count > 1)).to(ret.dtype)
    advantages = batch.broadcast(adv[batch.traj_index])
    return AdvantageOutput(advantages, None, _metrics(advantages, batch.response_mask))


@register_estimator("reinforce")
def reinforce(batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
    """REINFORCE with the discounted return-to-go of each step.

    Williams 1992, "Simple Statistical Gradient-Following Algorithms", with the
    reward-to-go (Sutton & Barto 2018, "Reinforcement Learning", ch. 13)::

        A_t = G_t = Σ_{k≥t} γ^{k−t} r_k
        A_t = G_t − mean(G)          (batch_baseline; mean over valid steps)

    Broadcast to the step's response tokens.

    Shapes: ``advantages (n, T)``; no returns.
    """
    g = _discounted_returns(batch, config.gamma)
    if config.batch_baseline:
        valid = batch.valid_steps.to(g.dtype)
        g = g - (g * valid).sum() / valid.sum().clamp(min=1)
    advantages = batch.broadcast(g)
    return AdvantageOutput(advantages, None, _metrics(advantages, batch.response_mask))


@register_estimator("gigpo", requires=("anchor_ids",))
def gigpo(batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
    """GiGPO: episode-level group advantage plus ω × anchor-state step advantage.

    Feng et al. 2025, "Group-in-Group Policy Optimization for LLM Agent
    Training", arXiv:2505.10978, §4. With F = std + ε (``norm_by_std``) or 1::

        A^E(τ)  = (R(τ) − mean_G R) / F                       prompt group G
        R_t     = Σ_{k≥t} γ^{k−t} r_k                          step return
        A^S(t)  = (R_t − mean_{G^S} R) / F    G^S = valid steps with the same
                                              (group id, anchor id)
        A_t     = A^E(τ) + ω A^S(t)

    A singleton group (episode or anchor) contributes 0. Unlike verl-agent's
    default (statistics over step rows), the episode statistics take one value
    per trajectory, so every trajectory counts once.

    Metrics: ``gigpo/anchor_group_size_mean`` (valid steps / anchor groups),
    ``gigpo/singleton_fraction`` (share of valid steps alone in their group).

    Shapes: ``batch.anchor_ids (n,)`` → ``advantages (n, T)``; no returns.
    """
    assert batch.anchor_ids is not None
    episode, _ = group_normalize(
        _episode_returns(batch),
        batch.trajectory_group_ids,
        batch.valid_trajectories,
        norm_by_std=config.norm_by_std,
        epsilon=config.epsilon,
    )
    step_ret = _discounted_returns(batch, config.gamma)
    keys = torch.stack([batch.group_ids, batch.anchor_ids], dim=1)
    valid = batch.valid_steps
    step, size = group_normalize(
        step_ret, keys, valid, norm_by_std=config.norm_by_std, epsilon=config.epsilon
    )
    per_step = episode[batch.traj_index] + config.omega * step
    advantages = batch.broadcast(per_step)
    metrics = _metrics(advantages, batch.response_mask)
    n_valid = int(valid.sum().item())
    if n_valid:
        n_groups = int(torch.unique(keys[valid], dim=0).shape[0])
        metrics["gigpo/anchor_group_size_mean"] = n_valid / n_groups
        metrics["gigpo/singleton_fraction"] = float(((size == 1) & valid).sum().item()) / n_valid
    return AdvantageOutput(advantages, None, metrics)
