"""A local Hugging Face causal LM as a policy (transformers + torch, CPU or GPU).

Generation is a plain batched decoding loop with a KV cache: prompts are
left-padded, position ids follow the attention mask, and every sampled token's
log-prob is ``log softmax(logits / temperature)`` computed in float32 — the same
number a training forward pass computes on the same ids. Importing this module
imports torch; ``agentspec.runtime`` does not import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from agentspec.runtime.episode.policy import BatchingPolicy, Generation, SamplingParams
from agentspec.runtime.text.tokenizer import Tokenizer

__all__ = ["HFPolicy", "sequence_logprobs"]


class HFPolicy(BatchingPolicy):
    """Batched sampling from a transformers causal LM.

    Args:
        model: a ``PreTrainedModel`` with a causal-LM head (or a path to load one).
        tokenizer: its tokenizer (used for stop strings and the EOS / pad ids).
        device: where to run (default: the model's device).
        max_batch_size: the most prompts decoded together.
        stop_token_ids: ids that end a response besides the tokenizer's EOS.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Tokenizer,
        device: str | torch.device | None = None,
        max_batch_size: int = 64,
        stop_token_ids: Sequence[int] = (),
    ) -> None:
        super().__init__(max_batch_size=max_batch_size)
        if isinstance(model, str):
            from transformers import AutoModelForCausalLM

            model = AutoModelForCausalLM.from_pretrained(model)
        self.model = model.eval()
        if device is not None:
            self.model.to(device)
        self.device = next(self.model.parameters()).device
        self.tokenizer = tokenizer
        eos = tokenizer.eos_token_id
        self.stop_ids = {int(i) for i in stop_token_ids} | (
            {int(eos)} if eos is not None else set()
        )
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (eos or 0))

    @torch.no_grad()
    def generate_batch(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        if not prompts:
            return []
        if any(not p for p in prompts):
            raise ValueError("every prompt needs at least one token")
        dev = self.device
        n = len(prompts)
        ids, mask = self._left_padded(prompts)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        # Unseeded requests draw from torch's global generator, so a caller that
        # seeds torch (the trainer) gets reproducible rollouts.
        gen: torch.Generator | None = None
        if params.seed is not None:
            gen = torch.Generator(device=dev).manual_seed(params.seed)

        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
        past = out.past_key_values
        logits = out.logits[:, -1, :].float()
        last_pos = positions[:, -1]

        tokens: list[list[int]] = [[] for _ in range(n)]
        logps: list[list[float]] = [[] for _ in range(n)]
        finish = ["length"] * n
        alive = [True] * n
        tail = max((len(s) for s in params.stop), default=0) + 8
        for _ in range(params.max_new_tokens):
            chosen, chosen_logp = self._sample(logits, params, gen)
            chosen_list = chosen.tolist()
            lp_list = chosen_logp.tolist()
            for i in range(n):
                if not alive[i]:
                    continue
                tokens[i].append(int(chosen_list[i]))
                logps[i].append(float(lp_list[i]))
                if self._stopped(tokens[i], params, tail):
                    alive[i], finish[i] = False, "stop"
            if not any(alive):
                break
            step_ids = torch.tensor(
                [[t[-1] if alive[i] else self.pad_id] for i, t in enumerate(tokens)], device=dev
            )
            mask = torch.cat([mask, torch.ones((n, 1), dtype=mask.dtype, device=dev)], dim=1)
            last_pos = last_pos + 1
            out = self.model(
                input_ids=step_ids,
                attention_mask=mask,
                position_ids=last_pos[:, None],
                past_key_values=past,
                use_cache=True,
            )
            past = out.past_key_values
            logits = out.logits[:, -1, :].float()
        return [Generation(t, lp, f) for t, lp, f in zip(tokens, logps, finish, strict=True)]

    def _left_padded(self, prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Prompts right-aligned in one batch (ids, attention mask), on the model's device."""
        n, width = len(prompts), max(len(p) for p in prompts)
        ids = torch.full((n, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
            mask[i, width - len(p) :] = 1
        return ids.to(self.device), mask.to(self.device)

    def _stopped(self, tokens: list[int], params: SamplingParams, tail: int) -> bool:
        """Whether the last token ends the sequence: a stop id, or a stop string in its tail."""
        if tokens[-1] in self.stop_ids and not params.ignore_eos:
            return True
        if not params.stop:
            return False
        text = self.tokenizer.decode(tokens[-tail:], skip_special_tokens=False)
        return any(s in text for s in params.stop)

    @staticmethod
    def _sample(
        logits: torch.Tensor, params: SamplingParams, gen: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Choose one token per row; return it and its log-prob under ``logits / T``."""
        if params.temperature <= 0:
            logp = torch.log_softmax(logits, dim=-1)
            chosen = logp.argmax(dim=-1)
            return chosen, logp.gather(-1, chosen[:, None])[:, 0]
        scaled = logits / params.temperature if params.temperature != 1.0 else logits
        logp = torch.log_softmax(scaled, dim=-1)
        filtered = logp
        if params.top_k and params.top_k < filtered.shape[-1]:
            filtered = filtered.clone()
            kth = torch.topk(filtered, params.top_k, dim=-1).values[:, -1:]
            filtered[filtered < kth] = float("-inf")
        if params.top_p < 1.0:
            sorted_lp, order = torch.sort(filtered, descending=True, dim=-1)
            cum = sorted_lp.softmax(-1).cumsum(-1)
            drop = cum - sorted_lp.softmax(-1) >= params.top_p
            sorted_lp[drop] = float("-inf")
            filtered = torch.full_like(filtered, float("-inf")).scatter(-1, order, sorted_lp)
        probs = filtered.softmax(-1)
        # torch.multinomial's own draw for one sample (argmax of p / q, q ~ Exp(1): the same
        # random numbers, the same tokens), without its validity checks on every step
        noise = torch.empty_like(probs).exponential_(1, generator=gen)
        chosen = (probs / noise).argmax(dim=-1)
        return chosen, logp.gather(-1, chosen[:, None])[:, 0]


@torch.no_grad()
def sequence_logprobs(
    model: Any, prompt_ids: Sequence[int], response_ids: Sequence[int], temperature: float = 1.0
) -> list[float]:
    """Log-probs of ``response_ids`` after ``prompt_ids`` from one fresh forward pass (float32)."""
    dev = next(model.parameters()).device
    ids = torch.tensor([list(prompt_ids) + list(response_ids)], device=dev)
    logits = model(input_ids=ids).logits[0].float()
    if temperature > 0:
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1)
    start = len(prompt_ids)
    targets = ids[0, start:]
    return logp[start - 1 : -1].gather(-1, targets[:, None])[:, 0].tolist()
