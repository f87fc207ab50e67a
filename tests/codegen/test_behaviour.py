"""Table-driven: every statement, expression construct and reward event of the
language, run through generated code against scripted actions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .helpers import build, call, play

STATE_MACHINE = """
state:
  page: {type: str, initial: start}
  count: {type: int, initial: 10}
  xs: {type: "list[str]"}
  best: {type: "float?"}
tools:
  act:
    description: Do something.
    parameters:
      word: {type: string}
      k: {type: integer}
    required: [word]
    returns: "args.word + '!'"
    effect: EFFECTS
    observe: "{{ result }} page={{ state.page }} count={{ state.count }} xs={{ state.xs }}"
"""

# (effects, actions, expected state after the episode, expected first observation)
EFFECT_CASES: list[tuple[str, list[str], dict[str, Any], str | None]] = [
    (
        '["state.page = \\"next\\""]',
        [call("act", word="w"), "end"],
        {"page": "next"},
        "w! page=next count=10 xs=[]",
    ),
    (
        '["state.count += 5", "state.count -= 2"]',
        [call("act", word="w"), "end"],
        {"count": 13},
        None,
    ),
    (
        '["state.xs = state.xs + [args.word]"]',
        [call("act", word="a"), call("act", word="b"), "end"],
        {"xs": ["a", "b"]},
        None,
    ),
    (
        '["state.xs = [\\"p\\", \\"q\\"]", "state.xs[1] = args.word"]',
        [call("act", word="z"), "end"],
        {"xs": ["p", "z"]},
        None,
    ),
    (
        '["state.page = \\"yes\\" if args.word == \\"go\\""]',
        [call("act", word="no"), "end"],
        {"page": "start"},
        None,
    ),
    (
        '["state.page = \\"yes\\" if args.word == \\"go\\""]',
        [call("act", word="go"), "end"],
        {"page": "yes"},
        None,
    ),
    (
        '["state.count = args.k if args.k != None else -1"]',
        [call("act", word="w"), "end"],
        {"count": -1},
        None,
    ),
    (
        '["state.count = args.k if args.k != None else -1"]',
        [call("act", word="w", k=4), "end"],
        {"count": 4},
        None,
    ),
    (
        '["state.best = 2.5", "state.best = None if args.word == \\"clear\\""]',
        [call("act", word="clear"), "end"],
        {"best": None},
        None,
    ),
    ('["state.page = result"]', [call("act", word="r"), "end"], {"page": "r!"}, None),
]


@pytest.mark.parametrize(("effects", "actions", "state", "observation"), EFFECT_CASES)
def test_effects(
    tmp_path: Path, effects: str, actions: list[str], state: dict[str, Any], observation: str | None
) -> None:
    module = build(STATE_MACHINE.replace("EFFECTS", effects), tmp_path)
    traj, env = play(module, actions)
    for name, value in state.items():
        assert getattr(env.state, name) == value
    if observation is not None:
        assert traj.steps[0].observation is not None
        assert observation in traj.steps[0].observation


def test_done_ends_the_episode_after_the_call(tmp_path: Path) -> None:
    module = build(
        STATE_MACHINE.replace(
            "EFFECTS", '["state.count = 1", "done() if args.word == \\"stop\\""]'
        ),
        tmp_path,
    )
    traj, _ = play(
        module, [call("act", word="go"), call("act", word="stop"), call("act", word="never")]
    )
    assert len(traj.steps) == 2 and traj.termination.value == "done"
    assert traj.steps[-1].has_event("final")


def test_fail_is_a_tool_error_with_the_message(tmp_path: Path) -> None:
    effects = '["fail(\\"no such word: \\" + args.word) if args.word not in sample.items", "state.count = 0"]'
    module = build(STATE_MACHINE.replace("EFFECTS", effects), tmp_path)
    traj, env = play(module, [call("act", word="zzz"), call("act", word="a"), "end"])
    first = traj.steps[0]
    assert first.has_event("tool_error") and not first.has_event("tool:act")
    assert first.observation is not None and "no such word: zzz" in first.observation
    assert "ToolFailure" not in first.observation and first.events[1].code == "failed"
    assert env.state.count == 0  # the second call passed and ran its effects


EXPRESSIONS = [
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("7 // 2 + 7 % 2", 4),
    ("10 / 4", 2.5),
    ("-sample.n + 1", -2),
    ("'ab' + 'c'", "abc"),
    ("sample.n > 2 and not (sample.n == 5)", True),
    ("sample.n < 2 or sample.q == 'question'", True),
    ("'b' in sample.items", True),
    ("'z' not in sample.items", True),
    ("'ques' in sample.q", True),
    ("sample.items[1]", "b"),
    ("sample.q[0]", "q"),
    ("[1, 2, sample.n][2]", 3),
    ("{'a': sample.n}['a']", 3),
    ("len(sample.items) + len(sample.q)", 10),
    ("upper(sample.q) if sample.n == 3 else 'no'", "QUESTION"),
    ("max(1, sample.n, 2) + min([4, 5])", 7),
    ("round(2.456, 2)", 2.46),
    ("number('costs $1,200') + 1", 1201.0),
    ("extract('<a>x</a>', '<a>(.*?)</a>')", "x"),
    ("calc('2 * (3 + 4)')", "14"),
    ("f1('the cat sat', 'cat sat')", 1.0),
    ("clip(5, 0, 1)", 1.0),
    ("get({'a': 1}, 'b', 9)", 9),
    ("str(sample.n) + '/' + join(sample.items, ',')", "3/a,b"),
]


@pytest.mark.parametrize(("expression", "expected"), EXPRESSIONS)
def test_expressions(tmp_path: Path, expression: str, expected: Any) -> None:
    body = f"""
state:
  out: {{type: any}}
tools:
  eval:
    description: Evaluate.
    returns: {json.dumps(expression)}
    effect: ["state.out = result"]
"""
    module = build(body, tmp_path)
    _, env = play(module, [call("eval"), "end"])
    assert env.state.out == expected


REWARDS = """
state:
  calls: {type: int}
tools:
  act:
    description: Act.
    parameters: {word: {type: string}}
    when: state.calls < 2
    returns: args.word
    effect: ["state.calls += 1"]
episode:
  max_steps: MAX
  success: reward.final > 0
  anchor: "'calls=' + str(state.calls)"
rewards:
  final: {on: final, value: "1.0 if action.answer == 'yes' else 0.0"}
  each: {on: step, value: -0.1}
  used: {on: "tool:act", value: "2.0 if result == 'x' else 1.0", weight: 0.5, when: "args.word != 'skip'"}
  bad_format: {on: parse_error, value: -1}
  bad_tool: {on: tool_error, value: -2}
  cut: {on: truncated, value: -3}
"""


def rewards_of(traj: Any) -> list[dict[str, float]]:
    return [{k: round(v, 6) for k, v in s.rewards.items()} for s in traj.steps]


def test_reward_events_and_success(tmp_path: Path) -> None:
    module = build(REWARDS.replace("MAX", "6"), tmp_path)
    actions = [
        call("act", word="x"),
        "<tool_call>{oops</tool_call>",
        call("act", word="skip"),
        call("act", word="y"),
        "yes",
    ]
    traj, _ = play(module, actions)
    assert rewards_of(traj) == [
        {"each": -0.1, "used": 2.0},  # tool:act: its value; its weight 0.5 applies in the total
        {"each": -0.1, "bad_format": -1.0},
        {"each": -0.1},  # `when` false: no `used`
        {"each": -0.1, "bad_tool": -2.0},  # guard: calls < 2 no longer holds
        {"each": -0.1, "final": 1.0},
    ]
    assert traj.success is True
    assert [round(s.reward, 6) for s in traj.steps] == [0.9, -1.1, -0.1, -2.1, 0.9]
    assert round(traj.total_reward, 6) == -1.5
    assert [s.anchor for s in traj.steps] == ["calls=0", "calls=1", "calls=1", "calls=2", "calls=2"]
    assert "it requires state.calls < 2" in (traj.steps[3].observation or "")


def test_a_weight_scales_the_reward_not_the_component(tmp_path: Path) -> None:
    """`reward.NAME` (in `success`) and the component's logged value are before its
    weight: `success: reward.w == 1.0` with `weight: 2.0` held never."""
    module = build(
        """
        tools:
          act: {description: Act., parameters: {word: {type: string}}, returns: args.word}
        episode: {success: reward.w == 1.0}
        rewards:
          w: {on: final, value: 1.0, weight: 2.0}
          used: {on: "tool:act", value: 1.0, weight: 0.0}
        """,
        tmp_path,
    )
    traj, _ = play(module, [call("act", word="x"), "done"])
    assert [s.rewards for s in traj.steps] == [{"used": 1.0}, {"w": 1.0}]
    assert [s.reward for s in traj.steps] == [0.0, 2.0]
    assert traj.reward_components() == {"used": 1.0, "w": 1.0}
    assert traj.total_reward == 2.0 and traj.success is True
    restored = type(traj).from_dict(traj.to_dict())
    assert restored.total_reward == 2.0


def test_truncated_event_at_max_steps(tmp_path: Path) -> None:
    module = build(REWARDS.replace("MAX", "2"), tmp_path)
    traj, _ = play(module, [call("act", word="a"), call("act", word="b"), "yes"])
    assert traj.termination.value == "max_steps"
    assert traj.steps[-1].rewards["cut"] == -3.0
    assert "final" not in traj.steps[-1].rewards and traj.success is False


def test_done_when_and_terminal_tools(tmp_path: Path) -> None:
    module = build(
        """
state:
  n: {type: int}
tools:
  inc: {description: Inc., effect: ["state.n += 1"]}
  quit: {description: Quit., terminal: true}
episode: {done_when: state.n >= 2, max_steps: 9}
rewards:
  end: {on: final, value: state.n}
""",
        tmp_path,
    )
    traj, _ = play(module, [call("inc"), call("inc"), call("inc")])
    assert len(traj.steps) == 2 and traj.steps[-1].rewards == {"end": 2.0}
    traj, _ = play(module, [call("quit"), call("inc")])
    assert len(traj.steps) == 1 and traj.steps[0].rewards == {"end": 0.0}


def test_final_answer_continue(tmp_path: Path) -> None:
    module = build(
        """
tools:
  stop: {description: Stop., terminal: true}
episode: {final_answer: continue, max_steps: 5}
rewards:
  r: {on: final, value: 1}
""",
        tmp_path,
    )
    traj, _ = play(module, ["just text", call("stop")])
    assert len(traj.steps) == 2
    assert "No tool call found" in (traj.steps[0].observation or "")
    assert traj.steps[1].rewards == {"r": 1.0}


def test_expression_errors_are_recorded_not_raised(tmp_path: Path) -> None:
    module = build(
        """
tools:
  noop: {description: Nothing.}
rewards:
  parsed: {on: final, value: "int(action.text)"}
""",
        tmp_path,
    )
    traj, _ = play(module, ["not a number"])
    assert traj.steps[0].rewards == {"parsed": 0.0}
    assert "ValueError" in traj.steps[0].info["expression_errors"][0]


def test_prompts_derived_fields_and_state_summary(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"q": "Hello", "n": 2}\n')
    module = build(
        f"""
data:
  source: "jsonl:{data}"
  fields: {{q: str, n: int}}
  derived: {{double: sample.n * 2, shout: upper(sample.q)}}
prompt:
  system: "Be brief."
  user: "{{{{ sample.shout }}}} x{{{{ sample.double }}}}"
state:
  n: {{type: int}}
tools:
  inc: {{description: Inc., effect: ["state.n += 1"]}}
context:
  policy: state_summary
  summary: "n is {{{{ state.n }}}}"
""",
        tmp_path,
        head="agentspec: 1\nname: derived\n",
    )
    samples = module.load_samples()
    assert samples == [{"q": "Hello", "n": 2, "double": 4, "shout": "HELLO"}]
    env = module.ENV_CLASS()
    messages = env.initial_messages(samples[0])
    assert messages[0]["content"].startswith("Be brief.") and messages[-1]["content"] == "HELLO x4"


def test_a_step_the_policy_could_not_answer_is_paid_nothing(tmp_path: Path) -> None:
    """A dead server scored the per-step reward (and would pay a `truncated` penalty):
    the model did not act on a `policy_error` step, so no component fires there."""
    import asyncio

    from agentspec.runtime.episode.policy import Generation
    from agentspec.runtime.text.byte_tokenizer import ByteTokenizer

    module = build(
        """
        tools:
          act: {description: Act., parameters: {word: {type: string}}, returns: args.word}
        rewards:
          alive: {on: step, value: 1.0}
          cut: {on: truncated, value: -1.0}
        """,
        tmp_path,
    )

    class DeadServer:
        async def generate(self, prompts: Any, params: Any) -> list[Generation]:
            return [Generation([], [], error="connection refused") for _ in prompts]

    tokenizer = ByteTokenizer()
    flow = module.FLOW_CLASS(DeadServer(), tokenizer)
    sample = {"q": "question", "n": 3, "items": []}
    traj = asyncio.run(flow.run(sample, sample_id="s0", group_id="s0"))
    assert traj.termination.value == "policy_error"
    assert traj.steps[-1].rewards == {} and traj.total_reward == 0.0
    assert traj.steps[-1].info["policy_error"] == "connection refused"


def test_a_computed_initial_value_that_fails_is_named_at_its_own_line(tmp_path: Path) -> None:
    """Each state variable computed from the sample is its own expression: the one that
    fails on a sample is named with its line and keeps its default; the others are set
    (all of them were one `state.initial`, at the line of `state:`)."""
    module = build(
        """
state:
  first: {type: str, initial: "sample.items[0]"}
  third: {type: str, initial: "sample.items[2]"}
  size: {type: int, initial: "len(sample.items)"}
tools:
  noop: {description: Nothing.}
rewards:
  r: {on: final, value: 1.0}
""",
        tmp_path,
    )
    traj, env = play(module, ["done"], {"q": "q", "n": 1, "items": ["a", "b"]})
    assert (env.state.first, env.state.third, env.state.size) == ("a", "", 2)
    (error,) = traj.steps[0].info["expression_errors"]
    assert error.startswith("state.third.initial (spec") and ".yaml:8)" in error, error
    assert "IndexError" in error
