"""The sites of a spec: every expression, statement and template, with the
scope it may read (`all_sites`), and the checks of the sections issue 14
added (state initial expressions, oracle steps); a tool's guards are
`guards.py`'s.

Functions of the checker (`checker` is the running check, a `CheckState`): each `*_sites`
function yields the sites of one section; the checker's visitor types them
like every other site.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentspec.compiler import ast, guards
from agentspec.compiler.scopes import Scope, Site
from agentspec.compiler.types import ANY, STR, ListOf, Type, assignable, strip_optional
from agentspec.compiler.user_check import user_sites
from agentspec.spec.model import OracleEach, ToolSpec
from agentspec.spec.yaml_loader import Path

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState


def initial_is_expression(checker: CheckState, name: str) -> bool:
    """Whether a state variable's `initial` is an expression: any string, for a
    variable that does not hold text; for a `str` or `any` variable, only a
    string that is an expression reading `sample` or `constants`
    (`sample.goal`) — every other string (`search`) is the text itself."""
    var = checker.spec.state[name]
    if not isinstance(var.initial, str):
        return False
    declared = strip_optional(checker.state_types.get(name, ANY))
    return declared not in (STR, ANY) or reads_sample_or_constants(var.initial)


@functools.cache
def reads_sample_or_constants(text: str) -> bool:
    """Whether `text` is an expression that reads `sample` or `constants`."""
    from agentspec.compiler.parser import ExprSyntaxError, parse_expression

    try:
        node = parse_expression(text)
    except (ExprSyntaxError, RecursionError):
        return False
    return any(n.id in ("sample", "constants") for n in ast.names(node))


def initial_sites(checker: CheckState) -> Iterator[Site]:
    for name in checker.spec.state:
        if initial_is_expression(checker, name):
            yield Site(("state", name, "initial"), "expression", checker.make_scope("sample"))


def check_initial_type(
    checker: CheckState, path: tuple[str | int, ...], node: ast.Node, typ: Type
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


def oracle_sites(checker: CheckState) -> Iterator[Site]:
    if not isinstance(checker.spec.oracle, list):
        return
    for i, step in enumerate(checker.spec.oracle):
        if isinstance(step, OracleEach):
            yield Site(("oracle", i, "each"), "list", checker.make_scope("sample"))
            scope = checker.make_scope("sample")
            scope.roots.update(item=ANY, index=ANY)
            yield Site(("oracle", i, "action"), "template", scope)
        else:
            yield Site(("oracle", i), "template", checker.make_scope("sample", "state", "step"))


def expect_list(checker: CheckState, node: ast.Node, typ: Type) -> None:
    if not isinstance(strip_optional(typ), ListOf) and strip_optional(typ) != ANY:
        checker.error(
            "E511",
            f"`each` must be a list, but this is {typ}",
            checker.node_span(node),
            hint="e.g. `sample.moves`, or a comprehension [… for x in …]",
        )


def all_sites(checker: CheckState) -> Iterator[Site]:
    """Every expression, statement and template of the spec, with its scope.

    Ordered so that a derived field is typed before state's initial values and
    a tool's `returns` before its effects read `result`.
    """
    spec = checker.spec
    prompt_scope = Scope(
        {"sample": checker.sample_types, "tools": ANY, "constants": checker.constant_types}
    )
    # derived fields first: state's initial values may read them (`sample.NAME`)
    if spec.data is not None:
        for name in spec.data.derived:
            yield Site(("data", "derived", name), "expression", checker.make_scope("sample"))
    yield from initial_sites(checker)
    yield Site(("prompt", "system"), "template", prompt_scope)
    yield Site(("prompt", "user"), "template", prompt_scope)
    for tool_name, tool in spec.tools.items():
        yield from tool_sites(checker, tool_name, tool)
    yield from guards.unused_guard_sites(checker)
    episode_roots = ("state", "sample", "step", "env", "user")
    if isinstance(spec.episode.done_when, str):
        yield Site(
            ("episode", "done_when"), "condition", checker.make_scope(*episode_roots, "action")
        )
    if spec.episode.anchor is not None:
        yield Site(("episode", "anchor"), "expression", checker.make_scope(*episode_roots))
    yield from reward_sites(checker, episode_roots)
    if isinstance(spec.episode.success, str):
        yield Site(
            ("episode", "success"),
            "condition",
            checker.make_scope(*episode_roots, "action", "reward"),
        )
    if spec.context.summary is not None:
        summary = checker.make_scope("state", "sample", "step", "env")
        summary.roots.update(last_observation=STR, task=STR, steps=ANY)
        yield Site(("context", "summary"), "template", summary)
    yield from oracle_sites(checker)
    yield from user_sites(checker)


def tool_sites(checker: CheckState, tool_name: str, tool: ToolSpec) -> Iterator[Site]:
    """A tool's guards, `returns` (typed first), effects and `observe`."""
    base: Path = ("tools", tool_name)
    yield from guards.guard_sites(checker, tool_name, tool)
    if tool.returns is not None:
        yield Site(
            (*base, "returns"),
            "expression",
            checker.make_scope("state", "args", "sample", "step", "env", tool=tool_name),
            tool_name,
        )
    after = ("state", "args", "sample", "step", "env", "result")
    for i in range(len(tool.effect)):
        yield Site(
            (*base, "effect", i),
            "statement",
            checker.make_scope(*after, tool=tool_name, writable=["state"]),
            tool_name,
        )
    if tool.observe is not None:
        yield Site(
            (*base, "observe"), "template", checker.make_scope(*after, tool=tool_name), tool_name
        )


def reward_sites(checker: CheckState, episode_roots: tuple[str, ...]) -> Iterator[Site]:
    """Each reward's value and `when`; `on: tool:NAME` adds that call's args and result."""
    for name, reward in checker.spec.rewards.items():
        on_tool = reward.on.removeprefix("tool:") if reward.on.startswith("tool:") else None
        roots = (*episode_roots, "action") + (("args", "result") if on_tool else ())
        scope = checker.make_scope(*roots, tool=on_tool)
        if isinstance(reward.value, str):
            yield Site(
                ("rewards", name, "value"), "number", scope, on_tool, label=f"reward '{name}'"
            )
        if reward.when is not None:
            yield Site(("rewards", name, "when"), "condition", scope, on_tool)
