"""`calc`: exact arithmetic for calculator tools, by walking Python's AST.

Never `eval`: only numbers, parentheses, unary +/-, and + - * / // % ** are
accepted, computed with `fractions.Fraction` so that 0.1 + 0.2 is 0.3. Errors
come back as text starting with "error:", because the model reads them.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from fractions import Fraction

_BINARY: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: lambda a, b: Fraction(a // b),
    ast.Mod: operator.mod,
}
MAX_EXPONENT = 64
MAX_DIGITS = 60
MAX_LENGTH = 500


class CalcError(ValueError):
    """An expression the calculator refuses, with a message for the model."""


def evaluate(expression: str) -> Fraction:
    """The exact value of an arithmetic expression. Raises `CalcError`."""
    text = expression.strip().replace("×", "*").replace("÷", "/").replace("^", "**")
    if not text:
        raise CalcError("empty expression")
    if len(text) > MAX_LENGTH:
        raise CalcError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalcError(f"cannot parse {expression!r}") from None
    return _value(tree.body)


def _value(node: ast.expr) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return Fraction(node.value)
    if isinstance(node, ast.Constant) and type(node.value) is float:
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


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        raise CalcError("only whole-number exponents are supported")
    if abs(exponent) > MAX_EXPONENT:
        raise CalcError(f"exponent larger than {MAX_EXPONENT}")
    if base == 0 and exponent < 0:
        raise CalcError("division by zero")
    result = base ** int(exponent)
    _check_size(result)
    return result


def _check_size(value: Fraction) -> None:
    if len(str(abs(value.numerator))) > MAX_DIGITS or len(str(value.denominator)) > MAX_DIGITS:
        raise CalcError("number too large")


def format_number(value: Fraction) -> str:
    """Integers as integers; other values as decimals with up to 10 significant digits."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.10g}"


def calc(expression: str) -> str:
    """The value of `expression` as text, or "error: …" explaining why not."""
    try:
        return format_number(evaluate(str(expression)))
    except CalcError as exc:
        return f"error: {exc}"
