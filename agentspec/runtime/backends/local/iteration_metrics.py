"""What an iteration of local training logs about itself: the episodes (`rollout/…`,
`reward/…`), the critic (`critic/explained_variance`) and the speed (`perf/…`)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from agentspec.runtime.algorithms import (
    StepBatch,
)
from agentspec.runtime.backends.local.scoring import (
    Scored,
)
from agentspec.runtime.backends.local.tensors import Rollout
from agentspec.runtime.episode.summary import RolloutSummary
from agentspec.runtime.episode.trajectory import Trajectory
from agentspec.spec.model import TrainingSpec

__all__ = ["all_equal_group_share", "explained_variance", "rollout_metrics", "throughput_metrics"]


def rollout_metrics(
    summary: RolloutSummary, trajectories: Sequence[Trajectory]
) -> dict[str, float]:
    """`rollout/…` and `reward/<component>`: what the episodes did."""
    return {
        "rollout/success": summary.success_rate,
        "rollout/reward": summary.mean_reward,
        "rollout/steps": summary.mean_steps,
        "rollout/env_steps": sum(len(t.steps) for t in trajectories),
        "rollout/parse_error_rate": summary.parse_error_rate,
        "rollout/tool_error_rate": summary.tool_error_rate,
        # spec expressions that raised (each became its default, a reward 0.0)
        "rollout/expression_errors": summary.expression_errors,
        "rollout/all_equal_groups": all_equal_group_share(trajectories),
        **{f"reward/{k}": v for k, v in summary.reward_components.items()},
    }


def all_equal_group_share(trajectories: Sequence[Trajectory]) -> float:
    """The share of prompt groups whose episodes all returned the same: a group-relative
    estimator gives them zero advantage, so they teach nothing."""
    returns: dict[str, set[float]] = {}
    for t in trajectories:
        returns.setdefault(t.group_id, set()).add(round(t.total_reward, 9))
    return sum(len(r) == 1 for r in returns.values()) / max(len(returns), 1)


def explained_variance(
    scored: Scored, batch: StepBatch, returns: torch.Tensor | None
) -> dict[str, float]:
    """1 − Var(returns − values) / Var(returns) of the critic on this rollout (critic methods):
    1 is a perfect critic, 0 one that predicts the mean, below 0 one that adds noise."""
    if returns is None:
        return {}
    if returns.dim() == 1 and scored.values is not None:
        target, values = returns, scored.values
    elif returns.dim() == 2 and scored.token_values is not None:
        target, values = returns[batch.response_mask], scored.token_values[batch.response_mask]
    else:
        return {}
    variance = float(target.var(unbiased=False))
    if variance == 0.0:
        return {}
    return {
        "critic/explained_variance": 1.0 - float((target - values).var(unbiased=False)) / variance
    }


def throughput_metrics(
    trajectories: Sequence[Trajectory],
    rollout: Rollout,
    cfg: TrainingSpec,
    started: float,
    rollout_seconds: float,
) -> dict[str, float]:
    """`perf/…`: tokens per second of the rollout, of the update, of the iteration."""
    elapsed = time.perf_counter() - started
    generated = sum(len(s.response_ids) for t in trajectories for s in t.steps)
    processed = sum(len(r.input_ids) for r in rollout.rows) * (cfg.epochs + 1)
    return {
        "perf/rollout_tokens_per_s": generated / max(rollout_seconds, 1e-9),
        "perf/tokens_per_s": (generated + processed) / max(elapsed, 1e-9),
        # scoring + epochs of updates: the tokens the forward/backward passes processed
        "perf/update_tokens_per_s": processed / max(elapsed - rollout_seconds, 1e-9),
        "perf/iteration_s": elapsed,
    }
