"""Shared helpers of the verl backend tests: the spec, a warm-started tiny model."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from types import ModuleType

import torch

from agentspec.runtime import ScriptedPolicy, training_rows
from agentspec.runtime.text.task_text import task_corpus
from agentspec.runtime.text.tiny_model import build_tiny, load_tiny

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "calculator.yaml"


def warm_started_tiny(module: ModuleType, directory: Path, steps: int = 60, seed: int = 0) -> Path:
    """Build the task's tiny model in ``directory`` and behaviour-clone it on a few oracle
    episodes, so that sampled episodes mix tool calls, answers and rewards."""
    samples = module.load_samples("train", limit=64)
    build_tiny(task_corpus(module, samples), directory)
    model, tokenizer = load_tiny(directory)

    async def play() -> list:
        flows = [
            module.FLOW_CLASS(ScriptedPolicy(list(module.oracle_actions(s)), tokenizer), tokenizer)
            for s in samples
        ]
        return await asyncio.gather(*(f.run(s) for f, s in zip(flows, samples, strict=True)))

    rows = [r for t in asyncio.run(play()) for r in training_rows(t, pack=True)]
    rng = random.Random(seed)
    torch.manual_seed(seed)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(steps):
        batch = rng.sample(rows, 8)
        width = max(len(r.input_ids) for r in batch)
        ids = torch.full((len(batch), width), tokenizer.pad_token_id, dtype=torch.long)
        labels = torch.full_like(ids, -100)
        attention = torch.zeros_like(ids)
        for i, r in enumerate(batch):
            n = len(r.input_ids)
            ids[i, :n] = torch.tensor(r.input_ids)
            attention[i, :n] = 1
            mask = torch.tensor(r.response_mask, dtype=torch.bool)
            labels[i, :n] = torch.where(mask, ids[i, :n], torch.tensor(-100))
        loss = model(input_ids=ids, attention_mask=attention, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval().save_pretrained(directory)
    return directory
