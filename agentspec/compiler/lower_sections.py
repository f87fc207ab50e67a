"""Lowering of guards with messages, oracle steps and source locations.

Kept apart from `lower.py`'s expression writer: these build the small
models the module template renders for the sections issue 14 added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentspec.compiler.ir import CheckResult
from agentspec.compiler.sections import guard_path, guards_of
from agentspec.spec.model import OracleEach, ToolSpec

if TYPE_CHECKING:
    from agentspec.compiler.expr_writer import ExpressionWriter


@dataclass
class OracleStepModel:
    """One oracle entry: an action template, maybe repeated per item of `each`."""

    template: str
    location: str  # spec file:line, for errors while rendering
    each: str | None = None  # Python expression over `s` giving the items


def location(checked: CheckResult, path: tuple[Any, ...], spec_file: str) -> str:
    """`file:line` of a spec value, as the generated code reports it."""
    return f"{spec_file}:{checked.loaded.source_map.value_span(path).line}"


def expression_locations(checked: CheckResult, spec_file: str, initial: bool) -> dict[str, str]:
    """`file:line` of each expression the environment evaluates (rewards, episode
    rules, initial state), by the dotted path its errors are reported under."""
    found = {"state.initial": location(checked, ("state",), spec_file)} if initial else {}
    for path in checked.expressions:
        if path[0] in ("rewards", "episode"):
            found[".".join(map(str, path))] = location(checked, path, spec_file)
    return found


def guard_models(
    checked: CheckResult, tool_name: str, tool: ToolSpec, writer: ExpressionWriter
) -> list[tuple[str, str]]:
    """(code of the guard's failure — its condition negated —, message template)
    of each guard with a message."""
    models = []
    for i, guard in enumerate(guards_of(tool)):
        path = ("tools", tool_name, *guard_path(tool, i), "if")
        models.append((writer.negated(checked.expressions[path].node), guard.message))
    return models


def oracle_models(
    checked: CheckResult, writer: ExpressionWriter, spec_file: str
) -> list[OracleStepModel]:
    spec = checked.spec
    assert isinstance(spec.oracle, list)
    steps = []
    for i, step in enumerate(spec.oracle):
        if isinstance(step, OracleEach):
            each = writer.write(checked.expressions[("oracle", i, "each")].node)
            where = location(checked, ("oracle", i, "action"), spec_file)
            steps.append(OracleStepModel(step.action, where, each))
        else:
            steps.append(OracleStepModel(step, location(checked, ("oracle", i), spec_file)))
    return steps
