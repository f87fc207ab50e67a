"""A real `GRPOTrainer.train()` step on CPU through the generated TRL environment,
in TRL's own venv (`runs/bench-venvs/trl`, made on first use)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

from .helpers import ROOT, checkout_env, side_venvs

WORKER = Path(__file__).with_name("trl_grpo_worker.py")


@pytest.mark.slow
def test_one_grpo_step_through_the_generated_environment(tmp_path: Path) -> None:
    side = side_venvs()
    python = side.side_python("trl", side.trl_installs())
    spec = ROOT / "specs" / "calculator.yaml"
    made = CliRunner().invoke(app, ["compile", str(spec), "--target", "trl", "-o", str(tmp_path)])
    assert made.exit_code == 0, made.output
    ran = subprocess.run(
        [str(python), str(WORKER), str(tmp_path), "calculator"],
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    report = json.loads(ran.stdout.strip().splitlines()[-1])
    assert report["global_step"] == 1
    assert report["tools"] == ["calculator"]
    logged = {key for entry in report["log"] for key in entry}
    # every declared reward component is its own TRL reward function, logged on its own
    assert {"rewards/reward_correct/mean", "rewards/reward_malformed/mean"} <= logged, logged
    # a batch of 4 completions (2 prompts x 2 generations): 4 episodes, each ended once
    episodes = report["episodes"]
    assert len(episodes) == 4 and all(e["termination"] for e in episodes)
    assert len({e["sample"] for e in episodes}) == 2
