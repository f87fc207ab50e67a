"""verl's real `main_ppo` on CPU: the generated agent loop, agentspec's algorithms, 2 steps.

One run per algorithm: `steppo` (step-level GAE with a critic, one verl row per
step, the step-ratio loss), `gigpo` (anchor-state groups, packed rows, PPO's
token clip) and `token_gae` (token-level GAE with a critic over packed rows). Each asserts a finite loss, changed weights, validation metrics,
and that the advantages verl stored equal agentspec's own estimator on the same
steps.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

import psutil
import pytest
import torch
from safetensors.torch import load_file
from verl_helpers import SPEC, warm_started_tiny

from agentspec.presets import ALGORITHMS
from agentspec.runtime.algorithms import (
    ESTIMATORS,
    AdvantageConfig,
    StepRow,
    collate_steps,
    compute_advantages,
)
from agentspec.runtime.backends.verl.compile_target import build_verl_target

pytestmark = pytest.mark.slow

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


@pytest.mark.parametrize("algorithm", ["steppo", "gigpo", "token_gae"])
def test_main_ppo_trains_on_cpu(tmp_path: Path, algorithm: str) -> None:
    from agentspec.runtime.backends.verl.launcher import train_verl

    run = tmp_path / "run"
    settings = {**SMALL, "algorithm": algorithm}
    target, _ = build_verl_target(SPEC, run / "target", training=settings)
    warm_started_tiny(target.module, target.model_dir, steps=60)
    initial = load_file(target.model_dir / "model.safetensors")
    before = set(psutil.Process().children(recursive=True))
    env_before = {k: os.environ.get(k) for k in ("VERL_PLATFORM", "VERL_USE_EXTERNAL_MODULES")}

    train_verl(
        SPEC,
        run,
        {
            **settings,
            "data.val_max_samples": "4",
            "+trainer.v1.agentspec.dump_dir": str(run / "dump"),
        },
        None,
    )

    # Ray and its workers are gone
    import ray

    assert not ray.is_initialized()
    assert {k: os.environ.get(k) for k in env_before} == env_before  # driver env restored
    leaked = [p for p in set(psutil.Process().children(recursive=True)) - before if p.is_running()]
    for p in leaked:
        with contextlib.suppress(psutil.TimeoutExpired):
            p.wait(timeout=20)
    alive = [p for p in leaked if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"processes left running: {[p.cmdline()[:3] for p in alive]}"

    # metrics in the run-directory format: 2 training iterations, finite loss, validation
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
    if algorithm == "token_gae":  # packed: an episode's steps share a row
        assert target.layout == "packed"
        rows = [r for d in loaded for r in d["records"]]
        assert any(len(r["step_indices"]) > 1 for r in rows), "no multi-step packed row"
