"""agentspec's estimators and losses inside verl's registries, and the step layout between them."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

# verl is installed by `make venv`: a broken install fails here rather than skipping.
from verl.trainer.ppo import core_algos
from verl.workers.config import FSDPActorConfig
from verl_helpers import ROOT

from agentspec.runtime.algorithms import (
    AdvantageConfig,
    PolicyLossConfig,
    StepRow,
    aggregation_weights,
    collate_steps,
    compute_advantages,
    policy_loss,
)
from agentspec.runtime.backends.verl import PLUGIN_MODULE
from agentspec.runtime.backends.verl.layout import RowSteps, step_view


@pytest.fixture(scope="module", autouse=True)
def registered() -> None:
    from agentspec.runtime.backends.verl import algorithms

    algorithms.register()
    algorithms.register()  # idempotent


def test_plugin_registers_everything_in_a_fresh_verl_process() -> None:
    code = (
        "import verl\n"
        "from verl.trainer.ppo import core_algos\n"
        "from verl.trainer.ppo.v1 import get_trainer_cls\n"
        "from verl.plugin.platform.platform_manager import PlatformRegistry\n"
        "from verl.workers.rollout.replica import RolloutReplicaRegistry\n"
        "from verl.workers.rollout.base import get_rollout_class\n"
        "from verl.workers.engine.base import EngineRegistry\n"
        "print(sorted(k for k in core_algos.ADV_ESTIMATOR_REGISTRY if k.startswith('agentspec_')))\n"
        "print(sorted(k for k in core_algos.POLICY_LOSS_REGISTRY if k.startswith('agentspec_')))\n"
        "print(get_trainer_cls('agentspec').__name__)\n"
        "print(PlatformRegistry.get('cpu').__name__, RolloutReplicaRegistry.get('agentspec_hf').__name__,\n"
        "      get_rollout_class('agentspec_hf').__name__,\n"
        "      EngineRegistry.get_engine_cls('value_model', 'fsdp2').__name__)\n"
    )
    env = {**os.environ, "VERL_USE_EXTERNAL_MODULES": PLUGIN_MODULE, "VERL_PLATFORM": "cpu"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()[-4:]
    assert lines[0] == str(
        [
            "agentspec_gigpo",
            "agentspec_grpo",
            "agentspec_opd",
            "agentspec_reinforce",
            "agentspec_rloo",
            "agentspec_step_gae",
            "agentspec_token_gae",
        ]
    )
    assert lines[1] == str(["agentspec_ppo_clip", "agentspec_reinforce", "agentspec_steppo"])
    assert lines[2] == "AgentspecTrainer"
    assert lines[3] == "PlatformCPU HFReplica HFServerAdapter ValueEngine"


def _records() -> tuple[list[RowSteps], list[str], torch.Tensor]:
    """Two prompts × two episodes; episode a is packed (2 steps in one row), the others
    one row per step. Width 8; -1 marks observation tokens inside a packed row."""
    recs = [
        RowSteps("a", [0, 0, -1, -1, 1, 1, 1], [0, 1], [0.0, 1.0], ["x", "y"], 1.0),
        RowSteps("b", [0, 0, 0], [0], [0.5], ["x"], 0.5),
        RowSteps("b", [1, 1], [1], [0.0], ["z"], 0.5),
        RowSteps("c", [0, 0, 0, 0], [0], [0.0], ["w"], 0.0),
        RowSteps("d", [0], [0], [1.0], ["w"], 1.0),
    ]
    uids = ["p", "p", "p", "q", "q"]
    mask = torch.zeros(5, 8)
    for i, r in enumerate(recs):
        mask[i, : len(r.token_steps)] = torch.tensor(
            [1.0 if s >= 0 else 0.0 for s in r.token_steps]
        )
    return recs, uids, mask


def _steps(values: torch.Tensor | None) -> list[StepRow]:
    # the same steps written out by hand; value = the critic at the step's first token
    v = (lambda i, j: float(values[i, j])) if values is not None else (lambda i, j: None)
    return [
        StepRow("a", 0, "p", 0.0, 2, "x", v(0, 0)),
        StepRow("a", 1, "p", 1.0, 3, "y", v(0, 4)),
        StepRow("b", 0, "p", 0.5, 3, "x", v(1, 0)),
        StepRow("b", 1, "p", 0.0, 2, "z", v(2, 0)),
        StepRow("c", 0, "q", 0.0, 4, "w", v(3, 0)),
        StepRow("d", 0, "q", 1.0, 1, "w", v(4, 0)),
    ]


_COLS = [(0, [0, 1]), (0, [4, 5, 6]), (1, [0, 1, 2]), (2, [0, 1]), (3, [0, 1, 2, 3]), (4, [0])]


@pytest.mark.parametrize("name", ["step_gae", "grpo", "rloo", "reinforce", "gigpo"])
def test_verl_estimator_equals_agentspec(name: str) -> None:
    recs, uids, mask = _records()
    values = torch.linspace(-1, 1, 40).reshape(5, 8)
    cfg = AdvantageConfig(gamma=0.9, lam=0.8, omega=0.5)
    fn = core_algos.get_adv_estimator_fn(f"agentspec_{name}")
    adv, ret = fn(
        token_level_rewards=torch.zeros(5, 8),
        response_mask=mask,
        index=uids,
        config=None,
        step_records=recs,
        values=values,
        advantage_config=cfg,
    )
    expected = compute_advantages(
        name, collate_steps(_steps(values if name == "step_gae" else None)), cfg
    )
    want = torch.zeros(5, 8)
    for k, (row, cols) in enumerate(_COLS):
        want[row, cols] = expected.advantages[k, : len(cols)]
    torch.testing.assert_close(adv, want)
    assert bool((adv[mask == 0] == 0).all())
    if name == "step_gae":
        assert expected.returns is not None
        for k, (row, cols) in enumerate(_COLS):
            assert torch.allclose(ret[row, cols], expected.returns[k].expand(len(cols)))


def test_verl_token_gae_equals_agentspec_for_packed_and_per_step_rows() -> None:
    # episode a is one packed row (observation tokens at columns 2-3), b is one row per
    # step: token GAE runs over each trajectory's generated tokens in step order either way
    recs, uids, mask = _records()
    values = torch.linspace(-1, 1, 40).reshape(5, 8)
    cfg = AdvantageConfig(gamma=0.9, lam=0.8)
    adv, ret = core_algos.get_adv_estimator_fn("agentspec_token_gae")(
        token_level_rewards=torch.zeros(5, 8),
        response_mask=mask,
        index=uids,
        config=None,
        step_records=recs,
        values=values,
        advantage_config=cfg,
    )
    steps = [
        StepRow(
            s.traj_id,
            s.step_index,
            s.group_id,
            s.reward,
            s.response_length,
            s.anchor,
            token_values=values[row, cols].tolist(),
        )
        for s, (row, cols) in zip(_steps(None), _COLS, strict=True)
    ]
    expected = compute_advantages("token_gae", collate_steps(steps), cfg)
    assert expected.returns is not None
    for k, (row, cols) in enumerate(_COLS):
        torch.testing.assert_close(adv[row, cols], expected.advantages[k, : len(cols)])
        torch.testing.assert_close(ret[row, cols], expected.returns[k, : len(cols)])
    assert bool((adv[mask == 0] == 0).all())
    assert bool(adv.abs().sum() > 0)


def test_critic_estimator_without_values_is_a_clear_error() -> None:
    recs, uids, mask = _records()
    with pytest.raises(ValueError, match=r"critic\.enable=True"):
        core_algos.get_adv_estimator_fn("agentspec_token_gae")(
            token_level_rewards=torch.zeros(5, 8),
            response_mask=mask,
            index=uids,
            step_records=recs,
        )


def test_estimator_without_step_records_fails_loudly() -> None:
    fn = core_algos.get_adv_estimator_fn("agentspec_grpo")
    with pytest.raises(ValueError, match="trainer_mode=agentspec"):
        fn(token_level_rewards=torch.zeros(2, 3), response_mask=torch.ones(2, 3), index=["a", "b"])


def test_step_view_rejects_a_step_token_outside_the_mask() -> None:
    recs, uids, mask = _records()
    mask[0, 4] = 0
    with pytest.raises(ValueError, match="outside verl's response mask"):
        step_view(recs, uids, mask)


@pytest.mark.parametrize(
    ("name", "agg", "mode"),
    [("ppo_clip", "token-mean", "token-mean"), ("steppo", "seq-mean-token-mean", "step-mean")],
)
def test_verl_policy_loss_equals_agentspec(name: str, agg: str, mode: str) -> None:
    """verl's default dual clip (clip_ratio_c 3) is not applied: the loss a spec trains
    with on verl is the documented plain clip, as on the local backend."""
    torch.manual_seed(0)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    old = -torch.rand(3, 4)
    shift = 0.3 * torch.randn(3, 4)
    shift[0, 0] = 2.0  # a ratio of e² > 3 where the advantage is negative: dual clip would cap it
    logp = (old + shift).requires_grad_()
    adv = torch.tensor([[-1.0], [0.5], [1.2]]).expand(3, 4) * mask
    # verl's own actor config, as its actor hands it to the loss
    config = FSDPActorConfig(
        strategy="fsdp",
        clip_ratio=0.2,
        clip_ratio_low=0.1,
        clip_ratio_high=0.3,
        clip_ratio_c=3.0,
        ppo_mini_batch_size=1,
        ppo_micro_batch_size_per_gpu=1,
        rollout_n=1,
    )
    loss, metrics = core_algos.get_policy_loss_fn(f"agentspec_{name}")(
        old_log_prob=old,
        log_prob=logp,
        advantages=adv,
        response_mask=mask.long(),
        loss_agg_mode=agg,
        config=config,
    )
    ours = policy_loss(
        name,
        logp,
        old,
        adv,
        mask,
        aggregation_weights(mask, torch.arange(3), mode),
        PolicyLossConfig(clip_low=0.1, clip_high=0.3),
    )
    torch.testing.assert_close(loss, ours.loss)
    (g1,) = torch.autograd.grad(loss, logp)
    (g2,) = torch.autograd.grad(ours.loss, logp)
    torch.testing.assert_close(g1, g2)
    assert {"actor/pg_clipfrac", "actor/ppo_kl"} <= set(metrics)


def test_trainer_adds_the_task_advantage_of_the_presets_task_estimator() -> None:
    from agentspec.runtime.backends.verl.trainer import AgentspecTrainer

    recs, uids, mask = _records()
    generator = torch.Generator().manual_seed(0)
    student = -torch.rand(5, 8, generator=generator)
    teacher = -torch.rand(5, 8, generator=generator)
    inputs = {
        "token_level_rewards": torch.zeros(5, 8),
        "response_mask": mask,
        "index": uids,
        "config": None,
        "step_records": recs,
        "values": None,
        "old_log_probs": student,
        "teacher_log_probs": teacher,
        "advantage_config": AdvantageConfig(),
    }
    opd, _ = core_algos.get_adv_estimator_fn("agentspec_opd")(**inputs)
    grpo, _ = core_algos.get_adv_estimator_fn("agentspec_grpo")(**inputs)
    # the generated overrides name opd's task estimator (see test_verl_compile_target)
    trainer = SimpleNamespace(
        agentspec_settings={"opd_task_weight": 0.5, "task_estimator": "agentspec_grpo"}
    )
    metrics: dict[str, float] = {}
    mixed = AgentspecTrainer._add_task_advantage(trainer, opd, inputs, metrics)  # type: ignore[arg-type]
    assert torch.allclose(mixed, opd + 0.5 * grpo)
    assert not torch.equal(grpo, torch.zeros_like(grpo))
    assert metrics["opd/reverse_kl"] == pytest.approx(
        float((student - teacher)[mask.bool()].mean())
    )
    trainer.agentspec_settings = {"opd_task_weight": 0.0, "task_estimator": "agentspec_grpo"}
    assert AgentspecTrainer._add_task_advantage(trainer, opd, inputs, {}) is opd  # type: ignore[arg-type]


def _nested(t: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    return torch.nested.as_nested_tensor(
        [t[i, :n] for i, n in enumerate(lengths)], layout=torch.jagged
    )


def test_verl_value_loss_trains_a_step_critic_at_each_steps_state() -> None:
    """The critic loss the agentspec trainer gives verl's critic worker: a step-level critic
    is trained at each step's first response position alone (V of the state before the
    step, where the estimator reads it), each row's steps averaged, then the rows
    (``seq-mean-token-mean``), × ``value_coef``; a token-level one as verl's own loss."""
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils.losses import value_loss as verls_value_loss

    from agentspec.runtime.algorithms import value_loss
    from agentspec.runtime.backends.verl.algorithms import VALUE_MASK, verl_value_loss
    from agentspec.runtime.backends.verl.layout import state_positions

    recs, _, mask = _records()
    lengths = [len(r.token_steps) for r in recs]
    states = state_positions(recs, 8)
    assert [row.nonzero().flatten().tolist() for row in states] == [[0, 4], [0], [0], [0], [0]]
    generator = torch.Generator().manual_seed(0)
    old = torch.randn(5, 8, generator=generator) * mask
    returns = torch.randn(5, 8, generator=generator) * mask
    prompt = 2
    flat = torch.randn(sum(prompt + n for n in lengths), generator=generator)
    flat.requires_grad_()
    data = TensorDict(
        {
            "prompts": _nested(torch.ones(5, prompt, dtype=torch.long), [prompt] * 5),
            "responses": _nested(torch.ones(5, 8, dtype=torch.long), lengths),
            "response_mask": _nested(mask.long(), lengths),
            "values": _nested(old, lengths),
            "returns": _nested(returns, lengths),
            VALUE_MASK: _nested(states, lengths),
        },
        batch_size=[5],
    )
    tu.assign_non_tensor(data, dp_size=1, batch_num_tokens=int(mask.sum()), global_batch_size=5)
    config = SimpleNamespace(
        cliprange_value=0.2, loss_agg_mode="token-mean", loss_scale_factor=None
    )

    loss, metrics = verl_value_loss(config, {"values": flat}, data, value_coef=0.5)

    starts = [sum(prompt + n for n in lengths[:i]) for i in range(5)]
    where = [(i, int(c)) for i in range(5) for c in states[i].nonzero().flatten()]
    read = torch.tensor([starts[i] + prompt - 1 + c for i, c in where])  # before token c
    expected = value_loss(
        flat[read],
        torch.stack([old[i, c] for i, c in where]),
        torch.stack([returns[i, c] for i, c in where]),
        torch.tensor([1 / 10, 1 / 10, 1 / 5, 1 / 5, 1 / 5, 1 / 5]),  # row a holds 2 steps
    )
    torch.testing.assert_close(loss, 0.5 * expected.loss)
    assert metrics["critic/vf_loss"].values == [pytest.approx(float(expected.loss))]
    (grad,) = torch.autograd.grad(loss, flat)
    (want,) = torch.autograd.grad(0.5 * expected.loss, flat)
    torch.testing.assert_close(grad, want)
    assert len(grad.nonzero()) > 0 and set(grad.nonzero().flatten().tolist()) <= set(read.tolist())

    del data[VALUE_MASK]  # a token-level critic: verl's own loss, weighted
    token_loss, _ = verl_value_loss(config, {"values": flat}, data, value_coef=0.5)
    verls, _ = verls_value_loss(config, {"values": flat}, data)
    torch.testing.assert_close(token_loss, 0.5 * verls)
