"""`agentspec train SPEC --backend verl --dry-run`: what a run would execute, nothing started.

:func:`dry_run` compiles the target into ``RUN/target`` exactly as the run does
(a ``builtin:*`` model is built: verl's ``validate_config`` reads the model's
config), prepares the same overrides (:func:`.launcher.prepared_run`: the Ray
start-up settings and the workers' environment included, so the printed command
launches exactly as the run does), and returns a :class:`DryRun`: the notes
(the attention of every model verl builds, the teacher's placement, what the run
ships to its workers and its size: :mod:`.shipping`), the worker environment, the standalone ``python -m verl.trainer.main_ppo`` command line
equivalent to the run, and verl's config composed in-process by Hydra from those
overrides (what ``main_ppo --cfg job`` prints) and checked with verl's own
``validate_config``. Ray is not started.

The device follows the same rule as the run: ``trainer.device`` if given
(``--set trainer.device=cuda`` shows the GPU overrides on a laptop), else CUDA
when torch sees a GPU, else the CPU path.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentspec.runtime.backends.verl.launcher import prepared_run, validated_config

__all__ = ["DryRun", "dry_run"]


@dataclass(frozen=True)
class DryRun:
    """What ``agentspec train --backend verl`` would run."""

    device: str
    env: dict[str, str]
    overrides: dict[str, str]
    """``main_ppo``'s Hydra overrides, in command-line order."""
    config_yaml: str
    """verl's composed config, unresolved (as ``main_ppo --cfg job`` prints it)."""
    notes: list[str] = field(default_factory=list)
    """What the launcher chose or warns about (the attention, the teacher's placement)."""

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
        notes = "".join(f"# {note}\n" for note in self.notes)
        return (
            f"# agentspec train --backend verl --dry-run (device {self.device}): nothing was "
            f"started.\n{notes}# The run executes verl's main_ppo with these overrides; "
            "standalone:\n"
            f"{self.command()}\n\n# composed config (python -m verl.trainer.main_ppo --cfg job "
            "with the overrides above):\n"
            f"{self.config_yaml}"
        )


def dry_run(
    spec_path: str | Path,
    out_dir: str | Path,
    overrides: Mapping[str, str],
    ray_address: str | None = None,
    *,
    shared_storage: bool = False,
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
    prepared = prepared_run(spec_path, run, user, ray_address, shared_storage=shared_storage)
    config = validated_config(prepared)
    return DryRun(
        device="cpu" if prepared.cpu else str(config.trainer.device),
        env=prepared.env,
        overrides=prepared.overrides,
        config_yaml=OmegaConf.to_yaml(config),
        notes=prepared.notes,
    )
