"""Shared helpers of the verl backend tests: the spec, a warm-started tiny model, and
the checks every training run on verl passes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import random
import signal
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from agentspec.core.presets import ALGORITHMS
from agentspec.runtime import ScriptedPolicy, training_rows
from agentspec.runtime.algorithms import (
    ESTIMATORS,
    AdvantageConfig,
    StepRow,
    collate_steps,
    compute_advantages,
)
from agentspec.runtime.compiled.task_text import task_corpus
from agentspec.runtime.text.tiny_model import build_tiny, load_tiny

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "calculator.yaml"

SMALL = {
    "iterations": "2",
    "prompts_per_iteration": "2",
    "group_size": "2",
    "minibatch_size": "4",
    "epochs": "1",
    "eval_every": "2",
    "checkpoint_every": "2",
    "eval_samples": "4",
    "temperature": "1.0",
}
"""Two tiny iterations: what a test of a whole verl training run needs."""


def anchored_calculator(directory: Path) -> Path:
    """The calculator spec with an `episode.anchor` (the step's index: a group's first
    steps form one anchor group, its second steps another), which GiGPO needs."""
    text = SPEC.read_text(encoding="utf-8")
    success = "  success: reward.correct == 1.0\n"
    assert success in text
    anchored = text.replace(success, success + "  anchor: \"'step ' + str(step.index)\"\n")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "calculator.yaml"
    path.write_text(anchored, encoding="utf-8")
    return path


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


def _full(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def _expected_advantages(dump: dict) -> torch.Tensor:
    """agentspec's estimator on the dumped steps, built here from the raw records,
    scattered to verl's (rows, T) layout."""
    est = str(dump["estimator"]).removeprefix("agentspec_")
    rows, where = [], []
    for i, (rec, uid) in enumerate(zip(dump["records"], dump["uids"], strict=True)):
        ts = rec["token_steps"]
        for k, step in enumerate(rec["step_indices"]):
            cols = [j for j, s in enumerate(ts) if s == step]
            value = token_values = None
            if ESTIMATORS.get(est).critic == "step":
                value = float(dump["values"][i, cols[0]])
            if ESTIMATORS.get(est).critic == "token":
                token_values = dump["values"][i, cols].tolist()
            rows.append(
                StepRow(
                    traj_id=rec["trajectory_id"],
                    step_index=step,
                    group_id=uid,
                    reward=rec["step_rewards"][k],
                    response_length=len(cols),
                    anchor=rec["anchors"][k],
                    value=value,
                    token_values=token_values,
                )
            )
            where.append((i, cols))
    out = compute_advantages(est, collate_steps(rows), AdvantageConfig(**dump["advantage_config"]))
    expected = torch.zeros_like(dump["advantages"])
    for r, (i, cols) in enumerate(where):
        expected[i, cols] = out.advantages[r, : len(cols)]
    return expected


def check_trained_run(run: Path, target: Any, algorithm: str, initial: dict[str, Any]) -> None:
    """What a run of `SMALL` with `+trainer.v1.agentspec.dump_dir=RUN/dump` must show:
    2 training iterations with a finite loss and validation metrics in the run
    directory's format, changed actor weights, and advantages equal to agentspec's own
    estimator on the dumped steps."""
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if "loss/policy" in r]
    assert [r["iteration"] for r in train] == [1, 2]
    assert all(math.isfinite(r["loss/policy"]) for r in train)
    assert all({"rollout/success", "reward/correct", "reward/malformed"} <= set(r) for r in train)
    assert any("eval/success" in r for r in records), "no validation metrics"
    if ESTIMATORS.get(ALGORITHMS.get(algorithm).estimator).critic != "none":
        assert all(math.isfinite(r["loss/value"]) for r in train)

    # the actor's weights changed
    ckpt = run / "checkpoints" / "global_step_2" / "actor" / "model_world_size_1_rank_0.pt"
    trained = torch.load(ckpt, weights_only=False, map_location="cpu")
    change = sum(
        float((_full(trained[name]).float() - initial[name].float()).abs().sum())
        for name in initial
    )
    assert change > 0.0

    # the advantages verl stored are agentspec's, step by step
    dumps = sorted((run / "dump").glob("advantages_step*.pt"))
    assert len(dumps) == 2
    for path in dumps:
        dump = torch.load(path, weights_only=False)
        assert dump["estimator"] == f"agentspec_{ALGORITHMS.get(algorithm).estimator}"
        torch.testing.assert_close(
            dump["advantages"], _expected_advantages(dump), atol=1e-5, rtol=1e-5
        )
    # Not vacuous: group-relative estimators give a step whose groups all scored
    # alike zero advantages, but not every step of the run.
    loaded = [torch.load(path, weights_only=False) for path in dumps]
    assert any(bool(d["advantages"].abs().sum() > 0) for d in loaded), "all advantages were zero"
    last = loaded[-1]
    if algorithm == "steppo":
        assert all(len(r["step_indices"]) == 1 for r in last["records"])  # one row per step
    if algorithm in ("token_gae", "gigpo"):  # packed: an episode's steps share a row
        assert target.layout == "packed"
        rows = [r for d in loaded for r in d["records"]]
        assert any(len(r["step_indices"]) > 1 for r in rows), "no multi-step packed row"
    if algorithm == "gigpo":  # the spec's anchors reached the estimator
        anchors = {a for d in loaded for r in d["records"] for a in r["anchors"]}
        assert anchors >= {"a:step 0", "a:step 1"}, anchors  # `a:`: the spec's, not a digest


def stop_process_group(process: subprocess.Popen[bytes]) -> None:
    """End a `ray start --block` this test started, and everything it started: SIGTERM
    to its process group, SIGKILL after a short grace (`ray start --block` stops its
    processes one by one, some 30 s; `ray stop` would end every Ray of the machine)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
