"""`--target verl`: the run folder verl trains from (`train --backend verl` builds the
same folder): the module, its agent loop, train/val parquet and the overrides."""

from __future__ import annotations

from agentspec.runtime.backends.verl.run_folder import write_verl_target
from agentspec.runtime.targets import TargetError, TargetRequest, Written


def write(request: TargetRequest) -> Written:
    try:
        return Written(write_verl_target(request.spec, request.out))
    except (ValueError, FileNotFoundError) as exc:  # settings verl cannot run
        raise TargetError(str(exc), usage=True) from None
