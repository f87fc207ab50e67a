"""Step-level RL algorithms as plain torch functions, shared by every backend.

The local trainer and the verl backend call the same code: advantage
estimators (:mod:`.advantages`), policy and value losses (:mod:`.losses`) and
on-policy distillation (:mod:`.distillation`), all on the step-level
:class:`StepBatch` (:mod:`.batch`); the named algorithms that pair them are
:mod:`.presets`. This package never imports verl (the verl backend registers
these functions into verl's registries), and importing it does not import torch:
names load on first use, so ``validate`` and ``compile`` can read the presets
(:mod:`.presets` is torch-free) without paying for torch.

Typical use::

    batch = collate_steps(rows)                                   # or build StepBatch directly
    adv = compute_advantages("step_gae", batch, AdvantageConfig(gamma=0.99))
    w = aggregation_weights(batch.response_mask, batch.traj_ids, "trajectory-mean")
    out = actor_loss("steppo", log_probs, batch.old_log_probs, adv.advantages,
                     batch.response_mask, w, PolicyLossConfig(clip_low=3e-4, clip_high=4e-4))
    out.loss.backward()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentspec.core.presets import ALGORITHMS, Algorithm
    from agentspec.core.registry import (
        DuplicateNameError,
        Registry,
        RegistryError,
        UnknownNameError,
    )
    from agentspec.runtime.algorithms.advantages import (
        ADVANTAGE_SETTINGS,
        ESTIMATORS,
        AdvantageConfig,
        Estimator,
        EstimatorFn,
        advantage_config,
        compute_advantages,
        register_estimator,
    )
    from agentspec.runtime.algorithms.batch import (
        AdvantageOutput,
        StepBatch,
        StepRow,
        collate_steps,
    )
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
        register_loss,
        value_loss,
    )

_MODULES = {
    "agentspec.core.registry": (
        "DuplicateNameError",
        "Registry",
        "RegistryError",
        "UnknownNameError",
    ),
    "agentspec.runtime.algorithms.advantages": (
        "ESTIMATORS",
        "ADVANTAGE_SETTINGS",
        "AdvantageConfig",
        "advantage_config",
        "Estimator",
        "EstimatorFn",
        "compute_advantages",
        "register_estimator",
    ),
    "agentspec.runtime.algorithms.batch": (
        "AdvantageOutput",
        "StepBatch",
        "StepRow",
        "collate_steps",
    ),
    "agentspec.runtime.algorithms.distillation": (
        "Divergence",
        "add_opd_advantages",
        "opd_token_advantages",
        "teacher_topk",
        "topk_distillation_loss",
        "topk_divergence",
    ),
    "agentspec.runtime.algorithms.losses": (
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
        "register_loss",
        "value_loss",
    ),
    "agentspec.core.presets": ("ALGORITHMS", "Algorithm"),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}

REGISTERING_MODULES = (
    "agentspec.runtime.algorithms.advantages",
    "agentspec.runtime.algorithms.losses",
    "agentspec.runtime.algorithms.distillation",
)
"""Every module that registers estimators or losses. The first torch-side name asked of
this package imports them all, so ``ESTIMATORS`` and ``POLICY_LOSSES`` are complete
whichever name comes first. A new module of estimators or losses is listed here."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if module.startswith("agentspec.runtime.algorithms."):
        for registering in REGISTERING_MODULES:
            importlib.import_module(registering)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ADVANTAGE_SETTINGS",
    "AGGREGATION_MODES",
    "ALGORITHMS",
    "ESTIMATORS",
    "POLICY_LOSSES",
    "AdvantageConfig",
    "AdvantageOutput",
    "AggregationMode",
    "Algorithm",
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
    "advantage_config",
    "aggregate",
    "aggregation_weights",
    "collate_steps",
    "compute_advantages",
    "entropy_from_logits",
    "kl_divergence",
    "opd_token_advantages",
    "policy_loss",
    "register_estimator",
    "register_loss",
    "teacher_topk",
    "topk_distillation_loss",
    "topk_divergence",
    "value_loss",
]
