"""Hostile strings in every place a spec can put text: the module imports,
the strings round-trip exactly, nothing executes."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from .helpers import build, call, play

dumps = partial(json.dumps, ensure_ascii=False)

NASTY = [
    "quote \" and ' both",
    "triple \"\"\" and ''' quotes",
    "back\\slash \\n not a newline \\\\",
    "real\nnewline",
    "{{ 7 * 7 }} and {% if true %}jinja{% endif %}",
    "__import__('os').system('echo PWNED > /tmp/agentspec_pwned')",
    "\"); import os; os.system('echo PWNED'); (\"",
    "ünïcödé ✓ 🤖 \u202e rtl",
    "# not a comment",
    "class def lambda None True",
]


@pytest.mark.parametrize("text", NASTY)
def test_strings_round_trip_and_nothing_executes(tmp_path: Path, text: str) -> None:
    quoted = dumps(text)  # a JSON string is a valid YAML double-quoted scalar
    module = build(
        f"""
state:
  note: {{type: str, initial: {quoted}}}
  class: {{type: str, initial: {quoted}}}
tools:
  pick:
    description: {quoted}
    parameters:
      option: {{type: string, enum: [{quoted}, "plain"], description: {quoted}}}
    returns: {dumps("args.option + " + dumps(text))}
    effect: ["state.class = args.option"]
    observe: "{{{{ result }}}}"
rewards:
  r: {{on: final, value: {dumps("1.0 if state.note == " + dumps(text) + " else 0.0")}}}
oracle:
  - {dumps(text.replace("{", "(").replace("%", "pct"))}
""",
        tmp_path,
    )
    assert not Path("/tmp/agentspec_pwned").exists()
    tool = module.ENV_CLASS.tool_classes[0]
    assert tool.description == text
    assert tool.parameters["properties"]["option"]["enum"][0] == text
    assert tool.parameters["properties"]["option"]["description"] == text
    fresh = module.State()
    assert fresh.note == text and fresh.class_ == text  # a keyword name is renamed
    traj, env = play(module, [call("pick", option=text), "done"])
    assert traj.steps[0].observation is not None and text + text in traj.steps[0].observation
    assert env.state.class_ == text
    assert traj.steps[-1].rewards == {"r": 1.0}
    assert next(iter(module.oracle_actions({}))) == text.replace("{", "(").replace("%", "pct")


def test_dunder_attributes_in_templates_are_rejected_by_the_checker(tmp_path: Path) -> None:
    from agentspec.core.diagnostics import SpecError

    with pytest.raises(SpecError) as info:
        build(
            """
tools:
  t:
    description: x
    returns: "'ok'"
    observe: "{{ args.__class__.__mro__ }}"
""",
            tmp_path,
        )
    assert {d.code for d in info.value.diagnostics if d.is_error} == {"E410"}


def test_templates_render_in_a_sandbox() -> None:
    from jinja2.exceptions import SecurityError, UndefinedError

    from agentspec.runtime.compiled.env import template

    with pytest.raises(SecurityError):
        template("{{ x.__class__.__mro__ }}").render(x="s")
    with pytest.raises(UndefinedError):  # StrictUndefined: a missing name is an error, not ""
        template("{{ missing }}").render()
