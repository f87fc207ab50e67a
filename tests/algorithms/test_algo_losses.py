"""Golden and gradient tests of the policy losses, aggregation, entropy, KL and value loss."""

from __future__ import annotations

import math

import pytest
import torch

from agentspec.runtime.algorithms import (
    AGGREGATION_MODES,
    POLICY_LOSSES,
    PolicyLossConfig,
    UnknownNameError,
    actor_loss,
    aggregation_weights,
    entropy_from_logits,
    kl_divergence,
    policy_loss,
    value_loss,
)

F64 = torch.float64
LOG = math.log


def t(x: list) -> torch.Tensor:
    return torch.tensor(x, dtype=F64)


def test_aggregation_weights_by_hand() -> None:
    # trajectory a: step 0 has 2 tokens, step 1 has 1 token; trajectory b: one step of 3 tokens.
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    traj = torch.tensor([7, 7, 3])
    w = aggregation_weights(mask, traj, "trajectory-mean", dtype=F64)
    # N = 2 trajectories; a: 2 steps → each step 1/4 → tokens 1/8, 1/8 and 1/4; b: 1/2 over 3 tokens
    torch.testing.assert_close(w, t([[1 / 8, 1 / 8, 0], [1 / 4, 0, 0], [1 / 6, 1 / 6, 1 / 6]]))
    w = aggregation_weights(mask, traj, "step-mean", dtype=F64)
    # 3 steps, each 1/3, split over its tokens
    torch.testing.assert_close(w, t([[1 / 6, 1 / 6, 0], [1 / 3, 0, 0], [1 / 9, 1 / 9, 1 / 9]]))
    w = aggregation_weights(mask, traj, "token-mean", dtype=F64)
    # 6 tokens, 1/6 each
    torch.testing.assert_close(w, t([[1 / 6, 1 / 6, 0], [1 / 6, 0, 0], [1 / 6, 1 / 6, 1 / 6]]))
    with pytest.raises(ValueError, match="valid modes: token-mean, step-mean, trajectory-mean"):
        aggregation_weights(mask, traj, "seq-mean")  # type: ignore[arg-type]


def test_ten_step_trajectory_weighs_as_much_as_one_step() -> None:
    # 10 steps of 1..10 tokens in trajectory 0, one step of 4 tokens in trajectory 1
    lengths = [*range(1, 11), 4]
    mask = torch.zeros((11, 10), dtype=torch.bool)
    for i, n in enumerate(lengths):
        mask[i, :n] = True
    traj = torch.tensor([0] * 10 + [1])
    w = aggregation_weights(mask, traj, "trajectory-mean", dtype=F64)
    assert w[:10].sum().item() == pytest.approx(0.5)
    assert w[10].sum().item() == pytest.approx(0.5)
    # inside the long trajectory every step has the same weight 1/20
    torch.testing.assert_close(w[:10].sum(dim=1), torch.full((10,), 1 / 20, dtype=F64))


def test_ppo_clip_by_hand() -> None:
    # one row, three tokens with ratios r = [1.5, 0.5, 1.1] and advantages A = [1, −1, 2], ε = 0.2
    old = t([[0.0, 0.0, 0.0]]) - 1.0
    logp = (old + t([[LOG(1.5), LOG(0.5), LOG(1.1)]])).requires_grad_()
    adv = t([[1.0, -1.0, 2.0]])
    mask = torch.ones((1, 3), dtype=torch.bool)
    w = aggregation_weights(mask, torch.zeros(1, dtype=torch.int64), "token-mean", dtype=F64)
    out = policy_loss("ppo_clip", logp, old, adv, mask, w, PolicyLossConfig())
    # token 0: max(−1·1.5, −1·1.2) = −1.2   (clipped above)
    # token 1: max(+1·0.5, +1·0.8) = +0.8   (clipped below, A < 0)
    # token 2: max(−2·1.1, −2·1.1) = −2.2   (inside the range)
    torch.testing.assert_close(out.token_loss, t([[-1.2, 0.8, -2.2]]))
    torch.testing.assert_close(out.loss, torch.tensor((-1.2 + 0.8 - 2.2) / 3, dtype=F64))
    assert out.metrics["actor/clipfrac"] == pytest.approx(2 / 3)
    out.loss.backward()
    # clipped tokens have no gradient; token 2: d(−A r)/d log π = −A r = −2.2, times weight 1/3
    torch.testing.assert_close(logp.grad, t([[0.0, 0.0, -2.2 / 3]]))


def test_ppo_dual_clip_by_hand() -> None:
    # A = −1, r = 5: PPO gives max(5, 1.2) = 5; dual clip caps it at −A·c = 3 (and kills the gradient)
    old = t([[-2.0, -2.0]])
    logp = (old + t([[LOG(5.0), LOG(1.1)]])).requires_grad_()
    adv = t([[-1.0, -1.0]])
    mask = torch.ones((1, 2), dtype=torch.bool)
    w = t([[0.5, 0.5]])
    out = policy_loss("ppo_clip", logp, old, adv, mask, w, PolicyLossConfig(dual_clip_c=3.0))
    # token 1: r = 1.1 inside the range: −A r = 1.1
    torch.testing.assert_close(out.token_loss, t([[3.0, 1.1]]))
    assert out.metrics["actor/clipfrac_lower"] == pytest.approx(0.5)
    out.loss.backward()
    torch.testing.assert_close(logp.grad, t([[0.0, 0.5 * 1.1]]))
    plain = policy_loss("ppo_clip", logp.detach(), old, adv, mask, w, PolicyLossConfig())
    torch.testing.assert_close(plain.token_loss, t([[5.0, 1.1]]))


def test_steppo_by_hand() -> None:
    # step 0: token ratios [2, 0.5] → geometric mean s = sqrt(2·0.5) = 1, A = +1 → ℓ = −1
    # step 1: token ratios [2, 2]   → s = 2, A = +1, clipped at 1.2 → ℓ = −1.2, no gradient
    # step 2: token ratios [2, 2]   → s = 2, A = −1: max(2, 1.2) = 2 (pessimistic side, unclipped)
    old = torch.full((3, 2), -1.0, dtype=F64)
    logp = (old + t([[LOG(2), LOG(0.5)], [LOG(2), LOG(2)], [LOG(2), LOG(2)]])).requires_grad_()
    adv = t([[1.0, 1.0], [1.0, 1.0], [-1.0, -1.0]])
    mask = torch.ones((3, 2), dtype=torch.bool)
    traj = torch.arange(3)
    w = aggregation_weights(mask, traj, "trajectory-mean", dtype=F64)  # 1/6 per token
    out = policy_loss("steppo", logp, old, adv, mask, w, PolicyLossConfig())
    torch.testing.assert_close(out.token_loss, t([[-1.0, -1.0], [-1.2, -1.2], [2.0, 2.0]]))
    torch.testing.assert_close(out.loss, torch.tensor((-1.0 - 1.2 + 2.0) / 3, dtype=F64))
    assert out.metrics["actor/clipfrac"] == pytest.approx(1 / 3)
    # a token clip would cut the two tokens of step 1 and the first of step 0 (A > 0, ratio
    # 2 > 1.2), not 0.5 under A > 0 nor step 2's (A < 0: the unclipped side is the larger loss)
    ppo = policy_loss("ppo_clip", logp, old, adv, mask, w, PolicyLossConfig())
    assert out.metrics["actor/token_clipfrac"] == pytest.approx(3 / 6)
    assert out.metrics["actor/token_clipfrac"] == ppo.metrics["actor/clipfrac"]
    out.loss.backward()
    # ∂ℓ_step/∂log π_j = −A s / |y| per token, times the step weight 1/3:
    # step 0: −1·1/2·1/3 = −1/6; step 1: 0 (clipped); step 2: +1·2/2·1/3 = 1/3
    torch.testing.assert_close(logp.grad, t([[-1 / 6, -1 / 6], [0.0, 0.0], [1 / 3, 1 / 3]]))


def _steppo_value(
    logp: torch.Tensor,
    old: torch.Tensor,
    adv_step: torch.Tensor,
    mask: torch.Tensor,
    w_step: torch.Tensor,
    eps_low: float,
    eps_high: float,
) -> float:
    """The step-level objective Σ_i W_i max(−A_i s_i, −A_i clip(s_i)) computed directly."""
    total = 0.0
    for i in range(logp.shape[0]):
        m = mask[i]
        s = math.exp(float((logp[i][m] - old[i][m]).mean()))
        a = float(adv_step[i])
        total += float(w_step[i]) * max(-a * s, -a * min(max(s, 1 - eps_low), 1 + eps_high))
    return total


@pytest.mark.parametrize("seed", range(4))
def test_steppo_gradient_matches_finite_differences(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    n, width = 5, 6
    lengths = torch.randint(1, width + 1, (n,), generator=gen)
    mask = torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)
    old = -torch.rand((n, width), generator=gen, dtype=F64) * 2 - 0.1
    logp0 = old + torch.randn((n, width), generator=gen, dtype=F64) * 0.05
    # make the last step clearly clipped: all its tokens 40% more likely, positive advantage
    logp0[-1] = old[-1] + LOG(1.4)
    adv_step = torch.randn(n, generator=gen, dtype=F64)
    adv_step[-1] = abs(adv_step[-1]) + 0.5
    adv = adv_step.unsqueeze(1).expand(n, width).clone()
    traj = torch.tensor([0, 0, 1, 2, 2])
    w = aggregation_weights(mask, traj, "trajectory-mean", dtype=F64)
    cfg = PolicyLossConfig(clip_low=0.2, clip_high=0.25)

    logp = logp0.clone().requires_grad_()
    out = policy_loss("steppo", logp, old, adv, mask, w, cfg)
    out.loss.backward()
    assert logp.grad is not None
    w_step = w.sum(dim=1)
    assert out.loss.item() == pytest.approx(
        _steppo_value(logp0, old, adv_step, mask, w_step, 0.2, 0.25)
    )

    h = 1e-6
    fd = torch.zeros_like(logp0)
    for i in range(n):
        for j in range(width):
            if not mask[i, j]:
                continue
            plus, minus = logp0.clone(), logp0.clone()
            plus[i, j] += h
            minus[i, j] -= h
            fd[i, j] = (
                _steppo_value(plus, old, adv_step, mask, w_step, 0.2, 0.25)
                - _steppo_value(minus, old, adv_step, mask, w_step, 0.2, 0.25)
            ) / (2 * h)
    torch.testing.assert_close(logp.grad, fd, atol=1e-7, rtol=1e-5)
    assert torch.count_nonzero(logp.grad[-1]) == 0  # the clipped step carries no gradient
    assert torch.count_nonzero(logp.grad[~mask]) == 0


def test_reinforce_loss_by_hand() -> None:
    logp = t([[LOG(0.5), LOG(0.25)]]).requires_grad_()
    adv = t([[2.0, -1.0]])
    mask = torch.tensor([[True, True]])
    out = policy_loss(
        "reinforce", logp, logp.detach(), adv, mask, t([[0.5, 0.5]]), PolicyLossConfig()
    )
    # ℓ = −A log π = [−2·log 0.5, +1·log 0.25] = [2 log 2, −2 log 2] → mean 0
    torch.testing.assert_close(out.token_loss, t([[2 * LOG(2), -2 * LOG(2)]]))
    out.loss.backward()
    torch.testing.assert_close(logp.grad, t([[-1.0, 0.5]]))  # −A · w


def test_kl_estimators_by_hand() -> None:
    # π(y) = 0.5, π_ref(y) = 0.25: log r = log(0.25/0.5) = −log 2, r = 0.5
    logp, ref = t([LOG(0.5)]), t([LOG(0.25)])
    assert kl_divergence(logp, ref, "k1").item() == pytest.approx(LOG(2))  # −log r
    assert kl_divergence(logp, ref, "k2").item() == pytest.approx(0.5 * LOG(2) ** 2)  # ½ (log r)²
    assert kl_divergence(logp, ref, "k3").item() == pytest.approx(0.5 - 1 + LOG(2))  # r − 1 − log r


def test_kl_estimators_are_unbiased_or_not_as_documented() -> None:
    # Sample y ~ π over 4 tokens; E[k1] = E[k3] = KL(π‖π_ref), E[k2] ≠ KL in general.
    p = t([0.1, 0.2, 0.3, 0.4])
    q = t([0.4, 0.3, 0.2, 0.1])
    exact = float((p * (p / q).log()).sum())
    logp, ref = p.log(), q.log()
    for est, unbiased in (("k1", True), ("k3", True), ("k2", False)):
        expectation = float((p * kl_divergence(logp, ref, est)).sum())  # type: ignore[arg-type]
        assert (expectation == pytest.approx(exact)) is unbiased


def test_entropy_by_hand() -> None:
    # logits [0, 0] → p = [½, ½], H = log 2; logits [0, log 3] → p = [¼, ¾]
    h = entropy_from_logits(t([[0.0, 0.0], [0.0, LOG(3)]]))
    torch.testing.assert_close(h, t([LOG(2), -(0.25 * LOG(0.25) + 0.75 * LOG(0.75))]))


def test_value_loss_by_hand() -> None:
    # v = 1.5, v_old = 1.0, R = 2.0, ε = 0.2: v_clip = 1.2; max(0.25, 0.64) = 0.64 → ½·0.64 = 0.32
    # v = 0.9, v_old = 1.0, R = 0.5: v_clip = 0.9; (0.4)² = 0.16 → 0.08
    v = t([1.5, 0.9]).requires_grad_()
    out = value_loss(v, t([1.0, 1.0]), t([2.0, 0.5]), t([0.5, 0.5]), clip_range=0.2)
    torch.testing.assert_close(out.token_loss, t([0.32, 0.08]))
    torch.testing.assert_close(out.loss, torch.tensor(0.2, dtype=F64))
    assert out.metrics["critic/vf_clipfrac"] == pytest.approx(0.5)
    out.loss.backward()
    # first: the clipped term wins and is flat in v → 0; second: ½·2·(0.9 − 0.5)·w = 0.4·0.5
    torch.testing.assert_close(v.grad, t([0.0, 0.2]))
    unclipped = value_loss(v.detach(), t([1.0, 1.0]), t([2.0, 0.5]), t([0.5, 0.5]), clip_range=None)
    torch.testing.assert_close(unclipped.token_loss, t([0.125, 0.08]))


def test_step_level_value_loss_weights_each_trajectory_once() -> None:
    # step critic: one value per step; trajectory a has 2 steps, b has 1 → weights ¼, ¼, ½
    mask = torch.tensor([[True, True], [True, False], [True, True]])
    traj = torch.tensor([0, 0, 1])
    w = aggregation_weights(mask.any(dim=1, keepdim=True), traj, "trajectory-mean", dtype=F64)[:, 0]
    torch.testing.assert_close(w, t([0.25, 0.25, 0.5]))
    out = value_loss(t([1.0, 2.0, 3.0]), t([1.0, 2.0, 3.0]), t([0.0, 0.0, 1.0]), w, clip_range=None)
    # ½ (v − R)² = [0.5, 2, 2] → 0.25·0.5 + 0.25·2 + 0.5·2 = 1.625
    assert out.loss.item() == pytest.approx(1.625)


def test_actor_loss_adds_entropy_and_kl() -> None:
    logp = t([[LOG(0.5)]]).requires_grad_()
    mask = torch.tensor([[True]])
    w = t([[1.0]])
    cfg = PolicyLossConfig(entropy_coef=0.1, kl_coef=0.5, kl_estimator="k1")
    out = actor_loss(
        "reinforce",
        logp,
        logp.detach(),
        t([[1.0]]),
        mask,
        w,
        cfg,
        entropy=t([[2.0]]),
        ref_log_probs=t([[LOG(0.25)]]),
    )
    # −A log π − 0.1·H + 0.5·(log π − log π_ref) = log 2 − 0.2 + 0.5 log 2
    assert out.loss.item() == pytest.approx(LOG(2) - 0.2 + 0.5 * LOG(2))
    assert out.metrics["actor/entropy"] == pytest.approx(2.0)
    assert out.metrics["actor/kl_loss"] == pytest.approx(LOG(2))
    with pytest.raises(ValueError, match="ref_log_probs"):
        actor_loss("reinforce", logp, logp, t([[1.0]]), mask, w, cfg, entropy=t([[2.0]]))


@pytest.mark.parametrize("name", ["ppo_clip", "steppo", "reinforce"])
@pytest.mark.parametrize("mode", AGGREGATION_MODES)
def test_microbatches_sum_to_the_full_loss(name: str, mode: str) -> None:
    gen = torch.Generator().manual_seed(0)
    n, width = 8, 5
    mask = torch.rand((n, width), generator=gen) < 0.7
    mask[:, 0] = True
    traj = torch.tensor([0, 0, 0, 1, 2, 2, 3, 3])
    old = -torch.rand((n, width), generator=gen, dtype=F64)
    logp = old + 0.3 * torch.randn((n, width), generator=gen, dtype=F64)
    adv = torch.randn((n, width), generator=gen, dtype=F64)
    w = aggregation_weights(mask, traj, mode, dtype=F64)  # type: ignore[arg-type]
    cfg = PolicyLossConfig()
    full = policy_loss(name, logp, old, adv, mask, w, cfg).loss
    parts = sum(
        policy_loss(name, logp[s], old[s], adv[s], mask[s], w[s], cfg).loss
        for s in (slice(0, 3), slice(3, 5), slice(5, 8))
    )
    torch.testing.assert_close(parts, full)


def test_policy_loss_registry() -> None:
    assert set(POLICY_LOSSES.names()) >= {"ppo_clip", "steppo", "reinforce"}
    x = torch.zeros((1, 1))
    with pytest.raises(UnknownNameError, match="valid names: ppo_clip, reinforce, steppo"):
        policy_loss("gspo", x, x, x, x.bool(), x, PolicyLossConfig())


@pytest.mark.parametrize(
    "bad", [{"clip_low": 1.0}, {"clip_high": -0.1}, {"dual_clip_c": 1.0}, {"kl_estimator": "k4"}]
)
def test_policy_loss_config_rejects_bad_values(bad: dict) -> None:
    with pytest.raises(ValueError):
        PolicyLossConfig(**bad)
