"""Template checking: parsed, never evaluated; what the sandbox refuses at run
is refused at `validate`, each at the right place."""

from __future__ import annotations

import pytest

from agentspec.compiler.frontend import check_source
from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import SourceFile

SPEC = """agentspec: 1
name: t
data:
  source: jsonl:data.jsonl
  fields: {{question: str, n: int}}
prompt:
  user: {user}
rewards:
  correct: {{on: final, value: "1.0"}}
"""


def errors(user: str) -> list[Diagnostic]:
    text = SPEC.format(user=user)
    result = check_source(SourceFile("t.yaml", text))
    return result.errors


def one_error(user: str, code: str) -> Diagnostic:
    found = errors(user)
    assert [d.code for d in found] == [code], [(d.code, d.message) for d in found]
    assert found[0].span is not None
    return found[0]


def caret_text(user: str, d: Diagnostic) -> str:
    """The text under the diagnostic's span (on the `user:` line, line 7)."""
    assert d.span is not None and d.span.line == 7
    line = SPEC.format(user=user).split("\n")[6]
    return line[d.span.column - 1 : d.span.end_column - 1]


def test_e602_caret_for_a_name_that_also_appears_inside_a_longer_dotted_name_earlier() -> None:
    user = '"{{ sample.question }} again {{ question }}"'
    d = one_error(user, "E602")
    assert caret_text(user, d) == "question"
    # the second occurrence, not the attribute inside `sample.question`
    assert (
        d.span is not None
        and d.span.column == SPEC.format(user=user).split("\n")[6].rindex("question") + 1
    )


def test_unknown_field_caret_is_on_the_attribute_after_its_owner() -> None:
    user = '"{{ question }}{{ sample.questoin }}"'
    found = errors(user)
    assert sorted(d.code for d in found) == ["E404", "E602"]
    field = next(d for d in found if d.code == "E404")
    assert caret_text(user, field) == "questoin"


@pytest.mark.parametrize(
    ("user", "code", "under"),
    [
        ("\"{{ ''['__class__'] }}\"", "E410", "'__class__'"),
        ("\"{{ ''|attr('__globals__') }}\"", "E410", "attr"),
        ("\"{{ '{0.__class__}'.format(sample.n) }}\"", "E410", "format"),
        ("\"{{ '{0[_x]}'.format(sample.n) }}\"", "E410", "format"),
        ("\"{% include 'a.txt' %}\"", "E604", "include"),
        ("\"{% import 'a.txt' as a %}\"", "E604", "import"),
        ("\"{% from 'a.txt' import b %}\"", "E604", "from"),
        ("\"{% extends 'a.txt' %}\"", "E604", "extends"),
        (
            '"{% macro f() %}{{ g() }}{% endmacro %}{% macro g() %}{{ f() }}{% endmacro %}"',
            "E604",
            "g",
        ),
        ('"{{ 10**(10**10) }}"', "E605", "**"),
        ("\"{{ 'a'*1000000000 }}\"", "E605", "*"),
        ('"{{ 7**100000 }}"', "E605", "**"),
        ('"{% for i in range(10**9) %}{% endfor %}"', "E605", "range"),
    ],
)
def test_what_the_sandbox_refuses_is_refused_at_validate(user: str, code: str, under: str) -> None:
    assert caret_text(user, one_error(user, code)) == under


def test_second_of_two_ranges_is_located_on_its_own() -> None:
    user = '"{% for i in range(3) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"'
    d = one_error(user, "E605")
    line = SPEC.format(user=user).split("\n")[6]
    assert d.span is not None and d.span.column == line.rindex("range") + 1


def test_block_scalar_positions_map_to_file_lines() -> None:
    user = "|\n    Hello {{ sample.question }}\n    {{ ''['_x'] }}"
    found = errors(user)
    assert [d.code for d in found] == ["E410"]
    assert found[0].span is not None and (found[0].span.line, found[0].span.column) == (9, 11)


def test_too_deep_template_is_e603_not_a_recursion_error() -> None:
    one_error('"{{ ' + "(" * 500 + "1" + ")" * 500 + ' }}"', "E603")


def test_unknown_filter_still_reported_without_compiling() -> None:
    d = one_error('"{{ sample.question|shout }}"', "E601")
    assert "shout" in d.message


@pytest.mark.parametrize(
    "user",
    [
        "\"{{ sample.question * 3 }} {{ 2**10 }} {{ '-' * 20 }}\"",
        '"{% for i in range(5) %}{{ i }}{% endfor %}"',
        '"{% macro f(x) %}[{{ x }}]{% endmacro %}{{ f(sample.n) }}"',
        "\"{{ '{0}: {1}'.format(sample.question, sample.n) }}\"",
        "\"{{ sample.question|attr('upper') }}\"",
    ],
)
def test_ordinary_templates_still_pass(user: str) -> None:
    assert errors(user) == []


@pytest.mark.parametrize(
    ("user", "under", "hint"),
    [
        # Issue 26: inside `{% if %}` and `a if b else c`, Jinja compiles an
        # unknown filter or test to code that fails only when it runs.
        ('"{% if sample.n %}{{ sample.question | shout }}{% endif %}"', "shout", None),
        ("\"{{ 'a' if sample.n is oddish else 'b' }}\"", "oddish", "did you mean 'odd'?"),
        ("\"{{ 'a' if sample.n is not oddish else 'b' }}\"", "oddish", "did you mean 'odd'?"),
        ('"{% if sample.n is weird %}x{% endif %}"', "weird", None),
        ('"{% if sample.n %}{% filter uper %}x{% endfilter %}{% endif %}"', "uper", "upper"),
        ('"{% for q in [sample.question] %}{{ q | uper }}{% endfor %}"', "uper", "upper"),
        ('"{{ sample.question | uper }}"', "uper", "did you mean 'upper'?"),
    ],
)
def test_unknown_filters_and_tests_are_e601_wherever_they_are(
    user: str, under: str, hint: str | None
) -> None:
    d = one_error(user, "E601")
    assert caret_text(user, d) == under
    assert f"named '{under}'" in d.message
    if hint is not None:
        assert d.hint is not None and hint in d.hint


def test_each_unknown_filter_is_reported_once_in_one_run() -> None:
    found = errors('"{{ sample.question | shout }}{% if sample.n is oddish %}{% endif %}"')
    assert sorted(d.message for d in found) == [
        "template syntax error: no filter named 'shout'",
        "template syntax error: no test named 'oddish'",
    ]


@pytest.mark.parametrize(
    "user",
    [
        # Issue 26: a set inside a branch, read after it in the same branch.
        '"{% if sample.n > 1 %}{% set x = 3 %}{{ x }}{% endif %}"',
        '"{% if sample.n %}a{% elif sample.question %}{% set y = 2 %}{{ y }}{% endif %}"',
        '"{% if sample.n %}{% set w = 1 %}{% else %}{% set w = 2 %}{% endif %}{{ w }}"',
        '"{% if sample.n %}{% set w = 1 %}{% elif 1 %}{% set w = 3 %}{% else %}'
        '{% set w = 2 %}{% endif %}{{ w }}"',
        '"{% for q in [1] %}{% if q %}{% set v = q %}{{ v }}{% endif %}{% endfor %}"',
    ],
)
def test_set_inside_a_branch_is_declared_after_it(user: str) -> None:
    assert errors(user) == []


@pytest.mark.parametrize(
    ("user", "nth"),
    [
        ('"{% if sample.n %}{% set z = 1 %}{% endif %}{{ z }}"', 0),
        ('"{% if sample.n %}{% set z = 1 %}{{ z }}{% endif %}{{ z }}"', 1),
        ('"{% for i in [1] %}{% set z = i %}{{ z }}{% endfor %}{{ z }}"', 1),
        ('"{% if sample.n %}{{ z }}{% set z = 1 %}{% endif %}"', 0),
    ],
)
def test_a_read_the_set_may_not_reach_is_e602_at_that_read(user: str, nth: int) -> None:
    d = one_error(user, "E602")
    line = SPEC.format(user=user).split("\n")[6]
    reads = [i for i in range(len(line)) if line.startswith("{{ z }}", i)]
    assert d.span is not None and d.span.column == reads[nth] + 4
    assert "may not have run" in d.message


def test_a_let_read_by_the_observation_says_to_keep_it_in_state() -> None:
    """A `let` of a tool's effect ends with the effect: the observation cannot read it,
    and E602's hint said only 'undefined', not where the value must live."""
    text = """agentspec: 1
name: letc
prompt: {user: hi}
state:
  total: {type: int, initial: 0}
tools:
  add:
    description: add
    parameters: {n: {type: integer}}
    effect:
      - let doubled = args.n * 2
      - state.total += doubled
    observe: "Added {{ doubled }}."
episode: {max_steps: 2}
rewards:
  r: {on: final, value: "1.0"}
"""
    found = [d for d in check_source(SourceFile("letc.yaml", text)).diagnostics if d.code == "E602"]
    assert len(found) == 1 and found[0].hint is not None
    assert "keep the value in state" in found[0].hint and "state.doubled" in found[0].hint
