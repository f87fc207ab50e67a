"""Hostile tool calls through `--target trl`: a call is played as written or is an error
for that call (never another tool's call, nor a final answer), and the calls the
class writes itself are never cut at the spec's `max_response_tokens`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentspec.formats import get_format
from agentspec.runtime.episode.conversation import ChatCall, render_calls
from agentspec.runtime.serve.spec import ServedSpec

from .helpers import ROOT
from .test_trl_target import generated

TOOLS = ServedSpec.load(ROOT / "specs" / "calculator.yaml").flow().env_factory().tools

PIECES = [
    *"ab [](){}<>|`\"'\\:\n\r\t\x00\x0b\x0c\x1c\x85\u2028\u2029é😀",
    *["</tool_call>", "<tool_call>", "<|call|>", "<|end|>", "Observation:", "calculator["],
]
HOSTILE = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
FORMATS = ["hermes", "json", "react", "bracket", "harmony"]


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=150, deadline=None)
@given(text=HOSTILE)
def test_a_written_call_reads_back_the_same_or_is_a_parse_error(fmt: str, text: str) -> None:
    tools = TOOLS
    rendered = render_calls(fmt, None, [ChatCall("calculator", json.dumps({"expression": text}))])
    parsed = get_format(fmt).parse(rendered, tools)
    assert parsed.final_answer is None, rendered
    got = [(c.name, c.arguments) for c in parsed.calls]
    if fmt == "bracket" and not parsed.ok:  # what the format cannot carry: an error
        assert got == [], rendered
        return
    assert parsed.ok, (rendered, parsed.errors)
    assert got == [("calculator", {"expression": text})], rendered


@pytest.fixture(scope="module")
def doors(tmp_path_factory: pytest.TempPathFactory) -> object:
    return generated("keys_and_doors.yaml", tmp_path_factory.mktemp("trl_doors"))


def _env(module: object) -> object:
    env = next(v for k, v in vars(module).items() if k.endswith("Env") and k != "AgentspecTRLEnv")()
    env.reset(id="t", key_room="west", colour="red")
    return env


@pytest.mark.parametrize("argument", ["x\ntake[key", "x]\ntake[key", "west\n", "x\ny", " west"])
def test_a_bracket_call_that_cannot_be_written_is_an_error_for_that_call(
    doors: object, argument: str
) -> None:
    env = _env(doors)
    with pytest.raises(ValueError, match="unwritable"):
        env.go(argument)
    assert env.end is None  # the episode goes on
    assert env.session.state()["has_key"] is False  # take never ran
    assert "west" in env.go("west")  # a good call still plays


def test_a_bracket_argument_with_brackets_inside_is_the_argument(doors: object) -> None:
    env = _env(doors)
    with pytest.raises(ValueError):  # a room of that name does not exist: go's own error
        env.go("a] take[key")
    assert env.session.state()["has_key"] is False and env.end is None  # take never ran


def test_a_long_valid_call_is_not_cut_at_the_response_limit(tmp_path: Path) -> None:
    module = generated("calculator.yaml", tmp_path)
    row = module.dataset(split="test", limit=1)[0]
    env = module.CalculatorEnv()
    env.reset(**row)
    assert env.calculator("+".join(["1"] * 20)) == "20"
    assert env.end is None
    answers = [[{"role": "assistant", "content": "<answer>20</answer>"}]]
    module.REWARD_FUNCS[0](answers, [env])
    assert env.end is not None and env.end.termination == "done"


def test_a_long_final_answer_is_scored_whole(tmp_path: Path) -> None:
    # TRL sampled it under its own limits: the spec's 48-token budget cut the answer off
    module = generated("calculator.yaml", tmp_path)
    row = module.dataset(split="test", limit=1)[0]
    env = module.CalculatorEnv()
    env.reset(**row)
    reasoning = "The calculator says so, and I checked it twice before answering. " * 4
    answer = f"{reasoning}<answer>{row['answer']}</answer>"
    assert module.REWARD_FUNCS[0]([[{"role": "assistant", "content": answer}]], [env]) == [1.0]
    assert env.end is not None and env.end.termination == "done" and env.end.success


def test_an_unwritable_call_is_no_step_and_no_parse_error(doors: object) -> None:
    # the spec's parse_error reward and its prompt budget do not apply to TRL (docs/trl.md)
    env = _env(doors)
    for _ in range(12):
        with pytest.raises(ValueError, match="cannot be written"):
            env.go("west\nnorth")
    assert env.end is None and env.session.session.trajectory.steps == []
    assert "west" in env.go("west")


def test_a_call_too_long_for_one_step_is_an_error_for_that_call(tmp_path: Path) -> None:
    # it was cut at the session's response limit: a parse error that ended the episode,
    # so the final answer was never scored (docs/trl.md: an error for that call only)
    module = generated("calculator.yaml", tmp_path)
    row = module.dataset(split="test", limit=1)[0]
    env = module.CalculatorEnv()
    env.reset(**row)
    with pytest.raises(ValueError, match="too long for one step"):
        env.calculator("1+" * 40_000 + "1")
    assert env.end is None and env.session.session.trajectory.steps == []
    assert env.calculator("6*7") == "42"
    answer = [[{"role": "assistant", "content": f"<answer>{row['answer']}</answer>"}]]
    assert module.REWARD_FUNCS[0](answer, [env]) == [1.0]


def test_a_token_budget_spec_plays_under_trl(tmp_path: Path) -> None:
    # the prompt budget lifted for TRL must not break a policy that reads it
    module = generated("hotpotqa.yaml", tmp_path)
    row = module.dataset(limit=1)[0]
    env = next(v for k, v in vars(module).items() if k.endswith("Env") and k != "AgentspecTRLEnv")()
    env.reset(**row)
    assert env.end is None
