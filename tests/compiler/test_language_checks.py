"""The checker on issue 14's constructs: element types flowing through
comprehensions and collection built-ins, `let` scoping, constants, initial
expressions, guards with messages, new reward events, oracle steps — and one
test per new error code (E311, E415, E414, E511, and E508 for expressions)."""

from __future__ import annotations

import json
import textwrap

import pytest

from agentspec.compiler.frontend import FrontendResult, check_source
from agentspec.compiler.parser import ExprSyntaxError, parse_expression, parse_statement
from agentspec.compiler.types import ANY, BOOL, DICT, INT, STR, ListOf, Optional
from agentspec.core.source import SourceFile

HEAD = """\
agentspec: 1
name: t
data: {source: "jsonl:x.jsonl", fields: {q: str, n: int, tags: "list[str]", db: dict, grid: "list[list[int]]"}}
constants:
  limit: 3
  names: [a, b]
  table: {up: [0, -1]}
prompt: {user: "{{ sample.q }} {{ constants.limit }}"}
"""


def check(body: str) -> FrontendResult:
    return check_source(SourceFile("t.yaml", HEAD + textwrap.dedent(body)))


def errors(result: FrontendResult) -> list[str]:
    return [d.code for d in result.diagnostics if d.is_error]


def typed(expression: str) -> object:
    body = f"episode: {{anchor: {json.dumps(expression)}}}\nrewards: {{r: {{on: final, value: 1.0}}}}\n"
    result = check(body)
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.checked is not None
    return result.checked.expressions[("episode", "anchor")].type


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("[t for t in sample.tags if t != 'x']", ListOf(STR)),
        ("[len(t) for t in sample.tags]", ListOf(INT)),
        ("[row[0] for row in sample.grid]", ListOf(INT)),
        ("[k for k in sample.db]", ListOf(STR)),
        ("{k: v for k, v in items(sample.db)}", DICT),
        ("any([t == 'a' for t in sample.tags])", BOOL),
        ("sum([len(t) for t in sample.tags])", INT),
        ("max([len(t) for t in sample.tags])", INT),
        ("min(sample.tags)", STR),
        ("sorted(sample.tags)", ListOf(STR)),
        ("sorted(sample.db)", ListOf(STR)),
        ("get(sample.tags, 5, 'none')", STR),
        ("get(sample.tags, 5)", Optional(STR)),
        ("values(sample.db)", ListOf(ANY)),
        ("constants.limit", INT),
        ("constants.names", ListOf(STR)),
    ],
)
def test_element_types_flow_through(expression: str, expected: object) -> None:
    assert typed(expression) == expected


def test_let_names_are_scoped_to_the_tool_call() -> None:
    result = check(
        """
        state:
          n: {type: int}
        tools:
          a:
            description: A.
            parameters: {x: {type: integer}}
            effect:
              - let doubled = args.x * 2
              - state.n = doubled + 1
          b:
            description: B.
            parameters: {}
            effect:
              - state.n = doubled
        """
    )
    assert errors(result) == ["E401"]  # `doubled` belongs to tool a's call
    (error,) = [d for d in result.diagnostics if d.is_error]  # W901 (data not here) aside
    assert error.span is not None and error.span.line == 23


def test_initial_expressions_and_guards_with_messages_check() -> None:
    result = check(
        """
        state:
          budget: {type: int, initial: "sample.n * constants.limit"}
          seen: {type: "list[str]", initial: "[t for t in sample.tags]"}
          label: {type: str, initial: "sample.q"}
          page: {type: str, initial: "start"}
        tools:
          look:
            description: Look.
            parameters: {what: {type: string}}
            when:
              - if: len(state.seen) < state.budget
                message: "Only {{ state.budget }} looks; not {{ args.what }}."
              - {if: 'args.what != ""', message: "Say what."}
            effect: ["state.seen = state.seen + [args.what]"]
        rewards:
          penalty: {on: "guard_failed:look", value: -1.0}
          errors: {on: "tool_error:look", value: -0.1}
          any_guard: {on: guard_failed, value: 0.0}
        """
    )
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.checked is not None
    # a `str` variable's initial is an expression when it reads `sample` or
    # `constants` (issue 26), else its text
    assert result.checked.expressions[("state", "label", "initial")].type == STR
    assert ("state", "page", "initial") not in result.checked.expressions
    assert result.checked.expressions[("state", "budget", "initial")].type == INT


def test_reward_on_guard_failed_of_an_unknown_tool() -> None:
    result = check(
        """
        tools:
          look: {description: Look., parameters: {}}
        rewards:
          penalty: {on: "guard_failed:lok", value: -1.0}
        """
    )
    assert errors(result) == ["E409"]
    (error,) = [d for d in result.diagnostics if d.is_error]  # W901 (data not here) aside
    assert "did you mean 'look'" in (error.hint or "")


def test_oracle_each_must_be_a_list_and_its_template_reads_item() -> None:
    result = check(
        """
        tools:
          go: {description: Go., parameters: {d: {type: string}}}
        episode: {tool_format: bracket}
        oracle:
          - each: sample.n
            action: "go[{{ item }}]"
          - each: sample.tags
            action: "go[{{ item }} {{ index }} {{ itme }}]"
        """
    )
    assert errors(result) == ["E511", "E602"]


@pytest.mark.parametrize(
    ("effect", "code", "hint"),
    [
        ("state.xs.append(1)", "E311", "state.xs = state.xs + [x]"),
        ("state.n = sample.db.get('k')", "E311", "get(d, key, default)"),
        ("let fn = 1", "E415", None),
        ("let state = 1", "E415", None),
        ("let _x = 1", "E415", None),
        ("state.n = constants.limt", "E414", "did you mean 'limit'?"),
        ("state.n = len([x for x in sample.n])", "E511", "items(d)"),
        ("state.n = len([a for a, b in sample.tags])", "E511", "items(d)"),
        ("state.n = [t for t in sample.tags]", "E504", None),
    ],
)
def test_new_error_codes(effect: str, code: str, hint: str | None) -> None:
    result = check(
        f"""
        state:
          n: {{type: int}}
          xs: {{type: "list[int]"}}
        tools:
          a:
            description: A.
            parameters: {{}}
            effect: ["state.xs = state.xs", "{effect}"]
        """
    )
    assert code in errors(result), [d.message for d in result.diagnostics]
    diagnostic = next(d for d in result.diagnostics if d.code == code)
    if hint is not None:
        assert hint in (diagnostic.hint or "")


def test_let_twice_and_an_initial_expression_of_the_wrong_type() -> None:
    result = check(
        """
        state:
          n: {type: int, initial: "sample.tags"}
        tools:
          a:
            description: A.
            parameters: {}
            effect: ["let v = 1", "let v = 2", "state.n = v"]
        """
    )
    assert errors(result) == ["E508", "E415"]


def test_parser_shapes() -> None:
    node = parse_expression("{k: v for k, v in items(d) if v if k != 'x'}")
    assert type(node).__name__ == "Comprehension"
    assert node.names == ("k", "v") and len(node.conds) == 2  # type: ignore[attr-defined]
    assert type(parse_statement("let total = a + 1")).__name__ == "Let"
    assert (
        type(parse_statement("state.let = 1")).__name__ == "Assign"
    )  # `let` is a keyword only first
    with pytest.raises(ExprSyntaxError) as info:
        parse_expression("xs.count(1) > 0")
    assert info.value.code == "E311" and info.value.start == 3
    with pytest.raises(ExprSyntaxError) as info:
        parse_statement("let x += 1")
    assert info.value.code == "E306"


GUARDS = """
state:
  user: {type: str}
  orders: {type: dict}
guards:
  signed_in: {if: 'state.user != ""', message: "Sign in first."}
  order_known:
    - let order = get(state.orders, args.order_id)
    - {if: order != None, message: "No order {{ args.order_id }} ({{ order }})."}
  both: [signed_in, order_known]
tools:
  cancel:
    description: Cancel.
    parameters: {order_id: {type: string}}
    when: [both, "let size = len(args.order_id)", {if: size < 9, message: "{{ size }}"}]
    effect: ["state.orders = {}", "state.user = args.order_id"]
  track:
    description: Track.
    parameters: {order_id: {type: string}}
    when: order_known
"""


def test_named_guards_and_guard_lets_check() -> None:
    result = check(GUARDS)
    assert errors(result) == [] and "W804" not in [d.code for d in result.diagnostics]


@pytest.mark.parametrize(
    ("change", "expected", "words"),
    [
        # A named guard reads the `args` of each tool that uses it.
        (
            (
                "order_id: {type: string}}\n    when: order_known",
                "id: {type: string}}\n    when: order_known",
            ),
            [("E403", "let order = "), ("E403", "No order")],
            "unknown tool argument 'order_id' of tool 'track', which uses guard 'order_known'",
        ),
        (
            ("when: order_known", "when: order_knwn"),
            [("E416", "order_knwn")],
            "did you mean 'order_known'?",
        ),
        (
            ("both: [signed_in, order_known]", "both: [signed_in, both]"),
            [("E416", "both: [")],
            "uses itself",
        ),
        (("when: [both, ", "when: [signed_in, "), [("W804", "both: [")], "not used by any tool"),
        # A `let` is seen by the steps after it, in its own guard only.
        (
            ('{if: size < 9, message: "{{ size }}"}', '{if: order < 9, message: "{{ size }}"}'),
            [("E401", "if: order < 9")],
            "unknown name 'order'",
        ),
        (
            ('"let size = len(args.order_id)", ', ""),
            [("E401", "if: size"), ("E602", "if: size")],
            "unknown name 'size'",
        ),
        (
            ("let size = len(args.order_id)", 'let size = len(args.order_id)", "let size = 1'),
            [("E415", "let size = 1")],
            "already bound",
        ),
        (
            ("let size = len(args.order_id)", "let state = 1"),
            [("E415", "let state"), ("E401", "let state"), ("E602", "let state")],
            "is a scope",
        ),
        (
            ("let size = len(args.order_id)", "let size == 1"),
            [("E304", "let size =="), ("E401", "let size =="), ("E602", "let size ==")],
            None,
        ),
    ],
)
def test_guard_mistakes_are_located(
    change: tuple[str, str], expected: list[tuple[str, str]], words: str | None
) -> None:
    assert change[0] in GUARDS
    text = HEAD + GUARDS.replace(*change)
    result = check(GUARDS.replace(*change))
    found = [(d.code, d.span.line) for d in result.diagnostics if d.code != "W901" and d.span]
    lines = text.splitlines()
    wanted = [(code, next(i for i, ln in enumerate(lines, 1) if n in ln)) for code, n in expected]
    assert found == wanted, [(d.code, d.message) for d in result.diagnostics]
    if words is not None:
        first = next(d for d in result.diagnostics if d.code == expected[0][0])
        assert words in first.message + " " + (first.hint or "")


def test_the_reference_guards_example_checks() -> None:
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "reference.md").read_text()
    section = page.split("### Guards\n", 1)[1].split("\n### ", 1)[0]
    (example,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    described = example.replace(
        "    when: [", "    description: x\n    parameters: {order_id: {type: string}}\n    when: ["
    ).replace(
        "modify_order:\n    description: x\n    parameters: {order_id: {type: string}}",
        "modify_order:\n    description: x\n    parameters: {order_id: {type: string}, item: {type: string}}",
    )
    state = "state:\n  user: {type: str}\n  orders: {type: dict}\n"
    result = check(state + described + "rewards: {r: {on: final, value: 1.0}}\n")
    assert errors(result) == [], [(d.code, d.message) for d in result.diagnostics]
