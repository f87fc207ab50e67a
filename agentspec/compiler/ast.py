"""The AST of expressions and effect statements.

Frozen nodes; each carries `start`/`end`, character offsets into the
expression's text. The checker maps those to file positions through the
scalar's locator, so an error inside a YAML block scalar points at the file's
own line and column.
"""

from __future__ import annotations

import dataclasses
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


def names(node: Node) -> list[Name]:
    """Every bare name in an expression (scope roots, locals), outermost first."""
    found: list[Name] = []
    pending: list[Any] = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, tuple):
            pending.extend(reversed(item))
        elif isinstance(item, Name):
            found.append(item)
        elif isinstance(item, Node):
            pending.extend(reversed([getattr(item, f.name) for f in dataclasses.fields(item)]))
    return found


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


def same(a: Node, b: Node) -> bool:
    """Whether two expressions are written the same (positions aside)."""
    if type(a) is not type(b):
        return False
    for f in dataclasses.fields(a):
        if f.name in ("start", "end") or f.name.endswith(("_start", "_end")):
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, tuple) and isinstance(y, tuple):
            pairs = list(zip(_flat(x), _flat(y), strict=False))
            if len(_flat(x)) != len(_flat(y)) or not all(_same_value(p, q) for p, q in pairs):
                return False
        elif not _same_value(x, y):
            return False
    return True


def _flat(items: tuple[Any, ...]) -> list[Any]:
    return [part for item in items for part in (item if isinstance(item, tuple) else (item,))]


def _same_value(x: Any, y: Any) -> bool:
    if isinstance(x, Node) and isinstance(y, Node):
        return same(x, y)
    return type(x) is type(y) and x == y


def negates(a: Node, b: Node) -> bool:
    """Whether `b` is `not a`."""
    return isinstance(b, UnaryOp) and b.op == "not" and same(a, b.operand)
