"""The critic's model: a checkpoint's config turned into its one-label value model.

Kept apart from :mod:`.engines` (which subclasses verl's engine and so imports verl):
``scripts/gpu_check.sh --torch-only`` builds the critic exactly as verl's workers
do on a machine with torch and transformers only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TOKEN_CLASSIFICATION", "value_model_config"]

TOKEN_CLASSIFICATION = "ForTokenClassification"


def value_model_config(hf_config: Any) -> Any:
    """Turn a checkpoint's Hugging Face config into its critic's, in place: a one-label
    ``*ForTokenClassification`` of the same architecture (``Qwen2ForCausalLM`` becomes
    ``Qwen2ForTokenClassification``: verl's loader picks the auto class from this name, and
    transformers loads the causal LM's body into it). Attention is left as it is."""
    architecture = str(hf_config.architectures[0])
    if not architecture.endswith(TOKEN_CLASSIFICATION):
        hf_config.architectures = [architecture.rsplit("For", 1)[0] + TOKEN_CLASSIFICATION]
    hf_config.num_labels = 1
    hf_config.classifier_dropout = 0.0
    return hf_config
