"""The named training algorithms: which advantage estimator meets which loss.

`StepPO = step-level GAE + the step-level ratio loss` (the StepPO paper);
the rest pair an estimator with PPO's token clip or plain REINFORCE. A
trainer looks the name up here and never branches on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentspec.registry import Registry


@dataclass(frozen=True)
class Algorithm:
    name: str
    estimator: str  # in ESTIMATORS
    loss: str  # in POLICY_LOSSES
    description: str
    needs_teacher: bool = False

    @property
    def clips_steps(self) -> bool:
        """Whether the loss clips one ratio per step (StepPO) rather than per token."""
        return self.loss == "steppo"


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


def clip_range(algorithm: Algorithm, training: Any) -> tuple[float, float]:
    """``(ε_low, ε_high)`` of ``algorithm``'s ratio clip, from training settings.

    ``training`` is a :class:`~agentspec.spec.model.TrainingSpec` or a mapping
    of its keys. A per-step ratio is a geometric mean over the step's tokens,
    so it has its own, usually much narrower, range (``step_clip_low`` /
    ``step_clip_high``, each defaulting to the symmetric ``step_clip_ratio``);
    token ratios use ``clip_ratio`` on both sides.
    """

    def get(key: str, default: float | None) -> float | None:
        value = (
            training.get(key, default)
            if isinstance(training, dict)
            else getattr(training, key, default)
        )
        return None if value is None else float(value)

    if not algorithm.clips_steps:
        clip = get("clip_ratio", 0.2)
        assert clip is not None
        return clip, clip
    symmetric = get("step_clip_ratio", 0.2)
    assert symmetric is not None
    low, high = get("step_clip_low", None), get("step_clip_high", None)
    return (symmetric if low is None else low), (symmetric if high is None else high)
