"""The named training algorithms: which advantage estimator meets which loss.

`StepPO = step-level GAE + the step-level ratio loss` (the StepPO paper);
the rest pair an estimator with PPO's token clip or plain REINFORCE. A
trainer looks the name up here and never branches on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentspec.runtime.algorithms.registry import Registry


@dataclass(frozen=True)
class Algorithm:
    name: str
    estimator: str  # in ESTIMATORS
    loss: str  # in POLICY_LOSSES
    description: str
    needs_teacher: bool = False


ALGORITHMS: Registry[Algorithm] = Registry("algorithm")

for _algorithm in (
    Algorithm("ppo", "step_gae", "ppo_clip", "Step-level GAE with PPO's token-ratio clip."),
    Algorithm(
        "steppo", "step_gae", "steppo", "StepPO: step-level GAE with a clipped per-step ratio."
    ),
    Algorithm("grpo", "grpo", "ppo_clip", "Group-relative episode returns (GRPO)."),
    Algorithm("rloo", "rloo", "ppo_clip", "Leave-one-out group baseline (RLOO)."),
    Algorithm("gigpo", "gigpo", "ppo_clip", "GiGPO: episode groups plus anchor-state step groups."),
    Algorithm(
        "token_gae",
        "token_gae",
        "ppo_clip",
        "Token-level GAE over the concatenated turns (the baseline).",
    ),
    Algorithm("reinforce", "reinforce", "reinforce", "REINFORCE on discounted step returns."),
    Algorithm(
        "opd",
        "opd",
        "ppo_clip",
        "On-policy distillation: −β (log π − log π_teacher) per token.",
        True,
    ),
):
    ALGORITHMS.add(_algorithm.name, _algorithm)
