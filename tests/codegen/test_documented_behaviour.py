"""What the language reference promises about running a spec (issue 26, item
14): what the model sees of a refused call, what effects survive a failure,
and what a `state_summary` template reads. Each test plays a generated module."""

from __future__ import annotations

from pathlib import Path

from agentspec.runtime.text.byte_tokenizer import ByteTokenizer

from .helpers import build, call, play
from .test_language_constructs import GUARDED


def test_what_the_model_sees_of_a_refusal(tmp_path: Path) -> None:
    # Issue 26 (docs): a guard's message reaches the model as every tool
    # error does, `Error: MESSAGE` in the format's wrapping (hermes here).
    module = build(GUARDED, tmp_path)
    traj, _ = play(module, [call("cancel", order_id="o1"), "end"])
    assert traj.steps[0].observation == "<tool_response>\nError: Sign in first.\n</tool_response>"


def test_fail_and_a_failing_observe_keep_the_effects_before_them(tmp_path: Path) -> None:
    # Issue 26 (docs): effects are not rolled back. `fail()` keeps the effects
    # before it (no `tool:NAME` reward); an `observe` that fails keeps all of
    # them and the `tool:NAME` rewards, and the call is a tool error.
    module = build(
        """
        state:
          log: {type: "list[str]"}
        tools:
          step:
            description: Log, then maybe fail.
            parameters: {word: {type: string}}
            effect:
              - state.log = state.log + ["before " + args.word]
              - fail("no " + args.word) if args.word == "stop"
              - state.log = state.log + ["after " + args.word]
            observe: '{{ state.log[9] if args.word == "peek" else "ok" }}'
        rewards:
          stepped: {on: "tool:step", value: 1.0}
          failed: {on: tool_error, value: -1.0}
        """,
        tmp_path,
    )
    turns = [call("step", word="go"), call("step", word="stop"), call("step", word="peek"), "end"]
    traj, env = play(module, turns)
    assert env.state.log == ["before go", "after go", "before stop", "before peek", "after peek"]
    assert [s.rewards for s in traj.steps[:3]] == [
        {"stepped": 1.0},
        {"failed": -1.0},
        {"stepped": 1.0, "failed": -1.0},
    ]
    assert "Error: no stop" in (traj.steps[1].observation or "")
    assert "Error: step failed" in (traj.steps[2].observation or "")


def test_a_state_summary_reads_what_the_reference_lists(tmp_path: Path) -> None:
    module = build(
        """
        constants: {greeting: Hello}
        state:
          count: {type: int}
        tools:
          bump:
            description: Count up.
            parameters: {}
            effect: ["state.count += 1"]
            observe: "now {{ state.count }}"
        episode: {max_steps: 3}
        context:
          policy: state_summary
          summary: >-
            {{ constants.greeting }}; task={{ task }}; q={{ sample.q }}; count={{ state.count }};
            step={{ step }}/{{ step.max_steps }}; last={{ last_observation or "-" }};
            said={{ steps[-1].action_text[:11] if steps else "-" }}
        rewards:
          r: {on: final, value: 1.0}
        """,
        tmp_path,
    )
    traj, _ = play(module, [call("bump"), "end"])
    second = ByteTokenizer().decode(traj.steps[1].prompt_ids)
    assert "Hello; task=question; q=question; count=1;" in second
    assert "step=1/3; last=<tool_response>\nnow 1\n</tool_response>;" in second
    assert "said=<tool_call>" in second
