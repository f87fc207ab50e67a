"""Attention on the GPU path: the kernel verl's models use, and the head sizes vLLM serves.

verl 0.9.1 builds three transformers models: the actor and the reference policy
from ``actor_rollout_ref.model`` (attention from its
``override_config.attn_implementation``, ``flash_attention_2`` when unset:
``verl/workers/config/model.py``) and the critic from ``critic.model`` (verl's
own value-model loader hard-codes ``flash_attention_2``:
``verl/utils/model.py``; agentspec's value engine, :mod:`.engines`, builds it
with ``critic.model.override_config`` instead). Both need the ``flash-attn``
package unless told otherwise, so the launcher names the implementation for
both, explicitly: :func:`choose_attention` picks FlashAttention-2 where
``flash_attn`` is importable and PyTorch's ``sdpa`` otherwise.

vLLM does not use these settings: it picks its own attention backend
(:mod:`.vllm_rollout`).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping

__all__ = [
    "FLASH_ATTENTION_2",
    "SDPA",
    "attention_note",
    "attention_overrides",
    "choose_attention",
]

FLASH_ATTENTION_2 = "flash_attention_2"
SDPA = "sdpa"


def flash_attn_status() -> str:
    """``importable``, ``not installed``, or ``installed but does not import (ERROR)``: an
    installed flash-attn built against another torch fails only when imported, and a
    package that is found is not one that works."""
    if importlib.util.find_spec("flash_attn") is None:
        return "not installed"
    try:
        importlib.import_module("flash_attn")
    except Exception as exc:  # an ABI mismatch is an ImportError, an OSError, …
        return f"installed but does not import ({type(exc).__name__}: {exc})"[:300]
    return "importable"


def choose_attention(status: Callable[[], str] = flash_attn_status) -> str:
    """``flash_attention_2`` if the ``flash_attn`` package imports here, else ``sdpa``.

    The launcher's environment decides for every worker: install the same packages
    on every node. ``status`` is what tries the import (a test passes its own).
    """
    return FLASH_ATTENTION_2 if status() == "importable" else SDPA


def attention_overrides(attention: str) -> dict[str, str]:
    """Hydra overrides giving the actor, the reference (both ``actor_rollout_ref.model``)
    and the critic (``critic.model``) the attention ``attention``.

    With ``sdpa`` verl's remove-padding path is turned off as well: it packs a micro-batch's
    sequences into one row for flash-attn's variable-length kernels, and the padded path
    is the one the CPU tests run.
    """
    out: dict[str, str] = {}
    for model in ("actor_rollout_ref.model", "critic.model"):
        out[f"+{model}.override_config.attn_implementation"] = attention
        if attention != FLASH_ATTENTION_2:
            out[f"{model}.use_remove_padding"] = "False"
    return out


def attention_note(overrides: Mapping[str, str]) -> str:
    """The attention each model verl builds will use, as ``overrides`` set it (one line)."""

    def named(model: str) -> str:
        key = f"{model}.override_config.attn_implementation"
        return overrides.get("+" + key) or overrides.get(key) or f"{FLASH_ATTENTION_2} (verl's)"

    flash = flash_attn_status()
    return (
        f"attention: actor and reference {named('actor_rollout_ref.model')}, critic "
        f"{named('critic.model')} (flash_attn {flash} here)"
    )
