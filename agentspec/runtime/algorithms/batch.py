"""The one input type of every estimator and the one output type.

A :class:`StepBatch` holds one row per agent step (the step-level MDP of
Agent-R1 / StepPO): the step's prompt is kept elsewhere, a row holds only the
step's response tokens, left-aligned and right-padded to a common width ``T``.
Shapes use ``n`` for the number of step rows and ``T`` for the padded response
length.

Conventions shared by every function in this package:

- Positions where ``response_mask`` is False (padding, and anything that is not
  a token the policy produced in this step) are never read: they may hold any
  value and never receive advantage, loss or gradient.
- A *valid step* is a row with at least one response token; a *valid
  trajectory* has at least one valid step. Rows that are not valid (e.g. rows
  added to pad a batch to a world size) still pass their reward and value
  through their own trajectory's recursions, but are left out of every
  normalising statistic (whitening, batch baselines, group statistics).
- Trajectories are identified by ``traj_ids``; inside a trajectory the steps are
  ordered by ``step_index``, which must run 0, 1, ..., k-1 with no gaps or
  repeats. Rows may come in any order.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property

import torch
from torch import Tensor

__all__ = ["AdvantageOutput", "StepBatch", "StepRow", "collate_steps"]

_TOKEN_FIELDS = ("token_values", "old_log_probs", "log_probs", "teacher_log_probs")


@dataclass(frozen=True)
class StepBatch:
    """Step-level tensors, one row per agent step.

    Attributes:
        response_mask: ``(n, T)`` bool. True at the tokens the policy generated
            in this step's response; False at padding.
        rewards: ``(n,)`` float. The step's reward r_t (sum of its reward
            components).
        traj_ids: ``(n,)`` int64. Trajectory (episode) of each row.
        step_index: ``(n,)`` int64. Position of the step in its trajectory,
            0-based and contiguous.
        group_ids: ``(n,)`` int64. Prompt group: trajectories sampled from the
            same prompt share it (GRPO / RLOO / GiGPO groups). Constant within a
            trajectory.
        anchor_ids: ``(n,)`` int64 or None. Id of the anchor state the step
            acted from (GiGPO step groups); equal ids mean the same state.
        values: ``(n,)`` float or None. Critic value V(s_t) of the state before
            the step (the value at the step prompt's last token).
        token_values: ``(n, T)`` float or None. Critic value at each response
            token (for token-level GAE).
        old_log_probs: ``(n, T)`` float or None. Log-probs of the response tokens
            under the sampling policy.
        log_probs: ``(n, T)`` float or None. Log-probs under the current policy.
        teacher_log_probs: ``(n, T)`` float or None. Log-probs of the student's
            response tokens under a teacher, computed on the same prompt ids the
            student saw (on-policy distillation).
    """

    response_mask: Tensor
    rewards: Tensor
    traj_ids: Tensor
    step_index: Tensor
    group_ids: Tensor
    anchor_ids: Tensor | None = None
    values: Tensor | None = None
    token_values: Tensor | None = None
    old_log_probs: Tensor | None = None
    log_probs: Tensor | None = None
    teacher_log_probs: Tensor | None = None

    def __post_init__(self) -> None:
        mask = self.response_mask
        if mask.dtype != torch.bool or mask.dim() != 2:
            raise ValueError(
                f"response_mask must be a 2-D bool tensor (n, T), got {mask.dtype} {tuple(mask.shape)}"
            )
        n = mask.shape[0]
        for name in ("traj_ids", "step_index", "group_ids", "anchor_ids"):
            t = getattr(self, name)
            if t is None:
                continue
            if t.shape != (n,) or t.dtype != torch.int64:
                raise ValueError(
                    f"{name} must be an int64 tensor of shape ({n},), got {t.dtype} {tuple(t.shape)}"
                )
        for name in ("rewards", "values"):
            t = getattr(self, name)
            if t is None:
                continue
            if t.shape != (n,) or not t.is_floating_point():
                raise ValueError(
                    f"{name} must be a float tensor of shape ({n},), got {t.dtype} {tuple(t.shape)}"
                )
        for name in _TOKEN_FIELDS:
            t = getattr(self, name)
            if t is None:
                continue
            if t.shape != mask.shape or not t.is_floating_point():
                raise ValueError(
                    f"{name} must be a float tensor of shape {tuple(mask.shape)}, got {t.dtype} {tuple(t.shape)}"
                )
        if n:
            self._check_trajectories()

    def _check_trajectories(self) -> None:
        inv = self.traj_index
        n_traj = self.num_trajectories
        if bool((self.step_index < 0).any()):
            raise ValueError("step_index must be non-negative")
        counts = torch.bincount(inv, minlength=n_traj)
        last = torch.full((n_traj,), -1, dtype=torch.int64, device=inv.device)
        last = last.scatter_reduce(0, inv, self.step_index, reduce="amax")
        pairs = torch.stack([inv, self.step_index], dim=1)
        distinct = torch.unique(pairs, dim=0).shape[0]
        if distinct != inv.shape[0] or bool((counts != last + 1).any()):
            raise ValueError(
                "each trajectory's step_index must be 0, 1, ..., k-1 with no gaps or repeats"
            )
        g_min = self.group_ids.new_full((n_traj,), torch.iinfo(torch.int64).max)
        g_max = self.group_ids.new_full((n_traj,), torch.iinfo(torch.int64).min)
        g_min = g_min.scatter_reduce(0, inv, self.group_ids, reduce="amin")
        g_max = g_max.scatter_reduce(0, inv, self.group_ids, reduce="amax")
        if bool((g_min != g_max).any()):
            raise ValueError("all steps of a trajectory must share one group id")

    # ----- derived layout (computed once per batch) -----

    @property
    def num_steps(self) -> int:
        """Number of step rows ``n``."""
        return int(self.response_mask.shape[0])

    @cached_property
    def traj_index(self) -> Tensor:
        """``(n,)`` int64: each row's trajectory as a dense index 0..N-1 (sorted by traj id)."""
        return torch.unique(self.traj_ids, return_inverse=True)[1]

    @cached_property
    def num_trajectories(self) -> int:
        """Number of distinct trajectories ``N``."""
        return int(self.traj_index.max().item()) + 1 if self.num_steps else 0

    @cached_property
    def max_steps(self) -> int:
        """Length ``S`` of the longest trajectory, in steps."""
        return int(self.step_index.max().item()) + 1 if self.num_steps else 0

    @cached_property
    def valid_steps(self) -> Tensor:
        """``(n,)`` bool: the row has at least one response token."""
        return self.response_mask.any(dim=1)

    @cached_property
    def valid_trajectories(self) -> Tensor:
        """``(N,)`` bool: the trajectory has at least one valid step."""
        out = torch.zeros(
            self.num_trajectories, dtype=torch.int64, device=self.response_mask.device
        )
        out = out.scatter_reduce(0, self.traj_index, self.valid_steps.long(), reduce="amax")
        return out > 0

    @cached_property
    def trajectory_group_ids(self) -> Tensor:
        """``(N,)`` int64: the group id of each trajectory."""
        out = self.group_ids.new_zeros(self.num_trajectories)
        return out.scatter(0, self.traj_index, self.group_ids)

    def to_grid(self, x: Tensor, fill: float = 0.0) -> Tensor:
        """Scatter a per-step tensor ``(n,)`` to a trajectory × step grid ``(N, S)``.

        Cells past a trajectory's last step hold ``fill``.
        """
        grid = x.new_full((self.num_trajectories, self.max_steps), fill)
        grid[self.traj_index, self.step_index] = x
        return grid

    def from_grid(self, grid: Tensor) -> Tensor:
        """Gather ``(N, S)`` back to one value per row ``(n,)``."""
        return grid[self.traj_index, self.step_index]

    def broadcast(self, per_step: Tensor) -> Tensor:
        """Broadcast a per-step tensor ``(n,)`` to the step's response tokens ``(n, T)``; 0 elsewhere."""
        return per_step.unsqueeze(1) * self.response_mask.to(per_step.dtype)


@dataclass(frozen=True)
class AdvantageOutput:
    """What every advantage estimator returns.

    Attributes:
        advantages: ``(n, T)`` float, detached. Per-token advantage; exactly 0
            where ``response_mask`` is False.
        returns: value targets for the critic, or None for critic-free
            estimators. Same shape as the values the estimator consumed:
            ``(n,)`` for step-level GAE (targets of ``StepBatch.values``),
            ``(n, T)`` for token-level GAE (targets of ``token_values``; 0 off
            the mask).
        metrics: scalar diagnostics, namespaced (``"adv/mean"``, ``"gigpo/..."``).
    """

    advantages: Tensor
    returns: Tensor | None = None
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StepRow:
    """One agent step as plain Python values, for :func:`collate_steps`.

    The per-token lists (``token_values``, ``old_log_probs``, ``log_probs``,
    ``teacher_log_probs``) have one entry per response token. ``response_length``
    may be omitted when one of them is given.
    """

    traj_id: Hashable
    step_index: int
    group_id: Hashable
    reward: float
    response_length: int | None = None
    anchor: Hashable | None = None
    value: float | None = None
    token_values: Sequence[float] | None = None
    old_log_probs: Sequence[float] | None = None
    log_probs: Sequence[float] | None = None
    teacher_log_probs: Sequence[float] | None = None

    def length(self) -> int:
        """Number of response tokens, checked against every per-token list."""
        lengths = {len(getattr(self, f)) for f in _TOKEN_FIELDS if getattr(self, f) is not None}
        if self.response_length is not None:
            lengths.add(self.response_length)
        if len(lengths) != 1:
            raise ValueError(
                f"step {self.step_index} of trajectory {self.traj_id!r}: "
                + (
                    "inconsistent response lengths " + str(sorted(lengths))
                    if lengths
                    else "no response_length"
                )
            )
        (n,) = lengths
        if n < 0:
            raise ValueError(f"response_length must be >= 0, got {n}")
        return n


def _dense_ids(keys: Sequence[Hashable]) -> list[int]:
    """Map hashable keys to ints 0, 1, ... in order of first appearance."""
    ids: dict[Hashable, int] = {}
    return [ids.setdefault(k, len(ids)) for k in keys]


def collate_steps(
    rows: Sequence[StepRow],
    *,
    pad_to: int | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> StepBatch:
    """Build a :class:`StepBatch` from ragged per-step Python lists.

    Trajectory ids, group ids and anchors may be any hashable values (uuids,
    strings, tuples of state); they become dense int64 ids. An optional field
    must be given for every row or for none.

    Args:
        rows: the steps, in any order.
        pad_to: width ``T`` of the token tensors; defaults to the longest
            response. Must be at least that.
        dtype: float dtype of rewards, values and log-probs.
        device: where the tensors are created.
    """
    lengths = [r.length() for r in rows]
    width = max(lengths, default=0)
    if pad_to is not None:
        if pad_to < width:
            raise ValueError(f"pad_to={pad_to} is shorter than the longest response ({width})")
        width = pad_to
    n = len(rows)

    mask = torch.zeros((n, width), dtype=torch.bool)
    for i, k in enumerate(lengths):
        mask[i, :k] = True

    def ints(values: list[int]) -> Tensor:
        return torch.tensor(values, dtype=torch.int64, device=device).reshape(n)

    def floats(values: list[float]) -> Tensor:
        return torch.tensor(values, dtype=dtype, device=device).reshape(n)

    def present(name: str) -> bool:
        return _given_for_all(rows, name)

    kw: dict[str, Tensor | None] = {
        "response_mask": mask.to(device),
        "rewards": floats([float(r.reward) for r in rows]),
        "traj_ids": ints(_dense_ids([r.traj_id for r in rows])),
        "step_index": ints([int(r.step_index) for r in rows]),
        "group_ids": ints(_dense_ids([r.group_id for r in rows])),
        "anchor_ids": ints(_dense_ids([r.anchor for r in rows])) if present("anchor") else None,
        "values": floats([float(r.value) for r in rows]) if present("value") else None,  # type: ignore[arg-type]
    }
    for name in _TOKEN_FIELDS:
        kw[name] = _padded(rows, name, lengths, width, dtype).to(device) if present(name) else None
    assert {f.name for f in fields(StepBatch)} == set(kw)
    return StepBatch(**kw)  # type: ignore[arg-type]


def _given_for_all(rows: Sequence[StepRow], name: str) -> bool:
    """Whether the optional field ``name`` is set; it must be set on every row or none."""
    given = [getattr(r, name) is not None for r in rows]
    if any(given) and not all(given):
        raise ValueError(f"{name} must be given for every step or for none")
    return bool(given) and all(given)


def _padded(
    rows: Sequence[StepRow], name: str, lengths: list[int], width: int, dtype: torch.dtype
) -> Tensor:
    """The per-token field ``name`` of every row, zero-padded to ``width``."""
    out = torch.zeros((len(rows), width), dtype=dtype)
    for i, r in enumerate(rows):
        if lengths[i]:
            out[i, : lengths[i]] = torch.tensor(list(getattr(r, name)), dtype=dtype)
    return out
