"""What a verl run ships to its Ray workers: the run, not a path (docs/verl.md, "Multi-node").

A Ray worker on another node sees none of the driver's folders, so everything a
worker reads travels in Ray's runtime env:

- ``working_dir``: the compiled target folder (``RUN/target``: the generated module
  and agent loop, ``agent_loop.yaml``, the parquet files, a ``builtin:*`` model, and
  ``spec/``, the spec's copy with its own modules and data files). Every worker
  starts in its node's copy of it, with it on ``sys.path``; the inputs verl reads
  from it are given relative to it (:func:`relative_inputs`).
- ``data/`` in it: the files and folders the spec names under ``${AGENTSPEC_DATA}``
  (:func:`agentspec.compiler.package_files.data_root_files`), which the agent loop
  makes its workers' data root. A path a library function reads by default, without
  the spec naming it, is not among them: name it in the spec.
- a model or an OPD teacher given as a folder outside the target is copied into
  ``inputs/`` first.
- ``env_vars``: the workers' variables (:func:`.ray_env.worker_env`), none of them
  a path of the driver's but the outputs below.

Outputs are not shipped back: verl's trainer process writes the metrics, the
validation dumps and the run's error log where the driver asked, and agentspec
places that process on the driver's node (:class:`DriverNodeTaskRunner`); each actor
or critic worker writes its checkpoint shards at ``trainer.default_local_dir`` on
its own node (verl's layout: on several GPU nodes, point it at shared storage).

Ray carries a ``working_dir`` up to its gRPC message limit (512 MiB); agentspec
refuses a shipment over :data:`SHIP_LIMIT_MIB` and names what is big. Then
``--shared-storage`` (the run folder and ``${AGENTSPEC_DATA}`` at the same path on
every node) reads everything in place and ships nothing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentspec.compiler.package_files import data_root_files

__all__ = [
    "SHIP_LIMIT_MIB",
    "DriverNodeTaskRunner",
    "Shipment",
    "ShippingError",
    "relative_inputs",
    "ship_run",
]

SHIP_LIMIT_MIB = 256
"""The most a run ships to its workers (half of Ray's 512 MiB gRPC limit on a package:
Ray zips the folder, and a package near the limit fails in the upload, after start-up)."""
DATA_FOLDER = "data"
INPUTS_FOLDER = "inputs"
INPUT_KEYS = {
    "actor_rollout_ref.model.path": "model",
    "critic.model.path": "critic_model",
    "trainer.v1.agentspec.teacher_path": "teacher",
}
"""The overrides that name a folder verl's workers read (the models), and the folder of
``inputs/`` a copy of one outside the target goes to."""
SKIPPED = ("__pycache__", "*.pyc")
"""Never shipped (Ray's ``excludes`` patterns): bytecode each worker writes for itself."""


class ShippingError(ValueError):
    """The run cannot be shipped to its workers (too big, or an input that is not a folder)."""


@dataclass(frozen=True)
class Shipment:
    """The folder a run ships as Ray's ``working_dir``, and what is in it."""

    folder: Path
    files: int
    size: int
    """Bytes, before Ray zips them."""
    data: list[str]
    """What the spec names under ``${AGENTSPEC_DATA}``, relative to it (shipped in ``data/``)."""

    def runtime_env(self) -> dict[str, str]:
        """The Hydra overrides that give ``ray.init`` this shipment (``run_ppo`` merges
        them over verl's own runtime env, whose ``working_dir: None`` they replace)."""
        excludes = "[" + ",".join(f'"{p}"' for p in SKIPPED) + "]"
        return {
            "+ray_kwargs.ray_init.runtime_env.working_dir": str(self.folder),
            "+ray_kwargs.ray_init.runtime_env.excludes": excludes,
        }

    def note(self) -> str:
        data = f"; data under ${{AGENTSPEC_DATA}}: {', '.join(self.data)}" if self.data else ""
        return (
            f"ships {self.folder} to every Ray worker as its working directory: {self.files} "
            f"files, {_mib(self.size)} (limit {SHIP_LIMIT_MIB} MiB){data}; nothing of the "
            "driver's folders is read on the workers (--shared-storage reads them in place)"
        )


def ship_run(spec_path: Path, folder: Path, overrides: dict[str, str]) -> Shipment:
    """Fill ``folder`` (the compiled target) with what the workers read besides it: the
    data the spec names under ``${AGENTSPEC_DATA}`` (``data/``) and any model or teacher
    folder outside it (``inputs/``, ``overrides`` pointed there); check the size."""
    data = _ship_data(spec_path, folder / DATA_FOLDER)
    inputs = folder / INPUTS_FOLDER
    if inputs.exists():
        shutil.rmtree(inputs)
    copied: dict[Path, str] = {}  # the critic's model is usually the actor's: copied once
    for key, place in INPUT_KEYS.items():
        for name in (key, "+" + key):
            if name in overrides:
                overrides[name] = _ship_input(name, overrides[name], folder, inputs / place, copied)
    files, size = _measure(folder)
    if size > SHIP_LIMIT_MIB * 2**20:
        raise ShippingError(_too_big(folder, size))
    return Shipment(folder, files, size, data)


def relative_inputs(overrides: Mapping[str, str], folder: Path) -> dict[str, str]:
    """``overrides`` with every path inside ``folder`` given relative to it: a worker
    starts in its node's copy of the folder, where the driver's absolute path means
    nothing."""
    out = dict(overrides)
    for key, value in overrides.items():
        path = Path(value)
        if path.is_absolute() and path.is_relative_to(folder):
            out[key] = path.relative_to(folder).as_posix() or "."
    return out


def _ship_data(spec_path: Path, into: Path) -> list[str]:
    """Copy what the spec names under ``${AGENTSPEC_DATA}`` into ``into`` (always made:
    the workers' data root is the shipped one, never the driver's path)."""
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    found = data_root_files(spec_path)
    names = [f.relative for f in found]
    shipped: list[str] = []
    for item in found:
        if any(other != item.relative and other in item.relative.parents for other in names):
            continue  # inside a folder shipped whole
        destination = into.joinpath(*item.relative.parts)
        destination.parent.mkdir(parents=True, exist_ok=True)
        if item.source.is_dir():
            shutil.copytree(item.source, destination, ignore=shutil.ignore_patterns(*SKIPPED))
        else:
            shutil.copy2(item.source, destination)
        shipped.append(item.relative.as_posix())
    return shipped


def _ship_input(
    key: str, value: str, folder: Path, destination: Path, copied: dict[Path, str]
) -> str:
    """A model or teacher folder outside the target, copied to ``destination`` (its path
    there returned); a name that is no local folder (a hub id) is left as it is."""
    path = Path(value).expanduser()
    if not path.is_absolute() or path.is_relative_to(folder) or not path.exists():
        return value
    if not path.is_dir():
        raise ShippingError(f"{key}={value}: a model is a folder, not a file")
    if path.resolve() not in copied:
        shutil.copytree(path, destination, ignore=shutil.ignore_patterns(*SKIPPED))
        copied[path.resolve()] = str(destination)
    return copied[path.resolve()]


def _measure(folder: Path) -> tuple[int, int]:
    files = size = 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            if not name.endswith(".pyc"):
                files += 1
                size += (Path(root) / name).stat().st_size
    return files, size


def _too_big(folder: Path, size: int) -> str:
    parts = sorted(
        ((_measure(p)[1] if p.is_dir() else p.stat().st_size, p.name) for p in folder.iterdir()),
        reverse=True,
    )
    biggest = ", ".join(f"{name} {_mib(n)}" for n, name in parts[:4])
    return (
        f"the run would ship {_mib(size)} to every Ray worker ({folder}: {biggest}), over the "
        f"{SHIP_LIMIT_MIB} MiB agentspec ships. Put the run folder (--out) and "
        "${AGENTSPEC_DATA} on storage every node mounts at the same path and pass "
        '--shared-storage, which reads them in place (docs/verl.md, "Multi-node")'
    )


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


class DriverNodeTaskRunner:
    """verl's task runner (``run_ppo``'s ``task_runner_class``) placed on the driver's
    node: it writes the run's metrics, validation dumps and error log into the driver's
    run folder, which no other node sees. Ray is started by ``run_ppo`` before it calls
    :meth:`remote`, so the node is known then."""

    def __init__(self, actor_class: Any, **options: Any) -> None:
        self.actor_class = actor_class
        self.options_given = options

    def options(self, **options: Any) -> DriverNodeTaskRunner:
        return DriverNodeTaskRunner(self.actor_class, **{**self.options_given, **options})

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        placed = self.actor_class.options(**self.options_given, scheduling_strategy=here)
        return placed.remote(*args, **kwargs)
