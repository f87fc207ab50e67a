from __future__ import annotations

import pytest

from agentspec.compiler import ast
from agentspec.compiler.parser import ExprSyntaxError, parse_expression, parse_statement


def test_precedence_and_positions() -> None:
    node = parse_expression("1 + 2 * 3 == 7 and not x.y")
    assert isinstance(node, ast.BoolOp) and node.op == "and"
    left = node.left
    assert isinstance(left, ast.BinOp) and left.op == "=="
    assert isinstance(left.left, ast.BinOp) and left.left.op == "+"
    mul = left.left.right
    assert isinstance(mul, ast.BinOp) and mul.op == "*"
    assert (mul.start, mul.end) == (4, 9)
    assert isinstance(node.right, ast.UnaryOp) and node.right.op == "not"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("True", True),
        ("false", False),
        ("None", None),
        ("-2.5", -2.5),
        ("'a\\'b'", "a'b"),
        ('"\\u00e9"', "é"),
        ("1e3", 1000.0),
        ("'a\\sb\\n'", "a\\sb\n"),  # unknown escapes stay, like regex classes
    ],
)
def test_literals(text: str, expected: object) -> None:
    node = parse_expression(text)
    assert isinstance(node, ast.Literal) and node.value == expected


def test_calls_lists_dicts_indexing() -> None:
    node = parse_expression("f(a.b, [1, 2,], {'k': 3})[0]")
    assert isinstance(node, ast.Index)
    call = node.obj
    assert isinstance(call, ast.Call) and call.func == "f" and len(call.args) == 3
    assert isinstance(call.args[1], ast.ListExpr) and len(call.args[1].items) == 2
    assert isinstance(call.args[2], ast.DictExpr)


def test_in_and_not_in_and_ternary() -> None:
    node = parse_expression("a if b not in c else d")
    assert isinstance(node, ast.IfExp)
    assert isinstance(node.cond, ast.BinOp) and node.cond.op == "not in"


def test_statements() -> None:
    s = parse_statement('state.page = "item"')
    assert isinstance(s, ast.Assign) and s.op == "=" and s.cond is None
    s = parse_statement("state.n += 1 if args.x else 2")
    assert isinstance(s, ast.Assign) and s.op == "+=" and isinstance(s.value, ast.IfExp)
    s = parse_statement("state.n = 1 if args.x")
    assert isinstance(s, ast.Assign) and s.cond is not None
    s = parse_statement('done() if args.option == "buy now"')
    assert isinstance(s, ast.CallStatement) and s.call.func == "done" and s.cond is not None


@pytest.mark.parametrize(
    ("text", "code", "start"),
    [
        ("(a + b", "E302", 0),  # points at the unclosed '('
        ("f(a, [1, 2)", "E302", 5),
        ("a + b)", "E307", 5),
        ("a +", "E303", 2),
        ("a + * b", "E303", 4),
        ("a = b", "E304", 2),
        ("'abc", "E305", 0),
        ("a b", "E301", 2),
        ("a && b", "E301", 2),
        ("", "E301", 0),
        ("x ! y", "E301", 2),
    ],
)
def test_labelled_expression_errors(text: str, code: str, start: int) -> None:
    with pytest.raises(ExprSyntaxError) as info:
        parse_expression(text)
    assert (info.value.code, info.value.start) == (code, start)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("state.x == 1", "E306"),
        ("state.x", "E306"),
        ("state.x = ", "E303"),
        ("state.x = 1 = 2", "E304"),
    ],
)
def test_statement_errors(text: str, code: str) -> None:
    with pytest.raises(ExprSyntaxError) as info:
        parse_statement(text)
    assert info.value.code == code
