"""The public episode session: the caller is the policy, the loop's step code does the rest."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from agentspec.runtime.commands.run import rollout
from agentspec.runtime.compiled.scripts import episode_script
from agentspec.runtime.serve.session import End, EpisodeSession, SessionError, SyncEpisodeSession
from agentspec.runtime.serve.spec import ServedSpec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def calculator() -> ServedSpec:
    return ServedSpec.load(ROOT / "specs" / "calculator.yaml")


@pytest.fixture(scope="module")
def gridworld() -> ServedSpec:
    return ServedSpec.load(ROOT / "specs" / "gridworld.yaml")


async def play_oracle(spec: ServedSpec, index: int) -> End:
    """The spec's oracle played through a session, one act() per turn."""
    session = EpisodeSession(spec)
    turn = await session.start(index=index)
    script = episode_script(spec.module, "oracle")
    assert script is not None
    turns = script(spec.samples()[index])
    k = 0
    while not turn.done:
        text = turns("") if callable(turns) else (turns[k] if k < len(turns) else "")
        k += 1
        turn = await session.act(text)
    assert isinstance(turn, End)
    return turn


@pytest.mark.parametrize("name", ["calculator", "gridworld"])
def test_a_session_plays_the_oracle_as_agentspec_run_does(
    name: str, calculator: ServedSpec, gridworld: ServedSpec
) -> None:
    spec = {"calculator": calculator, "gridworld": gridworld}[name]
    samples = spec.samples()[:3]
    ran = asyncio.run(rollout(spec.module, samples, "oracle", task_tokenizer=spec.tokenizer))
    for index, expected in enumerate(ran):
        end = asyncio.run(play_oracle(spec, index))
        got = end.trajectory
        assert [s.rewards for s in got.steps] == [s.rewards for s in expected.steps]
        assert [s.observation for s in got.steps] == [s.observation for s in expected.steps]
        assert [s.response_ids for s in got.steps] == [s.response_ids for s in expected.steps]
        assert (got.termination, got.success) == (expected.termination, expected.success)
        assert end.reward_totals == {
            **dict.fromkeys(spec.reward_names, 0.0),
            **expected.reward_components(),
        }


def test_native_tool_calls_and_the_text_format_give_the_same_step(calculator: ServedSpec) -> None:
    async def play(**action: Any) -> Any:
        session = EpisodeSession(calculator)
        await session.start(split="test", index=4)
        return await session.act(**action)

    sample = calculator.samples("test")[4]
    text = f'<tool_call>{{"name": "calculator", "arguments": {{"expression": "{sample["expression"]}"}}}}</tool_call>'
    by_text = asyncio.run(play(text=text))
    native = asyncio.run(
        play(tool_calls=[{"name": "calculator", "arguments": {"expression": sample["expression"]}}])
    )
    as_json_text = asyncio.run(
        play(
            tool_calls=[
                {"name": "calculator", "arguments": f'{{"expression": "{sample["expression"]}"}}'}
            ]
        )
    )
    assert by_text.observation == native.observation == as_json_text.observation
    assert by_text.observation == f"<tool_response>\n{sample['answer']}\n</tool_response>"
    assert by_text.events == native.events
    assert native.tool_results == [
        {"name": "calculator", "ok": True, "code": "", "text": str(sample["answer"])}
    ]


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_a_native_non_finite_argument_is_the_parse_error_of_the_same_text(
    calculator: ServedSpec, number: float
) -> None:
    async def play(**action: Any) -> Any:
        session = EpisodeSession(calculator)
        await session.start(split="test", index=4)
        return await session.act(**action)

    native = asyncio.run(play(tool_calls=[{"name": "calculator", "arguments": {"x": number}}]))
    word = json.dumps(number)
    text = f'<tool_call>{{"name": "calculator", "arguments": {{"x": {word}}}}}</tool_call>'
    by_text = asyncio.run(play(text=text))
    for turn in (native, by_text):
        assert [e["kind"] for e in turn.events] == ["step", "parse_error"]
        assert turn.events[-1]["code"] == "non_finite_number"
        assert f"{word} is not a JSON number" in turn.events[-1]["message"]


def test_a_turn_names_every_declared_reward_and_the_end_says_how_it_ended(
    calculator: ServedSpec,
) -> None:
    async def episode() -> tuple[Any, Any, Any]:
        session = EpisodeSession(calculator, full_prompt=True)
        first = await session.start(sample={"question": "2+2?", "expression": "2+2", "answer": 4})
        bad = await session.act("<tool_call>{not json</tool_call>")
        end = await session.act("<answer>5</answer>")
        return first, bad, end

    first, bad, end = asyncio.run(episode())
    assert first.sample_id == "sample" and first.step_index == 0
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert "<tool_call>" not in first.messages[0]["content"]  # the tool paragraph travels apart
    assert "<tool_call>" in first.tool_instructions
    assert first.tools[0]["function"]["name"] == "calculator"
    assert first.rewards == {"correct": 0.0, "malformed": 0.0}
    assert bad.rewards == {"correct": 0.0, "malformed": -0.2} and bad.reward == -0.2
    assert [e["kind"] for e in bad.events] == ["step", "parse_error"]
    assert bad.prompt is not None and bad.prompt[-1] == bad.messages[-1]
    assert isinstance(end, End) and end.done
    assert (end.termination, end.success) == ("done", False)
    assert end.rewards == {"correct": 0.0, "malformed": 0.0}
    assert end.reward_totals == {"correct": 0.0, "malformed": -0.2}
    assert len(end.trajectory.steps) == 2


def test_limits_end_a_session_as_they_end_a_run(calculator: ServedSpec) -> None:
    from agentspec.runtime.policies.scripted import ScriptedPolicy

    bad = "<tool_call>{</tool_call>"

    async def episode() -> Any:
        session = EpisodeSession(calculator)
        turn = await session.start(index=1)
        while not turn.done:
            turn = await session.act(bad)
        return turn

    end = asyncio.run(episode())
    tokenizer = calculator.tokenizer
    flow = calculator.module.FLOW_CLASS(ScriptedPolicy([bad], tokenizer), tokenizer)
    ran = asyncio.run(flow.run(calculator.samples()[1], "train-1"))
    assert end.termination == ran.termination.value == "context_overflow"
    assert end.step_index == len(ran.steps) > 1
    assert end.reward_totals["malformed"] == pytest.approx(-0.2 * len(ran.steps))
    assert end.events[-1] == {"kind": "truncated", "message": "context_overflow"}


def test_a_response_cut_by_the_callers_sampler_is_a_truncated_response(
    calculator: ServedSpec,
) -> None:
    async def episode() -> Any:
        session = EpisodeSession(calculator)
        await session.start(index=0)
        return await session.act('<tool_call>{"name": "calc', finish_reason="length")

    end = asyncio.run(episode())
    assert end.termination == "response_truncated"
    assert [e["kind"] for e in end.events][-2:] == ["response_truncated", "truncated"]


def test_a_callers_long_response_is_not_cut_at_the_specs_token_budget(
    calculator: ServedSpec,
) -> None:
    # The caller sampled it under its own limits (with its own tokenizer): the spec's
    # max_response_tokens (48 of agentspec's tokens) dropped the call written after it.
    reasoning = "Let me work this out with the calculator before I answer anything. " * 2
    call = {"name": "calculator", "arguments": {"expression": "30 * 14"}}

    async def episode() -> Any:
        session = EpisodeSession(calculator)
        await session.start(index=0)
        return await session.act(reasoning, [call])

    turn = asyncio.run(episode())
    assert not turn.done
    assert [r["name"] for r in turn.tool_results] == ["calculator"]
    assert turn.tool_results[0]["text"] == "420"


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ({"split": "validation"}, "unknown split 'validation'; splits: train, test"),
        ({"index": 10**9}, "index 1000000000 is outside split 'train'"),
        ({"index": "3"}, "index must be an integer"),
        ({"sample_id": "nope"}, "no sample has id 'nope'"),
        ({"sample": [1, 2]}, "sample must be a JSON object"),
    ],
)
def test_a_bad_choice_of_sample_says_what_to_send(
    calculator: ServedSpec, choice: dict[str, Any], message: str
) -> None:
    with pytest.raises(SessionError, match=message.replace("(", r"\(")):
        asyncio.run(EpisodeSession(calculator).start(**choice))


def test_samples_are_chosen_by_id_split_index_and_seed(calculator: ServedSpec) -> None:
    async def sample_of(**choice: Any) -> str:
        return (await EpisodeSession(calculator).start(**choice)).sample_id

    assert asyncio.run(sample_of(sample_id="test-7")) == "test-7"
    assert asyncio.run(sample_of(split="test", index=3)) == "test-3"
    assert asyncio.run(sample_of(seed=5)) == asyncio.run(sample_of(seed=5))
    assert asyncio.run(sample_of()) == "train-0"


def test_acting_before_the_start_or_after_the_end_is_refused(calculator: ServedSpec) -> None:
    async def episode() -> None:
        session = EpisodeSession(calculator)
        with pytest.raises(SessionError, match="start one"):
            await session.act("hi")
        await session.start(index=0)
        await session.act("<answer>1</answer>")
        with pytest.raises(SessionError, match="the episode is over"):
            await session.act("again")
        with pytest.raises(SessionError, match="tool call must be an object"):
            await session.start(index=0)
            await session.act("", tool_calls=[{"arguments": {}}])

    asyncio.run(episode())


def test_the_sync_face_works_where_no_event_loop_runs(gridworld: ServedSpec) -> None:
    """Blocking calls from plain threads (no loop), several at once, as SkyRL makes them."""
    ends: dict[int, Any] = {}
    script = episode_script(gridworld.module, "oracle")
    assert script is not None

    def play(index: int) -> None:
        session = SyncEpisodeSession(gridworld)
        turn = session.start(index=index)
        turns = script(gridworld.samples()[index])
        while not turn.done:
            turn = session.act(turns("") if callable(turns) else turns.pop(0))
        assert session.state() == turn.state
        session.close()
        ends[index] = turn

    threads = [threading.Thread(target=play, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(ends) == [0, 1, 2, 3]
    assert all(end.success and end.termination == "done" for end in ends.values())
    assert ends[0].state != {}  # gridworld's typed state (x, y, ...) as JSON


def test_every_turn_carries_the_declared_weights_other_than_one(tmp_path: Path) -> None:
    # docs/openenv.md: `weights` are the components' weights other than 1 — they were
    # only those of the components that fired this step ({} on the first turn)
    text = (ROOT / "specs" / "calculator.yaml").read_text()
    spec = tmp_path / "weighted.yaml"
    spec.write_text(
        text.replace(
            "  malformed: {on: parse_error, value: -0.2}",
            "  malformed: {on: parse_error, value: -0.2, weight: 3}",
        )
    )
    served = ServedSpec.load(spec)

    async def episode() -> list[Any]:
        session = EpisodeSession(served)
        first = await session.start(index=0)
        return [first, await session.act("calculator(")]

    first, second = asyncio.run(episode())
    assert first.weights == {"malformed": 3.0} == second.weights


SURROGATE_SPEC = """\
agentspec: 1
name: halves
description: A tool echoes its text; another writes half a character of its own.
data:
  source: generator:arithmetic
  fields: {question: str, expression: str, answer: int}
prompt:
  user: "{{ sample.question }}"
functions:
  half: {impl: "halflib:half", params: [str], returns: str}
state:
  last: {type: str, initial: "''"}
tools:
  echo:
    description: Say the text back.
    parameters: {text: {type: string}}
    effect: [state.last = args.text]
    returns: args.text
  half:
    description: Half a character, then the text.
    parameters: {text: {type: string}}
    effect: [state.last = half(args.text)]
    returns: half(args.text)
episode: {max_steps: 4, tool_format: hermes}
rewards:
  correct: {on: final, value: "1.0"}
"""


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        # the model's escape of half a character reads as U+FFFD (the format's parser)
        ('{"name": "echo", "arguments": {"text": "a\\ud800"}}', "a\ufffd"),
        # a tool's own lone surrogate is U+FFFD on the wire (the session)
        ('{"name": "half", "arguments": {"text": "b"}}', "\ufffdb"),
    ],
)
def test_a_turn_holds_only_text_a_wire_can_encode(tmp_path: Path, call: str, expected: str) -> None:
    """An OpenEnv client lost a played step (its reply failed to encode) and every
    `state` request after it, when a tool's result held a lone surrogate."""
    (tmp_path / "halflib.py").write_text("def half(text):\n    return chr(0xD800) + text\n")
    spec = tmp_path / "halves.yaml"
    spec.write_text(SURROGATE_SPEC)
    served = ServedSpec.load(spec)

    async def episode() -> Any:
        session = EpisodeSession(served, full_prompt=True)
        await session.start(index=0)
        turn = await session.act(f"<tool_call>{call}</tool_call>")
        return turn, session.state()

    turn, state = asyncio.run(episode())
    assert expected in turn.observation
    assert turn.tool_results[0]["text"] == expected
    assert state["last"] == expected
    wire = json.dumps(
        {
            k: getattr(turn, k)
            for k in ("observation", "messages", "tool_results", "state", "prompt")
        },
        ensure_ascii=False,
    )
    wire.encode("utf-8")


def test_native_arguments_json_cannot_write_say_why(calculator: ServedSpec) -> None:
    # a 5,000-digit integer was reported as "must be JSON (no cycles)"
    async def episode() -> str:
        session = EpisodeSession(calculator)
        await session.start(index=0)
        with pytest.raises(SessionError) as refused:
            await session.act("", [{"name": "calculator", "arguments": {"expression": 10**5000}}])
        return str(refused.value)

    assert "4300 digits" in asyncio.run(episode())
