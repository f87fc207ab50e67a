"""`agentspec train SPEC --backend verl --dry-run`: what a run would execute, nothing started.

:func:`dry_run` compiles the target into ``RUN/target`` exactly as the run does
(``builtin:tiny`` and the CPU critic checkpoint are built: verl's
``validate_config`` reads the model's config), merges the same overrides, and
returns a :class:`DryRun`: the worker environment, the standalone ``python -m verl.trainer.main_ppo`` command line
equivalent to the run, and verl's config composed in-process by Hydra from those
overrides (what ``main_ppo --cfg job`` prints) and checked with verl's own
``validate_config``. Ray is not started.

The device follows the same rule as the run: ``trainer.device`` if given
(``--set trainer.device=cuda`` shows the GPU overrides on a laptop), else CUDA
when torch sees a GPU, else the CPU path.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentspec.runtime.backends.verl.launcher import compose_config, prepared_run

__all__ = ["DryRun", "dry_run", "standalone_overrides"]


@dataclass(frozen=True)
class DryRun:
    """What ``agentspec train --backend verl`` would run."""

    device: str
    env: dict[str, str]
    overrides: dict[str, str]
    """``main_ppo``'s Hydra overrides, in command-line order."""
    config_yaml: str
    """verl's composed config, unresolved (as ``main_ppo --cfg job`` prints it)."""

    @property
    def argv(self) -> list[str]:
        return [
            "python",
            "-m",
            "verl.trainer.main_ppo",
            *(f"{k}={v}" for k, v in self.overrides.items()),
        ]

    def command(self) -> str:
        """The shell command: the worker environment, then ``main_ppo`` and its overrides."""
        env = [f"{k}={shlex.quote(v)}" for k, v in self.env.items()]
        overrides = [shlex.quote(w) for w in self.argv[3:]]
        return " \\\n  ".join([*env, "python -m verl.trainer.main_ppo", *overrides])

    def render(self) -> str:
        return (
            f"# agentspec train --backend verl --dry-run (device {self.device}): nothing was "
            "started.\n# The run executes verl's main_ppo with these overrides; standalone:\n"
            f"{self.command()}\n\n# composed config (python -m verl.trainer.main_ppo --cfg job "
            "with the overrides above):\n"
            f"{self.config_yaml}"
        )


def standalone_overrides(
    merged: Mapping[str, str], *, cpu: bool, ray_address: str | None
) -> dict[str, str]:
    """``merged`` plus what ``main_ppo`` needs to start Ray the way the launcher does
    (the launcher calls ``ray.init`` itself: CPU logical GPUs, or the cluster's address)."""
    out = dict(merged)
    if ray_address:
        out["+ray_kwargs.ray_init.address"] = ray_address
    elif cpu:
        out["ray_kwargs.ray_init.num_cpus"] = str(max(16, os.cpu_count() or 1))
        out["+ray_kwargs.ray_init.num_gpus"] = str(merged.get("trainer.n_gpus_per_node", "1"))
        out["+ray_kwargs.ray_init.include_dashboard"] = "False"
    return out


def dry_run(
    spec_path: str | Path,
    out_dir: str | Path,
    overrides: Mapping[str, str],
    ray_address: str | None = None,
) -> DryRun:
    """Compile, merge and compose as :func:`.launcher.train_verl` would; start nothing.

    Raises verl's Hydra error for an override verl does not declare, and verl's
    ``validate_config`` error for an inconsistent config.
    """
    from omegaconf import OmegaConf

    from agentspec.runtime.backends.verl import check_verl_version

    check_verl_version()
    run = Path(out_dir).resolve()
    user = {k: str(v) for k, v in overrides.items()}
    _, merged, env, cpu = prepared_run(spec_path, run, user)
    full = standalone_overrides(merged, cpu=cpu, ray_address=ray_address)
    config = compose_config(full)
    _validate(config)
    return DryRun(
        device="cpu" if cpu else str(config.trainer.device),
        env=env,
        overrides=full,
        config_yaml=OmegaConf.to_yaml(config),
    )


def _validate(config: Any) -> None:
    """verl's own config check, as ``main_ppo`` runs it before starting Ray."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    # verl prints its verdict on stdout, which carries the dry run's output
    with contextlib.redirect_stdout(sys.stderr):
        validate_config(
            config=config,
            use_reference_policy=need_reference_policy(config),
            use_critic=need_critic(config),
        )
