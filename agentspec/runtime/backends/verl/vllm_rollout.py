"""What the vLLM rollout needs: a head size its kernels serve, log-probs that match the trainer's.

- vLLM picks its own attention backend, and each serves some head sizes only
  (:func:`vllm_head_size_error`): the default ``builtin:tiny`` (head size 16)
  is refused before launch, with the builtin shapes that fit.
- verl 0.9.1 asks vLLM for ``logprobs_mode=processed_logprobs``: the log-prob of
  each sampled token after temperature *and* top-k / top-p filtering, renormalised
  over the tokens that survive. The trainer's log-probs (verl's ``old_log_probs``,
  agentspec's OPD and ratios) are over the whole vocabulary at the same
  temperature, so the two agree only at ``top_p=1`` and ``top_k=-1``
  (:func:`sampling_note` warns otherwise). vLLM has no mode that keeps the
  temperature and drops the filtering (``raw_logprobs`` drops both).

Nothing here imports torch, verl or vLLM.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

__all__ = ["head_size", "sampling_note", "vllm_head_size_error"]


def head_size(model_dir: str | Path) -> int | None:
    """The attention head size of a Hugging Face checkpoint (``head_dim``, else
    ``hidden_size / num_attention_heads``); None when its config does not say."""
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        return None
    config = json.loads(path.read_text(encoding="utf-8"))
    config = config.get("text_config", config)
    if config.get("head_dim"):
        return int(config["head_dim"])
    if config.get("hidden_size") and config.get("num_attention_heads"):
        return int(config["hidden_size"]) // int(config["num_attention_heads"])
    return None


# vLLM 0.24's attention backends on NVIDIA GPUs (``vllm/v1/attention/backends``):
# FlashAttention, the default on Ampere and Hopper, serves head sizes that are multiples
# of 8 up to 256; Triton, the portable fallback, 32 and above; FlashInfer 64, 128 and 256.
VLLM_MIN_HEAD_SIZE = 32
VLLM_MAX_HEAD_SIZE = 256


def vllm_head_size_error(size: int | None, model: str) -> str | None:
    """Why vLLM cannot serve a model with attention head size ``size`` (None: it can).

    A head size is accepted when both FlashAttention and the Triton backend serve it,
    so vLLM starts whichever of the two it picks on the GPU at hand.
    """
    if size is None or (VLLM_MIN_HEAD_SIZE <= size <= VLLM_MAX_HEAD_SIZE and size % 8 == 0):
        return None
    return (
        f"model {model!r} has attention head size {size}, which vLLM 0.24's attention "
        f"backends do not all serve (FlashAttention: multiples of 8 up to "
        f"{VLLM_MAX_HEAD_SIZE}; Triton: {VLLM_MIN_HEAD_SIZE} and above; FlashInfer: 64, 128, "
        "256). Use builtin:small (head size 32) or builtin:300m (64), or a Hugging Face "
        "checkpoint; the CPU path (trainer.device=cpu) serves any size"
    )


def sampling_note(overrides: Mapping[str, str]) -> str | None:
    """A warning when the rollout's top-p / top-k make vLLM's processed log-probs differ
    from the trainer's (None: they agree). ``overrides`` are ``main_ppo``'s."""

    def value(key: str, default: str) -> str:
        full = f"actor_rollout_ref.rollout.{key}"
        return str(overrides.get(full, overrides.get("+" + full, default)))

    top_p, top_k = float(value("top_p", "1.0")), int(float(value("top_k", "-1")))
    mode = value("logprobs_mode", "processed_logprobs")
    if mode != "processed_logprobs" or (top_p >= 1.0 and top_k <= 0):
        return None
    return (
        f"warning: rollout top_p={top_p:g}, top_k={top_k}: vLLM's log-probs "
        "(logprobs_mode=processed_logprobs) are renormalised over the tokens top-p/top-k keep, "
        "the trainer's are over the whole vocabulary, so rollout correction and the ratios "
        "compare different distributions; keep top_p=1 and top_k=-1 for matching log-probs"
    )
