from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentspec.stdlib.calculator import CalcError, calc, evaluate, evaluate_terms


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("3*(4+5)", "27"),
        ("0.1 + 0.2", "0.3"),  # exact, not 0.30000000000000004
        ("7 / 2", "3.5"),
        ("1/3", "0.3333333333"),
        ("7 // 2", "3"),
        ("-7 % 3", "2"),
        ("2 ** 10", "1024"),
        ("2^3", "8"),
        ("6 × 7", "42"),
        ("  -(-3)  ", "3"),
        ("1e3 + 1", "1001"),
    ],
)
def test_values(expression: str, expected: str) -> None:
    assert calc(expression) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1/0", "division by zero"),
        ("__import__('os').system('echo hi')", "only numbers"),
        ("abs(-3)", "only numbers"),
        ("x + 1", "only numbers"),
        ("2 ** 1000", "exponent larger"),
        ("2 ** 0.5", "whole-number exponents"),
        ("9" * 70 + " * 9", "number too large"),
        ("(1 + ", "cannot parse"),
        ("", "empty expression"),
        ("'a' * 3", "only numbers"),
        ("1 << 3", "unsupported operator"),
    ],
)
def test_refusals_are_messages(expression: str, message: str) -> None:
    out = calc(expression)
    assert out.startswith("error: ") and message in out


def _outcome(compute: Any) -> tuple[str, Any]:
    try:
        return "value", compute()
    except CalcError as exc:
        return "error", str(exc)


@settings(max_examples=400)
@given(
    st.lists(st.integers(1, 10**61), min_size=1, max_size=120),
    st.lists(st.sampled_from("+-*"), min_size=119, max_size=119),
)
def test_evaluate_terms_is_evaluate_without_the_parse(numbers: list[int], ops: list[str]) -> None:
    """The arithmetic generator's fast path: the same value, or the same refusal (too
    long, a product or sum too large), as parsing the joined expression."""
    terms = [str(numbers[0])]
    for op, number in zip(ops, numbers[1:], strict=False):
        terms += [op, str(number)]
    assert _outcome(lambda: evaluate_terms(terms)) == _outcome(lambda: evaluate(" ".join(terms)))


def test_a_literal_past_float_range_is_an_error_for_the_model(
    recwarn: pytest.WarningsRecorder,
) -> None:
    assert calc("1e999") == "error: a number is too large (past 1.8e308)"
    assert calc("1if 1else 0").startswith("error: ")
    assert not [w for w in recwarn if issubclass(w.category, SyntaxWarning)]
