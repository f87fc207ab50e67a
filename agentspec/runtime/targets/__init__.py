"""Every compile target: what `agentspec compile SPEC --target NAME` writes.

A target is one module of this package with a ``write(request) -> Written``
function; :data:`TARGETS` names them. Adding one is adding a module here and its
line in :data:`TARGETS` (docs/ci.md, "A new compile target"). Modules are imported
when their target is asked for: a target may need an extra (verl's pandas, OpenEnv's
server) that `compile --target python` must not.

Nothing a target does runs the spec's own code unless ``request.run_spec_code``: the
command runs every target inside `agentspec.stdlib.user.spec_code_refused`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from agentspec.compiler.build import CompiledSpec

__all__ = ["TARGETS", "TargetError", "TargetRequest", "Written", "write_target"]

TARGETS: dict[str, str] = {
    "python": "the generated module and manifest.json",
    "verl": "a verl run folder: the module, agent loop, parquet data, overrides (docs/verl.md)",
    "openenv": "an OpenEnv package (docs/openenv.md)",
    "trl": "an environment_factory for TRL (docs/trl.md)",
    "verifiers": "a verifiers v1 environment package (docs/verifiers.md)",
}
"""Target name → what it writes; the module is ``agentspec.runtime.targets.NAME``."""


@dataclass(frozen=True)
class TargetRequest:
    """What every target is given: the spec, its compiled module, the output folder,
    and whether the spec's own code may run (`compile --run-spec-code`)."""

    spec: Path
    compiled: CompiledSpec
    out: Path
    run_spec_code: bool = False


@dataclass
class Written:
    """The files a target wrote, and what the user should know about them."""

    paths: list[Path]
    notes: list[str] = field(default_factory=list)


class TargetError(Exception):
    """A spec or setting this target cannot write (the message says why and what to
    do); ``usage`` marks a setting the user chose (exit code 2) rather than the spec."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


def write_target(name: str, request: TargetRequest) -> Written:
    """Write target ``name`` (one of :data:`TARGETS`)."""
    if name not in TARGETS:
        raise TargetError(f"unknown target {name!r}: use {', '.join(TARGETS)}", usage=True)
    module = importlib.import_module(f"{__name__}.{name}")
    written: Written = module.write(request)
    return written
