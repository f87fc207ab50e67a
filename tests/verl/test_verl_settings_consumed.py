"""Every key agentspec sets in verl's config is read by something.

For every algorithm preset, on the CPU path and the GPU path, each override the
launcher gives ``main_ppo`` (the generated ones, the CPU path's, the attention,
Ray's start-up settings) must:

1. exist in verl's composed config (Hydra refuses unknown keys without ``+``;
   this also covers the ``+`` keys);
2. where the section is converted to one of verl's config dataclasses (its
   ``_target_``, as ``omega_conf_to_dataclass`` converts it), be a field of that
   dataclass, and the converted dataclass must carry the value we set;
3. be read by name somewhere in verl's code outside its config definitions
   (``verl/workers/config``, ``verl/trainer/config``), or be interpolated by
   another key of the composed config: a dataclass field that nothing reads, such
   as ``actor.grad_clip`` in verl 0.9.1 (its engine clips with ``optim.clip_grad``),
   fails here. Name-level, not data-flow: a key whose name some other code reads
   passes; the field check and value check above are the exact part.

agentspec's own keys (``trainer.v1.agentspec.*``) must be read by agentspec's
trainer or agent loop; ``ray_kwargs.ray_init.*`` are ``ray.init``'s parameters
(verl's ``run_ppo`` passes the section to it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf
from verl_helpers import ROOT, anchored_calculator

from agentspec.core.presets import ALGORITHMS

pytestmark = pytest.mark.slow

VERL = Path(importlib.import_module("verl").__file__).parent
CONFIG_DEFINITIONS = ("workers/config/", "trainer/config/")
AGENTSPEC_READERS = [
    ROOT / "agentspec/runtime/backends/verl/trainer.py",
    ROOT / "agentspec/runtime/backends/verl/agent_loop.py",
]
REF_RENAMES = {
    "log_prob_micro_batch_size": "ppo_micro_batch_size",
    "log_prob_micro_batch_size_per_gpu": "ppo_micro_batch_size_per_gpu",
    "log_prob_use_dynamic_bsz": "use_dynamic_bsz",
    "log_prob_max_token_len_per_gpu": "ppo_max_token_len_per_gpu",
}
"""The reference's section as verl prepares it before converting it to an actor config
(``ActorRolloutRefWorker.init_model`` in ``verl/workers/engine_workers.py`` pops these
keys and stores them under the actor config's names); checked against verl's code."""
CONVERTED = (
    "actor_rollout_ref.actor",  # engine_workers.py: omega_conf_to_dataclass(self.config.actor)
    "actor_rollout_ref.ref",
    "actor_rollout_ref.rollout",
    "actor_rollout_ref.model",
    "critic",  # trainer_base.py: omega_conf_to_dataclass(self.config.critic)
)
"""Sections verl's v1 trainer and workers convert to dataclasses with ``omega_conf_to_dataclass``
(nested sections, as ``critic.model``, come along); verl reads the others as they are."""
OTHER_PACKAGES = {"transfer_queue.": "transfer_queue"}
"""Sections verl hands to another package: the package whose code must read the key."""


@cache
def _sources(package: str) -> dict[str, str]:
    root = Path(importlib.import_module(package).__file__).parent
    return {
        str(p.relative_to(root)): p.read_text(errors="ignore")
        for p in root.rglob("*.py")
        if not str(p.relative_to(root)).startswith(CONFIG_DEFINITIONS)
    }


@cache
def _read_by(package: str, name: str) -> tuple[str, ...]:
    """Files of ``package`` that read ``name`` (``.name``, ``"name"`` or ``'name'``)."""
    pattern = re.compile(rf"\.{name}\b|[\"']{name}[\"']")
    return tuple(path for path, text in _sources(package).items() if pattern.search(text))


class Composed:
    """One composed config and what the checks derive from it, each derived once:
    the resolved copy, the interpolation strings, and each converted section's dataclass."""

    def __init__(self, config: DictConfig) -> None:
        self.config = config
        self.resolved = OmegaConf.create(OmegaConf.to_container(config, resolve=True))
        self.interpolations = _interpolations(config)
        self._dataclasses: dict[str, Any] = {}

    def carried(self, parts: list[str], depth: int) -> Any:
        """The value verl's dataclass for the section at ``depth`` holds at the rest of ``parts``."""
        from verl.utils.config import omega_conf_to_dataclass

        path = ".".join(parts[:depth])
        if path not in self._dataclasses:
            self._dataclasses[path] = omega_conf_to_dataclass(_section(self.resolved, path))
        node: Any = self._dataclasses[path]
        for part in parts[depth:]:
            node = node[part] if isinstance(node, Mapping) else getattr(node, part)
        return node


def _interpolations(config: DictConfig) -> str:
    """Every interpolation string of the composed (unresolved) config, joined."""
    out: list[str] = []

    def walk(node: DictConfig) -> None:
        for key in node:
            child = node._get_node(key)  # the node itself: nothing resolved, `???` allowed
            if child is not None and child._is_interpolation():
                out.append(str(child._value()))
            elif isinstance(child, DictConfig):
                walk(child)

    walk(config)
    return "\n".join(out)


def _owner(config: DictConfig, parts: list[str]) -> tuple[str | None, int]:
    """The deepest section on ``parts``' path with a ``_target_``, and where it is."""
    owner, depth, node = None, 0, config
    for i, part in enumerate(parts):
        if isinstance(node, DictConfig) and "_target_" in node:
            owner, depth = str(node["_target_"]), i
        assert isinstance(node, DictConfig) and part in node, f"{'.'.join(parts)}: not in config"
        node = node[part]
    return owner, depth


def _class(target: str) -> type:
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _section(config: DictConfig, path: str) -> DictConfig:
    """The section at ``path`` as verl converts it (the reference's keys renamed first)."""
    section = OmegaConf.select(config, path)
    if path != "actor_rollout_ref.ref":
        return section
    section = OmegaConf.create(OmegaConf.to_container(section))
    engine_workers = _sources("verl")["workers/engine_workers.py"]
    for old, new in REF_RENAMES.items():
        assert (
            f'self.config.ref.pop(\n                    "{old}"' in engine_workers
            or f'self.config.ref.pop("{old}"' in engine_workers
        ), old
        section[new] = section.pop(old)
    section["ppo_mini_batch_size"] = config.actor_rollout_ref.actor.ppo_mini_batch_size
    return section


def unread(composed: Composed | DictConfig, key: str) -> str | None:
    """Why ``key`` (an override of the config, which is composed from it) is read by nothing;
    None when it is read."""
    if not isinstance(composed, Composed):
        composed = Composed(composed)
    config = composed.config
    plain = key.lstrip("+")
    parts = plain.split(".")
    if plain.startswith("trainer.v1.agentspec."):
        text = "".join(p.read_text() for p in AGENTSPEC_READERS)
        return None if f'"{parts[-1]}"' in text else "agentspec's trainer does not read it"
    if plain.startswith("ray_kwargs.ray_init."):
        parameters = set(inspect.signature(importlib.import_module("ray").init).parameters)
        return None if parts[2] in parameters | {"runtime_env"} else "not a ray.init parameter"
    owner, depth = _owner(config, parts)
    if owner is not None:
        fields = {f.name for f in dataclasses.fields(_class(owner))}
        section = ".".join(parts[:depth])
        field = parts[depth]
        if section == "actor_rollout_ref.ref":
            field = REF_RENAMES.get(field, field)
        if field not in fields:
            return f"not a field of {owner}"
        converted = [c for c in CONVERTED if plain.startswith(c + ".")]
        if converted:
            renamed = [*parts[:depth], field, *parts[depth + 1 :]]
            carried = composed.carried(renamed, len(max(converted, key=len).split(".")))
            if str(carried) != str(OmegaConf.select(composed.resolved, plain)):
                return f"verl's dataclass holds {carried!r}"
    package = next((p for prefix, p in OTHER_PACKAGES.items() if plain.startswith(prefix)), "verl")
    if _read_by(package, parts[-1]) or re.search(
        rf"\b{re.escape(plain)}\b", composed.interpolations
    ):
        return None
    return f"no code of {package} reads {parts[-1]!r} (outside its config definitions)"


@pytest.fixture(scope="module")
def launches(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, str]]:
    """The overrides ``main_ppo`` gets for every algorithm, on the CPU and the GPU path."""
    from agentspec.runtime.backends.verl.launcher import prepared_run
    from agentspec.runtime.text.tiny_model import build_tiny

    root = tmp_path_factory.mktemp("consumed")
    spec = anchored_calculator(root / "spec")  # GiGPO needs `episode.anchor`
    teacher = root / "teacher"
    build_tiny(["a b c"] * 4, teacher)
    out = {}
    for device in ("cpu", "cuda"):
        for name in ALGORITHMS.names():
            user = {"algorithm": name, "trainer.device": device, "model": "builtin:small"}
            if ALGORITHMS.get(name).needs_teacher:
                user["teacher"] = str(teacher)
            run = root / f"{name}_{device}"
            out[(name, device)] = prepared_run(spec, run, user).overrides
    return out


def _shipped_folder(overrides: dict[str, str]) -> Path:
    """Where a run's workers start (its inputs are relative to it: docs/verl.md, Multi-node)."""
    return Path(overrides["+ray_kwargs.ray_init.runtime_env.working_dir"])


def test_every_key_agentspec_sets_is_read_by_verl(
    launches: dict[tuple[str, str], dict[str, str]],
) -> None:
    from agentspec.runtime.backends.verl.launcher import compose_config

    problems = []
    for (name, device), overrides in launches.items():
        composed = Composed(compose_config(overrides))
        with contextlib.chdir(_shipped_folder(overrides)):  # verl reads the model's config
            for key in overrides:
                reason = unread(composed, key)
                if reason:
                    problems.append(f"{name}/{device}: {key}: {reason}")
    assert not problems, "\n".join(problems)


def test_a_key_nothing_reads_is_caught(launches: dict[tuple[str, str], dict[str, str]]) -> None:
    """The setting main replaced: verl 0.9.1 declares `actor.grad_clip`, nothing reads it."""
    from agentspec.runtime.backends.verl.launcher import compose_config

    overrides = {**launches[("steppo", "cuda")], "actor_rollout_ref.actor.grad_clip": "0.5"}
    config = compose_config(overrides)
    with contextlib.chdir(_shipped_folder(overrides)):
        reason = unread(config, "actor_rollout_ref.actor.grad_clip")
        assert reason is not None and "reads 'grad_clip'" in reason
        assert unread(config, "actor_rollout_ref.actor.optim.clip_grad") is None
        wrong = {**overrides, "+trainer.v1.agentspec.no_such_setting": "1"}
        assert unread(compose_config(wrong), "+trainer.v1.agentspec.no_such_setting") is not None
