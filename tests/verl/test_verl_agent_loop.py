"""The agent loop's outputs and verl 0.9.1's multi-output gotchas, one test each."""

from __future__ import annotations

import pytest
import torch

# verl is installed by `make venv`: a broken install fails here rather than skipping.
import verl.experimental.agent_loop.agent_loop  # noqa: F401
from omegaconf import OmegaConf

from agentspec.runtime.backends.verl.agent_loop import check_distillation, episode_outputs
from agentspec.runtime.backends.verl.layout import EXTRA_KEY, RowSteps
from agentspec.runtime.episode.trajectory import Step, Trajectory


def _trajectory() -> Trajectory:
    s0 = Step(0, [1, 2, 3], [4, 5], [-0.1, -0.2], observation_ids=[6], rewards={"malformed": -0.2})
    s1 = Step(
        1, [1, 2, 3, 4, 5, 6], [7, 8, 9], [-0.3, -0.4, -0.5], rewards={"correct": 1.0}, anchor="s"
    )
    return Trajectory(steps=[s0, s1], sample_id="u", group_id="u", success=True)


def test_per_step_outputs_hold_exact_tokens_and_step_records() -> None:
    traj = _trajectory()
    outs = episode_outputs(traj, pack=False, components=["correct", "malformed"])
    assert [(o.prompt_ids, o.response_ids, o.response_mask) for o in outs] == [
        ([1, 2, 3], [4, 5], [1, 1]),
        ([1, 2, 3, 4, 5, 6], [7, 8, 9], [1, 1, 1]),
    ]
    assert outs[1].response_logprobs == [-0.3, -0.4, -0.5]
    recs = [RowSteps.from_dict(o.extra_fields[EXTRA_KEY]) for o in outs]
    assert [r.step_rewards for r in recs] == [[-0.2], [1.0]]
    assert [r.token_steps for r in recs] == [[0, 0], [1, 1, 1]]
    assert recs[1].anchors == ["a:s"] == [traj.steps[1].anchor_key]
    # no spec anchor: the exact prompt, as the local backend groups it too
    assert recs[0].anchors == [traj.steps[0].anchor_key] != [Step(0, [1, 2, 4], [], []).anchor_key]
    assert recs[0].anchors == [Step(5, [1, 2, 3], [9], [-1.0]).anchor_key]


def test_packed_output_masks_observations() -> None:
    (out,) = episode_outputs(_trajectory(), pack=True)
    assert out.prompt_ids == [1, 2, 3]
    assert out.response_ids == [4, 5, 6, 7, 8, 9]
    assert out.response_mask == [1, 1, 0, 1, 1, 1]
    rec = RowSteps.from_dict(out.extra_fields[EXTRA_KEY])
    assert rec.token_steps == [0, 0, -1, 1, 1, 1]
    assert rec.step_rewards == [-0.2, 1.0]


def test_gotcha_reward_overwrite_changes_nothing() -> None:
    """verl 0.9.1 copies the last output's reward_score onto every earlier output: each
    output already carries the episode return, and step rewards travel in extra_fields."""
    outs = episode_outputs(_trajectory(), pack=False)
    before = [o.reward_score for o in outs]
    for o in outs[:-1]:  # what AgentLoopWorkerTQ._agent_loop_postprocess does
        o.reward_score = outs[-1].reward_score
    assert [o.reward_score for o in outs] == before == [pytest.approx(0.8)] * 2
    rows = [o.as_dict() for o in outs]  # verl's own conversion to a training row
    assert [float(r["rm_scores"].sum()) for r in rows] == [pytest.approx(0.8)] * 2
    assert float(rows[0]["rm_scores"][-1]) == pytest.approx(0.8)
    steps = [RowSteps.from_dict(r["extra_fields"][EXTRA_KEY]).step_rewards for r in rows]
    assert steps == [[-0.2], [1.0]]  # the per-step signal survives the overwrite


def test_gotcha_reward_extra_info_on_every_output_with_the_same_keys() -> None:
    """verl reads the last output's extra_fields["reward_extra_info"] (KeyError if absent)
    and stacks the keys across rows."""
    outs = episode_outputs(_trajectory(), pack=False, components=["correct", "malformed", "other"])
    infos = [o.extra_fields["reward_extra_info"] for o in outs]
    assert infos[0] == infos[1]
    assert infos[-1] == {
        "reward/correct": 1.0,
        "reward/malformed": -0.2,
        "reward/other": 0.0,
        "success": 1.0,
        "num_steps": 2.0,
    }


def test_gotcha_teacher_logprobs_only_for_the_final_output() -> None:
    """verl computes OPD teacher log-probs for an agent loop's last output only."""
    on = OmegaConf.create({"distillation": {"enabled": True}})
    off = OmegaConf.create({"distillation": {"enabled": False}})
    check_distillation(on, 1)
    check_distillation(off, 3)
    with pytest.raises(ValueError, match="last output"):
        check_distillation(on, 2)


def test_weight_versions_feed_verl_staleness_tags() -> None:
    outs = episode_outputs(_trajectory(), pack=False, weight_versions=[3, 4])
    assert {o.extra_fields["min_global_steps"] for o in outs} == {3}
    assert {o.extra_fields["max_global_steps"] for o in outs} == {4}
    assert isinstance(outs[0].as_dict()["responses"], torch.Tensor)


def test_a_failing_episode_reaches_the_caller(tmp_path) -> None:
    """verl logs an agent loop's exception and refills the prompt group for ever; the
    agentspec trainer stops after `max_failed_groups` and raises with the tracebacks."""
    from agentspec.runtime.backends.verl.agent_loop import record_error
    from agentspec.runtime.backends.verl.trainer import AgentLoopError, AgentspecTrainer

    errors = tmp_path / "agent_loop_errors.log"
    config = OmegaConf.create(
        {
            "trainer": {"v1": {"agentspec": {"error_file": str(errors), "max_failed_groups": 2}}},
            "data": {"train_batch_size": 2},
        }
    )
    try:
        raise KeyError("no field 'answer' in sample 7")
    except KeyError as exc:
        record_error(config, exc)
    trainer = object.__new__(AgentspecTrainer)  # only the refill hook is exercised
    trainer.config = config
    with pytest.raises(AgentLoopError, match=r"(?s)3 prompt groups failed.*no field 'answer'"):
        trainer._add_prompts_to_generate(3)


class _RolloutServer:
    """verl's server manager answering every request with one ``TokenOutput`` (vLLM, which
    builds these, does not run on this machine; the outputs are the ones
    ``vllm_async_server.generate`` builds)."""

    def __init__(self, output: object) -> None:
        self.output = output

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict):
        return self.output


def _generate(output: object) -> object:
    import asyncio

    from agentspec.runtime.backends.verl.agent_loop import ServerPolicy
    from agentspec.runtime.episode.policy import SamplingParams

    policy = ServerPolicy(_RolloutServer(output), {"temperature": 1.0}, eos_token_id=9)
    asyncio.run(policy.generate([[1, 2, 3]], SamplingParams(max_new_tokens=8)))
    return policy


def test_an_aborted_request_is_named_as_such() -> None:
    """vLLM aborts a request when verl pauses generation: no tokens, no log-probs."""
    from verl.workers.rollout.replica import TokenOutput

    aborted = TokenOutput(token_ids=[], log_probs=None, stop_reason="aborted")
    with pytest.raises(RuntimeError, match="aborted the request") as caught:
        _generate(aborted)
    assert "no log-probs" not in str(caught.value)


def test_routed_experts_reach_the_training_row() -> None:
    """MoE router replay: each row carries the routed experts of its last step's
    generation (prompt + response positions), in the form verl's conversion reads."""
    import numpy as np
    from verl.workers.rollout.replica import TokenOutput

    experts = np.arange(6 * 2 * 1, dtype=np.int16).reshape(6, 2, 1)  # 6 positions, 2 layers
    out = TokenOutput(
        token_ids=[4, 5], log_probs=[-0.1, -0.2], routed_experts=experts, stop_reason="completed"
    )
    policy = _generate(out)
    assert list(policy.routed_experts) == [(1, 2, 3)]
    s0 = Step(0, [1, 2, 3], [4, 5], [-0.1, -0.2], rewards={"correct": 1.0})
    traj = Trajectory(steps=[s0], sample_id="u", group_id="u", success=True)
    (row,) = episode_outputs(traj, pack=False, routed_experts=policy.routed_experts)
    np.testing.assert_array_equal(row.routed_experts, experts[:5])  # 3 prompt + 2 response
    converted = row.as_dict()["routed_experts"]
    assert tuple(converted.shape) == (5, 2, 1)
    assert (episode_outputs(traj, pack=False)[0].routed_experts) is None  # dense models
