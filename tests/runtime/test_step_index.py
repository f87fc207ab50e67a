"""`step.index` is the 0-based index of the step being played, the one its trajectory
records it under, in every place a spec reads it: a tool's effect and `observe`, its
rewards, `done_when`; `episode.anchor` (evaluated before a step) sees the step about to
be played. (A new user found effects seeing 1 on the first step, trajectories 0.)"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from agentspec.cli import app

CALL = '"<tool_call>{\\"name\\": \\"tick\\", \\"arguments\\": {}}</tool_call>"'
SPEC = f"""\
agentspec: 1
name: probe
data: {{source: jsonl:d.jsonl, fields: {{q: str}}}}
prompt: {{user: "{{{{ sample.q }}}}"}}
state:
  seen: {{type: "list[int]", initial: []}}
  guarded: {{type: "list[int]", initial: []}}
tools:
  tick:
    description: Tick.
    parameters: {{}}
    when:
      - let i = step.index
      - {{if: i < 3, message: "too late"}}
    effect: ["state.seen = state.seen + [step.index]"]
    observe: "tick at {{{{ step.index }}}}"
episode: {{max_steps: 5, done_when: "step.index + 1 >= 3", anchor: "'at ' + str(step.index)"}}
rewards:
  idx: {{on: step, value: "step.index * 1.0"}}
oracle: [{CALL}, {CALL}, {CALL}]
tests:
  episodes:
    - name: indexes
      sample: {{id: a, q: go}}
      turns: [{CALL}, {CALL}, {CALL}, {CALL}]
      expect:
        observations: [{{contains: "tick at 0"}}, {{contains: "tick at 1"}}, null]
        state: {{seen: [0, 1, 2]}}
        rewards: {{idx: 3.0}}
        steps: 3
        ending: done
"""


def test_step_index_is_the_index_of_the_step_being_played(tmp_path: Path) -> None:
    spec = tmp_path / "probe.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    (tmp_path / "d.jsonl").write_text('{"q": "go"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["test", str(spec)])
    assert result.exit_code == 0, result.output
    assert "2 passed" in result.output


def test_the_anchor_sees_the_step_about_to_be_played(tmp_path: Path) -> None:
    import asyncio

    from agentspec.compiler.build import import_spec
    from agentspec.runtime import ScriptedPolicy
    from agentspec.runtime.compiled.task_text import cached_task_tokenizer

    spec = tmp_path / "probe.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    (tmp_path / "d.jsonl").write_text('{"q": "go"}\n', encoding="utf-8")
    module = import_spec(spec)
    sample = module.load_samples()[0]
    tokenizer, _ = cached_task_tokenizer(spec, module, [sample])
    turns = list(module.oracle_actions(sample))
    flow = module.FLOW_CLASS(ScriptedPolicy(turns, tokenizer), tokenizer)
    trajectory = asyncio.run(flow.run(sample))
    assert [s.anchor for s in trajectory.steps] == ["at 0", "at 1", "at 2"]
    assert [s.index for s in trajectory.steps] == [0, 1, 2]
