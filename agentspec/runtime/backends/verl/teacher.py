"""OPD's teacher inside verl: per-token teacher log-probs of every verl row, every step.

verl 0.9.1's own distillation (``distillation.enabled``, teacher servers) scores
only the last ``AgentLoopOutput`` of a multi-output episode and needs its own
GPU pool. agentspec's ``opd`` needs the teacher's log-prob of every token the
student generated, at every step, taken on the exact prompt ids the student saw
at that step (the context policy decides them). A verl row holds exactly that:
the step's prompt ids followed by its response ids (or, packed, a chain of
steps with the observation tokens in between). :class:`TeacherScorer` scores
those rows with a Hugging Face checkpoint in the trainer's process, with the
same function as the local backend's scorer (``token_log_probs``, logits divided
by the sampling temperature), so both backends compute the same numbers for the
same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from agentspec.runtime.backends.local.tensors import token_log_probs

__all__ = ["TeacherScorer"]


class TeacherScorer:
    """A frozen teacher that scores verl rows (prompt ids + response ids)."""

    def __init__(self, path: str | Path, student_path: str | Path, temperature: float) -> None:
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
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        self.temperature = float(temperature)

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
            logp, _ = token_log_probs(self.model, ids, mask, self.temperature)
            for k, i in enumerate(rows):
                p, r = len(prompts[i]), len(responses[i])
                out[i, :r] = logp[k, p : p + r]
        return out
