"""What the models say about a rollout before any update: the step batch the algorithms read.

`score` runs the policy (old log-probs), the reference, the teacher and the
critic over the rollout's rows; `step_batch` lays their per-step numbers out as
the :class:`StepBatch` that advantage estimators take.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from agentspec.runtime.algorithms import StepBatch, StepRow, collate_steps
from agentspec.runtime.backends.local.device import autocast
from agentspec.runtime.backends.local.models import Models
from agentspec.runtime.backends.local.tensors import (
    Rollout,
    StepIndex,
    pad_rows,
    response_log_probs,
    shared_prefix,
)


@dataclass
class Scored:
    """Per-step tensors from the models, before any update."""

    index: StepIndex
    old_log_probs: torch.Tensor | None  # (n, T); None: the update's first forward provides them
    values: torch.Tensor | None  # (n,) V(state before the step)
    token_values: torch.Tensor | None  # (n, T)
    ref_log_probs: torch.Tensor | None  # (n, T)
    teacher_log_probs: torch.Tensor | None  # (n, T)


def row_chunks(rollout: Rollout, size: int = 16) -> Iterator[list[int]]:
    for start in range(0, len(rollout.rows), size):
        yield list(range(start, min(start + size, len(rollout.rows))))


@torch.no_grad()
def score(
    rollout: Rollout, models: Models, temperature: float, policy_log_probs: bool = True
) -> Scored:
    """Log-probs of the rollout's response tokens under the policy (unless
    `policy_log_probs` is False), the reference and the teacher; critic values.

    `policy_log_probs=False` skips the policy's forward pass: the caller takes the
    old log-probs from the update's first forward pass instead, which sees the
    same, not yet updated, policy (see `update.update`).
    """
    width = rollout.width
    n = len(rollout.steps)
    scorers = {
        "old": models.policy if policy_log_probs else None,
        "ref": models.reference,
        "teacher": models.teacher,
    }
    out = {name: torch.zeros((n, width)) for name, m in scorers.items() if m is not None}
    values = torch.zeros(n) if models.critic is not None else None
    token_values = torch.zeros((n, width)) if models.critic is not None else None
    if not out and models.critic is None:
        return Scored(_rollout_index(rollout), None, None, None, None, None)
    pad = models.tokenizer.pad_token_id or 0
    for rows in row_chunks(rollout):
        refs = [i for i, ref in enumerate(rollout.steps) if ref.row in rows]
        if not refs:
            continue
        index = StepIndex.of(
            [rollout.steps[i] for i in refs], {r: k for k, r in enumerate(rows)}, width
        )
        ids, mask = (t.to(models.device) for t in pad_rows([rollout.rows[r] for r in rows], pad))
        for name, model in scorers.items():
            if model is not None:
                with autocast(models.device):
                    tokens = response_log_probs(model, ids, mask, index, temperature)
                out[name][refs] = tokens.log_probs.cpu()
        if models.critic is not None:
            assert values is not None and token_values is not None
            with autocast(models.device):
                prefix = shared_prefix(ids, index.first_read())
                position_values = models.critic(ids, mask, prefix).float().cpu()
            values[refs] = index.states(position_values)
            # V of the state before each response token: read at the previous position.
            token_values[refs] = index.tokens(
                torch.nn.functional.pad(position_values[:, :-1], (1, 0))
            )
    return Scored(
        index=_rollout_index(rollout),
        old_log_probs=out.get("old"),
        values=values,
        token_values=token_values,
        ref_log_probs=out.get("ref"),
        teacher_log_probs=out.get("teacher"),
    )


def _rollout_index(rollout: Rollout) -> StepIndex:
    return StepIndex.of(rollout.steps, {r: r for r in range(len(rollout.rows))}, rollout.width)


def step_batch(rollout: Rollout, scored: Scored) -> StepBatch:
    """The rollout's steps with their rewards, groups, anchors and the models' numbers."""

    def first(per_token: torch.Tensor | None, i: int, k: int) -> list[float] | None:
        return per_token[i, :k].tolist() if per_token is not None else None

    rows = []
    for i, ref in enumerate(rollout.steps):
        k = len(ref.positions)
        traj = rollout.trajectories[ref.traj]
        rows.append(
            StepRow(
                traj_id=traj.trajectory_id,
                step_index=ref.step.index,
                group_id=traj.group_id,
                reward=ref.step.reward,
                response_length=k,
                anchor=ref.step.anchor_key,
                value=float(scored.values[i]) if scored.values is not None else None,
                token_values=first(scored.token_values, i, k),
                old_log_probs=first(scored.old_log_probs, i, k),
                teacher_log_probs=first(scored.teacher_log_probs, i, k),
            )
        )
    return collate_steps(rows, pad_to=rollout.width)


def annotate_advantages(rollout: Rollout, advantages: torch.Tensor, mask: torch.Tensor) -> None:
    """Record each step's mean advantage in its trace (for `agentspec view`)."""
    for i, ref in enumerate(rollout.steps):
        k = int(mask[i].sum())
        ref.step.info["advantage"] = float(advantages[i, :k].mean()) if k else 0.0
