"""Typing an operator (`+`, `*`, comparisons, `in`…) and the hints of
type errors (a conversion to suggest, an operator's usual mistake).

Functions of the checker (`checker` is the running check, a `CheckState`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentspec.compiler import ast
from agentspec.compiler.types import (
    ANY,
    BOOL,
    DICT,
    FLOAT,
    INT,
    NONE,
    STR,
    ListOf,
    Optional,
    Type,
    is_numeric,
    join,
    strip_optional,
)

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState


def arith(checker: CheckState, op: str, left: Type, right: Type, node: ast.Node) -> Type:
    a, b = strip_optional(left), strip_optional(right)
    if op == "*" and (ANY in (a, b) or a == STR or isinstance(a, ListOf)):
        checker.repetitions.add(node)  # may repeat a string or list: size-checked at run
        check_constant_repetition(checker, node)
    if op in ("==", "!="):
        always_unequal(checker, op, left, right, node)
        return BOOL
    if op in ("in", "not in"):
        if b in (ANY, DICT) or isinstance(b, ListOf) or (b == STR and a in (STR, ANY)):
            return BOOL
    elif op in ("<", "<=", ">", ">="):
        if ANY in (a, b) or (is_numeric(a) and is_numeric(b)) or a == b == STR:
            return BOOL
    elif op == "%" and a == STR:
        pass  # printf-style formatting is not part of the language (E501 below)
    elif ANY in (a, b):
        return ANY
    elif op == "+" and a == b == STR:
        return STR
    elif op == "+" and isinstance(a, ListOf) and isinstance(b, ListOf):
        item = join(a.item, b.item)
        if item != ANY or ANY in (a.item, b.item):
            return ListOf(item)
        # both item types known and unlike: the result would be a list[any] that any
        # typed target takes, and `state.names = state.names + [1]` would pass unseen
        checker.error(
            "E501",
            f"operator '+' joins {left} and {right}: their items ({a.item} and {b.item})"
            " cannot share one list type",
            checker.node_span(node),
            hint=f"convert the items first, e.g. `[str(x)]` for a {ListOf(STR)}",
        )
        return ListOf(ANY)
    elif op == "*" and (a == STR or isinstance(a, ListOf)) and b in (INT, BOOL):
        return a
    elif is_numeric(a) and is_numeric(b):
        if op == "/":
            return FLOAT
        return INT if {a, b} <= {INT, BOOL} else FLOAT
    checker.error(
        "E501",
        f"operator '{op}' is not supported between {left} and {right}",
        checker.node_span(node),
        hint=operator_hint(op, a, b),
    )
    return ANY


def always_unequal(checker: CheckState, op: str, left: Type, right: Type, node: ast.Node) -> None:
    """W803 for `==` / `!=` between a number or a bool and a text: Python's `1 == '1'`
    and `True == 'true'` are False. Not when both sides may be none (`None == None`)."""
    if isinstance(left, Optional) and isinstance(right, Optional):
        return
    a, b = strip_optional(left), strip_optional(right)
    other = next((t for t in (a, b) if t in (INT, FLOAT, BOOL)), None)
    if STR not in (a, b) or other is None:
        return
    always = "true" if op == "!=" else "false"
    if other == BOOL:
        message = f"`{op}` between bool and str is always {always}: a bool never equals a text"
        hint = "compare the text with a text (`x == 'true'`), or convert it first"
    else:
        message = f"`{op}` between {other} and str is always {always}: a number never equals a text"
        hint = "convert the text: `number(text) == n`"
    checker.error("W803", message, checker.node_span(node), hint)


def check_constant_repetition(checker: CheckState, node: ast.Node) -> None:
    from agentspec.stdlib.functions import ValueTooLarge, repeat

    if not isinstance(node, ast.BinOp):
        return
    left, right = node.left, node.right
    if isinstance(left, ast.Literal) and isinstance(right, ast.Literal):
        try:
            repeat(left.value, right.value)
        except ValueTooLarge as exc:
            checker.error("E510", str(exc), checker.node_span(node))
        except TypeError:
            pass


def conversion_hint(actual: Type, wanted: Type) -> str | None:
    actual, wanted = strip_optional(actual), strip_optional(wanted)
    if wanted == STR:
        return "convert with str(…)"
    if wanted in (INT, FLOAT) and actual == STR:
        return "convert with number(…) or int(…)"
    if wanted in (INT, FLOAT) and actual == BOOL:
        return "a condition is not a number here: write `1 if … else 0`, or declare the type bool"
    if isinstance(wanted, ListOf) and not isinstance(actual, ListOf):
        return "wrap it in a list: [value]"
    return None


def operator_hint(op: str, a: Type, b: Type) -> str | None:
    if op == "+" and STR in (a, b):
        return "convert the other side with str(…), or the text with number(…)"
    if op in ("in", "not in"):
        return "`in` needs a str, list or dict on its right"
    if NONE in (a, b):
        return "a value may be none here; compare it with `!= None` first"
    return None
