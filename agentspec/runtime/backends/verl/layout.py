"""Step metadata carried through verl, and the map between verl's rows and agentspec's steps.

verl keeps one row per ``AgentLoopOutput``: either one step (``per_step``) or
several chained steps of one episode packed into one row (``packed``, the
observation tokens masked out). The agent loop stores, in the row's
``extra_fields["agentspec"]``, what the step-level algorithms need and verl's
advantage step does not carry (:class:`RowSteps`): the trajectory, the step
index of every response token, each step's reward and anchor.

:func:`step_view` turns verl's padded ``(rows, T)`` tensors plus those records
into agentspec's :class:`~agentspec.runtime.algorithms.StepBatch` (one row per
step) and back (:meth:`StepView.to_rows`). This module imports torch, never verl.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor

from agentspec.runtime.algorithms import StepBatch, StepRow, collate_steps
from agentspec.runtime.episode.rows import TrainingRow
from agentspec.runtime.episode.trajectory import Trajectory

__all__ = ["EXTRA_KEY", "RowSteps", "StepView", "row_steps", "state_positions", "step_view"]

EXTRA_KEY = "agentspec"
"""Key of :class:`RowSteps` (as a plain dict) in ``AgentLoopOutput.extra_fields``."""


@dataclass(frozen=True)
class RowSteps:
    """The steps one verl row holds.

    Attributes:
        trajectory_id: the episode (unique per episode, shared by its rows).
        token_steps: per response token of the row: the step index of a token the
            policy generated, -1 for observation tokens between packed steps.
        step_indices: the steps of the row, in order.
        step_rewards: each step's reward (sum of its components), aligned with
            ``step_indices``.
        anchors: each step's GiGPO anchor (:attr:`Step.anchor_key`).
        episode_reward: the episode's total reward (what verl's ``reward_score`` holds).
    """

    trajectory_id: str
    token_steps: list[int]
    step_indices: list[int]
    step_rewards: list[float]
    anchors: list[str]
    episode_reward: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RowSteps:
        return cls(
            trajectory_id=str(d["trajectory_id"]),
            token_steps=[int(x) for x in d["token_steps"]],
            step_indices=[int(x) for x in d["step_indices"]],
            step_rewards=[float(x) for x in d["step_rewards"]],
            anchors=[str(x) for x in d["anchors"]],
            episode_reward=float(d["episode_reward"]),
        )


def row_steps(traj: Trajectory, row: TrainingRow) -> RowSteps:
    """The :class:`RowSteps` of one of ``training_rows(traj)``."""
    by_index = {s.index: s for s in traj.steps}
    steps = [by_index[i] for i in row.step_indices]
    return RowSteps(
        trajectory_id=traj.trajectory_id,
        token_steps=list(row.token_steps[row.prompt_length :]),
        step_indices=list(row.step_indices),
        step_rewards=[s.reward for s in steps],
        anchors=[s.anchor_key for s in steps],
        episode_reward=traj.total_reward,
    )


@dataclass(frozen=True)
class StepView:
    """agentspec's step batch of a verl batch, and where each step's tokens sit in verl's rows.

    Attributes:
        batch: one row per step (``(n_steps, S)`` token tensors).
        row_of_step: ``(n_steps,)`` the verl row each step came from.
        positions: ``(n_steps, S)`` the response column of each step token in its
            verl row (``-1`` off the step's mask).
        num_rows, width: shape ``(rows, T)`` of verl's response tensors.
    """

    batch: StepBatch
    row_of_step: Tensor
    positions: Tensor
    num_rows: int
    width: int

    def to_rows(self, step_tokens: Tensor) -> Tensor:
        """Scatter ``(n_steps, S)`` values (e.g. advantages) into verl's ``(rows, T)`` layout;
        0 at every position no step owns."""
        out = step_tokens.new_zeros((self.num_rows, self.width))
        keep = self.batch.response_mask
        rows = self.row_of_step.unsqueeze(1).expand_as(self.positions)
        out[rows[keep], self.positions[keep]] = step_tokens[keep]
        return out

    def steps_to_rows(self, per_step: Tensor) -> Tensor:
        """Broadcast ``(n_steps,)`` values to the step's tokens in verl's ``(rows, T)`` layout."""
        return self.to_rows(self.batch.broadcast(per_step))


def _token_steps(i: int, rec: RowSteps, mask: Tensor) -> Tensor:
    """Row ``i``'s step of every response column (``-1``: not generated), checked to lie
    inside verl's response ``mask`` (``(T,)`` bool)."""
    width = mask.shape[0]
    token_steps = torch.tensor(rec.token_steps, dtype=torch.int64)
    if token_steps.numel() > width:
        raise ValueError(f"row {i}: {token_steps.numel()} token steps for {width} response columns")
    generated = torch.zeros(width, dtype=torch.bool)
    generated[: token_steps.numel()] = token_steps >= 0
    if not torch.equal(generated & mask, generated):
        raise ValueError(f"row {i}: a step token lies outside verl's response mask")
    return token_steps


def step_view(
    records: Sequence[RowSteps],
    group_keys: Sequence[Any],
    response_mask: Tensor,
    *,
    values: Tensor | None = None,
    old_log_probs: Tensor | None = None,
    teacher_log_probs: Tensor | None = None,
    token_values: Tensor | None = None,
) -> StepView:
    """Split verl's rows into agentspec steps.

    Args:
        records: one :class:`RowSteps` per verl row.
        group_keys: one per row: the prompt group (verl's ``uid``).
        response_mask: ``(rows, T)`` verl's response mask (1 = generated token).
        values: ``(rows, T)`` the critic's values; a step's ``value`` is the one at
            its first response position (the value of the state it acted from).
        old_log_probs, teacher_log_probs: ``(rows, T)`` per-token, gathered per step.
        token_values: ``(rows, T)`` the critic's values, gathered per step token
            (token-level GAE: V of the state before each generated token).
    """
    n, width = response_mask.shape
    if len(records) != n or len(group_keys) != n:
        raise ValueError(f"{len(records)} step records and {len(group_keys)} groups for {n} rows")
    mask = response_mask.bool()
    rows: list[StepRow] = []
    row_of_step: list[int] = []
    cols: list[list[int]] = []
    for i, rec in enumerate(records):
        token_steps = _token_steps(i, rec, mask[i])
        for k, step in enumerate(rec.step_indices):
            where = torch.nonzero(token_steps == step).flatten().tolist()

            def pick(t: Tensor | None, where: list[int] = where, i: int = i) -> list[float] | None:
                return None if t is None else t[i, where].tolist()

            # a step's value is the critic's at its first response position
            value = None if values is None else (float(values[i, where[0]]) if where else 0.0)
            rows.append(
                StepRow(
                    traj_id=rec.trajectory_id,
                    step_index=step,
                    group_id=group_keys[i],
                    reward=rec.step_rewards[k],
                    response_length=len(where),
                    anchor=rec.anchors[k],
                    value=value,
                    old_log_probs=pick(old_log_probs),
                    teacher_log_probs=pick(teacher_log_probs),
                    token_values=pick(token_values),
                )
            )
            row_of_step.append(i)
            cols.append(where)
    positions = _positions(cols)
    batch = collate_steps(rows, pad_to=positions.shape[1], dtype=torch.float32)
    return StepView(batch, torch.tensor(row_of_step, dtype=torch.int64), positions, n, width)


def state_positions(records: Sequence[RowSteps], width: int) -> Tensor:
    """``(rows, width)`` int64: 1 at each step's first response column (where verl's critic
    gives V of the state the step acted from, the value :func:`step_view` reads), else 0."""
    out = torch.zeros((len(records), width), dtype=torch.int64)
    for i, rec in enumerate(records):
        seen: set[int] = set()
        for j, step in enumerate(rec.token_steps[:width]):
            if step >= 0 and step not in seen:
                seen.add(step)
                out[i, j] = 1
    return out


def _positions(cols: list[list[int]]) -> Tensor:
    """``(steps, S)``: each step's token columns in its verl row, padded with -1."""
    width = max((len(c) for c in cols), default=0)
    positions = torch.full((len(cols), width), -1, dtype=torch.int64)
    for j, c in enumerate(cols):
        positions[j, : len(c)] = torch.tensor(c, dtype=torch.int64)
    return positions
