"""What generated code skips per call renders and behaves exactly as before.

Templates without Jinja syntax and lone `{{ root.field }}` templates render
without the sandbox, scalar samples are copied without `deepcopy`, and tools
whose code is bounded run on the event loop: each is checked here against the
slow path it replaces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentspec.compiler.tool_cost import inline_reason
from agentspec.runtime.compiled.env import SpecEnvMixin
from agentspec.runtime.compiled.scope import ConstantTemplate, FieldTemplate, SpecTemplate, template

from .helpers import build, call, play

SOURCES = [
    "Plain text, no syntax.",
    "ends with a newline\n",
    "windows\r\nline ends",  # Jinja normalises them: rendered in the sandbox
    "{{ sample.question }}",
    "{{sample.question}}",
    "{{ sample.n }}",
    "{{ sample.none }}",
    "{{ sample.items }}",  # a dict attribute: Jinja finds the method, not the key
    "{{ sample.question }}\n",
    "{{ constants.limit }}",
    "Q: {{ sample.question }}",
]
VARIABLES: dict[str, Any] = {
    "sample": {"question": "What is 6 * 7?", "n": 3.5, "none": None, "items": [1, 2]},
    "constants": {"limit": [1, 2]},
}


@pytest.mark.parametrize("source", SOURCES)
def test_a_fast_template_renders_what_the_sandbox_renders(source: str) -> None:
    assert template(source).render(**VARIABLES) == SpecTemplate(source).render(**VARIABLES)


def test_the_fast_paths_are_taken_only_where_exact() -> None:
    assert type(template("Plain text")) is ConstantTemplate
    assert type(template("{{ sample.question }}")) is FieldTemplate
    assert type(template("{{ sample.items }}")) is SpecTemplate
    assert type(template("a\r\nb")) is SpecTemplate
    assert type(template("Q: {{ sample.question }}")) is SpecTemplate


def test_a_field_template_reports_a_missing_field_as_the_sandbox_does() -> None:
    from jinja2.exceptions import UndefinedError

    with pytest.raises(UndefinedError):
        template("{{ sample.missing }}").render(sample={"question": "q"})


def test_a_field_template_past_the_output_limit_fails_as_the_sandbox_does() -> None:
    from agentspec.core.sandbox import MAX_OUTPUT, TemplateLimitError

    with pytest.raises(TemplateLimitError):
        template("{{ sample.question }}").render(sample={"question": "x" * (MAX_OUTPUT + 1)})


def test_an_episode_owns_its_sample_scalar_or_nested() -> None:
    flat = {"q": "x", "n": 1}
    copied = SpecEnvMixin.own_sample(flat)
    assert copied == flat and copied is not flat
    nested = {"q": "x", "items": [[1], [2]]}
    owned = SpecEnvMixin.own_sample(nested)
    owned["items"][0].append(9)
    assert nested["items"] == [[1], [2]]


@pytest.mark.parametrize(
    ("code", "inline"),
    [
        ([], True),
        (['fn.calc(s.args["expression"])'], True),
        (["s.state.n = s.state.n + 1\nif s.state.n > 3:\n    s.done()"], True),
        (['s.fail("no " + s.args["item"])'], True),
        (['fn.extract(s.args["q"], "(a+)+$")'], False),  # a spec regex over model text
        (['[x for x in fn.range(s.args["n"])]'], False),
        (['user.search(s.args["q"])'], False),
        (['s.args["a"] * s.args["b"]'], False),  # repetition can build huge values
        (['s.args["a"] ** s.args["b"]'], False),
        (['fn.calc(s.args["e"])', 'fn.regex_match(s.args["e"], "x")'], False),
    ],
)
def test_only_bounded_tool_code_runs_inline(code: list[str], inline: bool) -> None:
    assert (inline_reason(code) is not None) is inline


def test_a_bounded_tool_runs_inline_and_a_regex_tool_in_a_worker(tmp_path: Path) -> None:
    module = build(
        """
        tools:
          count:
            description: count
            parameters: {text: {type: string}}
            returns: len(args.text)
          find:
            description: find
            parameters: {text: {type: string}}
            returns: extract(args.text, '(a+)+b')
        """,
        tmp_path,
    )
    tools = {tool.name: tool for tool in module.ENV_CLASS.tool_classes}
    assert tools["count"].blocking is False
    assert tools["find"].blocking is True


def test_inline_and_worker_calls_of_one_step_apply_in_call_order(tmp_path: Path) -> None:
    """A bounded (inline) tool waits for an earlier call running in a worker thread."""
    module = build(
        """
        state:
          log: {type: "list[str]", initial: []}
        tools:
          slow:
            description: runs in a worker (a regex)
            parameters: {text: {type: string}}
            effect: ['state.log = state.log + [extract(args.text, "(a+)+b") or "slow"]']
          quick:
            description: runs inline
            parameters: {}
            effect: ['state.log = state.log + ["quick"]']
        """,
        tmp_path,
    )
    tools = {tool.name: tool for tool in module.ENV_CLASS.tool_classes}
    assert tools["slow"].blocking and not tools["quick"].blocking
    turn = call("slow", text="a" * 18 + "c") + call("quick") + call("slow", text="ab")
    _, env = play(module, [turn, "done"])
    assert env.state.log == ["slow", "quick", "a"]  # the first group of the match
