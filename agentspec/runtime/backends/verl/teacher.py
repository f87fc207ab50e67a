"""OPD's teacher inside verl: per-token teacher log-probs of every verl row, every step.

verl 0.9.1's own distillation (``distillation.enabled``, teacher servers) scores
only the last ``AgentLoopOutput`` of a multi-output episode and needs its own
GPU pool. agentspec's ``opd`` needs the teacher's log-prob of every token the
student generated, at every step, taken on the exact prompt ids the student saw
at that step (the context policy decides them). A verl row holds exactly that:
the step's prompt ids followed by its response ids (or, packed, a chain of
steps with the observation tokens in between). :class:`TeacherScorer` scores
those rows with a Hugging Face checkpoint, with the same function as the local
backend's scorer (``token_log_probs``, logits divided by the sampling
temperature), so both backends compute the same numbers for the same rows.

Where it runs (:func:`make_teacher`, see :mod:`.placement`): in the trainer's
process (placement ``trainer``: on the CPU, since Ray gives verl's task runner no
GPU), or in a Ray actor of its own that asks for GPUs (placement ``gpu``). Its
dtype is ``+trainer.v1.agentspec.teacher_dtype``: bfloat16 on the GPU path
(wherever the teacher runs: half the memory and, on a CPU with bfloat16 units,
several times the speed of float32), float32 on the CPU path (what the local
backend's CPU scorer computes, so both backends give the same numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from agentspec.runtime.backends.local.tensors import token_log_probs

__all__ = ["RemoteTeacher", "TeacherScorer", "make_teacher"]


class TeacherScorer:
    """A frozen teacher that scores verl rows (prompt ids + response ids)."""

    def __init__(
        self,
        path: str | Path,
        student_path: str | Path,
        temperature: float,
        device: str | None = None,
        dtype: str | None = None,
    ) -> None:
        """``device``: where to score (None: CUDA if this process sees a GPU, else the CPU);
        ``dtype``: ``bfloat16`` or ``float32`` (None: bfloat16 on CUDA, float32 on the CPU)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = Path(path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"training.teacher {str(path)!r} is not a Hugging Face checkpoint (no config.json)"
            )
        teacher_vocab = AutoTokenizer.from_pretrained(path).get_vocab()
        if teacher_vocab != AutoTokenizer.from_pretrained(student_path).get_vocab():
            raise ValueError(
                f"training.teacher {str(path)!r} has another tokenizer than the student "
                f"{str(student_path)!r}: OPD compares log-probs of the same token ids"
            )
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        model: Any = AutoModelForCausalLM.from_pretrained(
            path, dtype=_dtype(dtype, self.device.type)
        )
        self.model = model.to(self.device).eval()
        self.temperature = float(temperature)

    def where(self) -> tuple[str, str]:
        """The device and dtype the teacher scores on (``("cpu", "torch.float32")``)."""
        return str(self.device), str(next(self.model.parameters()).dtype)

    @torch.no_grad()
    def log_probs(
        self, prompts: Sequence[Tensor], responses: Sequence[Tensor], width: int, chunk: int = 8
    ) -> Tensor:
        """``(rows, width)``: log π_teacher of each response token given everything before it
        in its row (0 past a row's response)."""
        out = torch.zeros((len(prompts), width), dtype=torch.float32)
        for start in range(0, len(prompts), chunk):
            rows = range(start, min(start + chunk, len(prompts)))
            seqs = [torch.cat([prompts[i].long().cpu(), responses[i].long().cpu()]) for i in rows]
            length = max(len(s) for s in seqs)
            ids = torch.zeros((len(seqs), length), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for k, s in enumerate(seqs):
                ids[k, : len(s)] = s
                mask[k, : len(s)] = 1
            logp, _ = token_log_probs(
                self.model, ids.to(self.device), mask.to(self.device), self.temperature
            )
            logp = logp.float().cpu()
            for k, i in enumerate(rows):
                p, r = len(prompts[i]), len(responses[i])
                out[i, :r] = logp[k, p : p + r]
        return out


def _dtype(name: str | None, device: str) -> torch.dtype:
    if name is None:
        return torch.bfloat16 if device == "cuda" else torch.float32
    if name not in ("bfloat16", "float32"):
        raise ValueError(f"trainer.v1.agentspec.teacher_dtype={name!r}: give bfloat16 or float32")
    return getattr(torch, name)


class RemoteTeacher:
    """A :class:`TeacherScorer` in a Ray actor of its own that asks for ``num_gpus`` GPUs."""

    def __init__(
        self,
        path: str | Path,
        student_path: str | Path,
        temperature: float,
        num_gpus: float,
        dtype: str | None = None,
    ) -> None:
        import ray

        actor: Any = ray.remote(num_gpus=num_gpus)(TeacherScorer)
        self.actor = actor.remote(str(path), str(student_path), float(temperature), None, dtype)
        self.device, self.dtype = ray.get(self.actor.where.remote())  # loaded, or its error

    def log_probs(
        self, prompts: Sequence[Tensor], responses: Sequence[Tensor], width: int, chunk: int = 8
    ) -> Tensor:
        """:meth:`TeacherScorer.log_probs`, computed in the actor."""
        import ray

        prompts = [p.cpu() for p in prompts]
        responses = [r.cpu() for r in responses]
        return ray.get(self.actor.log_probs.remote(prompts, responses, width, chunk))


def make_teacher(
    path: str | Path,
    student_path: str | Path,
    temperature: float,
    placement: str = "trainer",
    num_gpus: float = 1.0,
    dtype: str | None = None,
) -> TeacherScorer | RemoteTeacher:
    """The teacher where ``placement`` puts it: ``trainer`` (this process) or ``gpu``
    (a Ray actor with ``num_gpus`` GPUs), in ``dtype`` (see the module docstring)."""
    if placement == "gpu":
        return RemoteTeacher(path, student_path, temperature, num_gpus, dtype)
    # in verl's task runner: the CPU, even where the process happens to see a GPU that
    # verl's workers use
    return TeacherScorer(path, student_path, temperature, device="cpu", dtype=dtype)
