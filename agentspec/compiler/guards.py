"""Guards: a tool's `when`, with the named guards of `guards:` expanded in place.

A guard is a condition, `{if: COND, message: TEMPLATE}`, the name of a named
guard, or a list of those and `let NAME = EXPR` bindings, checked in order.
`expand` flattens a tool's guard into `GuardStep`s (a named guard's steps
where its name stands), so the checker and the lowering read one list.
Each expansion of a named guard is an `instance` of its own: its `let` names
are its own, invisible to the tool's other steps and to other guards.

The checker's part (`guard_sites`, `check_unused_guards`) types every step
where it is used — a named guard reads the `args` of the tool that uses it —
and reports names that are no guard (E416) and guards that use themselves.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentspec.compiler.scopes import Scope, Site
from agentspec.spec.model import GuardSpec, TaskSpec
from agentspec.spec.yaml_loader import Path

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState

_LET = re.compile(r"\s*let\s")
MAX_STEPS = 500  # steps of one tool's guard, named guards expanded (`a: [b, b]`, `b: [c, c]`, …)
_LITERALS = frozenset({"True", "False", "None"})


@dataclass(frozen=True)
class GuardStep:
    """One step of an expanded guard: a `condition`, a `message` guard
    (`{if, message}`) or a `let`, at its YAML path, from the named guard
    `owner` (None: the tool's own `when`), in expansion `instance`."""

    kind: str
    path: Path
    owner: str | None = None
    instance: int = 0


@dataclass
class Problem:
    """A step naming no guard (`unknown`), a named guard that uses itself
    (`cycle`), or an expansion past `MAX_STEPS` (`too_many`)."""

    kind: str
    path: Path
    names: tuple[str, ...]


@dataclass
class Expansion:
    steps: list[GuardStep] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    used: set[str] = field(default_factory=set)  # the named guards it expanded
    expansions: int = 0  # how many times (an empty named guard costs one too)


def is_let(text: str) -> bool:
    return _LET.match(text) is not None


def is_reference(text: str) -> bool:
    """A step that names a guard: a bare identifier (never a valid condition)."""
    name = text.strip()
    return name.isidentifier() and name not in _LITERALS


def expand(spec: TaskSpec, base: Path, guard: Any) -> Expansion:
    """The steps of `guard` (a tool's `when`, at YAML path `base`), named guards expanded."""
    found = Expansion()
    _expand(spec, base, guard, None, (), itertools.count(1), found, 0)
    return found


def _expand(
    spec: TaskSpec,
    base: Path,
    guard: Any,
    owner: str | None,
    stack: tuple[str, ...],
    instances: Iterator[int],
    found: Expansion,
    instance: int,
) -> None:
    steps = list(enumerate(guard)) if isinstance(guard, list) else [(None, guard)]
    for i, step in steps:
        path: Path = base if i is None else (*base, i)
        if len(found.steps) + found.expansions >= MAX_STEPS:
            if not any(p.kind == "too_many" for p in found.problems):
                found.problems.append(Problem("too_many", path, stack))
            return
        if isinstance(step, GuardSpec):
            found.steps.append(GuardStep("message", path, owner, instance))
        elif not isinstance(step, str):
            continue  # `when: true/false`: not a step
        elif is_let(step):
            found.steps.append(GuardStep("let", path, owner, instance))
        elif not is_reference(step):
            found.steps.append(GuardStep("condition", path, owner, instance))
        elif step.strip() not in spec.guards:
            found.problems.append(Problem("unknown", path, (step.strip(),)))
        elif step.strip() in stack:
            found.problems.append(Problem("cycle", path, (*stack, step.strip())))
        else:
            name = step.strip()
            found.used.add(name)
            found.expansions += 1
            inner = ("guards", name)
            _expand(
                spec,
                inner,
                spec.guards[name],
                name,
                (*stack, name),
                instances,
                found,
                next(instances),
            )


# ------------------------------------------------------------------ checking


def guard_sites(checker: CheckState, tool_name: str, tool: Any) -> Iterator[Site]:
    """The sites of a tool's guard, named guards expanded (typed with this tool's `args`)."""
    if tool.when is None or isinstance(tool.when, bool):
        return
    base: Path = ("tools", tool_name, "when")
    expansion = expand(checker.spec, base, tool.when)
    checker.used_guards |= expansion.used
    _report(checker, expansion.problems)
    scope = checker.make_scope("state", "sample", "step", "env", "args", tool=tool_name)
    yield from _step_sites(checker, expansion.steps, scope, tool_name, f"tools.{tool_name}")


def _step_sites(
    checker: CheckState, steps: list[GuardStep], scope: Scope, tool_name: str | None, where: str
) -> Iterator[Site]:
    for step in steps:
        frame = ("guard", where, step.instance)  # each expansion binds its own `let` names
        via = step.owner
        if step.kind == "let":
            yield Site(step.path, "let", scope, tool_name, frame=frame, via=via)
        elif step.kind == "condition":
            yield Site(step.path, "condition", scope, tool_name, frame=frame, via=via)
        else:
            yield Site((*step.path, "if"), "condition", scope, tool_name, frame=frame, via=via)
            # The message may read the `let` names bound before it.
            message_scope = Scope(dict(scope.roots), scope.writable, scope.open_roots)
            message_scope.roots.update(checker.lets.get(frame, {}))
            path = (*step.path, "message")
            yield Site(path, "template", message_scope, tool_name, frame=frame, via=via)


def unused_guard_sites(checker: CheckState) -> Iterator[Site]:
    """Named guards no tool uses: checked once, with `args` open (any name),
    and reported (W804)."""
    for name, guard in checker.spec.guards.items():
        if name in checker.used_guards:
            continue
        checker.error(
            "W804",
            f"guard '{name}' is not used by any tool",
            checker.map.key_span(("guards", name)),
            hint=f"name it in a tool's `when` (`when: {name}`, or an entry of its list), or delete it",
        )
        expansion = expand(checker.spec, ("guards", name), guard)
        expansion.steps = [
            GuardStep(s.kind, s.path, s.owner or name, s.instance) for s in expansion.steps
        ]
        _report(checker, expansion.problems)
        scope = checker.make_scope("state", "sample", "step", "env")
        scope.roots["args"] = {}
        scope.open_roots = scope.open_roots | {"args"}  # the tools that will use it are unknown
        yield from _step_sites(checker, expansion.steps, scope, None, f"guards.{name}")


def _report(checker: CheckState, problems: list[Problem]) -> None:
    from agentspec.compiler.check_names import did_you_mean

    for problem in problems:
        span = checker.map.value_span(problem.path)
        if problem.kind == "too_many":
            checker.error(
                "E416",
                f"this guard expands to more than {MAX_STEPS} steps (named guards used many times)",
                span,
                hint="name each guard once in a list, rather than lists that name each other twice",
            )
            continue
        if problem.kind == "cycle":
            chain = " → ".join(problem.names)
            checker.error(
                "E416",
                f"guard '{problem.names[0]}' uses itself ({chain})",
                span,
                hint="a named guard may use other guards, but not itself",
            )
            continue
        name = problem.names[0]
        hint = did_you_mean(name, checker.spec.guards)
        if not checker.spec.guards:
            hint = "declare it under `guards:`, or write a condition (e.g. `state.NAME == …`)"
        checker.error("E416", f"unknown guard '{name}'", span, hint)
