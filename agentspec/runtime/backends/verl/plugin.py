"""verl's plugin hook: imported by ``import verl`` in every process of a run.

Loaded through the ``verl.plugins`` entry point (``agentspec =
agentspec.runtime.backends.verl.plugin``) or ``VERL_USE_EXTERNAL_MODULES``. It
checks verl's version, registers agentspec's estimators and losses
(:mod:`.algorithms`) and the ``agentspec`` trainer (:mod:`.trainer`); with
``VERL_PLATFORM=cpu`` the CPU platform and the transformers rollout (:mod:`.cpu`);
in a run agentspec launched on GPUs (``AGENTSPEC_VERL_ENGINES=1``) the critic engine
that honours the chosen attention (:mod:`.engines`).
"""

from __future__ import annotations

import os

from agentspec.runtime.backends.verl import ENGINES_ENV, check_verl_version

__all__ = ["register_all"]


def register_all() -> None:
    """Register everything agentspec adds to verl (idempotent)."""
    check_verl_version()
    cpu_platform = os.environ.get("VERL_PLATFORM", "").strip().lower() == "cpu"
    if cpu_platform:
        # first: importing verl's trainer and workers asks verl for its platform
        from agentspec.runtime.backends.verl import cpu

        cpu.register_platform()
    from agentspec.runtime.backends.verl import algorithms, trainer

    algorithms.register()
    trainer.register()
    if cpu_platform:
        cpu.register()
    elif os.environ.get(ENGINES_ENV) == "1":
        from agentspec.runtime.backends.verl import engines

        engines.register("cuda", "nvidia")


register_all()
