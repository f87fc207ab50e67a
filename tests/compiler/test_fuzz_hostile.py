"""Hostile fuzzing of the front end (seeded: the same examples every run).

Over YAML structure (anchors, aliases, depth, long literals), expressions
(long chains, deep nesting, long numbers) and templates (sandbox escapes,
resource-hungry constants): `validate` never raises, every diagnostic has a
location, and whatever it accepts lowers to Python that compiles.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentspec.compiler.emit import render_module
from agentspec.compiler.frontend import check_source
from agentspec.compiler.lower import lower
from agentspec.core.diagnostics import CODES, render_text
from agentspec.core.source import SourceFile

SEEDED = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SPEC = """agentspec: 1
name: fuzz
data:
  source: jsonl:data.jsonl
  fields: {{question: str, n: int, items: "list[str]"}}
prompt:
  user: {user}
tools:
  echo:
    description: Echo.
    parameters:
      text: {{type: string}}
    returns: {returns}
rewards:
  correct: {{on: final, value: {reward}}}
{extra}"""


def spec(
    user: str = "{{ sample.question }}",
    returns: str = "args.text",
    reward: str = "1.0",
    extra: str = "",
) -> str:
    return SPEC.format(
        user=json.dumps(user), returns=json.dumps(returns), reward=json.dumps(reward), extra=extra
    )


def assert_validate_survives(text: str) -> None:
    """No exception; every diagnostic is known and located; accepted specs compile."""
    result = check_source(SourceFile("fuzz.yaml", text))
    for d in result.diagnostics:
        assert d.code in CODES and d.message
        assert d.span is not None, f"{d.code} has no location: {d.message}"
        render_text(d, result.sources)
    if result.ok and result.checked is not None:
        model = lower(result.checked, spec_file="fuzz.yaml", spec_sha256="0" * 64, version="0")
        compile(render_module(model), "<generated>", "exec")


# ------------------------------------------------------------------- YAML

_YAML_SCALARS = st.one_of(
    st.sampled_from(["1", "x", "''", "null", "true", "1.5", "~", '"a b"']),
    st.integers(1, 5000).map(lambda n: "9" * n),
    st.integers(0, 300_000).map(lambda n: "a" * n),
)


@st.composite
def yaml_value(draw: st.DrawFn, depth: int = 0) -> str:
    anchors = ["a", "b", "c"]
    choice = draw(st.integers(0, 5 if depth < 6 else 1))
    if choice == 0:
        return draw(_YAML_SCALARS)
    if choice == 1:
        return "*" + draw(st.sampled_from(anchors))
    if choice == 2:
        return f"&{draw(st.sampled_from(anchors))} {draw(yaml_value(depth + 1))}"
    if choice == 3:
        items = draw(st.lists(yaml_value(depth + 1), max_size=9))
        return "[" + ", ".join(items) + "]"
    if choice == 4:
        items = draw(st.lists(yaml_value(depth + 1), max_size=5))
        return "{" + ", ".join(f"k{i}: {v}" for i, v in enumerate(items)) + "}"
    levels = draw(st.integers(0, 400))
    return "[" * levels + draw(_YAML_SCALARS) + "]" * levels


@SEEDED
@given(st.lists(yaml_value(), min_size=1, max_size=6))
def test_yaml_structure(values: list[str]) -> None:
    extra = "".join(f"x{i}: {v}\n" for i, v in enumerate(values))
    assert_validate_survives(spec(extra=extra))


@SEEDED
@given(st.integers(1, 300), st.sampled_from(["- ", "k: ", "? "]))
def test_deep_block_nesting(depth: int, form: str) -> None:
    lines = ["x:"]
    for level in range(1, depth + 1):
        indent = "  " * level
        lines.append(indent + ("- " if form == "- " else f"k{level}:"))
    assert_validate_survives(spec(extra="\n".join(lines) + " end\n"))


# ------------------------------------------------------------ expressions

_ATOMS = ["1", "2.5", "sample.n", "len(sample.items)", "'x'", "args.text", "9" * 120]


@st.composite
def expression(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["chain", "lists", "calls", "parens", "mixed"]))
    depth = draw(st.integers(1, 320))
    atom = draw(st.sampled_from(_ATOMS))
    if kind == "chain":
        op = draw(st.sampled_from([" + ", " * ", " and ", " or ", " == ", " - "]))
        return op.join([atom] * depth)
    if kind == "lists":
        return "len(" + "[" * depth + atom + "]" * depth + ")"
    if kind == "calls":
        return "abs(" * depth + atom + ")" * depth
    if kind == "parens":
        return "(" * depth + atom + ")" * depth
    parts = draw(
        st.lists(st.sampled_from([*_ATOMS, " + ", " * ", "(", ")", "[", "]", ","]), max_size=60)
    )
    return "".join(parts)


@SEEDED
@given(expression(), st.sampled_from(["reward", "returns"]))
def test_expressions(text: str, where: str) -> None:
    assert_validate_survives(spec(**{where: text}))


# -------------------------------------------------------------- templates

_TEMPLATE_ATOMS = [
    "{{ ",
    " }}",
    "{% ",
    " %}",
    "sample.question",
    "sample.n",
    "question",
    "for i in ",
    "range(",
    "10**",
    "(10**10)",
    "100000",
    ")",
    "endfor",
    "'a'",
    " * ",
    " ** ",
    " ~ ",
    "['__class__']",
    "|attr('__class__')",
    "'{0.__class__}'.format(1)",
    "include 'x'",
    "macro f(n)",
    "f(1)",
    "endmacro",
    "|center(1000000000)",
    "if ",
    "endif",
    "|shout",
    "(" * 200,
    ")" * 200,
    "loop.index",
    "set x = ",
    "x",
    "\n",
    "|upper",
]


@SEEDED
@given(st.lists(st.sampled_from(_TEMPLATE_ATOMS), max_size=25).map("".join))
def test_templates(template: str) -> None:
    assert_validate_survives(spec(user=template))
