"""The models a run trains or consults: policy, critic, reference, teacher.

`builtin:tiny` / `builtin:small` build a tokenizer from the task's own text
and a small random transformer for it (no downloads); any other model name
(`smollm2`, a `.gguf` file, a checkpoint or run directory: see
`agentspec.runtime.text.model_names`) is loaded from its Hugging Face
checkpoint directory, a GGUF file converted once into the cache. The critic is a separate copy of
the policy's backbone with a scalar head: V(s) is read at the last token of
what the model saw before acting.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn

from agentspec.core.presets import ALGORITHMS, kl_coef
from agentspec.runtime.backends.local.convert import checkpoint_dir
from agentspec.runtime.backends.local.device import resolve_device
from agentspec.runtime.compiled.task_text import CORPUS_SAMPLES, task_tokenizer
from agentspec.runtime.text.model_names import BUILTIN_MODELS, ModelNameError, resolve_model
from agentspec.runtime.text.tiny_model import TinyModelConfig, build_tiny_model
from agentspec.spec.model import TrainingSpec

BUILTIN_SHAPES = {
    "tiny": TinyModelConfig(
        hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=256
    ),
    "small": TinyModelConfig(
        hidden_size=128, num_layers=4, num_heads=4, num_kv_heads=2, intermediate_size=512
    ),
    # ~285M parameters (24 blocks of width 1024, Qwen2-0.5B's proportions): a GPU-sized
    # policy for scripts/gpu_check.sh, built from the task's text like the others
    "300m": TinyModelConfig(
        hidden_size=1024, num_layers=24, num_heads=16, num_kv_heads=8, intermediate_size=2816
    ),
}
assert tuple(BUILTIN_SHAPES) == BUILTIN_MODELS  # the names the torch-free resolver accepts


def load_policy(
    name: str,
    module: ModuleType,
    samples: Sequence[Mapping[str, Any]],
    tokenizer_dir: Path,
    seed: int,
    note: Callable[[str], None] | None = None,
) -> tuple[Any, Any]:
    """(model, tokenizer) for `training.model`; `note` hears of a GGUF conversion."""
    if name.startswith("chat:"):
        from agentspec.runtime.backends.local.config import ConfigError

        raise ConfigError(
            f"training.model {name!r} is a chat-completions API (text, no token ids): "
            "it can be a baseline in agentspec run / eval, not a model to train"
        )
    ref = resolve_model(name)
    if ref.kind == "builtin":
        tokenizer = task_tokenizer(module, samples, tokenizer_dir)
        return build_tiny_model(tokenizer, BUILTIN_SHAPES[ref.shape], seed=seed).train(), tokenizer
    return load_checkpoint(checkpoint_dir(ref, note))


def load_checkpoint(name: str | Path, note: Callable[[str], None] | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) of a checkpoint directory, or of any model name but `builtin:*`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # the command says what it loads
    path = checkpoint_dir(str(name), note)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    except Exception as exc:  # a damaged or partial folder: each library raises its own
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ModelNameError(
            f"model {str(name)!r}: {path} cannot be loaded ({type(exc).__name__}: {first})"
        ) from None
    return model.train(), tokenizer


class ValueModel(nn.Module):
    """A transformer backbone with a scalar head: one value per position."""

    def __init__(self, backbone: nn.Module, hidden_size: int):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, prefix: int = 0
    ) -> torch.Tensor:
        """Values `(B, L)`; with `prefix` > 0 the rows' shared first `prefix` tokens run
        once (see `tensors.outputs_after`) and their values are 0 (no state is read there)."""
        from agentspec.runtime.backends.local.tensors import outputs_after

        hidden = outputs_after(self.backbone, input_ids, attention_mask, prefix).last_hidden_state
        values: torch.Tensor = self.head(hidden.float()).squeeze(-1)
        return torch.nn.functional.pad(values, (prefix, 0)) if prefix else values


def build_critic(policy: Any) -> ValueModel:
    """A critic that starts from the policy's backbone (its own copy)."""
    backbone = copy.deepcopy(
        policy.get_decoder() if hasattr(policy, "get_decoder") else policy.model
    )
    return ValueModel(backbone, policy.config.hidden_size).train()


def frozen_copy(model: Any) -> Any:
    """A frozen copy (the reference policy for the KL penalty)."""
    ref = copy.deepcopy(model).eval()
    for parameter in ref.parameters():
        parameter.requires_grad_(False)
    return ref


@dataclass
class Models:
    """Everything a run trains or consults, on one device."""

    policy: Any
    tokenizer: Any
    critic: Any
    reference: Any
    teacher: Any
    optimizers: dict[str, torch.optim.Optimizer]
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))


def build_models(
    cfg: TrainingSpec,
    module: ModuleType,
    samples: Sequence[Mapping[str, Any]],
    run_dir: Path,
    note: Callable[[str], None] | None = None,
) -> Models:
    """The policy (and its optimiser); a critic if the estimator reads values; the
    teacher if the algorithm distils. The reference comes later (`anchor_reference`).
    `note` hears of what takes time (a GGUF conversion)."""
    algorithm = ALGORITHMS.get(cfg.algorithm)
    policy, tokenizer = load_policy(
        cfg.model, module, samples[:CORPUS_SAMPLES], run_dir / "tokenizer", cfg.seed, note
    )
    critic = build_critic(policy) if algorithm.trains_critic else None
    reference = None  # the policy RL starts from: set by `anchor_reference` after the warm start
    teacher = None
    if algorithm.needs_teacher:
        if cfg.teacher is None:
            raise ValueError(
                f"algorithm {cfg.algorithm!r} needs `training.teacher` (a checkpoint directory)"
            )
        teacher = frozen_copy(load_checkpoint(cfg.teacher, note)[0])
    device = resolve_device(cfg.device)
    for model in (policy, critic, reference, teacher):
        if model is not None:
            model.to(device)
    optimizers: dict[str, torch.optim.Optimizer] = {
        "policy": torch.optim.AdamW(policy.parameters(), lr=cfg.learning_rate)
    }
    if critic is not None:
        optimizers["critic"] = torch.optim.AdamW(critic.parameters(), lr=cfg.critic_learning_rate)
    return Models(policy, tokenizer, critic, reference, teacher, optimizers, device)


def needs_reference(cfg: TrainingSpec) -> bool:
    """A frozen reference when the KL penalty reads it, or after a warm start, where the
    KL to the warm-started policy is the diagnostic of how far RL moved away from it."""
    return kl_coef(ALGORITHMS.get(cfg.algorithm), cfg) > 0 or cfg.warm_start > 0


def anchor_reference(models: Models, cfg: TrainingSpec, saved: Path | None = None) -> None:
    """The reference is the policy RL starts from (after the warm start, not before: a
    KL penalty towards the random initialisation would pull back what behaviour cloning
    taught). ``saved`` is that policy's checkpoint when a run resumes."""
    if not needs_reference(cfg):
        return
    if saved is not None and (saved / "policy").is_dir():
        models.reference = frozen_copy(load_checkpoint(saved / "policy")[0]).to(models.device)
    else:
        models.reference = frozen_copy(models.policy)


def critic_from_policy(models: Models, cfg: TrainingSpec) -> None:
    """A fresh critic on the policy's current backbone, with a fresh optimiser: after the
    warm start, the critic reads the features behaviour cloning taught, not the random
    initialisation it was built from."""
    if models.critic is None:
        return
    models.critic = build_critic(models.policy).to(models.device)
    models.optimizers["critic"] = torch.optim.AdamW(
        models.critic.parameters(), lr=cfg.critic_learning_rate
    )
