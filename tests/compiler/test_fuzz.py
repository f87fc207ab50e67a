"""Property tests: whatever the input, the front end answers with diagnostics.

The only exception that may escape `load_checked` is `SpecError`; the parser
raises only `ExprSyntaxError`; `check_source` never raises.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentspec.compiler.frontend import check_source, require_ok
from agentspec.compiler.parser import ExprSyntaxError, parse_expression, parse_statement
from agentspec.core.diagnostics import CODES, SpecError, render_text
from agentspec.core.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]
VALID = [p.read_text() for p in sorted((ROOT / "tests/specs/valid").glob("*.yaml"))]
VALID.append((ROOT / "specs/calculator.yaml").read_text())

SYNTAX = [
    *" \n\t:-[]{}()'\"#|>&*!%@`,.=+<?\\_",
    "state.",
    "args.",
    "sample.",
    "{{",
    "}}",
    "__",
    "if ",
    " else ",
]
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_front_end_survives(text: str) -> None:
    result = check_source(SourceFile("fuzz.yaml", text))
    for d in result.diagnostics:
        assert d.code in CODES and d.message
        render_text(d, result.sources)
    try:
        require_ok(result)
    except SpecError as exc:
        assert exc.diagnostics and not result.ok
    else:
        assert result.ok


@FUZZ
@given(st.text(max_size=400))
def test_arbitrary_text(text: str) -> None:
    assert_front_end_survives(text)


@st.composite
def mutated_spec(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        at = draw(st.integers(0, len(text) - 1))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "dup_line"]))
        if kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 12)) :]
        elif kind == "insert":
            text = text[:at] + draw(st.sampled_from(SYNTAX)) + text[at:]
        elif kind == "replace":
            text = text[:at] + draw(st.sampled_from(SYNTAX)) + text[at + 1 :]
        else:
            lines = text.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
    return text


@FUZZ
@given(mutated_spec())
def test_mutated_valid_specs(text: str) -> None:
    assert_front_end_survives(text)


EXPR_ATOMS = [
    "state.page",
    "args.query",
    "sample.answer",
    "action.text",
    "step.index",
    "result",
    "reward.correct",
    "1",
    "2.5",
    "'x'",
    "True",
    "None",
    "len(",
    "number(",
    "calc(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    " + ",
    " - ",
    " * ",
    " / ",
    " == ",
    " = ",
    " in ",
    " not ",
    " and ",
    " or ",
    " if ",
    " else ",
    ".",
    "__class__",
    "env.x",
    "\\",
    '"',
]


@FUZZ
@given(st.lists(st.sampled_from(EXPR_ATOMS), max_size=12).map("".join))
def test_random_expressions_in_every_position(expression: str) -> None:
    for parse in (parse_expression, parse_statement):
        try:
            parse(expression)
        except ExprSyntaxError as exc:
            assert exc.code.startswith("E3") and 0 <= exc.start <= max(len(expression), 1)
    literal = json.dumps(expression)
    spec = VALID[-1]  # calculator
    spec = spec.replace("value: -0.2", f"value: {literal}")
    spec = spec.replace("success: reward.correct == 1.0", f"success: {literal}")
    spec = spec.replace("returns: calc(args.expression)", f"returns: {literal}")
    assert_front_end_survives(spec)
