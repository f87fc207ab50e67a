"""Where agentspec reaches into verl's private parts, in one list, each with its reason;
the test fails when verl 0.9.1's code there changes (an upgrade must re-read each one)
or when agentspec overrides a private verl method that is not listed.

verl is extended through its public registries (advantage estimators, policy losses,
trainers, agent loops, platforms, rollout replicas) and config everywhere else.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from typing import Any

import pytest

PRIVATE_OVERRIDES: dict[tuple[str, str], tuple[str, str]] = {
    # (agentspec class, method) -> (the verl class that defines it, sha256[:16] of its source)
    ("AgentspecTrainer", "_compute_advantage"): (
        "verl.trainer.ppo.v1.trainer_base.PPOTrainer",
        "2a4a2aa4a475b228",
    ),  # why: verl passes an estimator only token rewards, mask and uid; agentspec's
    # estimators need each row's step records, the critic's values and log-probs
    ("AgentspecTrainer", "_add_prompts_to_generate"): (
        "verl.trainer.ppo.v1.trainer_base.PPOTrainer",
        "93543f843e1a1966",
    ),  # why: verl refills failed prompt groups for ever; agentspec stops with the
    # episodes' tracebacks past max_failed_groups
    ("AgentspecTrainer", "_init_resource_pool_mgr"): (
        "verl.trainer.ppo.v1.trainer_base.PPOTrainer",
        "9eaa3bab711e4deb",
    ),  # why: on CPU the workers must open their process group with gloo alone
    # (verl asks for cpu:gloo,{device}:{backend}, naming cpu twice)
    ("ValueEngine", "_build_module"): (
        "verl.workers.engine.fsdp.transformer_impl.FSDPEngine",
        "3935df3e22bb9ad0",
    ),  # why: verl's critic engine ignores the configured attention for value models;
    # built as a language model, the critic gets the attention actor and reference have
}
PRIVATE_NAMES: dict[str, str] = {
    # a private verl name agentspec writes to -> sha256[:16] of the code that reads it
    "verl.workers.rollout.base._ROLLOUT_REGISTRY": "d0be5827f1214f04",  # get_rollout_class
    # why: the CPU rollout (agentspec_hf) has no public registration in verl 0.9.1
}
READERS = {"verl.workers.rollout.base._ROLLOUT_REGISTRY": "get_rollout_class"}

AGENTSPEC_CLASSES = (
    "agentspec.runtime.backends.verl.trainer:AgentspecTrainer",
    "agentspec.runtime.backends.verl.engines:ValueEngine",
    "agentspec.runtime.backends.verl.agent_loop:SpecAgentLoop",
    "agentspec.runtime.backends.verl.cpu.rollout:CpuTrainingWorker",
    "agentspec.runtime.backends.verl.cpu.rollout:CpuActorRolloutRefWorker",
    "agentspec.runtime.backends.verl.cpu.rollout:HFReplica",
    "agentspec.runtime.backends.verl.cpu.rollout:HFServerAdapter",
    "agentspec.runtime.backends.verl.cpu.platform:PlatformCPU",
)


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _digest(obj: Any) -> str:
    return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()[:16]


def private_overrides() -> dict[tuple[str, str], tuple[str, str]]:
    """Every private (single-underscore) method an agentspec class defines over a verl
    base class's, with that base and the digest of verl's source of it."""
    found = {}
    for path in AGENTSPEC_CLASSES:
        cls = _load(path)
        verl_bases = [b for b in cls.__mro__[1:] if b.__module__.startswith("verl.")]
        for name, value in vars(cls).items():
            if not name.startswith("_") or name.startswith("__") or not callable(value):
                continue  # ABC's `_abc_impl` and the like are not code
            owner = next((b for b in verl_bases if name in vars(b)), None)
            if owner is not None:
                where = f"{owner.__module__}.{owner.__qualname__}"
                found[(cls.__name__, name)] = (where, _digest(vars(owner)[name]))
    return found


def test_every_private_override_is_listed_with_verls_code_unchanged() -> None:
    pytest.importorskip("verl")
    assert private_overrides() == PRIVATE_OVERRIDES


def test_every_private_name_written_is_read_by_unchanged_code() -> None:
    for name, digest in PRIVATE_NAMES.items():
        module, _, attribute = name.rpartition(".")
        loaded = importlib.import_module(module)
        assert isinstance(getattr(loaded, attribute), dict), name
        assert _digest(getattr(loaded, READERS[name])) == digest, name


def test_an_unlisted_override_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a new private override of verl's trainer is not in the list."""
    trainer = _load(AGENTSPEC_CLASSES[0])
    monkeypatch.setattr(trainer, "_save_checkpoint", lambda self: None, raising=False)
    assert ("AgentspecTrainer", "_save_checkpoint") in private_overrides()
