"""Lowering of guard steps, oracle steps and source locations.

Kept apart from `lower.py`'s expression writer: these build the small
models the module template renders for the sections issue 14 added.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentspec.compiler.ast import Let
from agentspec.compiler.guards import expand, is_let, is_reference
from agentspec.compiler.ir import CheckResult
from agentspec.compiler.names import local_name, state_attribute, unique_names
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


def expression_locations(checked: CheckResult, spec_file: str) -> dict[str, str]:
    """`file:line` of each expression the environment evaluates (rewards, episode
    rules, initial state), by the dotted path its errors are reported under."""
    found: dict[str, str] = {}
    for path in checked.expressions:
        if path[0] == "state":  # ("state", NAME, "initial"), reported by its State field
            found[f"state.{state_attribute(str(path[1]))}.initial"] = location(
                checked, path, spec_file
            )
        elif path[0] in ("rewards", "episode"):
            found[".".join(map(str, path))] = location(checked, path, spec_file)
    for name, tool in checked.spec.tools.items():  # observe templates fail at run time too
        if getattr(tool, "observe", None) is not None:
            found[f"tools.{name}.observe"] = location(
                checked, ("tools", name, "observe"), spec_file
            )
    return found


@dataclass
class GuardCheckModel:
    """One step of a tool's `failed_guard`: a `let` binding (`let` is its
    Python name, `code` its value), or a check (`code` is its failure) whose
    refusal is entry `index` of `guard_messages`: a message template, or the
    `text` of a plain condition. `locals` maps the `let` names the message
    may read to their Python names."""

    code: str
    let: str | None = None
    index: int = 0
    message: str | None = None
    text: str = ""
    locals: dict[str, str] = field(default_factory=dict)
    owner: str | None = None  # the named guard it comes from, shown as a comment

    @property
    def locals_code(self) -> str:
        return "{" + ", ".join(f"{name!r}: {py}" for name, py in self.locals.items()) + "}"


def guard_models(
    checked: CheckResult, tool_name: str, tool: ToolSpec, writer: ExpressionWriter
) -> list[GuardCheckModel]:
    """The steps of a tool's guard list (named guards expanded), in order. A
    named guard's `let` names get Python names of their own (`_signed_in_user`),
    so they never meet the tool's or another guard's."""
    if tool.when is None or isinstance(tool.when, bool) or _plain(tool.when):
        return []
    steps = expand(checked.spec, ("tools", tool_name, "when"), tool.when).steps
    spec = checked.spec.model_dump(by_alias=True)  # the guards' texts, by YAML path
    python: dict[tuple[int, str], str] = {}  # (instance, let name) → Python name
    taken: set[str] = set()
    models: list[GuardCheckModel] = []
    for step in steps:
        bound = {name: py for (instance, name), py in python.items() if instance == step.instance}
        scoped = writer.renaming(bound)
        if step.kind == "let":
            let = checked.statements[step.path]
            assert isinstance(let, Let)
            name = local_name(let.name) if step.owner is None else f"_{step.owner}_{let.name}"
            name = unique_names([name], taken)[0]
            python[step.instance, let.name] = name
            models.append(GuardCheckModel(scoped.write(let.value), let=name, owner=step.owner))
            continue
        index = sum(m.let is None for m in models)
        if step.kind == "condition":
            node = checked.expressions[step.path].node
            text = " ".join(_text(spec, step.path).split())
            models.append(
                GuardCheckModel(scoped.negated(node), index=index, text=text, owner=step.owner)
            )
            continue
        node = checked.expressions[(*step.path, "if")].node
        message = _text(spec, (*step.path, "message"))
        models.append(
            GuardCheckModel(scoped.negated(node), None, index, message, "", bound, step.owner)
        )
    return models


def _plain(when: Any) -> bool:
    """A `when` that is one condition (generated as `available`, not as steps)."""
    return isinstance(when, str) and not is_let(when) and not is_reference(when)


def _text(spec: dict[str, Any], path: tuple[Any, ...]) -> str:
    value: Any = spec
    for part in path:
        value = value[part]
    return str(value)


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
