"""On-policy distillation (OPD): the student samples, a teacher scores.

Two forms:

- **Sampled (any backend).** A per-token advantage
  ``A_j = −β (log π_student(y_j) − log π_teacher(y_j))`` on the tokens the
  student sampled: the negative single-sample estimate of the reverse KL
  KL(π_student ‖ π_teacher) = E_{y∼π_student}[log π_student − log π_teacher]
  (Thinking Machines, "On-Policy Distillation", 2025; tinker-cookbook
  ``incorporate_kl_penalty``). The teacher's log-probs must be taken on the
  same prompt ids the student saw at that step (which the context policy
  decides), followed by the student's response ids. It is trained with any
  policy loss, alone or added to a task advantage.
- **Full distribution (local backend, teacher logits at hand).** A divergence
  between the teacher's and the student's next-token distributions at every
  response position, over the teacher's top-k tokens plus one bucket for the
  rest of the vocabulary: forward KL, reverse KL, or the generalised
  Jensen-Shannon divergence JSD(β) of GKD (Agarwal et al. 2024, "On-Policy
  Distillation of Language Models: Learning from Self-Generated Mistakes",
  arXiv:2306.13649, §3).

The ``opd`` advantage estimator (registered here) combines the sampled form
with an optional task advantage; the local backend's full-distribution loss
replaces its teacher term when ``opd_topk`` > 0.

Shapes: ``n`` step rows, ``T`` padded response length, ``V`` vocabulary, ``k``
teacher top-k.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Literal, get_args

import torch
from torch import Tensor

from agentspec.runtime.algorithms.advantages import (
    AdvantageConfig,
    _metrics,
    compute_advantages,
    register_estimator,
)
from agentspec.runtime.algorithms.batch import AdvantageOutput, StepBatch
from agentspec.runtime.algorithms.losses import LossOutput, aggregate

__all__ = [
    "Divergence",
    "add_opd_advantages",
    "opd",
    "opd_token_advantages",
    "teacher_topk",
    "topk_distillation_loss",
    "topk_divergence",
]

Divergence = Literal["forward_kl", "reverse_kl", "jsd"]

_LOG_FLOOR = -1e4  # log-probs below this are treated as probability 0 (exp underflows anyway)


def _upcast(x: Tensor) -> Tensor:
    """Half-precision inputs are computed in float32; float32/float64 are kept."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def opd_token_advantages(
    student_log_probs: Tensor, teacher_log_probs: Tensor, response_mask: Tensor, beta: float = 1.0
) -> Tensor:
    """Per-token OPD advantage ``A_j = −β (log π_student(y_j) − log π_teacher(y_j))``.

    Positive where the teacher likes the student's token more than the student
    does. Detached: it is an advantage, not a differentiable loss.

    Args:
        student_log_probs: ``(n, T)`` log-probs of the sampled tokens under the
            student that sampled them.
        teacher_log_probs: ``(n, T)`` log-probs of the same tokens under the teacher.
        response_mask: ``(n, T)`` bool.
        beta: β ≥ 0 (tinker-cookbook's ``kl_penalty_coef``, default 1).

    Returns:
        ``(n, T)``, 0 off the mask.
    """
    diff = (student_log_probs - teacher_log_probs).detach()
    return torch.where(response_mask, -beta * diff, diff.new_zeros(()))


def add_opd_advantages(
    task: AdvantageOutput, batch: StepBatch, *, beta: float = 1.0, task_weight: float = 1.0
) -> AdvantageOutput:
    """Mix a task advantage with OPD: ``A = task_weight · A_task + A_opd``.

    As the OPD "advantage shift" of slime / prime-rl and verl's PG-OPD with a
    task reward. ``batch.old_log_probs`` (the student's sampling log-probs) and
    ``batch.teacher_log_probs`` are required. Returns and metrics of ``task``
    are kept; ``opd/reverse_kl`` (mean log π_student − log π_teacher over
    response tokens) is added.

    Shapes: ``task.advantages (n, T)`` → ``(n, T)``.
    """
    if batch.old_log_probs is None or batch.teacher_log_probs is None:
        raise ValueError("add_opd_advantages needs batch.old_log_probs and batch.teacher_log_probs")
    opd = opd_token_advantages(
        batch.old_log_probs, batch.teacher_log_probs, batch.response_mask, beta
    )
    metrics = dict(task.metrics)
    if bool(batch.response_mask.any()):
        diff = (batch.old_log_probs - batch.teacher_log_probs)[batch.response_mask]
        metrics["opd/reverse_kl"] = float(diff.mean())
    return replace(task, advantages=task_weight * task.advantages + opd, metrics=metrics)


@register_estimator("opd", requires=("old_log_probs", "teacher_log_probs"))
def opd(batch: StepBatch, config: AdvantageConfig) -> AdvantageOutput:
    """On-policy distillation, optionally with a task advantage.

    ``A_j = −β (log π_student(y_j) − log π_teacher(y_j))`` on the tokens the
    student sampled, with the sampler's log-probs as the student's (see
    :func:`agentspec.runtime.algorithms.distillation.opd_token_advantages`), plus
    ``opd_task_weight`` × the advantage of ``opd_task_estimator`` (the mix of
    :func:`agentspec.runtime.algorithms.distillation.add_opd_advantages`). With
    ``opd_topk`` > 0 the teacher's term is a loss, not an advantage: the result is
    the weighted task advantage alone. ``opd/reverse_kl`` is logged either way.

    Metrics: those of the task estimator when it runs, else of the OPD advantage.

    Shapes: ``advantages (n, T)``; no returns.
    """
    assert batch.old_log_probs is not None and batch.teacher_log_probs is not None
    if config.opd_task_weight or config.opd_topk:
        task = compute_advantages(config.opd_task_estimator, batch, config)
        if config.opd_topk:
            mixed = replace(task, advantages=config.opd_task_weight * task.advantages)
        else:
            mixed = add_opd_advantages(
                task, batch, beta=config.opd_beta, task_weight=config.opd_task_weight
            )
        return replace(mixed, metrics={**mixed.metrics, **_reverse_kl(batch)})
    advantages = opd_token_advantages(
        batch.old_log_probs, batch.teacher_log_probs, batch.response_mask, config.opd_beta
    )
    metrics = {**_metrics(advantages, batch.response_mask), **_reverse_kl(batch)}
    return AdvantageOutput(advantages, None, metrics)


def _reverse_kl(batch: StepBatch) -> dict[str, float]:
    """``opd/reverse_kl``: mean log π_student − log π_teacher over the sampled tokens."""
    assert batch.old_log_probs is not None and batch.teacher_log_probs is not None
    if not batch.response_mask.any():
        return {}
    diff = (batch.old_log_probs - batch.teacher_log_probs)[batch.response_mask]
    return {"opd/reverse_kl": float(diff.mean())}


def teacher_topk(teacher_logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The teacher's top-k log-probs and token ids at every position.

    Shapes: ``(n, T, V)`` → ``(n, T, k)`` float log-probs, ``(n, T, k)`` int64 ids.
    """
    log_probs = torch.log_softmax(_upcast(teacher_logits), dim=-1)
    top = torch.topk(log_probs, k=k, dim=-1)
    return top.values, top.indices


def _bucket_log_probs(
    student_logits: Tensor, teacher_topk_log_probs: Tensor, teacher_topk_ids: Tensor
) -> tuple[Tensor, Tensor]:
    """Teacher and student log-probs over k + 1 buckets: the teacher's top-k ids and "the rest".

    Both are proper distributions over the same buckets (the rest bucket holds
    1 − Σ top-k probability), so every divergence below is ≥ 0 and, for
    k = V, equals the divergence of the full distributions. For k < V it is the
    divergence of the coarsened distributions, a lower bound of the full one
    (data-processing inequality).

    Shapes: ``(n, T, V)``, ``(n, T, k)``, ``(n, T, k)`` → two ``(n, T, k + 1)``.
    """
    s_all = torch.log_softmax(_upcast(student_logits), dim=-1)
    s_top = s_all.gather(-1, teacher_topk_ids)
    s_rest = s_all.scatter(-1, teacher_topk_ids, float("-inf")).logsumexp(dim=-1, keepdim=True)
    t_top = teacher_topk_log_probs.to(s_all.dtype)
    t_rest = torch.log1p(-t_top.exp().sum(dim=-1, keepdim=True).clamp(max=1.0))
    teacher = torch.cat([t_top, t_rest], dim=-1).clamp(min=_LOG_FLOOR)
    student = torch.cat([s_top, s_rest], dim=-1).clamp(min=_LOG_FLOOR)
    return teacher, student


def _kl(log_p: Tensor, log_q: Tensor) -> Tensor:
    """KL(p ‖ q) over the last axis from log-probs (terms with p = 0 are 0)."""
    p = log_p.exp()
    return torch.where(p > 0, p * (log_p - log_q), p.new_zeros(())).sum(dim=-1)


def topk_divergence(
    student_logits: Tensor,
    teacher_topk_log_probs: Tensor,
    teacher_topk_ids: Tensor,
    divergence: Divergence = "reverse_kl",
    beta: float = 0.5,
) -> Tensor:
    """Per-position divergence between teacher P and student Q over top-k + rest buckets.

    With M = β P + (1 − β) Q (GKD, Agarwal et al. 2024, arXiv:2306.13649; the same
    convention as TRL's ``generalized_jsd_loss``)::

        forward_kl:  KL(P ‖ Q) = Σ P log(P / Q)     mode-covering (supervised KD)
        reverse_kl:  KL(Q ‖ P) = Σ Q log(Q / P)     mode-seeking (the OPD objective)
        jsd:         β KL(P ‖ M) + (1 − β) KL(Q ‖ M),  0 < β < 1

    Gradients flow into ``student_logits`` only.

    Args:
        student_logits: ``(n, T, V)`` student logits at the response positions.
        teacher_topk_log_probs: ``(n, T, k)`` teacher log-probs of its top-k tokens
            (log-softmax over the full vocabulary, then top-k: see :func:`teacher_topk`).
        teacher_topk_ids: ``(n, T, k)`` int64 ids of those tokens.
        divergence: which divergence.
        beta: β of ``jsd``.

    Returns:
        ``(n, T)`` divergences.
    """
    teacher, student = _bucket_log_probs(
        student_logits, teacher_topk_log_probs.detach(), teacher_topk_ids
    )
    if divergence == "forward_kl":
        return _kl(teacher, student)
    if divergence == "reverse_kl":
        return _kl(student, teacher)
    if divergence == "jsd":
        if not 0.0 < beta < 1.0:
            raise ValueError(
                f"jsd needs 0 < beta < 1, got {beta} (use forward_kl or reverse_kl for the ends)"
            )
        mixture = torch.logsumexp(
            torch.stack([teacher + math.log(beta), student + math.log(1.0 - beta)]), dim=0
        )
        return beta * _kl(teacher, mixture) + (1.0 - beta) * _kl(student, mixture)
    raise ValueError(f"unknown divergence {divergence!r}; valid: {', '.join(get_args(Divergence))}")


def topk_distillation_loss(
    student_logits: Tensor,
    teacher_topk_log_probs: Tensor,
    teacher_topk_ids: Tensor,
    response_mask: Tensor,
    weights: Tensor,
    divergence: Divergence = "reverse_kl",
    beta: float = 0.5,
) -> LossOutput:
    """Full-distribution distillation loss ``Σ w · D_j`` over the student's own samples.

    ``D_j`` is :func:`topk_divergence` at response position j; ``weights``
    ``(n, T)`` come from :func:`~agentspec.runtime.algorithms.losses.aggregation_weights`.
    Positions outside ``response_mask`` get no loss and no gradient.

    Returns:
        ``LossOutput`` with ``token_loss (n, T)`` and ``distill/divergence``.
    """
    keep = response_mask.unsqueeze(-1)
    # padding may hold anything (NaN logits, out-of-range ids): neutralise it before any arithmetic
    logits = torch.where(keep, student_logits, student_logits.new_zeros(()))
    t_log_probs = torch.where(keep, teacher_topk_log_probs, teacher_topk_log_probs.new_zeros(()))
    t_ids = torch.where(keep, teacher_topk_ids, teacher_topk_ids.new_zeros(()))
    div = topk_divergence(logits, t_log_probs, t_ids, divergence, beta)
    div = torch.where(response_mask, div, div.new_zeros(()))
    loss = aggregate(div, weights.to(div.dtype))
    return LossOutput(loss, div, {"distill/divergence": float(loss.detach())})
