"""Vectorised estimators against plain Python loops (several seeds, ragged steps, padding).

As cleanRL checks its vectorised GAE against a loop and verl checks vectorised
GRPO against the loop version.
"""

from __future__ import annotations

import pytest
import torch
from algo_helpers import (
    batch_of,
    expand,
    fill_padding,
    loop_episode_group,
    loop_gigpo,
    loop_reinforce,
    loop_step_gae,
    loop_token_gae,
    ragged,
    random_rows,
)

from agentspec.runtime.algorithms import AdvantageConfig, compute_advantages

SEEDS = range(8)


def _case(seed: int):
    rows = random_rows(
        seed, n_groups=2 + seed % 3, max_steps=1 + seed % 6, empty_steps=seed % 2 == 1
    )
    width = max(r.length() for r in rows) + seed % 3  # extra padding columns in some seeds
    batch = fill_padding(batch_of(rows, pad_to=width))
    return rows, batch, width


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("gamma", "lam", "whiten"), [(1.0, 1.0, False), (0.9, 0.7, False), (0.95, 0.5, True)]
)
def test_step_gae_matches_loop(seed: int, gamma: float, lam: float, whiten: bool) -> None:
    rows, batch, width = _case(seed)
    out = compute_advantages(
        "step_gae", batch, AdvantageConfig(gamma=gamma, lam=lam, whiten=whiten)
    )
    adv, ret = loop_step_gae(rows, gamma, lam, whiten)
    torch.testing.assert_close(out.advantages, expand(adv, rows, width))
    assert out.returns is not None
    torch.testing.assert_close(out.returns, torch.tensor(ret, dtype=torch.float64))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("gamma", "lam", "whiten"), [(1.0, 1.0, False), (0.9, 0.7, False), (0.99, 0.95, True)]
)
def test_token_gae_matches_loop(seed: int, gamma: float, lam: float, whiten: bool) -> None:
    rows, batch, width = _case(seed)
    out = compute_advantages(
        "token_gae", batch, AdvantageConfig(gamma=gamma, lam=lam, whiten=whiten)
    )
    adv, ret = loop_token_gae(rows, gamma, lam, whiten)
    torch.testing.assert_close(out.advantages, ragged(adv, width))
    assert out.returns is not None
    torch.testing.assert_close(out.returns, ragged(ret, width))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("gamma", "omega", "norm_by_std"), [(1.0, 1.0, False), (0.95, 1.0, True), (0.8, 0.5, True)]
)
def test_gigpo_matches_loop(seed: int, gamma: float, omega: float, norm_by_std: bool) -> None:
    rows, batch, width = _case(seed)
    config = AdvantageConfig(gamma=gamma, omega=omega, norm_by_std=norm_by_std)
    out = compute_advantages("gigpo", batch, config)
    adv, mean_size = loop_gigpo(rows, gamma, omega, norm_by_std, config.epsilon)
    torch.testing.assert_close(out.advantages, expand(adv, rows, width))
    assert out.metrics["gigpo/anchor_group_size_mean"] == pytest.approx(mean_size)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("name", "norm_by_std"), [("grpo", True), ("grpo", False), ("rloo", True)])
def test_group_estimators_match_loop(seed: int, name: str, norm_by_std: bool) -> None:
    rows, batch, width = _case(seed)
    config = AdvantageConfig(norm_by_std=norm_by_std)
    out = compute_advantages(name, batch, config)
    expected = loop_episode_group(rows, name, norm_by_std, config.epsilon)
    torch.testing.assert_close(out.advantages, expand(expected, rows, width))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("gamma", "baseline"), [(1.0, False), (0.9, True)])
def test_reinforce_matches_loop(seed: int, gamma: float, baseline: bool) -> None:
    rows, batch, width = _case(seed)
    out = compute_advantages(
        "reinforce", batch, AdvantageConfig(gamma=gamma, batch_baseline=baseline)
    )
    torch.testing.assert_close(
        out.advantages, expand(loop_reinforce(rows, gamma, baseline), rows, width)
    )
