"""`--target python` (the default): the generated module and ``manifest.json``."""

from __future__ import annotations

from agentspec.compiler.build import write_compiled
from agentspec.runtime.targets import TargetRequest, Written


def write(request: TargetRequest) -> Written:
    return Written(write_compiled(request.compiled, request.out))
