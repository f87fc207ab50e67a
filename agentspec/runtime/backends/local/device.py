"""Where the local backend's models run (``training.device``) and in which precision.

``auto`` picks CUDA when torch sees a GPU, else the CPU. On CUDA, forward passes
run under bfloat16 autocast where the GPU supports it (Ampere and later): the
matrix products halve their memory traffic while weights, gradients and the
optimiser stay float32, and log-probs are taken from float32 logits
(``token_log_probs`` upcasts). The CPU path is unchanged float32.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from agentspec.runtime.backends.local.config import ConfigError

__all__ = ["autocast", "resolve_device"]


def resolve_device(name: str) -> torch.device:
    """``auto`` / ``cpu`` / ``cuda`` → a torch device; ``cuda`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            "training.device is cuda, but torch sees no GPU (torch.cuda.is_available() is "
            "False); use device=auto or device=cpu"
        )
    if name not in ("cpu", "cuda"):
        raise ConfigError(f"unknown training.device {name!r}; use auto, cpu or cuda")
    return torch.device(name)


@contextlib.contextmanager
def autocast(device: torch.device) -> Iterator[None]:
    """bfloat16 autocast on a CUDA device that supports it; nothing elsewhere."""
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            yield
    else:
        yield
