"""Parse expression and statement text into the AST (`agentspec.compiler.ast`).

One Lark LALR grammar (`grammar.lark`) with positions on every node. A syntax
error becomes an `ExprSyntaxError` naming the mistake (unclosed parenthesis,
missing operand, `=` where `==` was meant, unterminated string) with the offset
to put the caret under: the classifying is `syntax_errors.py`'s.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedInput, VisitError

from agentspec.compiler import ast
from agentspec.compiler.syntax_errors import (
    ExprSyntaxError,
    _check_brackets,
    _classify,
    method_call_error,
)

_CONSTANTS = {
    "True": True,
    "true": True,
    "False": False,
    "false": False,
    "None": None,
    "null": None,
}

# Every later stage (checker, code generator, Python itself) walks the tree
# recursively; these limits keep them far from Python's recursion limit.
MAX_DEPTH = 100
MAX_NUMBER_DIGITS = 100
MAX_CHARS = 10_000  # of one expression; the longest shipped one has ~150
MAX_TOTAL_CHARS = 100_000  # of all a spec's expressions: the parser's time is ~40 µs a token


@cache
def _parser() -> Lark:
    grammar = resources.files("agentspec.compiler").joinpath("grammar.lark").read_text()
    return Lark(
        grammar,
        parser="lalr",
        start=["expression", "statement"],
        propagate_positions=True,
        maybe_placeholders=False,
        cache=True,
    )


def parse_expression(text: str) -> ast.Node:
    """Parse one expression. Raises `ExprSyntaxError`."""
    result = _parse(text, "expression")
    assert isinstance(result, ast.Node)
    return result


def parse_statement(text: str) -> ast.Statement:
    """Parse one effect statement. Raises `ExprSyntaxError`."""
    result = _parse(text, "statement")
    assert isinstance(result, (ast.Assign, ast.CallStatement, ast.Let))
    return result


def _parse(text: str, start: str) -> Any:
    if len(text) > MAX_CHARS:
        raise ExprSyntaxError(
            "E310",
            f"the {start} has {len(text):,} characters (the limit is {MAX_CHARS:,})",
            MAX_CHARS,
            MAX_CHARS + 1,
            hint="split it: compute parts in `data.derived`, state or a function",
        )
    _check_brackets(text)
    if not text.strip():
        raise ExprSyntaxError("E301", f"empty {start}", 0, max(1, len(text)))
    try:
        tree = _parser().parse(text, start=start)
        _check_depth(tree)
        return _ToAst().transform(tree)
    except UnexpectedInput as exc:
        template = re.search(r"\{\{(.*?)\}\}", text)
        if template is not None:  # `'{{ state.mode }} != "off"'`: a template's braces
            raise ExprSyntaxError(
                "E301",
                f"`{{{{ … }}}}` is template syntax: an {start} reads names without it",
                template.start(),
                template.end(),
                hint=f"write `{text[: template.start()]}{template.group(1).strip()}"
                f"{text[template.end() :]}`",
            ) from None
        raise _classify(exc, text, start) from None
    except VisitError as exc:
        if isinstance(exc.orig_exc, ExprSyntaxError):
            raise exc.orig_exc from None
        raise


def _check_depth(tree: Tree[Token]) -> None:
    """Refuse trees deeper than MAX_DEPTH (walked without recursion)."""
    stack: list[tuple[Tree[Token], int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            start = getattr(node.meta, "start_pos", 0) or 0
            end = getattr(node.meta, "end_pos", start + 1) or start + 1
            raise ExprSyntaxError(
                "E309",
                f"the expression is nested more than {MAX_DEPTH} levels deep",
                start,
                min(end, start + 1),
                hint="split it: compute parts in `data.derived`, state or a function",
            )
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


def _unescape(body: str) -> str:
    """Decode a string literal's body. Unknown escapes such as `\\s` stay as
    written, so regular expressions need no doubled backslashes."""

    def decode(match: re.Match[str]) -> str:
        code = match.group(1)
        if code.startswith("u") and len(code) == 5:
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, match.group(0))

    return _ESCAPE.sub(decode, body)


def _span(meta: Any) -> tuple[int, int]:
    return meta.start_pos, meta.end_pos


_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "not in"})


def _comparison(meta: Any, op: str, left: ast.Node, right: ast.Node) -> ast.Node:
    """`left op right`; a chain as Python means it: `a <= b <= c` is `a <= b and
    b <= c`, not `(a <= b) <= c` (a bool compared with c). A left operand that
    starts where the whole does is not in parentheses, so it continues a chain:
    a comparison, or the `and` of an earlier link (the grammar gives a comparison
    no unparenthesised `and` operand of the user's)."""
    start, end = _span(meta)
    chained = left.start == start and (
        (isinstance(left, ast.BinOp) and left.op in _COMPARISONS)
        or (isinstance(left, ast.BoolOp) and left.op == "and")
    )
    if not chained:
        return ast.BinOp(start, end, op, left, right)
    last = left.right if isinstance(left, ast.BoolOp) else left
    assert isinstance(last, ast.BinOp)
    link = ast.BinOp(last.right.start, end, op, last.right, right)
    return ast.BoolOp(start, end, "and", left, link)


@v_args(meta=True)
class _ToAst(Transformer[Token, Any]):
    """Lark tree → frozen AST nodes; one method per grammar rule."""

    def expression(self, meta: Any, children: list[Any]) -> ast.Node:
        node: ast.Node = children[0]
        return node

    def name(self, meta: Any, children: list[Token]) -> ast.Node:
        token = children[0]
        start, end = token.start_pos or 0, token.end_pos or 0
        if token.value in _CONSTANTS:
            return ast.Literal(start, end, _CONSTANTS[token.value])
        return ast.Name(start, end, token.value)

    def number(self, meta: Any, children: list[Token]) -> ast.Literal:
        text = children[0].value
        if len(text) > MAX_NUMBER_DIGITS:
            start, _ = _span(meta)
            raise ExprSyntaxError(
                "E308",
                f"a number of {len(text):,} characters (the limit is {MAX_NUMBER_DIGITS})",
                start,
                start + len(text),
                hint="no reward, guard or state value needs a number this long",
            )
        value: int | float = int(text) if text.isdigit() else float(text)
        return ast.Literal(*_span(meta), value)

    def string(self, meta: Any, children: list[Token]) -> ast.Literal:
        return ast.Literal(*_span(meta), _unescape(children[0].value[1:-1]))

    def list_expr(self, meta: Any, children: list[ast.Node]) -> ast.ListExpr:
        return ast.ListExpr(*_span(meta), tuple(children))

    def dict_expr(self, meta: Any, children: list[tuple[ast.Node, ast.Node]]) -> ast.DictExpr:
        return ast.DictExpr(*_span(meta), tuple(children))

    def pair(self, meta: Any, children: list[ast.Node]) -> tuple[ast.Node, ast.Node]:
        return children[0], children[1]

    def attr(self, meta: Any, children: list[Any]) -> ast.Attr:
        obj, name = children
        return ast.Attr(*_span(meta), obj, name.value, name.start_pos)

    def index(self, meta: Any, children: list[ast.Node]) -> ast.Index:
        return ast.Index(*_span(meta), children[0], children[1])

    def call(self, meta: Any, children: list[Any]) -> ast.Call:
        name, *args = children
        return ast.Call(*_span(meta), name.value, name.end_pos, tuple(args))

    def method_call(self, meta: Any, children: list[Any]) -> ast.Node:
        name = children[1]
        raise method_call_error(name.value, name.start_pos or 0, meta.end_pos)

    def list_comp(self, meta: Any, children: list[Any]) -> ast.Comprehension:
        element, (names, iterable, conds) = children
        return ast.Comprehension(*_span(meta), None, element, names, iterable, conds)

    def dict_comp(self, meta: Any, children: list[Any]) -> ast.Comprehension:
        (key, value), (names, iterable, conds) = children
        return ast.Comprehension(*_span(meta), key, value, names, iterable, conds)

    def comp_for(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        tokens = [c for c in children if isinstance(c, Token)]
        nodes = [c for c in children if not isinstance(c, Token)]
        return tuple(t.value for t in tokens), nodes[0], tuple(nodes[1:])

    def comp_if(self, meta: Any, children: list[ast.Node]) -> ast.Node:
        return children[0]

    def let_stmt(self, meta: Any, children: list[Any]) -> ast.Let:
        name, op, value = children
        if op.value != "=":
            raise ExprSyntaxError(
                "E306",
                f"'{op.value}' cannot appear here",
                op.start_pos,
                op.end_pos,
                hint="a let binds once: `let NAME = value`",
            )
        return ast.Let(*_span(meta), name.value, name.start_pos, value)

    def binop(self, meta: Any, children: list[Any]) -> ast.BinOp:
        left, op, right = children
        return ast.BinOp(*_span(meta), op.value, left, right)

    def compare(self, meta: Any, children: list[Any]) -> ast.Node:
        left, op, right = children
        return _comparison(meta, op.value, left, right)

    def in_(self, meta: Any, children: list[ast.Node]) -> ast.Node:
        return _comparison(meta, "in", children[0], children[1])

    def not_in(self, meta: Any, children: list[ast.Node]) -> ast.Node:
        return _comparison(meta, "not in", children[0], children[1])

    def and_(self, meta: Any, children: list[ast.Node]) -> ast.BoolOp:
        return ast.BoolOp(*_span(meta), "and", children[0], children[1])

    def or_(self, meta: Any, children: list[ast.Node]) -> ast.BoolOp:
        return ast.BoolOp(*_span(meta), "or", children[0], children[1])

    def not_(self, meta: Any, children: list[ast.Node]) -> ast.UnaryOp:
        return ast.UnaryOp(*_span(meta), "not", children[0])

    def neg(self, meta: Any, children: list[ast.Node]) -> ast.Node:
        operand = children[0]
        if isinstance(operand, ast.Literal) and type(operand.value) in (int, float):
            return ast.Literal(*_span(meta), -operand.value)
        return ast.UnaryOp(*_span(meta), "-", operand)

    def pos(self, meta: Any, children: list[ast.Node]) -> ast.UnaryOp:
        return ast.UnaryOp(*_span(meta), "+", children[0])

    def ifexp(self, meta: Any, children: list[ast.Node]) -> ast.IfExp:
        body, cond, orelse = children
        return ast.IfExp(*_span(meta), body, cond, orelse)

    def assign(self, meta: Any, children: list[Any]) -> ast.Assign:
        target, op, value = children
        return ast.Assign(*_span(meta), target, op.value, value, None)

    def guarded_assign(self, meta: Any, children: list[Any]) -> ast.Assign:
        target, op, value, cond = children
        return ast.Assign(*_span(meta), target, op.value, value, cond)

    def call_stmt(self, meta: Any, children: list[ast.Call]) -> ast.CallStatement:
        return ast.CallStatement(*_span(meta), children[0], None)

    def guarded_call(self, meta: Any, children: list[Any]) -> ast.CallStatement:
        return ast.CallStatement(*_span(meta), children[0], children[1])
