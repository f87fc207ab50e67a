"""Checking local names: comprehension variables and `let` bindings.

Functions of the checker (`checker` is the running check, a `CheckState`). Locals live in a stack of frames: a tool's `let`
names form the frame its later effects see (scoped to the tool call), and
each comprehension pushes a frame for its loop variables while its element
and filters are typed. Element types flow through: iterating a `list[T]`
binds `T`, a dict binds its keys (str), a str binds its characters, and two
names unpack pairs (`for k, v in items(d)`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentspec.compiler import ast
from agentspec.compiler.builtins import BUILTINS, EFFECT_CALLS
from agentspec.compiler.types import ANY, DICT, STR, ListOf, Type, strip_optional

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState
    from agentspec.core.source import Span

# Names the generated code or the language itself owns: a local cannot take them.
RESERVED_LOCALS = frozenset({"self", "s", "fn", "user", "True", "False", "None"})


def local_type(checker: CheckState, name: str) -> Type | None:
    for frame in reversed(checker.frames):
        if name in frame:
            return frame[name]
    return None


def check_comprehension(checker: CheckState, node: ast.Comprehension) -> Type:
    iterable = strip_optional(checker.infer(node.iterable))
    item = _element_type(checker, iterable, node)
    frame: dict[str, Type] = {}
    if len(node.names) == 2:
        pair_item = item.item if isinstance(item, ListOf) else ANY
        if item not in (ANY,) and not isinstance(item, ListOf):
            checker.error(
                "E511",
                f"`for {node.names[0]}, {node.names[1]} in …` needs pairs, but the items are {item}",
                checker.node_span(node.iterable),
                hint="iterate over items(d) to get key, value pairs",
            )
        frame = dict.fromkeys(node.names, pair_item)
    else:
        frame = {node.names[0]: item}
    for name in node.names:
        check_local_name(checker, name, checker.node_span(node))
    checker.frames.append(frame)
    try:
        for cond in node.conds:
            checker.expect_condition(cond, checker.infer(cond))
        element = checker.infer(node.element)
        if node.key is not None:
            checker.infer(node.key)
            return DICT
        return ListOf(element)
    finally:
        checker.frames.pop()


def _element_type(checker: CheckState, iterable: Type, node: ast.Comprehension) -> Type:
    if isinstance(iterable, ListOf):
        return iterable.item
    if iterable == DICT:
        return STR  # iterating a dict gives its keys
    if iterable == STR:
        return STR
    if iterable == ANY:
        return ANY
    checker.error(
        "E511",
        f"a comprehension cannot iterate over a value of type {iterable}",
        checker.node_span(node.iterable),
        hint="iterate over a list, a dict (its keys) or items(d)",
    )
    return ANY


def check_local_name(checker: CheckState, name: str, span: Span) -> bool:
    """E415 for a local that would hide a scope, a function or a reserved name."""
    from agentspec.compiler.scopes import ROOTS

    clash = None
    if name in ROOTS:
        clash = "a scope"
    elif name in BUILTINS or name in EFFECT_CALLS or name in checker.functions:
        clash = "a function"
    elif name in RESERVED_LOCALS or name.startswith("_"):
        clash = "a reserved name"
    if clash is None:
        return True
    checker.error(
        "E415",
        f"local name '{name}' is {clash}",
        span,
        hint="choose another name",
    )
    return False


def check_let(checker: CheckState, statement: ast.Let) -> None:
    value = checker.infer(statement.value)
    span = checker.span(statement.name_start, statement.name_start + len(statement.name))
    if not check_local_name(checker, statement.name, span):
        return
    if local_type(checker, statement.name) is not None:
        checker.error(
            "E415",
            f"'{statement.name}' is already bound by a `let` before it",
            span,
            hint="a let binds once (per tool call in effects, per guard in `when`); use another name",
        )
        return
    checker.frames[0][statement.name] = value
