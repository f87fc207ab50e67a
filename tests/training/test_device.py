"""`training.device` of the local backend, and scripts/gpu_check.sh run small on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.backends.local import train
from agentspec.runtime.backends.local.config import ConfigError
from agentspec.runtime.backends.local.device import autocast, resolve_device

ROOT = Path(__file__).resolve().parents[2]
ECHO = Path(__file__).parent / "echo_word.yaml"
NO_GPU = not torch.cuda.is_available()


def test_auto_and_cpu_resolve_to_the_cpu_without_a_gpu() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    if NO_GPU:
        assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="torch sees no GPU"):
        resolve_device("cuda")


def test_autocast_is_a_no_op_on_the_cpu() -> None:
    with autocast(torch.device("cpu")):
        assert not torch.is_autocast_enabled()
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32


def test_an_unknown_device_is_refused_by_the_cli(tmp_path: Path) -> None:
    args = ["train", str(ECHO), "--out", str(tmp_path / "r"), "--set", "device=tpu"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "device" in result.output


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
def test_device_cuda_on_a_cpu_machine_fails_cleanly(tmp_path: Path) -> None:
    args = ["train", str(ECHO), "--out", str(tmp_path / "r"), "--set", "device=cuda"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "torch sees no GPU" in result.output


def test_training_on_device_cpu_logs_rollout_and_update_throughput(tmp_path: Path) -> None:
    settings = {
        "device": "cpu",
        "iterations": 1,
        "warm_start": 0,
        "eval_samples": 2,
        "trace_samples": 0,
        "torch_threads": 1,
    }
    run = train(ECHO, tmp_path / "run", settings)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    last = records[-1]
    assert last["perf/rollout_tokens_per_s"] > 0
    assert last["perf/update_tokens_per_s"] > 0
    assert yaml.safe_load((run / "config.yaml").read_text())["device"] == "cpu"


@pytest.mark.slow
def test_gpu_check_script_runs_small_on_the_cpu() -> None:
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [
            *("bash", str(ROOT / "scripts" / "gpu_check.sh"), "--small", "--device", "cpu"),
            *("--steps", "local"),  # the local backend's step; tests/verl runs the others
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "device: cpu (float32)"
    for prefix in ("rollout tokens/s (median): ", "update tokens/s (median): "):
        (line,) = [x for x in lines if x.startswith(prefix)]
        assert float(line.removeprefix(prefix)) > 0
    assert "peak GPU memory: n/a (cpu)" in lines


def test_gpu_check_refuses_cuda_without_a_gpu() -> None:
    if not NO_GPU:
        pytest.skip("this machine has a GPU")
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_check.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert result.returncode != 0
    assert "torch sees no CUDA GPU" in result.stderr
