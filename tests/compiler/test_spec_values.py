"""Values and names that used to validate and then generate broken Python
(issue 13): each is now either a located diagnostic with its own code, or
accepted and emitted correctly (see tests/codegen/test_hostile_specs.py)."""

from __future__ import annotations

import textwrap

import pytest

from agentspec.compiler.frontend import FrontendResult, check_source
from agentspec.core.source import SourceFile

HEAD = """\
agentspec: 1
name: t
prompt: {user: "hi"}
"""
TOOL = """
tools:
  t:
    description: x
    parameters: {a: {type: string}}
    returns: args.a
"""


def check(body: str) -> FrontendResult:
    return check_source(SourceFile("t.yaml", HEAD + textwrap.dedent(body)))


def located(result: FrontendResult, code: str) -> list[tuple[int, int]]:
    found = [d for d in result.diagnostics if d.code == code]
    assert all(d.span is not None for d in found)
    return [(d.span.line, d.span.column) for d in found]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("field", "value"),
    [("timeout", ".inf"), ("timeout", ".nan"), ("weight", ".inf"), ("value", "-.inf")],
)
def test_non_finite_schema_numbers_are_e206(field: str, value: str) -> None:
    tool_timeout = f"    timeout: {value}\n" if field == "timeout" else ""
    reward = {"weight": f"value: 1.0, weight: {value}", "value": f"value: {value}"}.get(
        field, "value: 1.0"
    )
    result = check(TOOL + tool_timeout + f"rewards:\n  r: {{on: final, {reward}}}\n")
    assert [d.code for d in result.diagnostics] == ["E206"]
    ((line, _),) = located(result, "E206")
    assert value in result.sources["t.yaml"].text.splitlines()[line - 1]


def test_non_finite_training_number_is_e206() -> None:
    result = check(TOOL + "training: {learning_rate: .inf}\n")
    assert [d.code for d in result.diagnostics] == ["E206"]


def test_non_finite_bound_in_a_parameter_schema_is_e206() -> None:
    result = check(
        """
        tools:
          t:
            description: x
            parameters: {n: {type: number, minimum: -.inf}}
            returns: args.n
        """
    )
    assert located(result, "E206") == [(8, 45)]


def test_explicit_timestamp_and_binary_are_e207() -> None:
    result = check(
        TOOL.replace("description: x", "description: !!binary aGk=")
        + "state:\n  d: {type: str, initial: !!timestamp 2024-01-01}\n"
    )
    assert sorted(d.code for d in result.diagnostics) == ["E207", "E207"]


def test_a_plain_date_is_a_string() -> None:
    result = check(
        TOOL
        + """
        state:
          since: {type: str, initial: 2024-01-01}
        rewards:
          r: {on: final, value: "1.0 if state.since == '2024-01-01' else 0.0"}
        """.replace("\n        ", "\n")
    )
    assert [d.code for d in result.errors] == []
    assert result.checked is not None
    assert result.checked.spec.state["since"].initial == "2024-01-01"


def test_lone_surrogate_is_e208_and_a_pair_is_joined() -> None:
    lone = check(TOOL.replace("description: x", 'description: "a \\udc00 b"'))
    assert [d.code for d in lone.diagnostics] == ["E208"]
    assert located(lone, "E208") == [(7, 18)]
    pair = check(TOOL.replace("description: x", 'description: "a \\ud83d\\ude00"'))
    assert pair.ok and pair.checked is not None
    assert pair.checked.spec.tools["t"].description == "a \U0001f600"


def test_lone_surrogate_in_a_key_is_e208() -> None:
    result = check(
        TOOL.replace(
            "{a: {type: string}}", '{a: {type: string, enum: ["x"]}, "b\\ud800": {type: string}}'
        )
    )
    assert "E208" in [d.code for d in result.diagnostics]


@pytest.mark.parametrize(
    ("section", "body"),
    [
        ("state", "state:\n  __init__: {type: int}\n"),
        ("state", "state:\n  __post_init__: {type: int}\n"),
        ("functions", "functions:\n  __call__: {impl: 'json:dumps'}\n"),
        ("tools", "tools:\n  __init__: {description: x}\n"),
    ],
)
def test_dunder_declarations_are_e413(section: str, body: str) -> None:
    result = check((TOOL if section != "tools" else "") + body)
    assert "E413" in [d.code for d in result.diagnostics]
    assert "W802" not in [d.code for d in result.diagnostics]
    ((line, column),) = located(result, "E413")
    assert column == 3 and result.sources["t.yaml"].text.splitlines()[line - 1].lstrip().startswith(
        "__"
    )


def test_keywords_and_near_collisions_are_accepted() -> None:
    result = check(
        TOOL
        + """
        state:
          class: {type: int}
          class_: {type: int}
          _dflt_x: {type: str}
        functions:
          def: {impl: "json:dumps", params: [any], returns: str}
        """.replace("\n        ", "\n")
    )
    assert result.errors == []


@pytest.mark.parametrize(
    "value",
    [
        "1.0 if len(action.text) > 3 and not len(action.text) > 3 else 0.0",
        "1.0 if not action.text == '' or action.text == '' else 0.0",
        "1.0 if action.text == 'a' else 1.0",
        "float(len({'k': 1, 'k': 2}))",
    ],
)
def test_redundant_expressions_are_w803(value: str) -> None:
    result = check(TOOL + f'rewards:\n  r: {{on: final, value: "{value}"}}\n')
    assert [d.code for d in result.diagnostics] == ["W803"]
    assert result.errors == [] and result.diagnostics[0].span is not None


@pytest.mark.parametrize(
    ("value", "always", "hint"),
    [
        ("1.0 if len(action.text) == '3' else 0.0", "int and str is always false", "number(text)"),
        (
            "1.0 if number(action.text) != action.text else 0.0",
            "float and str is always true",
            "number",
        ),
        (
            "1.0 if (len(action.text) > 3) == 'yes' else 0.0",
            "bool and str is always false",
            "'true'",
        ),
    ],
)
def test_a_number_or_bool_compared_with_a_text_is_w803(value: str, always: str, hint: str) -> None:
    result = check(TOOL + f'rewards:\n  r: {{on: final, value: "{value}"}}\n')
    (warning,) = result.diagnostics
    assert warning.code == "W803" and always in warning.message
    assert warning.hint is not None and hint in warning.hint


def test_comparisons_that_can_be_true_are_not_w803() -> None:
    # a converted text; a mixed enum (`all` arrives as a text); two values that may
    # both be none (None == None)
    body = """
    state:
      s: {type: str?}
      i: {type: int?}
    tools:
      t:
        description: x
        parameters: {n: {enum: [1, 2, all]}}
        effect:
          - "state.i = 1 if args.n == 'all' else 2"
          - state.s = args.n
    rewards:
      r: {on: final, value: "1.0 if number(action.text) == 3 or state.s == state.i else 0.0"}
    """
    result = check(body)
    assert [d.code for d in result.diagnostics] == [], result.diagnostics


def test_different_operands_are_not_redundant() -> None:
    value = "1.0 if len(action.text) > 3 and not len(action.text) > 4 else 0.5"
    result = check(TOOL + f'rewards:\n  r: {{on: final, value: "{value}"}}\n')
    assert result.diagnostics == []


def test_printf_formatting_is_not_in_the_language() -> None:
    result = check(TOOL + "rewards:\n  r: {on: final, value: \"float(len('%s' % action.text))\"}\n")
    assert [d.code for d in result.diagnostics] == ["E501"]


@pytest.mark.parametrize(
    "when", ["action.text == 'a' or true", "not (action.text == 'a' and false)"]
)
def test_conditions_decided_by_a_constant_are_w803(when: str) -> None:
    result = check(TOOL + f'rewards:\n  r: {{on: final, value: 1.0, when: "{when}"}}\n')
    assert [d.code for d in result.diagnostics] == ["W803"]


def test_a_constant_default_in_a_value_is_fine() -> None:
    result = check(
        TOOL + "rewards:\n  r: {on: final, value: \"float(len(action.answer or 'none'))\"}\n"
    )
    assert result.diagnostics == []


def test_a_number_in_quotes_is_e203_with_a_hint() -> None:
    # Lax pydantic read `max_steps: "3"` as 3, while the published JSON Schema refused it.
    result = check(TOOL + 'episode: {max_steps: "3"}\ntraining: {learning_rate: "1e-4"}\n')
    assert [d.code for d in result.diagnostics] == ["E203", "E203"]
    assert [d.hint for d in result.diagnostics] == [
        f"the quotes make it text: write `{number}` without them" for number in ("3", "1e-4")
    ]


def test_exponent_numbers_are_numbers_everywhere() -> None:
    result = check(
        """
        tools:
          t:
            description: x
            parameters: {n: {type: number, minimum: 1e-3, maximum: 1E3}}
            returns: args.n
        training: {learning_rate: 1e-4}
        """
    )
    assert result.diagnostics == []
    assert result.checked is not None
    assert result.checked.spec.training.learning_rate == 1e-4


def test_template_braces_in_an_expression_say_to_drop_them() -> None:
    result = check(
        TOOL + "    when: ['{{ args.a }} != \"x\"']\nrewards:\n  r: {on: final, value: 1.0}\n"
    )
    (error,) = result.errors
    assert error.code == "E301" and "`{{ … }}` is template syntax" in error.message
    assert error.hint == 'write `args.a != "x"`'


def test_a_bare_word_that_names_nothing_is_said_to_need_quotes() -> None:
    result = check(
        TOOL + 'rewards:\n  r: {on: final, value: "1.0 if action.text == off else 0.0"}\n'
    )
    (error,) = result.errors
    assert error.code == "E401" and error.hint is not None
    # `off` is a boolean in YAML 1.1: both readings are offered
    assert (
        error.hint
        == "a boolean is `true` or `false`; a text is quoted inside the expression: \"'off'\""
    )
    result = check(
        TOOL + 'rewards:\n  r: {on: final, value: "1.0 if action.text == banana else 0.0"}\n'
    )
    (error,) = result.errors
    assert error.hint is not None
    assert error.hint.startswith(
        "a text is quoted inside the expression: 'banana' (in YAML: \"'banana'\"); known: action"
    )


def test_a_template_calling_a_function_says_templates_call_nothing() -> None:
    body = TOOL.replace("    returns: args.a\n", "    observe: '{{ len(args.a) }}'\n")
    result = check(body + "rewards:\n  r: {on: final, value: 1.0}\n")
    (error,) = result.errors
    assert error.code == "E602" and error.hint is not None
    assert error.hint.startswith("a template cannot call 'len'")


def test_a_bool_stored_in_a_number_state_variable_is_an_error() -> None:
    # `true` in an int is a slip; a count of conditions (`+= cond`) stays a number
    body = """
    state:
      credit: {type: int, initial: true}
      n: {type: float}
    tools:
      pay:
        description: Pay.
        parameters: {}
        effect: ["state.credit = true", "state.n += state.credit > 2"]
    rewards:
      r: {on: final, value: "1.0 if state.credit == 3 and state.n > 0 else 0.0"}
    """
    result = check(body)
    assert [(d.code, d.span.line if d.span else 0) for d in result.errors] == [
        ("E508", 6),
        ("E504", 12),
    ]
    assert result.errors[1].hint is not None and "`1 if … else 0`" in result.errors[1].hint


@pytest.mark.parametrize(
    ("on", "meant"),
    [("guard_fail:t", "guard_failed:t"), ("tool_erorr", "tool_error"), ("fnal", "final")],
)
def test_a_misspelt_reward_event_gets_the_event_meant(on: str, meant: str) -> None:
    result = check(TOOL + f'rewards:\n  r: {{on: "{on}", value: 1.0}}\n')
    (error,) = result.errors
    assert error.code == "E204" and error.hint == f"did you mean '{meant}'?"


def test_none_in_lower_case_is_said_to_be_none() -> None:
    result = check(
        TOOL + 'rewards:\n  r: {on: final, value: "1.0 if action.answer == none else 0.0"}\n'
    )
    (error,) = result.errors
    assert error.code == "E401" and error.hint == "did you mean `None`?"
