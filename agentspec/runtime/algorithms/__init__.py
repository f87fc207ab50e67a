"""Step-level RL algorithms as plain torch functions, shared by every backend.

The local trainer and the verl backend call the same code: advantage
estimators (:mod:`.advantages`), policy and value losses (:mod:`.losses`) and
on-policy distillation (:mod:`.distillation`), all on the step-level
:class:`StepBatch` (:mod:`.batch`). This package imports torch but never verl;
the verl backend registers these functions into verl's registries.

Typical use::

    batch = collate_steps(rows)                                   # or build StepBatch directly
    adv = compute_advantages("step_gae", batch, AdvantageConfig(gamma=0.99))
    w = aggregation_weights(batch.response_mask, batch.traj_ids, "trajectory-mean")
    out = actor_loss("steppo", log_probs, batch.old_log_probs, adv.advantages,
                     batch.response_mask, w, PolicyLossConfig(clip_low=3e-4, clip_high=4e-4))
    out.loss.backward()
"""

from agentspec.registry import (
    DuplicateNameError,
    Registry,
    RegistryError,
    UnknownNameError,
)
from agentspec.runtime.algorithms.advantages import (
    ESTIMATORS,
    AdvantageConfig,
    Estimator,
    EstimatorFn,
    compute_advantages,
    register_estimator,
)
from agentspec.runtime.algorithms.batch import AdvantageOutput, StepBatch, StepRow, collate_steps
from agentspec.runtime.algorithms.distillation import (
    Divergence,
    add_opd_advantages,
    opd_token_advantages,
    teacher_topk,
    topk_distillation_loss,
    topk_divergence,
)
from agentspec.runtime.algorithms.losses import (
    AGGREGATION_MODES,
    POLICY_LOSSES,
    AggregationMode,
    KLEstimator,
    LossOutput,
    PolicyLossConfig,
    PolicyLossFn,
    actor_loss,
    aggregate,
    aggregation_weights,
    entropy_from_logits,
    kl_divergence,
    policy_loss,
    value_loss,
)

__all__ = [
    "AGGREGATION_MODES",
    "ESTIMATORS",
    "POLICY_LOSSES",
    "AdvantageConfig",
    "AdvantageOutput",
    "AggregationMode",
    "Divergence",
    "DuplicateNameError",
    "Estimator",
    "EstimatorFn",
    "KLEstimator",
    "LossOutput",
    "PolicyLossConfig",
    "PolicyLossFn",
    "Registry",
    "RegistryError",
    "StepBatch",
    "StepRow",
    "UnknownNameError",
    "actor_loss",
    "add_opd_advantages",
    "aggregate",
    "aggregation_weights",
    "collate_steps",
    "compute_advantages",
    "entropy_from_logits",
    "kl_divergence",
    "opd_token_advantages",
    "policy_loss",
    "register_estimator",
    "teacher_topk",
    "topk_distillation_loss",
    "topk_divergence",
    "value_loss",
]
