"""scripts/gpu_check.sh in its CPU-sized form: every step a first GPU run depends on.

The GPU form (docs/verl.md, "The GPU check") runs the same steps on CUDA with
larger models; here the imports are reported, the verl dry run shows the
attention it chose, StepPO with the critic runs on verl's CPU path through
`agentspec train` from a checkpoint the local backend warm-started and passes on
its metrics (the greedy episodes of verl's validation before training parse, step
ratio, critic loss, rollout-vs-trainer probability difference), and the GPU-only
steps say why they are skipped.

The verl step is also verl's `main_ppo` with `steppo` (step-level GAE with a
critic, one verl row per step, the step-ratio loss): trained for two iterations
(`--set`), it passes every check a verl training run passes
(`verl_helpers.check_trained_run`: changed weights, validation metrics, and the
advantages verl stored equal agentspec's own estimator on the same steps).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file
from verl_helpers import ROOT, check_trained_run

pytestmark = pytest.mark.slow


def test_gpu_check_small_form_runs_the_verl_steps_on_the_cpu(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    steps = "imports,dry-run,verl,default,2-gpu"
    run = tmp_path / "verl"  # the verl step's run, kept by --out
    main_ppo_checks = {
        "iterations": "2",
        "checkpoint_every": "2",
        "eval_every": "2",
        # Four prompts, not the small form's two: every episode of the untrained tiny
        # model scores 0, so the whitened step advantages differ only through the
        # critic's bfloat16 values, and two prompts' values can round alike (all
        # advantages 0, the check below vacuous).
        "prompts_per_iteration": "4",
        "+trainer.v1.agentspec.dump_dir": str(run / "dump"),
    }
    result = subprocess.run(
        [
            *("bash", str(ROOT / "scripts" / "gpu_check.sh"), "--small", "--device", "cpu"),
            *("--steps", steps, "--out", str(tmp_path)),
            *(arg for k, v in main_ppo_checks.items() for arg in ("--set", f"{k}={v}")),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    lines = {line.split("]")[0][1:]: line for line in result.stdout.splitlines() if line[:1] == "["}
    assert list(lines) == steps.split(",")
    for name in ("jsonschema", "ruff", "verl", "vllm", "flash_attn", "ray"):
        assert f" {name} " in lines["imports"] or f" {name} absent" in lines["imports"], name
    assert "verl 0.9.1" in lines["imports"]
    assert "vllm absent" in lines["imports"] and "flash_attn absent" in lines["imports"]
    assert "attention: actor and reference sdpa, critic sdpa" in lines["dry-run"]
    assert lines["verl"].startswith("[verl] ok")
    metrics = ("greedy reward before training ", "step ratio ", "critic loss ")
    for shown in (*metrics, "rollout-vs-trainer prob diff "):
        assert shown in lines["verl"]
    assert lines["default"].startswith("[default] skipped")
    assert lines["2-gpu"].startswith("[2-gpu] skipped")
    assert result.stdout.splitlines()[-1] == "gpu_check: all steps passed"

    # the verl step's run, as every verl training run must show; it started from the
    # checkpoint the local backend warm-started (kept by --out)
    policy = tmp_path / "warm" / "checkpoints" / "iter_000000" / "policy"
    # shipped to the workers with the run (docs/verl.md, Multi-node): a copy in the target
    assert "path: inputs/model" in (run / "config.yaml").read_text()
    shipped = run / "target" / "inputs" / "model" / "model.safetensors"
    assert shipped.read_bytes() == (policy / "model.safetensors").read_bytes()
    initial = load_file(policy / "model.safetensors")
    check_trained_run(run, None, "steppo", initial)
