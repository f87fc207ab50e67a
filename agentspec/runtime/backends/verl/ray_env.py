"""How a verl run starts Ray: the cluster it joins or starts, and its workers' environment.

Both go to ``run_ppo`` as Hydra overrides under ``ray_kwargs.ray_init`` (:func:`launch_overrides`),
so the run and the standalone ``main_ppo`` command a dry run prints start Ray alike;
``run_ppo`` merges verl's own worker environment under ours. What the workers read
besides their environment is shipped with the run (:mod:`.shipping`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

from agentspec.compiler.package_files import spec_variables
from agentspec.runtime.backends.verl import ENGINES_ENV, PLUGIN_MODULE
from agentspec.runtime.backends.verl.run_folder import VerlTarget
from agentspec.stdlib.data import DATA_ENV

__all__ = ["CHECKPOINTS_ON_A_CLUSTER", "launch_overrides", "setting", "worker_env"]

CHECKPOINTS_ON_A_CLUSTER = (
    "checkpoints: verl's workers on every node write them at trainer.default_local_dir "
    "(the transfer queue's controller too): on a cluster of several nodes that folder must "
    "be on storage they all mount (--set trainer.default_local_dir=/shared/...), or set "
    "trainer.save_freq=-1 (docs/verl.md, Multi-node)"
)


def worker_env(
    target: VerlTarget, run: Path, *, cpu: bool, shared_storage: bool = False
) -> dict[str, str]:
    """Environment of every Ray worker: the plugin, the file logger (written by the task
    runner, on the driver's node), agentspec's critic engine. With ``shared_storage``
    the workers read the driver's folders in place: the generated modules' folder on
    ``PYTHONPATH`` and the driver's data root; otherwise both are shipped
    (:mod:`.shipping`: the target folder is the workers' working directory)."""
    env = {
        "VERL_USE_EXTERNAL_MODULES": PLUGIN_MODULE,
        "VERL_FILE_LOGGER_PATH": str(run / "verl_metrics.jsonl"),
        "TOKENIZERS_PARALLELISM": "false",
        "TRANSFER_QUEUE_ENABLE": "1",
        ENGINES_ENV: "1",
    }
    if cpu:
        env.update({"VERL_PLATFORM": "cpu", "OMP_NUM_THREADS": "1"})
    if shared_storage:
        path = (str(target.out_dir), os.environ.get("PYTHONPATH", ""))
        env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
        if os.environ.get(DATA_ENV):
            # the tools resolve their data at run time, in the workers: the driver's data
            # root, at the same path on every node
            env[DATA_ENV] = str(Path(os.environ[DATA_ENV]).resolve())
    # the other variables the spec's paths and configs name, which its tools expand in
    # the workers (the data root is shipped: the agent loop sets it)
    for name in spec_variables(target.spec_path):
        if name != DATA_ENV and name in os.environ:
            env.setdefault(name, os.environ[name])
    return env


def _hydra_string(value: str) -> str:
    """``value`` as a quoted Hydra string (a bare ``1`` or ``false`` would become a number or a
    boolean, and Ray takes only strings as environment values)."""
    return '"' + value.replace('"', '\\"') + '"'


def launch_overrides(
    merged: Mapping[str, str],
    env: Mapping[str, str],
    *,
    cpu: bool,
    ray_address: str | None,
    extra_gpus: float = 0,
) -> dict[str, str]:
    """``merged`` plus how ``run_ppo`` starts Ray: the workers' environment
    (``ray_kwargs.ray_init.runtime_env.env_vars``, merged over verl's own), and either the
    cluster's address or a local cluster's CPUs (and, on the CPU path, logical GPUs:
    ``trainer.n_gpus_per_node`` plus ``extra_gpus`` for a teacher placed on a GPU). A
    ``ray_kwargs`` key the user set is kept."""
    out = dict(merged)
    ray: dict[str, str] = {
        f"+ray_kwargs.ray_init.runtime_env.env_vars.{k}": _hydra_string(v) for k, v in env.items()
    }
    if ray_address:
        ray["+ray_kwargs.ray_init.address"] = ray_address
    else:
        # a cluster of this run's own: without an address Ray would attach to one that
        # `ray start` left running here (RAY_ADDRESS, /tmp/ray/ray_current_cluster) and
        # refuse num_cpus; `local` always starts a new one
        ray["+ray_kwargs.ray_init.address"] = "local"
        ray["ray_kwargs.ray_init.num_cpus"] = str(max(16, os.cpu_count() or 1))
        ray["+ray_kwargs.ray_init.include_dashboard"] = "False"
        if cpu:
            gpus = float(setting(merged, "trainer.n_gpus_per_node", "1") or 1) + extra_gpus
            ray["+ray_kwargs.ray_init.num_gpus"] = str(math.ceil(gpus))
    for key, value in ray.items():
        if setting(out, key.lstrip("+")) is None:
            out[key] = value
    return out


def setting(overrides: Mapping[str, str], key: str, default: str | None = None) -> str | None:
    """The value ``overrides`` gives ``key`` (with or without a leading ``+``)."""
    return overrides.get(key, overrides.get("+" + key, default))
