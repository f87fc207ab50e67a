"""verl's real `main_ppo` on CPU: the generated agent loop, agentspec's algorithms, 2 steps.

`token_gae` (token-level GAE with a critic over packed rows) through the Python
API `train_verl`, on a Ray cluster it starts and ends itself: Ray, its workers and
the driver's environment are gone afterwards. The other verl runs pass the same
checks elsewhere: `steppo` (step-level GAE with a critic, one verl row per step,
the step-ratio loss) through `agentspec train` in the GPU check's CPU form
(test_verl_gpu_check.py), `gigpo` (anchor-state groups, packed rows, PPO's token
clip) on an existing Ray cluster (test_verl_ray_cluster.py), `opd` in
test_verl_opd.py. Each asserts a finite loss, changed weights, validation metrics,
and that the advantages verl stored equal agentspec's own estimator on the same
steps (`verl_helpers.check_trained_run`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import psutil
import pytest
from safetensors.torch import load_file
from verl_helpers import SMALL, SPEC, check_trained_run, warm_started_tiny

from agentspec.runtime.backends.verl.run_folder import build_verl_target

pytestmark = pytest.mark.slow


def test_main_ppo_trains_on_cpu(tmp_path: Path) -> None:
    from agentspec.runtime.backends.verl.launcher import train_verl

    algorithm = "token_gae"
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

    check_trained_run(run, target, algorithm, initial)
