"""The critic's engine: verl's FSDP value engine with the attention the launcher chose.

verl 0.9.1 loads a critic with ``attn_implementation="flash_attention_2"``
hard-coded (``verl.utils.model.load_valuehead_model``), so without the
``flash-attn`` package every critic algorithm fails on a GPU, whatever
``critic.model.override_config`` says. :class:`ValueEngine` builds the critic
the way verl builds the actor: from ``critic.model``'s Hugging Face config,
whose attention follows ``override_config.attn_implementation`` (see
:mod:`.attention`), as a one-label ``*ForTokenClassification`` model of the
checkpoint's architecture (what verl's own loader builds from a causal LM:
the checkpoint's body, a new score head). Its output is processed exactly as
verl's value engine processes it.

It is registered in verl's ``EngineRegistry`` for value models on the CPU
platform (:mod:`.cpu`) and, for a run agentspec launched
(``AGENTSPEC_VERL_ENGINES=1`` in the workers' environment, see
:data:`agentspec.runtime.backends.verl.ENGINES_ENV`), on NVIDIA GPUs; another
verl run in the same environment keeps verl's engine.
"""

from __future__ import annotations

from typing import Any

from verl.workers.engine.base import EngineRegistry
from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithValueHead

from agentspec.runtime.backends.verl.critic_model import value_model_config

__all__ = ["ValueEngine", "register", "value_model_config"]


class ValueEngine(FSDPEngineWithValueHead):
    """verl's FSDP critic engine building a ``*ForTokenClassification`` critic with the
    attention of ``critic.model.override_config`` (see the module docstring)."""

    def _build_module(self) -> Any:
        config = self.model_config
        value_model_config(config.hf_config)
        kind = config.model_type
        config.model_type = "language_model"  # verl's path that honours the config's attention
        try:
            return super()._build_module()
        finally:
            config.model_type = kind


def register(device: str, vendor: str | None = None) -> None:
    """Register :class:`ValueEngine` for value models on ``device`` (and ``vendor``), for
    verl's ``fsdp`` and ``fsdp2`` strategies (idempotent)."""
    key: Any = (device, vendor) if vendor else device
    backends = EngineRegistry._engines.get("value_model", {})
    if all(backends.get(b, {}).get(key) is ValueEngine for b in ("fsdp", "fsdp2")):
        return
    EngineRegistry.register(
        model_type="value_model", backend=["fsdp", "fsdp2"], device=device, vendor=vendor
    )(ValueEngine)
