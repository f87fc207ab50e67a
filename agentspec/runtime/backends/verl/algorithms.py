"""agentspec's estimators and policy losses, registered into verl's registries.

Every estimator of :data:`~agentspec.runtime.algorithms.ESTIMATORS` becomes verl
advantage estimator ``agentspec_<name>`` (``algorithm.adv_estimator``); every
loss of :data:`~agentspec.runtime.algorithms.POLICY_LOSSES` becomes verl policy
loss ``agentspec_<name>`` (``actor_rollout_ref.actor.policy_loss.loss_mode``).
The math is agentspec's; these adapters only convert layouts:

- an estimator needs the step records that verl's default advantage step does
  not pass (trajectory, step index per token, step rewards, anchors): the
  ``agentspec`` trainer (:mod:`.trainer`) passes them as ``step_records``. Called
  without them (another trainer) it raises instead of guessing;
- a loss computes agentspec's per-token loss and aggregates it with verl's
  ``agg_loss`` (``loss_agg_mode`` and verl's global-batch normalisation across
  micro-batches and data-parallel ranks);
- the critic's loss (:func:`verl_value_loss`, which the ``agentspec`` trainer gives
  verl's critic worker) is verl's clipped value loss at the positions agentspec trains
  its critic at, weighted by ``value_coef``.

:func:`register` is idempotent and runs in every process that imports the
plugin (:mod:`.plugin`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from torch import Tensor

from agentspec.runtime.algorithms import (
    ESTIMATORS,
    POLICY_LOSSES,
    AdvantageConfig,
    PolicyLossConfig,
    compute_advantages,
)
from agentspec.runtime.algorithms import advantage_config as build_advantage_config
from agentspec.runtime.backends.verl.layout import RowSteps, StepView, step_view

__all__ = [
    "PREFIX",
    "VALUE_MASK",
    "register",
    "verl_algorithm_settings",
    "verl_estimator",
    "verl_loss",
    "verl_name",
    "verl_value_loss",
]

PREFIX = "agentspec_"

VALUE_MASK = "agentspec_value_mask"
"""The field (per response token, like verl's ``response_mask``) that marks the positions a
step-level critic is read and trained at: each step's first response token, where verl's
critic gives V of the state the step acted from. The ``agentspec`` trainer writes it."""


def verl_name(name: str) -> str:
    """The name agentspec's estimator or loss ``name`` has in verl's registries."""
    return PREFIX + name


def _row_returns(view: StepView, returns: Tensor | None, critic: str, advantages: Tensor) -> Tensor:
    """The critic's targets in verl's ``(rows, T)`` layout (the advantages without a critic)."""
    if returns is None:
        return advantages.clone()
    if critic == "token":  # per-token returns, trained at every token
        return view.to_rows(returns).to(advantages.dtype)
    # step-level GAE: R_t for every token of step t; the critic is read and trained at
    # the step's first position only (:data:`VALUE_MASK`, :func:`verl_value_loss`)
    return view.steps_to_rows(returns).to(advantages.dtype)


def verl_estimator(name: str) -> Callable[..., tuple[Tensor, Tensor]]:
    """verl's advantage-estimator interface around agentspec's estimator ``name``.

    verl calls it with ``token_level_rewards``, ``response_mask`` (``(rows, T)``),
    ``index`` (verl's prompt ``uid`` per row) and ``config``; the agentspec trainer
    adds ``step_records`` (one :class:`RowSteps` per row), ``values`` /
    ``old_log_probs`` / ``teacher_log_probs`` (``(rows, T)``) and
    ``advantage_config``. Returns ``(advantages, returns)``, both ``(rows, T)``.
    """
    estimator = ESTIMATORS.get(name)

    def estimate(
        token_level_rewards: Tensor,
        response_mask: Tensor,
        index: Sequence[Any] | None = None,
        config: Any = None,
        *,
        step_records: Sequence[RowSteps] | None = None,
        values: Tensor | None = None,
        old_log_probs: Tensor | None = None,
        teacher_log_probs: Tensor | None = None,
        advantage_config: AdvantageConfig | None = None,
        **_: Any,
    ) -> tuple[Tensor, Tensor]:
        if step_records is None or index is None:
            raise ValueError(
                f"verl advantage estimator {verl_name(name)!r} needs agentspec's step records "
                "(trajectory and step ids, step rewards, anchors), which verl's default "
                "trainer does not pass: run with trainer.v1.trainer_mode=agentspec"
            )
        if advantage_config is None:  # verl's AlgoConfig alone: its γ, λ and std setting
            advantage_config = build_advantage_config(verl_algorithm_settings(config))
        if estimator.critic != "none" and values is None:
            raise ValueError(
                f"verl advantage estimator {verl_name(name)!r} needs the critic's values: "
                "enable the critic (critic.enable=True)"
            )
        # token-level GAE concatenates a trajectory's generated tokens in step order
        # (observation tokens are outside every step), so it reads the same values
        # whether an episode is one packed row or one row per step
        view = step_view(
            step_records,
            list(index),
            response_mask,
            values=values if estimator.critic == "step" else None,
            old_log_probs=old_log_probs,
            teacher_log_probs=teacher_log_probs,
            token_values=values if estimator.critic == "token" else None,
        )
        out = compute_advantages(name, view.batch, advantage_config)
        advantages = view.to_rows(out.advantages).to(token_level_rewards.dtype)
        return advantages, _row_returns(view, out.returns, estimator.critic, advantages)

    estimate.__name__ = f"agentspec_{name}_estimator"
    estimate.__doc__ = f"agentspec's {name!r} estimator in verl's interface."
    return estimate


def verl_loss(name: str) -> Callable[..., tuple[Tensor, dict[str, Any]]]:
    """verl's policy-loss interface around agentspec's policy loss ``name``.

    ``(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
    rollout_is_weights) -> (loss, metrics)``; all tensors ``(rows, T)``. The clip
    range comes from verl's ``clip_ratio_low`` / ``clip_ratio_high``. verl's dual
    clip (``clip_ratio_c``, on at 3 by default) is not read: a spec's objective is
    the documented plain clip on both backends.
    """
    fn = POLICY_LOSSES.get(name)

    def loss(
        old_log_prob: Tensor,
        log_prob: Tensor,
        advantages: Tensor,
        response_mask: Tensor,
        loss_agg_mode: str = "token-mean",
        config: Any = None,
        rollout_is_weights: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        from verl.trainer.ppo.core_algos import agg_loss

        clip = float(getattr(config, "clip_ratio", 0.2) or 0.2)
        low = getattr(config, "clip_ratio_low", None)
        high = getattr(config, "clip_ratio_high", None)
        cfg = PolicyLossConfig(
            clip_low=float(low if low is not None else clip),
            clip_high=float(high if high is not None else clip),
        )
        mask = response_mask.bool()
        weights = mask.to(log_prob.dtype) / mask.sum().clamp(min=1)
        out = fn(log_prob, old_log_prob, advantages, mask, weights, cfg)
        token_loss = out.token_loss
        if rollout_is_weights is not None:
            token_loss = token_loss * rollout_is_weights
        info = dict(getattr(config, "global_batch_info", None) or {})
        value = agg_loss(
            loss_mat=token_loss, loss_mask=response_mask, loss_agg_mode=loss_agg_mode, **info
        )
        metrics: dict[str, Any] = {
            "actor/pg_clipfrac": out.metrics.get("actor/clipfrac", 0.0),
            "actor/ppo_kl": out.metrics.get("actor/ppo_kl", 0.0),
            "actor/pg_clipfrac_lower": out.metrics.get("actor/clipfrac_lower", 0.0),
        }
        for key, val in out.metrics.items():
            metrics.setdefault(key.replace("actor/", "actor/agentspec_"), val)
        return value, metrics

    loss.__name__ = f"agentspec_{name}_loss"
    loss.__doc__ = f"agentspec's {name!r} policy loss in verl's interface."
    return loss


def verl_value_loss(
    config: Any,
    model_output: Any,
    data: Any,
    dp_group: Any = None,
    *,
    value_coef: float = 1.0,
) -> tuple[Tensor, dict[str, Any]]:
    """The critic's loss in verl's interface (that of ``verl.workers.utils.losses.value_loss``,
    which it replaces): ``value_coef`` × verl's clipped value loss, where agentspec trains the
    critic, as the local backend does.

    A step-level critic (``data`` holds :data:`VALUE_MASK`) is trained at each step's first
    response position alone, V of the state before the step against the step's return: the
    mean over a row's steps, then over the mini-batch's rows (``seq-mean-token-mean``: an
    episode packed in one row weighs as the local backend weighs it, a row per step weighs
    each step the same). A token-level critic is trained at every response token and
    aggregated by the critic's ``loss_agg_mode``, as verl's own loss does. Metrics are verl's
    (the loss before ``value_coef``, as the local backend logs it)."""
    from verl.trainer.ppo.core_algos import compute_value_loss
    from verl.utils.metric import AggregationType, Metric
    from verl.utils.torch_functional import masked_mean
    from verl.workers.utils.padding import no_padding_2_padding

    vpreds = no_padding_2_padding(model_output["values"], data)
    step_level = VALUE_MASK in data.keys()  # noqa: SIM118 (a TensorDict has no `in`)
    fields = ["values", "returns", "response_mask", *([VALUE_MASK] if step_level else [])]
    batch = data.select(*fields).to_padded_tensor()
    mask = batch[VALUE_MASK if step_level else "response_mask"].bool()
    info = {k: data[k] for k in ("dp_size", "batch_num_tokens", "global_batch_size")}
    loss, clipfrac = compute_value_loss(
        vpreds=vpreds,
        returns=batch["returns"],
        values=batch["values"],
        response_mask=mask,
        cliprange_value=config.cliprange_value,
        loss_agg_mode="seq-mean-token-mean" if step_level else config.loss_agg_mode,
        loss_scale_factor=config.loss_scale_factor,
        **info,
    )
    # as verl's: a loss normalised over the global mini-batch sums over micro-batches
    normalised = info["dp_size"] > 1 or config.loss_scale_factor is not None
    normalised = normalised or any(info[k] is not None for k in info if k != "dp_size")
    aggregation = AggregationType.SUM if normalised else AggregationType.MEAN
    metrics = {
        "critic/vf_loss": Metric(value=loss, aggregation=aggregation),
        "critic/vf_clipfrac": clipfrac.detach().item(),
        "critic/vpred_mean": masked_mean(vpreds, mask).detach().item(),
    }
    return value_coef * loss, metrics


def verl_algorithm_settings(config: Any) -> dict[str, Any]:
    """The estimators' settings in verl's ``algorithm`` config (an ``AlgoConfig`` or its
    DictConfig), by agentspec's names; one it lacks is left to the default."""
    if config is None:
        return {}
    return {
        "gamma": config.get("gamma"),
        "lam": config.get("lam"),
        "norm_by_std": config.get("norm_adv_by_std_in_grpo"),
    }


_REGISTERED: dict[object, Any] = {}


def register() -> list[str]:
    """Register every agentspec estimator and loss into verl (idempotent); returns the names."""
    from verl.trainer.ppo import core_algos

    names = []
    for est in ESTIMATORS:
        key = verl_name(est)
        if key not in _REGISTERED:
            _REGISTERED[key] = core_algos.register_adv_est(key)(verl_estimator(est))
        names.append(key)
    for loss_name in POLICY_LOSSES:
        key = verl_name(loss_name)
        if ("loss", key) not in _REGISTERED:
            _REGISTERED[("loss", key)] = core_algos.register_policy_loss(key)(verl_loss(loss_name))
        names.append(key)
    return names
