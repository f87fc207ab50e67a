"""`agentspec train --backend verl --ray-address` against a real Ray cluster.

Starts a Ray head with `ray start --head --block` (CPU, local, its own temp dir
and a free port), runs the CLI against it for two tiny GiGPO iterations, checks
that verl's task runner and workers ran as that cluster's actors (their logs are
in the cluster's session directory) and that the run trained as every verl run
must (`verl_helpers.check_trained_run`: GiGPO's advantages are agentspec's), and
always stops the head it started.

The head is stopped by ending the `ray start --block` process group this test
started, not with `ray stop`: `ray stop` ends every Ray process of the machine,
other users' clusters included.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from safetensors.torch import load_file
from serve.helpers import free_port
from verl_helpers import (
    SMALL,
    SPEC,
    anchored_calculator,
    check_trained_run,
    stop_process_group,
    warm_started_tiny,
)

from agentspec.runtime.backends.verl.run_folder import build_verl_target

pytestmark = pytest.mark.slow

SETTINGS = {**SMALL, "algorithm": "gigpo"}


def _wait_for(port: int, head: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if head.poll() is not None:
            raise RuntimeError(f"ray start exited with {head.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.5)
    raise TimeoutError(f"the Ray head did not listen on port {port} within {timeout} s")


@pytest.fixture
def ray_head(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, Path]]:
    # Ray 2.60 authenticates clients with a token; by default the one in ~/.ray, which
    # other Ray users of this machine may replace: this cluster and its driver share
    # a token of their own
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    temp_dir = Path(tmp_path_factory.mktemp("ray", numbered=True))
    port = free_port()
    ray = Path(sys.executable).parent / "ray"
    head = subprocess.Popen(
        [
            str(ray),
            "start",
            "--head",
            "--block",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            "--num-cpus=16",
            "--num-gpus=1",
            f"--temp-dir={temp_dir}",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for(port, head)
        yield f"127.0.0.1:{port}", temp_dir
    finally:
        stop_process_group(head)


def head_is_alive(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with contextlib.suppress(OSError), socket.create_connection((host, int(port)), 2):
        return True
    return False


def test_train_runs_on_an_existing_ray_cluster(tmp_path: Path, ray_head: tuple[str, Path]) -> None:
    address, temp_dir = ray_head
    run = tmp_path / "run"
    spec = anchored_calculator(tmp_path / "spec")  # GiGPO groups steps by the spec's anchor
    target, _ = build_verl_target(spec, run / "target", training=SETTINGS)
    warm_started_tiny(target.module, target.model_dir, steps=60)
    initial = load_file(target.model_dir / "model.safetensors")

    args = ["train", str(spec), "--backend", "verl", "--out", str(run), "--ray-address", address]
    dump = {"+trainer.v1.agentspec.dump_dir": str(run / "dump")}
    # a driver without CUDA must say the cluster's device (--ray-address alone is refused)
    device = {"trainer.device": "cpu"}
    for key, value in {**SETTINGS, "data.val_max_samples": "4", **dump, **device}.items():
        args += ["--set", f"{key}={value}"]
    # a fresh driver process, as a user's: Ray state left in this test process by
    # earlier tests' local clusters must not decide where the driver connects
    agentspec = Path(sys.executable).parent / "agentspec"
    result = subprocess.run(
        [str(agentspec), *args], capture_output=True, text=True, timeout=800, env=os.environ.copy()
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    check_trained_run(run, target, "gigpo", initial)
    assert head_is_alive(address)  # the driver disconnected; the cluster keeps running
    # verl's task runner and its workers were this cluster's actors: Ray wrote their
    # logs into the cluster's own session directory
    logs = temp_dir / "session_latest" / "logs"
    text = "\n".join(
        p.read_text(errors="replace") for p in logs.glob("worker-*.out") if p.is_file()
    )
    assert ":actor_name:TaskRunnerV1" in text
    assert ":actor_name:" in text.replace(":actor_name:TaskRunnerV1", "")  # verl's workers too


def test_without_an_address_a_run_starts_its_own_cluster_beside_a_running_one(
    tmp_path: Path, ray_head: tuple[str, Path]
) -> None:
    """Issue 51 item 3: with a cluster running here (RAY_ADDRESS names it), a run without
    --ray-address started Ray with num_cpus, which Ray refused on attaching to that
    cluster; it now starts a cluster of its own (`ray_init.address=local`)."""
    address, temp_dir = ray_head
    run = tmp_path / "run"
    args = ["train", str(SPEC), "--backend", "verl", "--out", str(run)]
    small = {**SMALL, "iterations": "1", "eval_every": "1000", "data.val_max_samples": "2"}
    for key, value in small.items():
        args += ["--set", f"{key}={value}"]
    agentspec = Path(sys.executable).parent / "agentspec"
    env = {**os.environ, "RAY_ADDRESS": address}
    result = subprocess.run(
        [str(agentspec), *args], capture_output=True, text=True, timeout=800, env=env
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert (run / "metrics.jsonl").exists()
    assert head_is_alive(address)
    logs = temp_dir / "session_latest" / "logs"
    text = "\n".join(
        p.read_text(errors="replace") for p in logs.glob("worker-*.out") if p.is_file()
    )
    assert ":actor_name:TaskRunnerV1" not in text  # nothing of this run on that cluster


def test_a_driver_without_cuda_must_name_the_clusters_device(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentspec.cli import app

    args = ["train", str(SPEC), "--backend", "verl", "--dry-run", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--ray-address", "auto"])
    assert result.exit_code == 2, result.output[-3000:]
    assert "this driver sees no GPU" in result.output
    assert "--set trainer.device=cuda" in result.output
