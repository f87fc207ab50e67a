"""Shared test helpers: random ragged step batches, padding/holes, and plain-loop references.

The reference implementations below are deliberately naive: Python floats,
one trajectory at a time, written straight from the formulas. The vectorised
estimators are checked against them.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import replace

import torch

from agentspec.runtime.algorithms import StepBatch, StepRow, collate_steps

TOKEN_FIELDS = ("token_values", "old_log_probs", "log_probs", "teacher_log_probs")


def random_rows(
    seed: int,
    *,
    n_groups: int = 3,
    max_group: int = 4,
    max_steps: int = 5,
    max_len: int = 6,
    n_anchors: int = 3,
    empty_steps: bool = False,
) -> list[StepRow]:
    """Random ragged trajectories in prompt groups, rows shuffled.

    Rewards are sparse-ish, anchors come from a small set (so anchor groups
    recur), log-probs are negative. With ``empty_steps`` some steps have no
    response tokens.
    """
    rng = random.Random(seed)
    rows: list[StepRow] = []
    for g in range(n_groups):
        for k in range(rng.randint(1, max_group)):
            traj = f"g{g}-t{k}"
            for s in range(rng.randint(1, max_steps)):
                lo = 0 if empty_steps and rng.random() < 0.2 else 1
                n = rng.randint(lo, max_len)
                rows.append(
                    StepRow(
                        traj_id=traj,
                        step_index=s,
                        group_id=f"g{g}",
                        reward=rng.choice([0.0, 0.0, 1.0, -0.5, rng.uniform(-1, 2)]),
                        response_length=n,
                        anchor=("state", rng.randrange(n_anchors)),
                        value=rng.uniform(-1, 1),
                        token_values=[rng.uniform(-1, 1) for _ in range(n)],
                        old_log_probs=[-rng.uniform(0.05, 3) for _ in range(n)],
                        log_probs=[-rng.uniform(0.05, 3) for _ in range(n)],
                        teacher_log_probs=[-rng.uniform(0.05, 3) for _ in range(n)],
                    )
                )
    rng.shuffle(rows)
    return rows


def fill_padding(batch: StepBatch, value: float = float("nan")) -> StepBatch:
    """Put ``value`` in every float token tensor outside the mask (padding must never be read)."""
    mask = batch.response_mask
    kw = {}
    for name in TOKEN_FIELDS:
        t = getattr(batch, name)
        if t is not None:
            kw[name] = torch.where(mask, t, torch.full_like(t, value))
    return replace(batch, **kw)


def spread_with_holes(
    batch: StepBatch, seed: int, extra: int = 4
) -> tuple[StepBatch, torch.Tensor]:
    """Widen every row by ``extra`` masked slots inserted at random places (observation tokens
    inside a packed row, or padding), holding garbage.

    Returns the new batch and ``cols (n, T)``: where each original column went (-1 if unused).
    """
    rng = random.Random(seed)
    n, width = batch.response_mask.shape
    new_w = width + extra
    cols = torch.full((n, width), -1, dtype=torch.int64)
    for i in range(n):
        slots = sorted(rng.sample(range(new_w), width))
        cols[i] = torch.tensor(slots, dtype=torch.int64)
    rows = torch.arange(n).unsqueeze(1).expand(n, width)
    mask = torch.zeros((n, new_w), dtype=torch.bool)
    mask[rows, cols] = batch.response_mask
    kw: dict[str, object] = {"response_mask": mask}
    gen = torch.Generator().manual_seed(seed)
    for name in TOKEN_FIELDS:
        t = getattr(batch, name)
        if t is None:
            continue
        out = torch.randn((n, new_w), generator=gen, dtype=t.dtype) * 1e3  # garbage
        out[rows, cols] = t
        out = torch.where(mask, out, torch.full_like(out, float("nan")))
        kw[name] = out
    return replace(batch, **kw), cols


def regather(x: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Undo :func:`spread_with_holes` on an ``(n, T + extra)`` tensor."""
    return x.gather(1, cols)


def add_padding_rows(rows: list[StepRow], count: int, seed: int) -> list[StepRow]:
    """Append ``count`` padding rows: empty responses, each its own trajectory and group."""
    rng = random.Random(seed)
    pads = [
        StepRow(
            traj_id=f"pad{i}",
            step_index=0,
            group_id=f"padgroup{i}",
            reward=rng.uniform(-5, 5),
            response_length=0,
            anchor=("state", 0),
            value=rng.uniform(-5, 5),
            token_values=[],
            old_log_probs=[],
            log_probs=[],
            teacher_log_probs=[],
        )
        for i in range(count)
    ]
    return rows + pads


def batch_of(rows: list[StepRow], **kw: object) -> StepBatch:
    return collate_steps(rows, dtype=torch.float64, **kw)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------
# plain-loop references
# ----------------------------------------------------------------------------


def by_trajectory(rows: list[StepRow]) -> dict[object, list[int]]:
    """Row indices of each trajectory, in step order."""
    out: dict[object, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        out[r.traj_id].append(i)
    return {k: sorted(v, key=lambda i: rows[i].step_index) for k, v in out.items()}


def _whiten(xs: list[float]) -> list[float]:
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    return [(x - mean) / math.sqrt(var + 1e-8) for x in xs]


def loop_step_gae(rows: list[StepRow], gamma: float, lam: float, whiten: bool):
    """Per-row (advantage, return) from the step GAE recursion, one trajectory at a time."""
    adv = [0.0] * len(rows)
    ret = [0.0] * len(rows)
    for idx in by_trajectory(rows).values():
        last = 0.0
        for pos in reversed(range(len(idx))):
            i = idx[pos]
            next_v = rows[idx[pos + 1]].value if pos + 1 < len(idx) else 0.0
            delta = rows[i].reward + gamma * next_v - rows[i].value
            last = delta + gamma * lam * last
            adv[i] = last
            ret[i] = last + rows[i].value
    if whiten:
        valid = [i for i, r in enumerate(rows) if r.length() > 0]
        for i, a in zip(valid, _whiten([adv[i] for i in valid]), strict=True):
            adv[i] = a
    return adv, ret


def loop_token_gae(rows: list[StepRow], gamma: float, lam: float, whiten: bool):
    """Per-token (advantage, return) lists of lists, by concatenating each trajectory's tokens."""
    adv = [[0.0] * r.length() for r in rows]
    ret = [[0.0] * r.length() for r in rows]
    for idx in by_trajectory(rows).values():
        seq = []  # (row, col, value, reward)
        for i in idx:
            for j in range(rows[i].length()):
                seq.append([i, j, rows[i].token_values[j], 0.0])
            if seq:  # reward on the last token so far (dropped if no token yet)
                seq[-1][3] += rows[i].reward
        last, next_v = 0.0, 0.0
        for i, j, v, r in reversed(seq):
            delta = r + gamma * next_v - v
            last = delta + gamma * lam * last
            adv[i][j] = last
            ret[i][j] = last + v
            next_v = v
    if whiten:
        flat = [a for row in adv for a in row]
        white = iter(_whiten(flat))
        adv = [[next(white) for _ in row] for row in adv]
    return adv, ret


def _group_norm(xs: list[float], norm_by_std: bool, eps: float) -> list[float]:
    n = len(xs)
    if n < 2:
        return [0.0] * n
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return [(x - mean) / (std + eps) if norm_by_std else x - mean for x in xs]


def loop_gigpo(rows: list[StepRow], gamma: float, omega: float, norm_by_std: bool, eps: float):
    """Per-row GiGPO advantage from nested dicts of groups."""
    trajs = by_trajectory(rows)
    valid_traj = {t for t, idx in trajs.items() if any(rows[i].length() > 0 for i in idx)}
    # episode level
    episode: dict[object, float] = {}
    groups: dict[object, list[object]] = defaultdict(list)
    for t in valid_traj:
        groups[rows[trajs[t][0]].group_id].append(t)
    for members in groups.values():
        returns = [sum(rows[i].reward for i in trajs[t]) for t in members]
        for t, a in zip(members, _group_norm(returns, norm_by_std, eps), strict=True):
            episode[t] = a
    # step returns
    step_ret = [0.0] * len(rows)
    for idx in trajs.values():
        running = 0.0
        for i in reversed(idx):
            running = rows[i].reward + gamma * running
            step_ret[i] = running
    anchor_groups: dict[tuple[object, object], list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        if r.length() > 0:
            anchor_groups[(r.group_id, r.anchor)].append(i)
    step_adv = [0.0] * len(rows)
    for members in anchor_groups.values():
        for i, a in zip(
            members, _group_norm([step_ret[i] for i in members], norm_by_std, eps), strict=True
        ):
            step_adv[i] = a
    out = [episode.get(r.traj_id, 0.0) + omega * step_adv[i] for i, r in enumerate(rows)]
    sizes = [len(m) for m in anchor_groups.values()]
    return out, sum(sizes) / len(sizes)


def loop_episode_group(rows: list[StepRow], kind: str, norm_by_std: bool = True, eps: float = 1e-6):
    """Per-row GRPO or RLOO advantage."""
    trajs = by_trajectory(rows)
    groups: dict[object, list[object]] = defaultdict(list)
    for t, idx in trajs.items():
        if any(rows[i].length() > 0 for i in idx):
            groups[rows[idx[0]].group_id].append(t)
    per_traj: dict[object, float] = {}
    for members in groups.values():
        rets = [sum(rows[i].reward for i in trajs[t]) for t in members]
        k = len(rets)
        if kind == "grpo":
            advs = _group_norm(rets, norm_by_std, eps)
        elif k < 2:
            advs = [0.0]
        else:  # rloo: minus the mean of the others
            advs = [r - (sum(rets) - r) / (k - 1) for r in rets]
        per_traj.update(zip(members, advs, strict=True))
    return [per_traj.get(r.traj_id, 0.0) for r in rows]


def loop_reinforce(rows: list[StepRow], gamma: float, batch_baseline: bool):
    out = [0.0] * len(rows)
    for idx in by_trajectory(rows).values():
        running = 0.0
        for i in reversed(idx):
            running = rows[i].reward + gamma * running
            out[i] = running
    if batch_baseline:
        valid = [out[i] for i, r in enumerate(rows) if r.length() > 0]
        mean = sum(valid) / len(valid)
        out = [g - mean for g in out]
    return out


def expand(per_row: list[float], rows: list[StepRow], width: int) -> torch.Tensor:
    """Broadcast per-row values to a left-aligned ``(n, width)`` tensor (0 past each response)."""
    out = torch.zeros((len(rows), width), dtype=torch.float64)
    for i, (v, r) in enumerate(zip(per_row, rows, strict=True)):
        out[i, : r.length()] = v
    return out


def ragged(per_token: list[list[float]], width: int) -> torch.Tensor:
    out = torch.zeros((len(per_token), width), dtype=torch.float64)
    for i, row in enumerate(per_token):
        out[i, : len(row)] = torch.tensor(row, dtype=torch.float64)
    return out
