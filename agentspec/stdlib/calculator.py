"""`calc`: exact arithmetic for calculator tools, by walking Python's AST.

Never `eval`: only numbers, parentheses, unary +/-, and + - * / // % ** are
accepted, computed with `fractions.Fraction` so that 0.1 + 0.2 is 0.3. Errors
come back as text starting with "error:", because the model reads them.
"""

from __future__ import annotations

import ast
import math
import operator
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: lambda a, b: Fraction(a) / Fraction(b),
    ast.FloorDiv: lambda a, b: int(a // b),
    ast.Mod: operator.mod,
}
MAX_EXPONENT = 64
MAX_DIGITS = 60
MAX_LENGTH = 500


class CalcError(ValueError):
    """An expression the calculator refuses, with a message for the model."""


Number = int | Fraction


def evaluate(expression: str) -> Number:
    """The exact value of an arithmetic expression. Raises `CalcError`.

    Integers stay Python ints (exact and fast); a float literal or a `/`
    makes the value a `Fraction`, so no step ever rounds.
    """
    text = expression.strip().replace("×", "*").replace("÷", "/").replace("^", "**")
    if not text:
        raise CalcError("empty expression")
    if len(text) > MAX_LENGTH:
        raise CalcError(f"expression longer than {MAX_LENGTH} characters")
    try:
        with warnings.catch_warnings():  # `1if 1else 0` warns on stderr before it parses
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalcError(f"cannot parse {expression!r}") from None
    return _value(tree.body)


def evaluate_terms(terms: list[str]) -> int:
    """`evaluate(" ".join(terms))` for `terms` = integer, operator, integer, ... with
    operators + - * only, without parsing: what a data generator calls 100,000 times.
    Each product and running sum is the value an AST node of that expression takes, so
    the same sizes are checked and the same errors raised."""
    if len(" ".join(terms)) > MAX_LENGTH:
        raise CalcError(f"expression longer than {MAX_LENGTH} characters")
    total: int | None = None
    sign, product = 1, int(terms[0])
    for op, number in zip(terms[1::2], terms[2::2], strict=True):
        if op == "*":
            product *= int(number)
            _check_size(product)
            continue
        if total is None:  # the first term: a number, or a product checked above
            total = product
        else:
            total += sign * product
            _check_size(total)
        sign, product = (1 if op == "+" else -1), int(number)
    if total is None:
        return product
    total += sign * product
    _check_size(total)
    return total


def _value(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Constant) and type(node.value) is float:
        if not math.isfinite(node.value):  # `1e999` reads as inf
            raise CalcError("a number is too large (past 1.8e308)")
        return Fraction(str(node.value))  # the decimal the user wrote, not its binary float
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        operand = _value(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        apply = _BINARY.get(type(node.op))
        if apply is None:
            raise CalcError(f"unsupported operator {type(node.op).__name__}")
        try:
            result = apply(left, right)
        except ZeroDivisionError:
            raise CalcError("division by zero") from None
        _check_size(result)
        return result
    raise CalcError("only numbers, parentheses and + - * / // % ** are allowed")


def _power(base: Number, exponent: Number) -> Number:
    if isinstance(exponent, Fraction):
        if exponent.denominator != 1:
            raise CalcError("only whole-number exponents are supported")
        exponent = int(exponent)
    if abs(exponent) > MAX_EXPONENT:
        raise CalcError(f"exponent larger than {MAX_EXPONENT}")
    if base == 0 and exponent < 0:
        raise CalcError("division by zero")
    result: Number = Fraction(base) ** int(exponent) if exponent < 0 else base ** int(exponent)
    _check_size(result)
    return result


_TOO_LARGE = 10**MAX_DIGITS  # the least number of MAX_DIGITS + 1 digits


def _check_size(value: Number) -> None:
    if type(value) is int:  # the usual case: its digits, without a Fraction or str
        if abs(value) >= _TOO_LARGE:
            raise CalcError("number too large")
        return
    fraction = Fraction(value) if isinstance(value, int) else value
    if (
        len(str(abs(fraction.numerator))) > MAX_DIGITS
        or len(str(fraction.denominator)) > MAX_DIGITS
    ):
        raise CalcError("number too large")


def format_number(value: Number) -> str:
    """Integers as integers; other values as decimals with up to 10 significant digits."""
    if isinstance(value, int):
        return str(value)
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.10g}"


def calc(expression: str) -> str:
    """The value of `expression` as text, or "error: …" explaining why not."""
    try:
        return format_number(evaluate(str(expression)))
    except CalcError as exc:
        return f"error: {exc}"
