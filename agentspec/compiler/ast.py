"""The AST of expressions and effect statements.

Frozen nodes; each carries `start`/`end`, character offsets into the
expression's text. The checker maps those to file positions through the
scalar's locator, so an error inside a YAML block scalar points at the file's
own line and column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Node:
    start: int
    end: int


@dataclass(frozen=True)
class Literal(Node):
    value: Any  # str | int | float | bool | None


@dataclass(frozen=True)
class ListExpr(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class DictExpr(Node):
    pairs: tuple[tuple[Node, Node], ...]


@dataclass(frozen=True)
class Comprehension(Node):
    """`[elt for x in xs if c]` (`key` is None) or `{key: elt for k, v in items(d)}`.

    `names` are one or two local names (two unpack pairs, e.g. from `items`);
    `conds` are the `if` filters, all of which must hold.
    """

    key: Node | None
    element: Node
    names: tuple[str, ...]
    iterable: Node
    conds: tuple[Node, ...]


@dataclass(frozen=True)
class Name(Node):
    """A bare name: a scope root (`state`) or, in a call, a function."""

    id: str


@dataclass(frozen=True)
class Attr(Node):
    """`scope.name`; attribute access exists only on scope roots."""

    obj: Node
    attr: str
    attr_start: int


@dataclass(frozen=True)
class Index(Node):
    obj: Node
    index: Node


@dataclass(frozen=True)
class Call(Node):
    func: str
    func_end: int
    args: tuple[Node, ...]


@dataclass(frozen=True)
class BinOp(Node):
    """Arithmetic (`+ - * / // %`), comparison (`== != < <= > >=`), `in`, `not in`."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class BoolOp(Node):
    op: str  # "and" | "or"
    left: Node
    right: Node


@dataclass(frozen=True)
class UnaryOp(Node):
    op: str  # "not" | "-" | "+"
    operand: Node


@dataclass(frozen=True)
class IfExp(Node):
    body: Node
    cond: Node
    orelse: Node


@dataclass(frozen=True)
class Assign(Node):
    """`target = value`, `target += value`, `target -= value`, maybe guarded."""

    target: Node
    op: str
    value: Node
    cond: Node | None


@dataclass(frozen=True)
class CallStatement(Node):
    """`done()` or `fail(message)`, maybe guarded."""

    call: Call
    cond: Node | None


@dataclass(frozen=True)
class Let(Node):
    """`let name = value`: a local name for the rest of the tool call's effects."""

    name: str
    name_start: int
    value: Node


Statement = Assign | CallStatement | Let


def is_constant(node: Node) -> bool:
    """A value written out in full (a literal, or a list or dict of them)."""
    if isinstance(node, Literal):
        return True
    if isinstance(node, UnaryOp):
        return node.op != "not" and is_constant(node.operand)
    if isinstance(node, ListExpr):
        return all(is_constant(item) for item in node.items)
    if isinstance(node, DictExpr):
        return all(is_constant(k) and is_constant(v) for k, v in node.pairs)
    return False


def truthy(node: Node) -> bool:
    """The truth of a constant expression (see `is_constant`)."""
    if isinstance(node, Literal):
        return bool(node.value)
    if isinstance(node, UnaryOp):
        return truthy(node.operand) if node.op != "not" else not truthy(node.operand)
    if isinstance(node, ListExpr):
        return bool(node.items)
    assert isinstance(node, DictExpr)
    return bool(node.pairs)
