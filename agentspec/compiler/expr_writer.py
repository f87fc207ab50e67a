"""Writing checked expressions and statements as Python over one scope `s`.

Expressions become Python source over one scope object `s` (see
`agentspec.runtime.compiled.scope.Scope`); statements become lines. User strings
reach the output only through `repr`, and every identifier that comes from
the spec is validated or renamed, so no spec can inject code.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

from agentspec.compiler import ast
from agentspec.compiler.builtins import BUILTINS
from agentspec.compiler.literals import py_literal
from agentspec.compiler.names import function_access, local_name, state_attribute
from agentspec.compiler.types import BOOL, FLOAT, INT, NONE, STR, ListOf, Optional, Prim, Type

# Binding strength, as in Python's grammar (higher binds tighter).
_PRECEDENCE = {
    "if": 1, "or": 2, "and": 3, "not": 4,
    "==": 5, "!=": 5, "<": 5, "<=": 5, ">": 5, ">=": 5, "in": 5, "not in": 5,
    "+": 6, "-": 6, "*": 7, "/": 7, "//": 7, "%": 7, "unary": 8, "atom": 9,
}  # fmt: skip


_SCALARS = (STR, INT, FLOAT, BOOL, NONE)


def needs_copy(value: ast.Node, value_type: Type | None) -> bool:
    """Whether an assigned value may alias a sample, a constant or other state:
    containers (and values of unknown type) are copied; literals never are."""
    t = value_type.inner if isinstance(value_type, Optional) else value_type
    if isinstance(value, ast.Literal) or t in _SCALARS:
        return False
    if isinstance(value, ast.ListExpr) and all(isinstance(i, ast.Literal) for i in value.items):
        return False  # a fresh list of literals (`[]`, `[1, 2]`)
    if isinstance(value, ast.DictExpr) and all(isinstance(v, ast.Literal) for _, v in value.pairs):
        return False
    fresh = isinstance(value, (ast.ListExpr, ast.Comprehension, ast.BinOp))
    return not (fresh and isinstance(t, ListOf) and t.item in _SCALARS)  # a new list of scalars


def _literal_index(node: ast.Node) -> bool:
    """A literal key or index (`xs[0]`, `xs[-1]`, `d["k"]`): indexed as in Python.
    Computed indices go through `s.at`, which refuses negative and out-of-range ones."""
    return isinstance(node, ast.Literal) and type(node.value) in (int, str)


def python_type(t: Type) -> str:
    """The annotation for a state variable of type `t`."""
    if isinstance(t, Optional):
        return f"{python_type(t.inner)} | None"
    if isinstance(t, ListOf):
        return f"list[{python_type(t.item)}]"
    assert isinstance(t, Prim)
    return {
        "str": "str",
        "int": "int",
        "float": "float",
        "bool": "bool",
        "dict": "dict[str, Any]",
    }.get(t.name, "Any")


def empty_value(t: Type) -> Any:
    """The default initial value of a state variable of type `t`."""
    if isinstance(t, Optional):
        return None
    if isinstance(t, ListOf):
        return []
    return {"str": "", "int": 0, "float": 0.0, "bool": False, "dict": {}}.get(
        getattr(t, "name", "")
    )


class ExpressionWriter:
    """AST → Python source over the scope `s`; one `visit_<Node>` per node."""

    def __init__(
        self,
        optional_args: frozenset[str] = frozenset(),
        repetitions: set[ast.Node] | None = None,
    ):
        self.optional_args = optional_args
        self.repetitions = repetitions or set()
        self.renamed: Mapping[str, str] = {}  # local names written under another Python name

    def renaming(self, renamed: Mapping[str, str]) -> ExpressionWriter:
        """This writer, writing the local names in `renamed` as their values
        (a named guard's `let` names, inlined into a tool)."""
        writer = copy.copy(self)
        writer.renamed = renamed
        return writer

    def local(self, name: str) -> str:
        return self.renamed.get(name) or local_name(name)

    def write(self, node: ast.Node) -> str:
        return self._visit(node)[0]

    def _visit(self, node: ast.Node) -> tuple[str, int]:
        method = getattr(self, f"visit_{type(node).__name__}")
        result: tuple[str, int] = method(node)
        return result

    def _operand(self, node: ast.Node, minimum: int) -> str:
        code, strength = self._visit(node)
        return code if strength >= minimum else f"({code})"

    def visit_Literal(self, node: ast.Literal) -> tuple[str, int]:
        code = py_literal(node.value)
        return code, _PRECEDENCE["unary"] if code.startswith("-") else _PRECEDENCE["atom"]

    def visit_ListExpr(self, node: ast.ListExpr) -> tuple[str, int]:
        return "[" + ", ".join(self.write(i) for i in node.items) + "]", _PRECEDENCE["atom"]

    def visit_DictExpr(self, node: ast.DictExpr) -> tuple[str, int]:
        pairs = ", ".join(f"{self.write(k)}: {self.write(v)}" for k, v in node.pairs)
        return "{" + pairs + "}", _PRECEDENCE["atom"]

    def visit_Name(self, node: ast.Name) -> tuple[str, int]:
        if node.id == "result":
            return "s.result", _PRECEDENCE["atom"]
        return self.local(node.id), _PRECEDENCE["atom"]  # a local (let or comprehension)

    def visit_Comprehension(self, node: ast.Comprehension) -> tuple[str, int]:
        names = ", ".join(self.local(n) for n in node.names)
        clause = f"for {names} in {self._operand(node.iterable, _PRECEDENCE['or'])}"
        for cond in node.conds:
            clause += f" if {self._operand(cond, _PRECEDENCE['or'])}"
        element = self._operand(node.element, _PRECEDENCE["if"])
        if node.key is None:
            return f"[{element} {clause}]", _PRECEDENCE["atom"]
        key = self._operand(node.key, _PRECEDENCE["if"])
        return f"{{{key}: {element} {clause}}}", _PRECEDENCE["atom"]

    def visit_Attr(self, node: ast.Attr) -> tuple[str, int]:
        assert isinstance(node.obj, ast.Name)
        root, attr = node.obj.id, node.attr
        if root == "state":
            code = f"s.state.{state_attribute(attr)}"
        elif root == "args":
            code = f"s.args.get({attr!r})" if attr in self.optional_args else f"s.args[{attr!r}]"
        elif root in ("sample", "reward", "constants"):
            code = f"s.{root}[{attr!r}]"
        elif root == "env":
            code = f"s.env.get({attr!r})"
        else:  # action, step: fixed records with identifier fields
            code = f"s.{root}.{attr}"
        return code, _PRECEDENCE["atom"]

    def visit_Index(self, node: ast.Index) -> tuple[str, int]:
        obj = self._operand(node.obj, _PRECEDENCE["atom"])
        if _literal_index(node.index):
            return f"{obj}[{self.write(node.index)}]", _PRECEDENCE["atom"]
        return f"s.at({obj}, {self.write(node.index)})", _PRECEDENCE["atom"]

    def negated(self, node: ast.Node) -> str:
        """`not (node)`, with `==`/`!=` and `in`/`not in` flipped rather than wrapped."""
        flipped = {"==": "!=", "!=": "==", "in": "not in", "not in": "in"}
        if isinstance(node, ast.BinOp) and node.op in flipped:
            return self.write(
                ast.BinOp(node.start, node.end, flipped[node.op], node.left, node.right)
            )
        if isinstance(node, ast.UnaryOp) and node.op == "not":
            return self.write(node.operand)
        return f"not {self._operand(node, _PRECEDENCE['not'])}"

    def target(self, node: ast.Node) -> str:
        """An assignment target: a computed index is checked (`s.slot`), not wrapped."""
        if isinstance(node, ast.Index) and not _literal_index(node.index):
            obj = self._operand(node.obj, _PRECEDENCE["atom"])
            return f"{obj}[s.slot({obj}, {self.write(node.index)})]"
        return self.write(node)

    def visit_Call(self, node: ast.Call) -> tuple[str, int]:
        args = ", ".join(self.write(a) for a in node.args)
        return f"{self.callee(node.func)}({args})", _PRECEDENCE["atom"]

    def callee(self, name: str) -> str:

        return f"fn.{name}" if name in BUILTINS else function_access(name)

    def visit_BinOp(self, node: ast.BinOp) -> tuple[str, int]:
        if node in self.repetitions:  # `text * n`: bounded, so no spec can ask for gigabytes
            code = f"fn.repeat({self.write(node.left)}, {self.write(node.right)})"
            return code, _PRECEDENCE["atom"]
        strength = _PRECEDENCE[node.op]
        if node.op in ("==", "!=") and (_is_none(node.left) or _is_none(node.right)):
            # `x == None` is `x is None` for every value (and ruff's E711 asks for it).
            other = node.left if _is_none(node.right) else node.right
            if ast.is_constant(other):  # `3 == None`: decided here (`3 is None` warns)
                return str(_is_none(other) == (node.op == "==")), _PRECEDENCE["atom"]
            op = "is" if node.op == "==" else "is not"
            return f"{self._operand(other, strength + 1)} {op} None", strength
        if node.op in ("==", "!=") and (
            _is_bool_literal(node.left) or _is_bool_literal(node.right)
        ):
            # `x == True` is not `x` (1 == True), so it stays a comparison, written as a
            # call: the operator form is ruff's E712, which would ask for the wrong code.
            function = "eq" if node.op == "==" else "ne"
            return f"{function}({self.write(node.left)}, {self.write(node.right)})", _PRECEDENCE[
                "atom"
            ]
        if node.op == "+" and (_is_list(node.left) or _is_list(node.right)):
            # `a + [b]` is written `[*a, b]`, as ruff's RUF005 asks (the same list when
            # `a` is a list; other iterables, which `+` would reject, are unpacked).
            return "[" + ", ".join(self._list_items(node)) + "]", _PRECEDENCE["atom"]
        # Left-associative: the right operand needs parentheses at equal strength,
        # and comparisons never chain (a < b < c means something else in Python).
        left_min = strength + 1 if strength == _PRECEDENCE["=="] else strength
        left = self._operand(node.left, left_min)
        right = self._operand(node.right, strength + 1)
        if node.op in _MIRRORED and _constant_likelihood(left) > _constant_likelihood(right):
            # `0 < x` is written `x > 0`: the same value, and no Yoda condition (ruff's
            # SIM300, whose measure of "looks constant" decides it on the written code)
            return f"{right} {_MIRRORED[node.op]} {left}", strength
        return f"{left} {node.op} {right}", strength

    def _list_items(self, node: ast.Node) -> list[str]:
        """The items of a list display equal to `node` (`*x` for a list not written out)."""
        if isinstance(node, ast.ListExpr):
            return [self.write(item) for item in node.items]
        if isinstance(node, ast.BinOp) and node.op == "+" and _is_list_concat(node):
            return [*self._list_items(node.left), *self._list_items(node.right)]
        return [f"*{self._operand(node, _PRECEDENCE['+'])}"]

    def visit_BoolOp(self, node: ast.BoolOp) -> tuple[str, int]:
        folded = _fold_constant_side(node)
        if folded is not node:
            return self._visit(folded)
        strength = _PRECEDENCE[node.op]
        left_node, right_node = _fold_constant_side(node.left), _fold_constant_side(node.right)
        left = self._operand(left_node, strength)
        right = self._operand(right_node, strength + 1)
        if node.op == "or":  # `a and b or c` is written `(a and b) or c`: plain to read
            left = f"({left})" if _is_and(left_node) else left
            right = f"({right})" if _is_and(right_node) else right
        return f"{left} {node.op} {right}", strength

    def visit_UnaryOp(self, node: ast.UnaryOp) -> tuple[str, int]:
        if node.op == "not":
            inner = node.operand
            if isinstance(inner, ast.BinOp) and inner.op in _NEGATED:
                # `not a == b` is `a != b`, `not a in b` is `a not in b` (as Python defines them).
                return self._visit(dataclasses.replace(inner, op=_NEGATED[inner.op]))
            if isinstance(inner, ast.UnaryOp) and inner.op == "not":
                return f"bool({self.write(inner.operand)})", _PRECEDENCE["atom"]
            return f"not {self._operand(inner, _PRECEDENCE['not'])}", _PRECEDENCE["not"]
        inner = node.operand
        if isinstance(inner, ast.UnaryOp) and inner.op != "not":
            # Signs combine: `-(-x)` is `+x` for every number (and `--x` reads as a
            # decrement, ruff's B002).
            op = "+" if (node.op == "-") == (inner.op == "-") else "-"
            return self._visit(dataclasses.replace(inner, op=op))
        operand = self._operand(inner, _PRECEDENCE["unary"])
        if operand.startswith(("-", "+")):  # a negative literal: `-(-1)`
            operand = f"({operand})"
        return f"{node.op}{operand}", _PRECEDENCE["unary"]

    def visit_IfExp(self, node: ast.IfExp) -> tuple[str, int]:
        # Exact simplifications ruff asks for (SIM210, SIM211, SIM212).
        if _is_bool(node.body, True) and _is_bool(node.orelse, False):
            return f"bool({self.write(node.cond)})", _PRECEDENCE["atom"]
        if _is_bool(node.body, False) and _is_bool(node.orelse, True):
            return self._visit(ast.UnaryOp(node.start, node.end, "not", node.cond))
        if isinstance(node.cond, ast.UnaryOp) and node.cond.op == "not":
            node = dataclasses.replace(
                node, body=node.orelse, cond=node.cond.operand, orelse=node.body
            )
        body = self._operand(node.body, _PRECEDENCE["or"])
        cond = self._operand(node.cond, _PRECEDENCE["or"])
        orelse = self._operand(node.orelse, _PRECEDENCE["if"])
        return f"{body} if {cond} else {orelse}", _PRECEDENCE["if"]

    def statement(self, statement: ast.Statement, value_type: Type | None = None) -> list[str]:
        """Python lines of one effect statement (guarded ones become an `if`).

        A container assigned to state is copied (`s.own`), so state never
        aliases the sample, a constant or another variable."""
        if isinstance(statement, ast.Let):
            return [f"{local_name(statement.name)} = {self.write(statement.value)}"]
        if isinstance(statement, ast.CallStatement):
            args = ", ".join(self.write(a) for a in statement.call.args)
            line = f"s.{statement.call.func}({args})"
        else:
            value = self.write(statement.value)
            if needs_copy(statement.value, value_type):
                value = f"s.own({value})"
            line = f"{self.target(statement.target)} {statement.op} {value}"
        if statement.cond is None:
            return [line]
        return [f"if {self.write(statement.cond)}:", f"    {line}"]


# ---------------------------------------------------------------- the model


_MIRRORED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATED = {"==": "!=", "!=": "==", "in": "not in", "not in": "in"}


def _is_none(node: ast.Node) -> bool:
    return isinstance(node, ast.Literal) and node.value is None


def _is_bool_literal(node: ast.Node) -> bool:
    return isinstance(node, ast.Literal) and isinstance(node.value, bool)


def _fold_constant_side(node: ast.Node) -> ast.Node:
    """`true or x` is `true`, `0 or x` is `x`: Python decides on a constant left
    operand alone, so the side it picks is the value (ruff's SIM222, SIM223)."""
    while isinstance(node, ast.BoolOp):
        left = _fold_constant_side(node.left)  # `(true or x) or y`: the left is `true`
        truth = _constant_truth(left)
        if truth is None:
            break
        node = left if truth == (node.op == "or") else node.right
    return node


def _constant_likelihood(code: str) -> int:
    """How constant a written Python operand looks, as ruff's SIM300 rates it: 2 for
    a literal, 1 for an UPPER_CASE name or attribute (`s.state.I_`), 0 for anything
    else (a call, such as `float("inf")`); a display rates as its least item."""
    import ast as python_ast

    def rate(node: python_ast.expr) -> int:
        if isinstance(node, python_ast.Constant):
            return 2
        if isinstance(node, (python_ast.Name, python_ast.Attribute)):
            name = node.id if isinstance(node, python_ast.Name) else node.attr
            return 1 if name.upper() == name and name.lower() != name else 0
        if isinstance(node, (python_ast.List, python_ast.Tuple, python_ast.Set)):
            return min((rate(item) for item in node.elts), default=2)
        if isinstance(node, python_ast.Dict):
            items = [*(k for k in node.keys if k is not None), *node.values]
            return min((rate(item) for item in items), default=2)
        if isinstance(node, python_ast.BinOp):
            return min(rate(node.left), rate(node.right))
        if isinstance(node, python_ast.UnaryOp) and not isinstance(node.op, python_ast.Not):
            return rate(node.operand)
        return 0

    return rate(python_ast.parse(code.strip(), mode="eval").body)


def _constant_truth(node: ast.Node) -> bool | None:
    """Whether a constant operand is truthy; None when it is not a constant. A
    comparison of a constant with `None` counts: it is written as its value."""
    if ast.is_constant(node):
        return ast.truthy(node)
    if (
        isinstance(node, ast.BinOp)
        and node.op in ("==", "!=")
        and (
            (_is_none(node.left) and ast.is_constant(node.right))
            or (_is_none(node.right) and ast.is_constant(node.left))
        )
    ):
        other = node.left if _is_none(node.right) else node.right
        return _is_none(other) == (node.op == "==")
    return None


def _is_bool(node: ast.Node, value: bool) -> bool:
    return isinstance(node, ast.Literal) and node.value is value


def _is_list(node: ast.Node) -> bool:
    return isinstance(node, ast.ListExpr) or _is_list_concat(node)


def _is_list_concat(node: ast.Node) -> bool:
    return (
        isinstance(node, ast.BinOp)
        and node.op == "+"
        and (_is_list(node.left) or _is_list(node.right))
    )


def _is_and(node: ast.Node) -> bool:
    return isinstance(node, ast.BoolOp) and node.op == "and"
