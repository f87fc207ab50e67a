"""Episodes end to end: the calculator ToolEnv and the two-room AgentEnv, 64 at a time."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from agentspec.runtime import (
    AgentEnvLoop,
    AgentFlowBase,
    BaseTool,
    ChatTemplate,
    EventKind,
    LoopConfig,
    SamplingParams,
    ScriptedPolicy,
    TerminationReason,
    ToolContext,
    ToolEnv,
    Trajectory,
    run_episodes,
    training_rows,
)

from .helpers import (
    CalculatorEnv,
    CalculatorTool,
    TwoRoomEnv,
    assert_chained_layout,
    calc,
    calculator_oracle,
    calculator_samples,
    room_oracle,
)

CHAT = ChatTemplate()


def _run(loop: AgentFlowBase, samples: list[dict[str, Any]], group_size: int = 1) -> list[Any]:
    return asyncio.run(run_episodes(loop, samples, group_size=group_size))


def test_scripted_calculator_64_episodes(tok: Any) -> None:
    samples = calculator_samples(16)
    policy = ScriptedPolicy(calculator_oracle, tok)
    trajs = _run(AgentEnvLoop(CalculatorEnv, policy, tok), samples, group_size=4)
    assert len(trajs) == 64
    for i, traj in enumerate(trajs):
        sample = samples[i // 4]
        assert traj.group_id == traj.sample_id == str(i // 4)
        assert traj.termination is TerminationReason.DONE and traj.success is True
        assert [s.rewards for s in traj.steps] == [{"used_calculator": 0.1}, {"correct": 1.0}]
        assert [[e.key for e in s.events] for s in traj.steps] == [
            ["step", "tool:calculator"],
            ["step", "final"],
        ]
        assert traj.steps[0].tool_calls[0].arguments == {"expression": sample["expression"]}
        assert traj.steps[0].observation == f"<tool_response>\n{sample['answer']}\n</tool_response>"
        assert traj.steps[1].done and not traj.steps[0].done
        for step in traj.steps:  # the response is exactly the scripted text's ids + EOS
            prompt_text = tok.decode(step.prompt_ids)
            assert step.response_ids == [
                *tok.encode(calculator_oracle(prompt_text)),
                tok.eos_token_id,
            ]
        assert_chained_layout(traj, tok, CHAT, CalculatorEnv().initial_messages(sample))


def test_scripted_two_rooms_64_episodes(tok: Any) -> None:
    trajs = _run(AgentEnvLoop(TwoRoomEnv, ScriptedPolicy(room_oracle, tok), tok), [{}] * 64)
    for traj in trajs:
        assert traj.success is True and traj.termination is TerminationReason.DONE
        assert [s.action_text for s in traj.steps] == ["look", "take key", "go north"]
        assert [s.anchor for s in traj.steps] == [
            "hall|key=False",
            "hall|key=False",
            "hall|key=True",
        ]
        assert traj.reward_components() == pytest.approx({"step_cost": -0.15, "reached": 1.0})
        env = TwoRoomEnv()
        asyncio.run(env.reset({}))
        assert_chained_layout(traj, tok, CHAT, env.initial_messages_for_test())


@pytest.mark.parametrize("env_name", ["calculator", "rooms"])
def test_hf_policy_64_episodes_layout_and_logprobs(env_name: str, tiny: Any) -> None:
    from agentspec.runtime.policies.hf import HFPolicy, sequence_logprobs

    model, hf_tok = tiny
    # react: a random model's text is a parse error, so episodes run several steps
    env_factory = (lambda: CalculatorEnv("react")) if env_name == "calculator" else TwoRoomEnv
    samples = calculator_samples(64) if env_name == "calculator" else [{}] * 64
    config = LoopConfig(
        max_steps=3,
        sampling=SamplingParams(max_new_tokens=12, temperature=1.0, seed=3),
        end_on_response_truncated=False,
    )
    policy = HFPolicy(model, hf_tok)
    trajs = _run(AgentEnvLoop(env_factory, policy, hf_tok, config=config), samples)
    assert len(trajs) == 64
    worst = 0.0
    for traj, sample in zip(trajs, samples, strict=True):
        assert traj.steps and traj.termination in set(TerminationReason)
        if env_name == "calculator":
            initial = CalculatorEnv("react").initial_messages(sample)
        else:
            initial = TwoRoomEnv().initial_messages_for_test()
        assert_chained_layout(traj, hf_tok, CHAT, initial)
        for step in traj.steps:
            fresh = sequence_logprobs(model, step.prompt_ids, step.response_ids)
            worst = max(
                worst, *(abs(a - b) for a, b in zip(fresh, step.response_logprobs, strict=True))
            )
    assert worst < 1e-4
    assert any(len(t.steps) > 1 for t in trajs)
    assert any(s.finish_reason == "length" for t in trajs for s in t.steps)


def test_hf_and_torch_free_tokenizers_agree(tok: Any, tiny: Any) -> None:
    _, hf_tok = tiny
    text = CHAT.render([{"role": "user", "content": "What is 3+4? ünïcode ✓"}])
    assert tok.encode(text) == hf_tok.encode(text, add_special_tokens=False)
    assert tok.eos_token_id == hf_tok.eos_token_id and tok.pad_token_id == hf_tok.pad_token_id


def _one(env_factory: Any, script: Any, tok: Any, **config: Any) -> Any:
    loop = AgentEnvLoop(env_factory, ScriptedPolicy(script, tok), tok, config=LoopConfig(**config))
    (traj,) = _run(loop, [{"question": "What is 3+4?", "answer": 7}])
    return traj


def test_max_steps_ends_with_truncated_event(tok: Any) -> None:
    traj = _one(TwoRoomEnv, ["look"], tok, max_steps=4)
    assert traj.termination is TerminationReason.MAX_STEPS and len(traj.steps) == 4
    assert traj.steps[-1].has_event(EventKind.TRUNCATED) and traj.steps[-1].done
    assert not any(s.has_event(EventKind.TRUNCATED) for s in traj.steps[:-1])
    assert traj.success is None


def test_response_truncated(tok: Any) -> None:
    traj = _one(TwoRoomEnv, ["go north " * 20], tok, sampling=SamplingParams(max_new_tokens=5))
    assert traj.termination is TerminationReason.RESPONSE_TRUNCATED
    (step,) = traj.steps
    assert len(step.response_ids) == 5 and step.finish_reason == "length"
    assert step.has_event(EventKind.RESPONSE_TRUNCATED) and step.has_event(EventKind.TRUNCATED)


def test_truncated_response_continues_when_configured(tok: Any) -> None:
    traj = _one(
        TwoRoomEnv,
        ["lookxxxxxxxxxxxxxxxx"],
        tok,
        max_steps=2,
        sampling=SamplingParams(max_new_tokens=3),
        end_on_response_truncated=False,
    )
    assert traj.termination is TerminationReason.MAX_STEPS
    first, second = traj.steps
    assert first.response_ids[-1] != tok.eos_token_id
    # the end-of-turn token the model did not write is part of the observation tokens
    assert first.observation_ids[0] == tok.eos_token_id
    assert second.prompt_ids == first.prompt_ids + first.response_ids + first.observation_ids


def test_parse_error_limit(tok: Any) -> None:
    traj = _one(TwoRoomEnv, ["dance"], tok, max_parse_errors=2)
    assert traj.termination is TerminationReason.PARSE_ERROR_LIMIT and len(traj.steps) == 2
    assert traj.count(EventKind.PARSE_ERROR) == 2


def test_tool_timeout_ends_when_configured(tok: Any) -> None:
    call = '<tool_call>{"name": "sleepy", "arguments": {"seconds": 1}}</tool_call>'
    traj = _one(CalculatorEnv, [call], tok, end_on_tool_timeout=True)
    assert traj.termination is TerminationReason.TOOL_TIMEOUT
    assert [e.code for e in traj.steps[0].events if e.kind == EventKind.TOOL_ERROR] == ["timeout"]
    traj = _one(CalculatorEnv, [call], tok, max_steps=2)
    assert traj.termination is TerminationReason.MAX_STEPS


def test_tool_error_limit(tok: Any) -> None:
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": 1}}</tool_call>'
    traj = _one(CalculatorEnv, [call], tok, max_tool_errors=3)
    assert traj.termination is TerminationReason.TOOL_ERROR_LIMIT and len(traj.steps) == 3


class _Counting(BaseTool):
    name = "count"
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    in_flight = 0
    peak = 0

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
        cls = type(self)
        cls.in_flight += 1
        cls.peak = max(cls.peak, cls.in_flight)
        await asyncio.sleep(0.02)
        cls.in_flight -= 1
        return "ok"


def test_tool_calls_in_flight_are_bounded(tok: Any) -> None:
    call = '<tool_call>{"name": "count", "arguments": {}}</tool_call>'
    script = ScriptedPolicy(lambda p: call + call if p.count("tool_response") < 4 else "done", tok)
    loop = AgentEnvLoop(
        lambda: ToolEnv([_Counting()]), script, tok, config=LoopConfig(max_concurrent_tool_calls=5)
    )
    trajs = _run(loop, [{"prompt": "go"}] * 20)
    assert all(t.termination is TerminationReason.DONE for t in trajs)
    assert _Counting.peak == 5


class _GatheringCalculator(CalculatorTool):
    """Answers only once `expected` calls are in flight together."""

    def __init__(self, arrivals: list[int], everyone: asyncio.Event, expected: int) -> None:
        super().__init__()
        self.arrivals, self.everyone, self.expected = arrivals, everyone, expected

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
        self.arrivals.append(1)
        if len(self.arrivals) == self.expected:
            self.everyone.set()
        await asyncio.wait_for(self.everyone.wait(), timeout=20)
        return await super().execute(args, context)


def test_slow_tools_overlap_across_episodes(tok: Any) -> None:
    """Each episode's tool call waits until all 32 are in flight at once: calls made
    one after another would each wait out the timeout and fail (no clock is read)."""
    arrivals: list[int] = []

    async def main() -> list[Trajectory]:
        everyone = asyncio.Event()

        def env() -> CalculatorEnv:
            calculator_env = CalculatorEnv()
            calculator_env.tools["calculator"] = _GatheringCalculator(arrivals, everyone, 32)
            return calculator_env

        loop = AgentEnvLoop(env, ScriptedPolicy(calculator_oracle, tok), tok)
        return list(await asyncio.gather(*(loop.run(s) for s in calculator_samples(32))))

    trajs = asyncio.run(main())
    assert all(t.success for t in trajs)
    assert len(arrivals) == 32


def test_every_step_is_one_row_when_unpacked(tok: Any) -> None:
    (traj,) = _run(AgentEnvLoop(TwoRoomEnv, ScriptedPolicy(room_oracle, tok), tok), [{}])
    rows = training_rows(traj, pack=False)
    assert len(rows) == 3
    for row, step in zip(rows, traj.steps, strict=True):
        assert row.input_ids == step.prompt_ids + step.response_ids
        assert row.response_mask == [0] * len(step.prompt_ids) + [1] * len(step.response_ids)
        assert row.prompt_length == len(step.prompt_ids) and row.step_indices == [step.index]


class _DraftThenRevise(AgentFlowBase):
    """A hand-written flow: draft an answer, then revise it from a fresh prompt."""

    async def run(self, sample: Any, sample_id: str = "", group_id: str = "") -> Any:
        from agentspec.runtime import Event, Trajectory

        task = [{"role": "user", "content": sample["question"]}]
        p0 = self.encode_messages(task)
        draft = await self.generate(p0)
        p1 = self.encode_messages(
            [*task, {"role": "user", "content": "Draft: " + self.decode(draft.token_ids)}]
        )
        final = await self.generate(p1)
        ok = self.decode(final.token_ids).strip() == f"<answer>{sample['answer']}</answer>"
        steps = [
            self.make_step(0, p0, draft, events=[Event(EventKind.STEP)]),
            self.make_step(
                1,
                p1,
                final,
                events=[Event(EventKind.FINAL)],
                rewards={"correct": float(ok)},
                done=True,
            ),
        ]
        return Trajectory(steps, sample_id=sample_id, group_id=group_id, success=ok)


def test_agent_flow_base_subclass(tok: Any) -> None:
    def script(prompt: str) -> str:
        if "Draft:" in prompt:
            return (
                "<answer>"
                + prompt.split("Draft: ")[1].split("<|im_end|>")[0].split()[-1]
                + "</answer>"
            )
        return "It is " + str(calc(prompt.split("What is ")[1].split("?")[0]))

    flow = _DraftThenRevise(ScriptedPolicy(script, tok), tok)
    samples = calculator_samples(8)
    trajs = _run(flow, samples, group_size=2)
    assert len(trajs) == 16 and all(t.success for t in trajs)
    for t in trajs:
        assert [len(r.step_indices) for r in training_rows(t)] == [1, 1]
        assert t.steps[1].response_ids[-1] == tok.eos_token_id
