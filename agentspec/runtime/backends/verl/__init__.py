"""The verl backend: verl 0.9.1's own trainer with the generated flow and agentspec's algorithms.

The only place in agentspec that imports verl; importing this package does not
(verl costs 8–14 s to import): the submodules do.

- :mod:`.compile_target`: ``agentspec compile --target verl`` (agent loop, parquet
  rows, Hydra overrides); imports neither verl nor torch.
- :mod:`.plugin`: loaded by verl in every process (``verl.plugins`` entry point or
  ``VERL_USE_EXTERNAL_MODULES``); registers the estimators and losses
  (:mod:`.algorithms`), the ``agentspec`` trainer (:mod:`.trainer`) and, with
  ``VERL_PLATFORM=cpu``, the CPU path (:mod:`.cpu`).
- :mod:`.agent_loop`: the generated flow as a verl ``AgentLoopBase``.
- :mod:`.launcher`: ``agentspec train --backend verl`` (:mod:`.dry_run`: ``--dry-run``;
  :mod:`.metrics`: verl's metrics in the run directory's format).
- the GPU path's choices, checked before launch: :mod:`.attention` (the attention of
  every model verl builds; :mod:`.engines`, the critic engine that honours it),
  :mod:`.vllm_rollout` (head sizes vLLM serves, log-probs that match the trainer's),
  :mod:`.placement` (where OPD's teacher runs; :mod:`.teacher` scores with it).
"""

from __future__ import annotations

from importlib import metadata

__all__ = [
    "ENGINES_ENV",
    "KL_IN_REWARD_REFUSED",
    "PLUGIN_MODULE",
    "VERL_VERSION",
    "VerlVersionError",
    "check_verl_version",
]

VERL_VERSION = "0.9.1"
"""The one verl version this backend is written and tested against."""

PLUGIN_MODULE = "agentspec.runtime.backends.verl.plugin"
"""What ``VERL_USE_EXTERNAL_MODULES`` (or the ``verl.plugins`` entry point) loads."""

KL_IN_REWARD_REFUSED = (
    "algorithm.use_kl_in_reward is not supported with agentspec's step-level estimators;"
    " use the actor's KL loss (actor_rollout_ref.actor.use_kl_loss)"
)
"""The verl setting agentspec's step-level estimators cannot honour: refused before a run."""

ENGINES_ENV = "AGENTSPEC_VERL_ENGINES"
"""``1`` in the workers of a run agentspec launched: the plugin then registers
agentspec's critic engine (:mod:`.engines`) for NVIDIA GPUs. Other verl runs in the
same environment (the plugin is an entry point) keep verl's own."""


class VerlVersionError(RuntimeError):
    """The installed verl is not :data:`VERL_VERSION`."""


def check_verl_version() -> str:
    """Return verl's version; raise :class:`VerlVersionError` unless it is exactly 0.9.1.

    The backend relies on verl internals (the rollout registry, the process-group
    backend string, the agent-loop post-processing), so any other version fails here
    rather than somewhere inside a Ray worker.
    """
    try:
        version = metadata.version("verl")
    except metadata.PackageNotFoundError:
        raise VerlVersionError(
            f"verl is not installed; the verl backend needs verl=={VERL_VERSION} "
            "(pip install 'agentspec-rl[verl]')"
        ) from None
    if version != VERL_VERSION:
        raise VerlVersionError(
            f"verl {version} is installed, but agentspec's verl backend is pinned to "
            f"verl=={VERL_VERSION}"
        )
    return version
