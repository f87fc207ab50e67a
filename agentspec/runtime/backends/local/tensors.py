"""From trajectories to tensors: packed rows for the forward pass, step rows for the math.

The model runs on *rows* (`training_rows`: a whole append-only episode packed
into one sequence, or one step per row), which is where the compute is. The
algorithms run on *steps* (`StepBatch`: one row per agent turn, `(n, T)` over
the turn's response tokens). `StepIndex` maps one onto the other: for each
step, which row its tokens are in and at which positions — so log-probs
computed on packed rows are gathered into step rows with gradients intact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from agentspec.runtime.episode.rows import TrainingRow, training_rows
from agentspec.runtime.episode.trajectory import Step, Trajectory


@dataclass
class StepRef:
    """Where one step's response tokens are."""

    traj: int  # index into the trajectory list
    row: int  # index into the row list
    positions: list[int]  # positions of the response tokens in the row
    step: Step


@dataclass
class Rollout:
    trajectories: list[Trajectory]
    rows: list[TrainingRow]
    row_traj: list[int]
    steps: list[StepRef]

    @property
    def width(self) -> int:
        return max((len(ref.positions) for ref in self.steps), default=0)


def build_rollout(trajectories: Sequence[Trajectory], pack: bool) -> Rollout:
    rows: list[TrainingRow] = []
    row_traj: list[int] = []
    steps: list[StepRef] = []
    for t, traj in enumerate(trajectories):
        by_index = {step.index: step for step in traj.steps}
        for row in training_rows(traj, pack=pack):
            r = len(rows)
            rows.append(row)
            row_traj.append(t)
            for index in row.step_indices:
                positions = [p for p, s in enumerate(row.token_steps) if s == index]
                steps.append(StepRef(t, r, positions, by_index[index]))
    return Rollout(list(trajectories), rows, row_traj, steps)


def pad_rows(rows: Sequence[TrainingRow], pad_id: int) -> tuple[Tensor, Tensor]:
    """Right-padded `input_ids` and `attention_mask`, shape `(B, L)`."""
    width = max(len(r.input_ids) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row.input_ids)] = torch.tensor(row.input_ids)
        mask[i, : len(row.input_ids)] = 1
    return ids, mask


@dataclass
class StepIndex:
    """Gather indices from a `(B, L)` per-position tensor into `(n, T)` step rows.

    `row (n, T)` and `pos (n, T)` address each step's response tokens;
    `mask (n, T)` is True on real tokens. `state_pos (n,)` is the position of
    the last prompt token before the step's first response token: where the
    critic reads V(state before the step).
    """

    row: Tensor
    pos: Tensor
    mask: Tensor
    state_pos: Tensor

    @staticmethod
    def of(refs: Sequence[StepRef], row_of: dict[int, int], width: int) -> StepIndex:
        n = len(refs)
        row = torch.zeros((n, width), dtype=torch.long)
        pos = torch.zeros((n, width), dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.bool)
        state_pos = torch.zeros(n, dtype=torch.long)
        for i, ref in enumerate(refs):
            k = len(ref.positions)
            row[i, :] = row_of[ref.row]
            pos[i, :k] = torch.tensor(ref.positions, dtype=torch.long)
            mask[i, :k] = True
            state_pos[i] = ref.positions[0] - 1 if ref.positions else 0
        return StepIndex(row, pos, mask, state_pos)

    def tokens(self, per_position: Tensor) -> Tensor:
        """`(B, L, …)` → `(n, T, …)` at the response tokens (zeros off the mask)."""
        gathered = per_position[self.row, self.pos]
        mask = self.mask.view(*self.mask.shape, *([1] * (gathered.dim() - 2)))
        return gathered * mask

    def first_read(self) -> int:
        """The leftmost position `tokens` or `states` reads: the one before the first
        response token (a critic's state, the logits that predict that token)."""
        return int(self.pos[self.mask].min()) - 1 if bool(self.mask.any()) else 0

    def states(self, per_position: Tensor) -> Tensor:
        """`(B, L)` → `(n,)` at each step's state position."""
        return per_position[self.row[:, 0], self.state_pos]


def token_log_probs(
    model: torch.nn.Module, ids: Tensor, mask: Tensor, temperature: float, with_logits: bool = False
) -> tuple[Tensor, Tensor | None]:
    """log π(x_p | x_<p) at every position p ≥ 1 (position 0 gets 0), shape `(B, L)`.

    Logits are divided by the sampling temperature, so the log-probs match what
    the sampler recorded. Also returns the shifted logits `(B, L, V)` when asked
    (entropy, distillation).
    """
    logits = model(input_ids=ids, attention_mask=mask).logits.float()
    if temperature > 0:
        logits = logits / temperature
    shifted = logits[:, :-1]
    logp = torch.log_softmax(shifted, dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
    logp = F.pad(logp, (1, 0))
    aligned = F.pad(shifted, (0, 0, 1, 0)) if with_logits else None
    return logp, aligned


@dataclass
class ResponseTokens:
    """A forward pass read at the response tokens of some steps (`(n, T)` step rows)."""

    log_probs: Tensor  # (n, T) log π(token | what came before), 0 off the mask
    logits: Tensor  # (n, T, V) the logits that predicted each token (÷ temperature); any off it


def response_log_probs(
    model: torch.nn.Module, ids: Tensor, mask: Tensor, index: StepIndex, temperature: float
) -> ResponseTokens:
    """The model's log-probs of the response tokens `index` addresses in `ids`.

    The rows' common prefix (the system prompt) runs once (`outputs_after`), and the
    softmax runs only at the response positions (prompt positions, often most of a
    row, are never normalised): the numbers are `token_log_probs` gathered with
    `index.tokens`, up to float rounding.
    """
    row, pos, keep = (t.to(ids.device) for t in (index.row, index.pos, index.mask))
    prefix = shared_prefix(ids, index.first_read())
    logits = outputs_after(model, ids, mask, prefix).logits.float()  # positions prefix…
    if temperature > 0 and temperature != 1.0:  # x / 1.0 is x: skip the copy
        logits = logits / temperature
    predicting = logits[row, (pos - 1 - prefix).clamp(min=0)]  # token p is predicted at p − 1
    targets = ids[row, pos]
    logp = torch.log_softmax(predicting, dim=-1).gather(-1, targets[..., None])[..., 0]
    return ResponseTokens(torch.where(keep, logp, 0.0), predicting)


SHARED_PREFIX_MIN = 16
"""Shorter common prefixes are not worth a forward pass of their own."""


def shared_prefix(ids: Tensor, limit: int) -> int:
    """How many leading tokens every row of `ids` shares, at most `limit` (0 if under
    `SHARED_PREFIX_MIN` or a single row): the task's system prompt, typically."""
    if ids.shape[0] < 2 or limit < SHARED_PREFIX_MIN:
        return 0
    differs = (ids[:, :limit] != ids[:1, :limit]).any(dim=0).nonzero()
    length = int(differs[0]) if len(differs) else limit
    return length if length >= SHARED_PREFIX_MIN else 0


def outputs_after(model: torch.nn.Module, ids: Tensor, mask: Tensor, prefix: int) -> Any:
    """The model's outputs at positions `prefix`… of right-padded rows that share their
    first `prefix` tokens: the prefix runs once, as one row, and every row continues from
    its keys and values (gradients flow back through them). `prefix` 0: a plain forward."""
    if prefix == 0:
        return model(input_ids=ids, attention_mask=mask)
    head = model(input_ids=ids[:1, :prefix], use_cache=True)
    cache = head.past_key_values
    cache.batch_repeat_interleave(ids.shape[0])
    return model(
        input_ids=ids[:, prefix:], attention_mask=mask, past_key_values=cache, use_cache=True
    )
