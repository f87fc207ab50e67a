"""One launch path: `agentspec train` and the printed `main_ppo` command start Ray alike.

Both give ``main_ppo``'s ``run_ppo`` the same overrides, Ray's start-up settings
and the workers' environment included (``ray_kwargs.ray_init``), and both leave
``ray.init`` to ``run_ppo``, which adds verl's own worker environment
(``get_ppo_ray_runtime_env``: vLLM and NCCL settings). The test launches the run's
config through verl's ``run_ppo`` with a task runner that only records the
environment it was started with (verl's ``task_runner_class`` parameter), so Ray
starts for real and nothing trains.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import sys
from pathlib import Path

import pytest
from verl_helpers import SPEC

pytestmark = pytest.mark.slow

PROBE = '''\
"""A verl task runner that records the environment Ray started it with."""

import json
import os
from pathlib import Path

import ray


@ray.remote
class EnvProbe:
    def run(self, config):
        out = Path(str(config.trainer.default_local_dir))
        out.mkdir(parents=True, exist_ok=True)
        (out / "worker_env.json").write_text(json.dumps({**os.environ, "CWD": os.getcwd()}))
'''


def _printed_overrides(command: str) -> dict[str, str]:
    """The ``KEY=VALUE`` words after ``python -m verl.trainer.main_ppo`` in a printed command."""
    lines = [line.rstrip("\\") for line in command.splitlines()]
    words = shlex.split(" ".join(lines))
    start = words.index("verl.trainer.main_ppo") + 1
    return dict(word.split("=", 1) for word in words[start:])


def test_train_and_the_printed_command_give_the_workers_one_environment(tmp_path: Path) -> None:
    import ray
    from omegaconf import OmegaConf

    from agentspec.runtime.backends.verl.dry_run import dry_run
    from agentspec.runtime.backends.verl.launcher import launch, prepared_run, validated_config

    run = tmp_path / "run"
    user = {"trainer.device": "cpu"}
    printed = _printed_overrides(dry_run(SPEC, run, user).command())
    prepared = prepared_run(SPEC, run, user)
    config = validated_config(prepared)
    standalone = validated_config(prepared, printed)
    # the command main_ppo runs is the run's: the same config, Ray's settings included
    assert OmegaConf.to_container(standalone) == OmegaConf.to_container(config)
    env_vars = OmegaConf.to_container(config.ray_kwargs.ray_init.runtime_env.env_vars)
    assert env_vars == prepared.env  # strings, as Ray requires

    (prepared.target.out_dir / "agentspec_env_probe.py").write_text(PROBE)
    sys.path.insert(0, str(prepared.target.out_dir))
    try:
        probe = importlib.import_module("agentspec_env_probe")
    finally:
        sys.path.remove(str(prepared.target.out_dir))
    assert not ray.is_initialized()
    launch(config, prepared.env, prepared.target.out_dir, task_runner_class=probe.EnvProbe)
    assert not ray.is_initialized()  # the cluster run_ppo started is shut down

    seen = json.loads((run / "checkpoints" / "worker_env.json").read_text())
    # verl's own worker environment (absent when agentspec called ray.init itself) ...
    assert seen["VLLM_DISABLE_COMPILE_CACHE"] == os.environ.get("VLLM_DISABLE_COMPILE_CACHE", "1")
    assert seen["VLLM_LOGGING_LEVEL"] == os.environ.get("VLLM_LOGGING_LEVEL", "WARN")
    # ... and agentspec's over it (verl's default TOKENIZERS_PARALLELISM is "true")
    for key, value in prepared.env.items():
        assert seen[key] == value, key
    # the run is shipped, not named (issue 51): the worker starts in Ray's copy of the
    # target folder, and none of its variables names the driver's target folder
    assert Path(seen["CWD"]) != prepared.target.out_dir
    assert (Path(seen["CWD"]) / "agent_loop.yaml").is_file()
    assert not [k for k, v in seen.items() if str(prepared.target.out_dir) in v]
    assert "PYTHONPATH" not in prepared.env
