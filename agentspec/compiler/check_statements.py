"""Checking an effect statement: `state.x = …` (with its indices and
augmented forms), `done()` and `fail(message)`, each maybe with `if …`.

Functions of the checker (`checker` is the running check, a `CheckState`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentspec.compiler import ast, check_names, check_operators
from agentspec.compiler.builtins import BUILTINS, EFFECT_CALLS
from agentspec.compiler.scopes import ROOTS
from agentspec.compiler.types import ANY, BOOL, FLOAT, INT, STR, ListOf, assignable, strip_optional

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState


def check_statement(checker: CheckState, statement: ast.Assign | ast.CallStatement) -> None:
    if statement.cond is not None:
        checker.expect_condition(statement.cond, checker.infer(statement.cond))
    if isinstance(statement, ast.CallStatement):
        _call_statement(checker, statement.call)
    else:
        _assignment(checker, statement)


def _call_statement(checker: CheckState, call: ast.Call) -> None:
    """`done()` or `fail(message)`; any other call would have no effect (E306)."""
    signature = EFFECT_CALLS.get(call.func)
    if signature is None:
        known = call.func in BUILTINS or call.func in checker.functions
        what = "built-in function" if known else "name"
        checker.error(
            "E306",
            f"calling {what} '{call.func}' as a statement has no effect",
            checker.span(call.start, call.func_end),
            hint="an effect is `state.x = …`, `done()` or `fail(message)`",
        )
        return
    checker.check_call_args(call, signature, [checker.infer(a) for a in call.args])


def _assignment(checker: CheckState, statement: ast.Assign) -> None:
    """`state.x = …` (maybe indexed, maybe `+=`): to state only, with an assignable value."""
    target = statement.target
    root, var = assignment_target(checker, target)
    if root is None:
        return
    value_type = checker.infer(statement.value)
    assert checker.site is not None
    # The type code generation sees (a container is copied into state); a
    # scalar target (`state.n -= price`) needs no copy, whatever `price` is.
    checker.value_types[checker.site.path] = value_type
    if root != "state":
        checker.error(
            "E408",
            f"'{root}' is read-only: effects can only assign to state",
            checker.node_span(target),
            hint=f"declare a state variable and assign to `state.{var}`" if var else None,
        )
        return
    if var not in checker.state_types:
        check_names.missing_field(
            checker,
            "state",
            var,
            checker.span(target.end - len(var), target.end),
            checker.state_types,
        )
        return
    checker.usage.writes.add(var)
    var_type = checker.state_types[var]
    for index in _indices(target):  # `state.db[k][j] = …`: one item type per level
        checker.infer(index)
        base = strip_optional(var_type)
        var_type = base.item if isinstance(base, ListOf) else ANY
    if strip_optional(var_type) in (STR, INT, FLOAT, BOOL):
        checker.value_types[checker.site.path] = var_type
    if statement.op != "=":
        value_type = check_operators.arith(
            checker, statement.op[0], var_type, value_type, statement
        )
    if not assignable(value_type, var_type, bool_is_number=statement.op != "="):
        checker.error(
            "E504",
            f"cannot assign {value_type} to {_target_text(target, var)} of type {var_type}",
            checker.node_span(statement.value),
            hint=check_operators.conversion_hint(value_type, var_type),
        )


def _target_text(target: ast.Node, var: str) -> str:
    """`state.hist[…]` for an item (its type is not the list's), else `state.hist`."""
    depth = 0
    while isinstance(target, ast.Index):
        target, depth = target.obj, depth + 1
    return f"state.{var}" + "[…]" * depth


def assignment_target(checker: CheckState, target: ast.Node) -> tuple[str | None, str]:
    """(root, variable) of an assignment target: `root.var`, `root.var[i]`, `root.var[i][j]`…"""
    node = target
    while isinstance(node, ast.Index):
        node = node.obj
    if isinstance(node, ast.Attr) and isinstance(node.obj, ast.Name) and node.obj.id in ROOTS:
        return node.obj.id, node.attr
    checker.error(
        "E306",
        "only a state variable can be assigned",
        checker.node_span(target),
        hint="write `state.NAME = value`",
    )
    return None, ""


def _indices(target: ast.Node) -> list[ast.Node]:
    """The indices of an assignment target, outermost variable first."""
    indices = []
    while isinstance(target, ast.Index):
        indices.append(target.index)
        target = target.obj
    return indices[::-1]
