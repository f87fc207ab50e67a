"""verl 0.9.1 on a machine without a GPU: a CPU platform and a transformers rollout.

For tests and laptops; a cluster never loads this module (it is registered only
with ``VERL_PLATFORM=cpu``). Everything goes through verl's extension points:

- :class:`PlatformCPU`, registered in verl's ``PlatformRegistry`` as ``cpu``:
  device ``cpu``, collectives over ``gloo``, a device module whose memory, stream
  and cache calls are CPU no-ops (:class:`CpuDeviceModule`), Ray resource name
  ``GPU`` (verl counts only ``GPU``/``NPU``: Ray is started with logical GPUs).
- the rollout ``agentspec_hf`` (:mod:`.rollout`): ``HFReplica`` (``RolloutReplicaRegistry``)
  starts one ``HFServer`` Ray actor per replica that samples with
  transformers and returns per-token log-probs; ``HFServerAdapter`` (the
  worker-side adapter, in verl's rollout-class table) sends the trained weights
  to it after every step.
- ``CpuTrainingWorker`` / ``CpuActorRolloutRefWorker`` (:mod:`.rollout`): verl's workers,
  subclassed to open the process group with ``gloo`` alone (verl asks for
  ``cpu:gloo,{device}:{backend}``, which on CPU names ``cpu`` twice); the
  ``agentspec`` trainer uses them when ``trainer.device=cpu``.

The transformers rollout and the worker-side table are verl internals
(``verl.workers.rollout.base._ROLLOUT_REGISTRY`` is private): verl is pinned to
0.9.1 and ``tests/verl`` fails loudly on an upgrade.
"""

from __future__ import annotations

import importlib

__all__ = ["register", "register_platform"]


def register_platform() -> None:
    """Register ``PlatformCPU`` as verl platform ``cpu``: before anything asks verl for its
    platform (importing verl's trainer or workers does)."""
    from verl.plugin.platform.platform_manager import PlatformRegistry

    from agentspec.runtime.backends.verl.cpu.platform import PlatformCPU

    if PlatformRegistry.get("cpu") is not PlatformCPU:
        PlatformRegistry.register(platform="cpu")(PlatformCPU)


def register() -> None:
    """Register the CPU platform, the engines, the gloo workers and the ``agentspec_hf`` rollout.

    The rollout module registers itself when imported. This package imports no verl
    at import time: a Ray worker that unpickles a class of :mod:`.rollout` imports
    verl, which loads the plugin, which comes back here while ``rollout`` is still
    half-imported.
    """
    register_platform()
    importlib.import_module(f"{__name__}.rollout")
