from __future__ import annotations

import pytest

from agentspec.stdlib.calculator import calc


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
