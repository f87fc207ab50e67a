"""On-policy distillation: the sampled advantage and the full-distribution (top-k) divergences."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from agentspec.runtime.algorithms import (
    AdvantageConfig,
    StepBatch,
    StepRow,
    aggregation_weights,
    collate_steps,
    compute_advantages,
    opd_token_advantages,
    teacher_topk,
    topk_distillation_loss,
    topk_divergence,
)

F64 = torch.float64
LOG = math.log


def test_opd_advantage_by_hand() -> None:
    student = torch.tensor([[LOG(0.5), LOG(0.1), -7.0]], dtype=F64)
    teacher = torch.tensor([[LOG(0.25), LOG(0.4), 3.0]], dtype=F64)
    mask = torch.tensor([[True, True, False]])
    adv = opd_token_advantages(student, teacher, mask, beta=2.0)
    # −2·(log 0.5 − log 0.25) = −2 log 2 (teacher likes it less); −2·(log 0.1 − log 0.4) = +2 log 4
    torch.testing.assert_close(adv, torch.tensor([[-2 * LOG(2), 2 * LOG(4), 0.0]], dtype=F64))


def _probs_logits(rows: list[list[float]]) -> torch.Tensor:
    return (
        torch.tensor(rows, dtype=F64).log().unsqueeze(0)
    )  # (1, T, V) logits whose softmax is rows


def test_topk_divergences_by_hand() -> None:
    # V = 3. Student q = [½, ¼, ¼]; teacher p = [¼, ½, ¼]; teacher top-1 is token 1 (p = ½).
    # Buckets {token 1, rest}: teacher [½, ½], student [¼, ¾].
    student_logits = _probs_logits([[0.5, 0.25, 0.25]])
    t_lp, t_ids = teacher_topk(_probs_logits([[0.25, 0.5, 0.25]]), k=1)
    assert t_ids.tolist() == [[[1]]]
    fwd = topk_divergence(student_logits, t_lp, t_ids, "forward_kl")
    # KL(P‖Q) = ½ log(½/¼) + ½ log(½/¾) = ½ log(4/3)
    assert fwd.item() == pytest.approx(0.5 * LOG(4 / 3))
    rev = topk_divergence(student_logits, t_lp, t_ids, "reverse_kl")
    # KL(Q‖P) = ¼ log(¼/½) + ¾ log(¾/½)
    assert rev.item() == pytest.approx(0.25 * LOG(0.5) + 0.75 * LOG(1.5))
    jsd = topk_divergence(student_logits, t_lp, t_ids, "jsd", beta=0.5)
    # M = ½P + ½Q = [3/8, 5/8]; JSD = ½ KL(P‖M) + ½ KL(Q‖M)
    kl_pm = 0.5 * LOG(0.5 / 0.375) + 0.5 * LOG(0.5 / 0.625)
    kl_qm = 0.25 * LOG(0.25 / 0.375) + 0.75 * LOG(0.75 / 0.625)
    assert jsd.item() == pytest.approx(0.5 * kl_pm + 0.5 * kl_qm)


@pytest.mark.parametrize("seed", range(3))
def test_full_vocabulary_topk_equals_exact_divergences(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    s_logits = torch.randn((2, 3, 7), generator=gen, dtype=F64)
    t_logits = torch.randn((2, 3, 7), generator=gen, dtype=F64)
    t_lp, t_ids = teacher_topk(t_logits, k=7)  # k = V: the rest bucket is empty
    p, q = t_logits.log_softmax(-1), s_logits.log_softmax(-1)
    fwd = F.kl_div(q, p, reduction="none", log_target=True).sum(-1)  # KL(P‖Q)
    rev = F.kl_div(p, q, reduction="none", log_target=True).sum(-1)  # KL(Q‖P)
    torch.testing.assert_close(
        topk_divergence(s_logits, t_lp, t_ids, "forward_kl"), fwd, atol=1e-6, rtol=1e-5
    )
    torch.testing.assert_close(
        topk_divergence(s_logits, t_lp, t_ids, "reverse_kl"), rev, atol=1e-6, rtol=1e-5
    )
    beta = 0.3
    m = torch.logsumexp(torch.stack([p + LOG(beta), q + LOG(1 - beta)]), dim=0)
    jsd = beta * F.kl_div(m, p, reduction="none", log_target=True).sum(-1) + (1 - beta) * F.kl_div(
        m, q, reduction="none", log_target=True
    ).sum(-1)
    torch.testing.assert_close(
        topk_divergence(s_logits, t_lp, t_ids, "jsd", beta), jsd, atol=1e-6, rtol=1e-5
    )


@pytest.mark.parametrize("divergence", ["forward_kl", "reverse_kl", "jsd"])
def test_topk_divergence_is_nonnegative_and_zero_at_the_teacher(divergence: str) -> None:
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn((2, 4, 11), generator=gen, dtype=F64)
    t_lp, t_ids = teacher_topk(logits, k=3)
    same = topk_divergence(logits, t_lp, t_ids, divergence)  # type: ignore[arg-type]
    torch.testing.assert_close(same, torch.zeros_like(same), atol=1e-10, rtol=0)
    other = topk_divergence(
        torch.randn((2, 4, 11), generator=gen, dtype=F64), t_lp, t_ids, divergence
    )  # type: ignore[arg-type]
    assert bool((other >= -1e-12).all()) and bool((other > 0).any())


def test_topk_loss_ignores_padding_and_trains_only_the_student() -> None:
    gen = torch.Generator().manual_seed(2)
    s_logits = torch.randn((2, 3, 5), generator=gen, dtype=F64)
    t_lp, t_ids = teacher_topk(torch.randn((2, 3, 5), generator=gen, dtype=F64), k=2)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    w = aggregation_weights(mask, torch.tensor([0, 1]), "trajectory-mean", dtype=F64)
    # padding: NaN logits, garbage teacher values and out-of-range ids
    s_pad = s_logits.clone()
    s_pad[~mask] = float("nan")
    t_lp_pad, t_ids_pad = t_lp.clone(), t_ids.clone()
    t_lp_pad[~mask] = 5.0
    t_ids_pad[~mask] = 10_000
    s_pad.requires_grad_()
    out = topk_distillation_loss(s_pad, t_lp_pad, t_ids_pad, mask, w, "reverse_kl")
    ref = topk_distillation_loss(s_logits, t_lp, t_ids, mask, w, "reverse_kl")
    torch.testing.assert_close(out.loss, ref.loss)
    out.loss.backward()
    assert s_pad.grad is not None
    assert torch.isfinite(s_pad.grad).all()
    assert torch.count_nonzero(s_pad.grad[~mask]) == 0
    # the loss is the weighted per-position divergence: (D00 + D01)/4 + D10/2
    d = topk_divergence(s_logits, t_lp, t_ids, "reverse_kl")
    assert out.loss.item() == pytest.approx(((d[0, 0] + d[0, 1]) / 4 + d[1, 0] / 2).item())


def test_jsd_needs_beta_strictly_between_0_and_1() -> None:
    logits = torch.zeros((1, 1, 3))
    t_lp, t_ids = teacher_topk(logits, k=2)
    with pytest.raises(ValueError, match="0 < beta < 1"):
        topk_divergence(logits, t_lp, t_ids, "jsd", beta=1.0)


def _opd_batch() -> StepBatch:
    # two trajectories of one prompt group, rewards 1 and 0: GRPO gives them ±1/√2 · …
    rows = [
        StepRow("a", 0, "g", 1.0, response_length=2, old_log_probs=[-1.0, -2.0],
                teacher_log_probs=[-1.5, -1.0]),
        StepRow("b", 0, "g", 0.0, response_length=1, old_log_probs=[-0.5],
                teacher_log_probs=[-0.25]),
    ]  # fmt: skip
    return collate_steps(rows, dtype=F64)


def test_opd_estimator_adds_the_weighted_task_advantage() -> None:
    batch = _opd_batch()
    config = AdvantageConfig(opd_beta=0.5, opd_task_weight=0.5)
    task = compute_advantages("grpo", batch, config).advantages
    out = compute_advantages("opd", batch, config)
    # A = 0.5 · A_grpo − 0.5 (log π_s − log π_t)
    teacher_term = torch.tensor([[-0.25, 0.5], [0.125, 0.0]], dtype=F64)
    torch.testing.assert_close(out.advantages, 0.5 * task + teacher_term)
    # the reverse KL estimate: mean of (0.5, −1, −0.25) over the three sampled tokens
    assert out.metrics["opd/reverse_kl"] == pytest.approx(-0.25)
    assert out.metrics["adv/mean"] == pytest.approx(float(task[batch.response_mask].mean()))


def test_opd_estimator_with_the_topk_loss_keeps_only_the_task_term() -> None:
    batch = _opd_batch()
    task = compute_advantages("grpo", batch, AdvantageConfig()).advantages
    for weight in (0.0, 0.5):
        config = AdvantageConfig(opd_beta=0.5, opd_task_weight=weight, opd_topk=8)
        out = compute_advantages("opd", batch, config)
        torch.testing.assert_close(out.advantages, weight * task)  # the teacher is in the loss
        assert out.metrics["opd/reverse_kl"] == pytest.approx(-0.25)
    other = AdvantageConfig(opd_task_weight=1.0, opd_task_estimator="rloo")
    rloo = compute_advantages("rloo", batch, other).advantages
    sampled = compute_advantages("opd", batch, replace(other, opd_task_weight=0.0)).advantages
    torch.testing.assert_close(compute_advantages("opd", batch, other).advantages, rloo + sampled)


@pytest.mark.parametrize("bad", [{"opd_task_weight": -1.0}, {"opd_topk": -1}])
def test_opd_config_rejects_negative_settings(bad: dict) -> None:
    with pytest.raises(ValueError):
        AdvantageConfig(**bad)
