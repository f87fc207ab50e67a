"""Checking the sections issue 14 added: state initial expressions, guards
with messages, and oracle steps.

Functions of the checker (`checker` is the running `Checker`): each `*_sites` function yields the expression and
template sites of one section, with the scopes they may read; the checker's
visitor types them like every other site.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentspec.compiler import ast
from agentspec.compiler.types import ANY, STR, ListOf, Type, assignable, strip_optional
from agentspec.spec.model import GuardSpec, OracleEach, ToolSpec

if TYPE_CHECKING:
    from agentspec.compiler.checker import Checker, _Site


def guards_of(tool: ToolSpec) -> list[GuardSpec]:
    """A tool's `when`, as a list of guards with messages (empty for plain guards)."""
    if isinstance(tool.when, GuardSpec):
        return [tool.when]
    if isinstance(tool.when, list):
        return list(tool.when)
    return []


def guard_path(tool: ToolSpec, i: int) -> tuple[str | int, ...]:
    """The YAML path of the `i`th guard of a tool's `when` (one mapping, or a list)."""
    return ("when",) if isinstance(tool.when, GuardSpec) else ("when", i)


def initial_is_expression(checker: Checker, name: str) -> bool:
    """A string `initial` is an expression unless the variable holds text."""
    var = checker.spec.state[name]
    declared = strip_optional(checker.state_types.get(name, ANY))
    return isinstance(var.initial, str) and declared not in (STR, ANY)


def initial_sites(checker: Checker) -> Iterator[_Site]:
    from agentspec.compiler.checker import _Site

    for name in checker.spec.state:
        if initial_is_expression(checker, name):
            yield _Site(("state", name, "initial"), "expression", checker._scope("sample"))


def check_initial_type(
    checker: Checker, path: tuple[str | int, ...], node: ast.Node, typ: Type
) -> None:
    name = str(path[1])
    declared = checker.state_types[name]
    if not assignable(typ, declared):
        checker.error(
            "E508",
            f"initial value of state.{name} is {typ}, but its type is {declared}",
            checker.node_span(node),
            hint=f"give an initial value of type {declared}, or change `type`",
        )


def guard_sites(checker: Checker, tool_name: str, tool: ToolSpec) -> Iterator[_Site]:
    from agentspec.compiler.checker import _Site

    base = ("tools", tool_name)
    scope = checker._scope("state", "sample", "step", "env", "args", tool=tool_name)
    if isinstance(tool.when, str):
        yield _Site((*base, "when"), "condition", scope, tool_name)
    for i, _ in enumerate(guards_of(tool)):
        where = (*base, *guard_path(tool, i))
        yield _Site((*where, "if"), "condition", scope, tool_name)
        yield _Site((*where, "message"), "template", scope, tool_name)


def oracle_sites(checker: Checker) -> Iterator[_Site]:
    from agentspec.compiler.checker import _Site

    if not isinstance(checker.spec.oracle, list):
        return
    for i, step in enumerate(checker.spec.oracle):
        if isinstance(step, OracleEach):
            yield _Site(("oracle", i, "each"), "list", checker._scope("sample"))
            scope = checker._scope("sample")
            scope.roots.update(item=ANY, index=ANY)
            yield _Site(("oracle", i, "action"), "template", scope)
        else:
            yield _Site(("oracle", i), "template", checker._scope("sample", "state", "step"))


def expect_list(checker: Checker, node: ast.Node, typ: Type) -> None:
    if not isinstance(strip_optional(typ), ListOf) and strip_optional(typ) != ANY:
        checker.error(
            "E511",
            f"`each` must be a list, but this is {typ}",
            checker.node_span(node),
            hint="e.g. `sample.moves`, or a comprehension [… for x in …]",
        )
