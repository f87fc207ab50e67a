"""Where OPD's teacher runs on verl: in the trainer's process, or on a GPU of its own.

The ``agentspec`` trainer scores every verl row with the teacher (:mod:`.teacher`).
verl's trainer runs inside its task-runner Ray actor, which asks Ray for no GPU,
so Ray hides every GPU from it: a teacher scored there runs on the CPU (in
``teacher_dtype``: bfloat16 on the GPU path). That is right for a small teacher
and hours per iteration for a real one.
``+trainer.v1.agentspec.teacher_placement`` chooses:

- ``trainer`` (the default): in the trainer's process, on the CPU;
- ``gpu``: in a Ray actor of its own that asks for
  ``+trainer.v1.agentspec.teacher_num_gpus`` GPUs (default 1), in bfloat16 on
  CUDA. verl's own workers take ``trainer.n_gpus_per_node × trainer.nnodes``
  GPUs, so the cluster needs that many more.

Nothing here imports torch or verl.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "LARGE_TEACHER_PARAMETERS",
    "PLACEMENTS",
    "TeacherPlacement",
    "teacher_parameters",
    "teacher_placement",
]

PLACEMENTS = ("trainer", "gpu")

LARGE_TEACHER_PARAMETERS = 500_000_000
"""Above this many parameters a teacher scored in float32 on a CPU gets a warning."""


@dataclass(frozen=True)
class TeacherPlacement:
    """Where the teacher runs and what the launcher adds for it."""

    placement: str | None
    """``trainer``, ``gpu``, or None (the algorithm has no teacher)."""
    num_gpus: float = 0.0
    """GPUs the teacher's actor asks Ray for (on the CPU path: logical GPUs to add)."""
    notes: list[str] = field(default_factory=list)


def teacher_parameters(path: str | Path) -> int | None:
    """The parameter count of a checkpoint's ``*.safetensors`` files (read from their
    headers, nothing loaded); None without such files."""
    files = sorted(Path(path).glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for file in files:
        with file.open("rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
        for name, entry in header.items():
            if name != "__metadata__":
                count = 1
                for dim in entry["shape"]:
                    count *= int(dim)
                total += count
    return total


def teacher_placement(
    teacher_path: str | None,
    placement: str,
    num_gpus: float,
    *,
    local_gpus: int | None,
    pool_gpus: int,
    large: int = LARGE_TEACHER_PARAMETERS,
) -> TeacherPlacement:
    """Check the teacher's placement and say what the user should know.

    Args:
        teacher_path: the teacher checkpoint (None or ``"null"``: no teacher).
        placement: ``trainer`` or ``gpu``.
        num_gpus: GPUs of the teacher's actor (``gpu`` only).
        local_gpus: GPUs of the machine whose Ray cluster the launcher starts, when it
            has any (None: unknown, or joining a cluster).
        pool_gpus: GPUs verl's own workers take (``n_gpus_per_node × nnodes``).
        large: above this many parameters, a teacher placed in the trainer is warned about.
    """
    if not teacher_path or teacher_path == "null":
        return TeacherPlacement(None)
    if placement not in PLACEMENTS:
        raise ValueError(
            f"trainer.v1.agentspec.teacher_placement={placement!r}: use " + " or ".join(PLACEMENTS)
        )
    if placement == "trainer":
        count = teacher_parameters(teacher_path)
        if count is None or count <= large:
            return TeacherPlacement("trainer")
        return TeacherPlacement(
            "trainer",
            notes=[
                f"warning: the teacher {teacher_path} has {count / 1e9:.2f}B parameters and is "
                "scored on the CPU of verl's task runner (Ray gives it no GPU): "
                "expect hours per iteration. Put it on a GPU of its own with --set "
                "+trainer.v1.agentspec.teacher_placement=gpu (docs/verl.md, 'OPD on verl')"
            ],
        )
    if num_gpus <= 0:
        raise ValueError(f"trainer.v1.agentspec.teacher_num_gpus={num_gpus:g}: give 1 or more")
    if local_gpus is not None and pool_gpus + num_gpus > local_gpus:
        raise ValueError(
            f"the teacher asks for {num_gpus:g} GPU, but verl's workers take {pool_gpus} of this "
            f"machine's {local_gpus} (trainer.n_gpus_per_node × trainer.nnodes): lower "
            "trainer.n_gpus_per_node to leave the teacher its GPU"
        )
    return TeacherPlacement(
        "gpu",
        float(num_gpus),
        [f"the teacher runs in a Ray actor of its own with {num_gpus:g} GPU (bfloat16 on CUDA)"],
    )
