"""Whitening and group-relative normalisation, shared by the advantage estimators.

Both are computed in float64 and give exactly 0 where the values carry no
information (a batch or group whose valid values are all equal, a group of one):
rounding must never turn into a signal no trajectory earned.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["group_deviation_std_count", "group_normalize", "whiten"]


def whiten(x: Tensor, valid: Tensor, eps: float = 1e-8) -> Tensor:
    """Whiten ``x`` with the mean and unbiased variance of its ``valid`` entries.

    ``(x − μ) / sqrt(σ² + eps)`` as verl's ``masked_whiten``; with fewer than two
    valid entries the variance is taken as 0. Invalid entries are set to 0.

    The statistics are taken in float64 and a batch whose valid entries are all
    equal whitens to exactly 0: in float32 the mean of equal values can be off
    by one rounding unit, and ``1/sqrt(σ² + eps)`` would amplify that into a
    signal no trajectory earned.

    Args:
        x: any shape.
        valid: bool, same shape as ``x``.
    """
    x64 = torch.where(valid, x.double(), 0.0)  # invalid entries may hold anything, even NaN
    vals = x64[valid]
    if vals.numel() == 0 or bool(vals.min() == vals.max()):
        return torch.zeros_like(x)
    n = valid.sum()
    centered = torch.where(valid, x64 - vals.sum() / n, 0.0)
    var = centered.square().sum() / (n - 1).clamp(min=1)
    return (centered * torch.rsqrt(var + eps)).to(x.dtype)


def group_deviation_std_count(
    x: Tensor, keys: Tensor, valid: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Each element's deviation from its group mean, the group's unbiased std and size.

    Computed in float64, and exactly 0 (deviation and std) in a group whose
    valid values are all equal: a group of equal returns carries no
    information, and rounding must not turn it into one.

    Args:
        x: ``(m,)`` float.
        keys: ``(m,)`` or ``(m, k)`` int64; equal keys (rows) form a group.
        valid: ``(m,)`` bool; invalid elements neither count nor contribute.

    Returns:
        three ``(m,)`` float64 tensors: ``x − mean_G`` (0 for invalid
        elements), std (0 for groups of one), count.
    """
    inv = torch.unique(keys, dim=0, return_inverse=True)[1]
    g = int(inv.max().item()) + 1 if inv.numel() else 0
    x64 = torch.where(valid, x.double(), 0.0)  # invalid entries may hold anything, even NaN
    w = valid.double()
    count = x64.new_zeros(g).index_add_(0, inv, w)
    mean = x64.new_zeros(g).index_add_(0, inv, x64) / count.clamp(min=1)
    inf = torch.full((g,), float("inf"), dtype=torch.float64)
    lo = inf.scatter_reduce(0, inv, torch.where(valid, x64, float("inf")), "amin")
    hi = (-inf).scatter_reduce(0, inv, torch.where(valid, x64, float("-inf")), "amax")
    varies = (lo != hi)[inv] & valid
    dev = torch.where(varies, x64 - mean[inv], 0.0)
    var = x64.new_zeros(g).index_add_(0, inv, dev * dev) / (count - 1).clamp(min=1)
    return dev, var.sqrt()[inv], count[inv]


def group_normalize(
    x: Tensor, keys: Tensor, valid: Tensor, *, norm_by_std: bool, epsilon: float
) -> tuple[Tensor, Tensor]:
    """Group-relative score ``(x − mean_G) / (std_G + ε)`` (or ``x − mean_G``).

    Groups of one valid element (no baseline available), groups of equal
    values and invalid elements get exactly 0.

    Args:
        x: ``(m,)`` float scores.
        keys: ``(m,)`` or ``(m, k)`` int64 group keys.
        valid: ``(m,)`` bool.

    Returns:
        the normalised scores ``(m,)`` (``x``'s dtype) and each element's group size ``(m,)``.
    """
    dev, std, count = group_deviation_std_count(x, keys, valid)
    out = dev / (std + epsilon) if norm_by_std else dev
    out = out * (count > 1)
    return out.to(x.dtype), count.to(x.dtype)
