"""Checkpoints: written atomically, loaded to resume exactly where a run stopped.

    checkpoints/iter_000020/
        policy/          Hugging Face save_pretrained (safetensors) + tokenizer
        critic.safetensors
        trainer.pt       optimizer states, RNG states, counters
    checkpoints/latest   the name of the newest complete checkpoint

A checkpoint is written into a temporary folder and renamed into place; the
`latest` pointer is replaced the same way, so a kill at any moment leaves the
previous checkpoint intact.
"""

from __future__ import annotations

import os
import random
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

WARM_START = "iter_000000"
"""The checkpoint written before the first iteration: the warm-started policy."""


@dataclass
class TrainerState:
    iteration: int = 0  # iterations completed
    env_steps: int = 0
    warm_started: bool = False


def save_checkpoint(
    root: Path,
    state: TrainerState,
    policy: Any,
    tokenizer: Any,
    critic: torch.nn.Module | None,
    optimizers: dict[str, torch.optim.Optimizer],
) -> Path:
    from safetensors.torch import save_file
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    root.mkdir(parents=True, exist_ok=True)
    name = f"iter_{state.iteration:06d}"
    final = root / name
    tmp = root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    policy.save_pretrained(tmp / "policy")
    tokenizer.save_pretrained(tmp / "policy")
    if critic is not None:
        save_file(
            {k: v.contiguous() for k, v in critic.state_dict().items()},
            str(tmp / "critic.safetensors"),
        )
    torch.save(
        {
            "state": asdict(state),
            "optimizers": {k: o.state_dict() for k, o in optimizers.items()},
            "torch_rng": torch.get_rng_state(),
            "python_rng": random.getstate(),
        },
        tmp / "trainer.pt",
    )
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    pointer = root / ".latest.tmp"
    pointer.write_text(name, encoding="utf-8")
    os.replace(pointer, root / "latest")
    return final


def prune_checkpoints(root: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` checkpoints, never the warm start's
    (``iter_000000``): a resumed run's KL penalty reads its reference from it."""
    older = sorted(p for p in root.glob("iter_*") if p.is_dir() and p.name != WARM_START)
    for path in older[:-keep]:
        shutil.rmtree(path, ignore_errors=True)


def latest_checkpoint(root: Path) -> Path | None:
    pointer = root / "latest"
    if not pointer.exists():
        return None
    path = root / pointer.read_text(encoding="utf-8").strip()
    return path if path.is_dir() else None


def load_checkpoint_into(
    path: Path,
    policy: Any,
    critic: torch.nn.Module | None,
    optimizers: dict[str, torch.optim.Optimizer],
) -> TrainerState:
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # `train --resume` says what it restores
    saved = AutoModelForCausalLM.from_pretrained(path / "policy", dtype=torch.float32)
    policy.load_state_dict(saved.state_dict())
    if critic is not None:
        critic.load_state_dict(load_file(str(path / "critic.safetensors")))
    blob = torch.load(path / "trainer.pt", weights_only=False)
    for key, optimizer in optimizers.items():
        optimizer.load_state_dict(blob["optimizers"][key])
    torch.set_rng_state(blob["torch_rng"])
    random.setstate(blob["python_rng"])
    return TrainerState(**blob["state"])
