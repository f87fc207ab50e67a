"""What the explorer reads from the spec's own expressions, to guide its search.

The success and reward expressions say what the checks compare the answer
with (sample fields, string and number literals); the guards say which
arguments, state variables, constants and literals decide a call (their
comparisons, compiled to Python over the same scope the tool's guard sees, so
the search can say which side of each it tried); the effects say which
values each state variable can take. Nothing here plays an episode.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentspec.compiler import ast
from agentspec.spec.model import TaskSpec

__all__ = ["Atom", "CheckReading", "GuardReading", "Reading", "read_spec"]

COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "not in"})
PATTERN_ARGUMENT = {"regex_match": 1, "extract": 1, "extract_all": 1}  # a regex, not a keyword
MAX_LITERALS = 40


@dataclass
class Atom:
    """A comparison (or a boolean leaf) of a condition: its text, and its Python
    over the scope `s` (None where it cannot be evaluated alone: a comprehension)."""

    text: str
    code: str | None
    args: tuple[str, ...] = ()
    state: tuple[str, ...] = ()
    compiled: Any = None

    def evaluate(self, namespace: Mapping[str, Any], scope: Any, bound: Mapping[str, Any]) -> Any:
        """Its value in `scope` (with the guard's `let` names `bound`); raises on error."""
        if self.compiled is None:
            if self.code is None:
                raise ValueError("not evaluated alone")
            self.compiled = compile(self.code, "<explore atom>", "eval")
        return eval(self.compiled, dict(namespace), {"s": scope, **bound})


@dataclass
class GuardReading:
    """A tool's guard: its `let` bindings (Python name, code), its comparisons,
    and what they read."""

    tool: str
    path: tuple[str | int, ...]
    lets: list[tuple[str, str]] = field(default_factory=list)
    atoms: list[Atom] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    state: list[str] = field(default_factory=list)
    sample: list[str] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)
    literals: list[Any] = field(default_factory=list)

    def bind(self, namespace: Mapping[str, Any], scope: Any) -> dict[str, Any]:
        """The guard's `let` names in `scope` (those that fail are left out)."""
        bound: dict[str, Any] = {}
        for name, code in self.lets:
            try:
                bound[name] = eval(code, dict(namespace), {"s": scope, **bound})
            except Exception:
                continue
        return bound


@dataclass
class CheckReading:
    """What `episode.success` and the rewards compare the agent's answer with."""

    strings: list[str] = field(default_factory=list)  # string literals (keywords), not regexes
    numbers: list[float] = field(default_factory=list)
    answer_fields: list[str] = field(default_factory=list)  # sample fields beside `action`
    fields: list[str] = field(default_factory=list)  # every sample field read
    reads_action: bool = False
    # (tool, argument) whose value an effect stores in state that a check reads beside
    # a sample field: an answer given as a call's argument (`submit(reply=…)`)
    sinks: list[tuple[str, str]] = field(default_factory=list)
    sink_vars: list[str] = field(default_factory=list)  # the state variables they store into


@dataclass
class Reading:
    checks: CheckReading
    guards: dict[str, GuardReading]
    # state variable → the values its initial value and effects can give it (None: computed)
    domains: dict[str, list[Any] | None]
    writers: dict[str, set[str]]  # state variable → tools whose effects write it
    reward_reads: dict[str, list[str]]  # component → state variables it reads
    reward_atoms: dict[str, list[Atom]]  # component → comparisons of its `when` and value
    tested_tools: set[str] = field(default_factory=set)  # tools the spec's own tests call
    tested_rewards: set[str] = field(default_factory=set)  # components its tests expect
    tested_state: set[str] = field(default_factory=set)  # state variables its tests expect
    done_reads: list[str] = field(default_factory=list)  # state variables `done_when` reads


def walk(node: Any) -> Iterator[ast.Node]:
    pending: list[Any] = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, tuple):
            pending.extend(reversed(item))
        elif isinstance(item, ast.Node):
            yield item
            pending.extend(reversed([getattr(item, f.name) for f in dataclasses.fields(item)]))


def scope_reads(node: ast.Node, root: str) -> list[str]:
    """The names read as `ROOT.NAME` (`sample.answer`, `args.rx`, `state.credits`)."""
    found = [
        n.attr
        for n in walk(node)
        if isinstance(n, ast.Attr) and isinstance(n.obj, ast.Name) and n.obj.id == root
    ]
    return list(dict.fromkeys(found))


def literals(node: ast.Node) -> list[Any]:
    """The literal values an expression is written with, regex arguments aside."""
    patterns: set[int] = set()
    for n in walk(node):
        if isinstance(n, ast.Call) and n.func in PATTERN_ARGUMENT:
            position = PATTERN_ARGUMENT[n.func]
            if len(n.args) > position:
                patterns.add(id(n.args[position]))
    values = [
        n.value
        for n in walk(node)
        if isinstance(n, ast.Literal) and id(n) not in patterns and n.value is not None
    ]
    return list(dict.fromkeys(v for v in values if not isinstance(v, bool)))


def atoms_of(node: ast.Node) -> list[ast.Node]:
    """The comparisons and boolean leaves of a condition (through `and`, `or`, `not`
    and a conditional's test); comparisons nested in arithmetic count too."""
    if isinstance(node, ast.BoolOp):
        return atoms_of(node.left) + atoms_of(node.right)
    if isinstance(node, ast.UnaryOp) and node.op == "not":
        return atoms_of(node.operand)
    if isinstance(node, ast.IfExp):
        return atoms_of(node.cond) + [n for n in (node.body, node.orelse) if _has_comparison(n)]
    if isinstance(node, ast.Literal):
        return []
    return [node]


def _has_comparison(node: ast.Node) -> bool:
    return any(isinstance(n, ast.BinOp) and n.op in COMPARISONS for n in walk(node))


def _numbers(value: Any, limit: int = MAX_LITERALS) -> list[float]:
    """The numbers in a value (a constant's table, a sample field), at most `limit`."""
    out: list[float] = []
    pending = [value]
    while pending and len(out) < limit:
        item = pending.pop(0)
        if isinstance(item, bool):
            continue
        if isinstance(item, (int, float)) and math.isfinite(item):
            out.append(item)
        elif isinstance(item, Mapping):
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
    return out


def strings_in(value: Any, limit: int = MAX_LITERALS) -> list[str]:
    """The strings in a value, dict keys included, at most `limit`."""
    out: list[str] = []
    pending = [value]
    while pending and len(out) < limit:
        item = pending.pop(0)
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping):
            out.extend(str(k) for k in item)
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
    return list(dict.fromkeys(out))[:limit]


def numbers_in(value: Any, limit: int = MAX_LITERALS) -> list[float]:
    return _numbers(value, limit)


def read_spec(checked: Any) -> Reading:
    """Everything the search reads from a checked spec (`CheckResult`)."""
    spec = checked.spec
    texts = spec.model_dump(by_alias=True)
    checks = _read_checks(checked)
    guards = {}
    for name, tool in spec.tools.items():
        if tool.when is not None and not isinstance(tool.when, bool):
            reading = _read_guard(checked, texts, name, tool)
            if reading is not None:
                guards[name] = reading
    domains, writers = _state_domains(checked)
    _read_sinks(checked, checks)
    reward_reads: dict[str, list[str]] = {}
    reward_atoms: dict[str, list[Atom]] = {}
    for name in spec.rewards:
        reads: list[str] = []
        atoms: list[Atom] = []
        for part in ("when", "value"):
            typed = checked.expressions.get(("rewards", name, part))
            if typed is None:
                continue
            reads += scope_reads(typed.node, "state")
            text = _text(texts, ("rewards", name, part))
            atoms += [_atom(n, text, _writer(checked, frozenset())) for n in atoms_of(typed.node)]
        reward_reads[name] = list(dict.fromkeys(reads))
        reward_atoms[name] = [a for a in atoms if a.code is not None]
    found = Reading(checks, guards, domains, writers, reward_reads, reward_atoms)
    done = checked.expressions.get(("episode", "done_when"))
    if done is not None:
        found.done_reads = scope_reads(done.node, "state")
    _read_tests(spec, found)
    return found


def _writer(checked: Any, optional: frozenset[str], bound: Mapping[str, str] | None = None) -> Any:
    from agentspec.compiler.expr_writer import ExpressionWriter

    writer = ExpressionWriter(optional, checked.repetitions)
    return writer.renaming(dict(bound)) if bound else writer


def _text(texts: Any, path: tuple[Any, ...]) -> str:
    value = texts
    for key in path:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return ""
    return value if isinstance(value, str) else ""


def _atom(node: ast.Node, text: str, writer: Any) -> Atom:
    shown = " ".join(text[node.start : node.end].split()) if text else ""
    try:
        code = writer.write(node)
    except Exception:
        code = None
    return Atom(
        shown or "?", code, tuple(scope_reads(node, "args")), tuple(scope_reads(node, "state"))
    )


def _read_checks(checked: Any) -> CheckReading:
    spec = checked.spec
    paths: list[tuple[Any, ...]] = [("episode", "success")]
    for name in spec.rewards:
        paths += [("rewards", name, "value"), ("rewards", name, "when")]
    found = CheckReading()
    for path in paths:
        typed = checked.expressions.get(path)
        if typed is None:
            continue
        node = typed.node
        fields = scope_reads(node, "sample")
        found.fields += fields
        if scope_reads(node, "action"):
            found.reads_action = True
            found.answer_fields += fields
        for value in literals(node):
            if isinstance(value, str) and any(ch.isalnum() for ch in value):
                found.strings.append(value)
            elif isinstance(value, (int, float)):
                found.numbers.append(value)
    found.fields = list(dict.fromkeys(found.fields))
    found.answer_fields = list(dict.fromkeys(found.answer_fields))
    found.strings = list(dict.fromkeys(found.strings))[:MAX_LITERALS]
    found.numbers = list(dict.fromkeys(found.numbers))[:MAX_LITERALS]
    return found


def _read_sinks(checked: Any, checks: CheckReading) -> None:
    """The arguments stored (whole or in part) in state that a check compares with a
    sample field: answers given as arguments. Their fields join `answer_fields`."""
    spec = checked.spec
    stores: dict[str, list[tuple[str, str]]] = {}
    for tool_name, tool in spec.tools.items():
        for i in range(len(tool.effect)):
            statement = checked.statements.get(("tools", tool_name, "effect", i))
            if not isinstance(statement, ast.Assign):
                continue
            target = statement.target
            while isinstance(target, ast.Index):
                target = target.obj
            if (
                isinstance(target, ast.Attr)
                and isinstance(target.obj, ast.Name)
                and target.obj.id == "state"
            ):
                for arg in scope_reads(statement.value, "args"):
                    if _is_string_argument(tool, arg):
                        stores.setdefault(target.attr, []).append((tool_name, arg))
    paths: list[tuple[Any, ...]] = [("episode", "success")]
    for name in spec.rewards:
        paths += [("rewards", name, "value"), ("rewards", name, "when")]
    for path in paths:
        typed = checked.expressions.get(path)
        if typed is None:
            continue
        fields = scope_reads(typed.node, "sample")
        for var in scope_reads(typed.node, "state"):
            if var in stores and fields:
                checks.sinks += stores[var]
                checks.sink_vars.append(var)
                checks.answer_fields += fields
    checks.sinks = list(dict.fromkeys(checks.sinks))
    checks.sink_vars = list(dict.fromkeys(checks.sink_vars))
    checks.answer_fields = list(dict.fromkeys(checks.answer_fields))


def _is_string_argument(tool: Any, arg: str) -> bool:
    schema = tool.parameters.get(arg, {}) if isinstance(tool.parameters, dict) else {}
    if not isinstance(schema, Mapping) or "enum" in schema:
        return False
    kind = schema.get("type", "string")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def _read_guard(checked: Any, texts: Any, name: str, tool: Any) -> GuardReading | None:
    from agentspec.compiler.guards import expand
    from agentspec.compiler.lower import _optional_args
    from agentspec.compiler.names import local_name

    base = ("tools", name, "when")
    reading = GuardReading(name, base)
    optional = _optional_args(tool)
    nodes: list[tuple[ast.Node, str, Any]] = []
    if (*base,) in checked.expressions:  # one condition
        nodes.append(
            (checked.expressions[base].node, _text(texts, base), _writer(checked, optional))
        )
    else:
        try:
            steps = expand(checked.spec, base, tool.when).steps
        except Exception:
            return None
        python: dict[tuple[int, str], str] = {}
        for step in steps:
            bound = {n: py for (instance, n), py in python.items() if instance == step.instance}
            writer = _writer(checked, optional, bound)
            if step.kind == "let":
                let = checked.statements.get(step.path)
                if not isinstance(let, ast.Let):
                    continue
                py = local_name(let.name) if step.owner is None else f"_{step.owner}_{let.name}"
                python[step.instance, let.name] = py
                try:
                    reading.lets.append((py, writer.write(let.value)))
                except Exception:
                    continue
                continue
            path = step.path if step.kind == "condition" else (*step.path, "if")
            typed = checked.expressions.get(path)
            if typed is not None:
                nodes.append((typed.node, _text(texts, path), writer))
    for node, text, writer in nodes:
        reading.atoms += [_atom(n, text, writer) for n in atoms_of(node)]
        reading.args += scope_reads(node, "args")
        reading.state += scope_reads(node, "state")
        reading.sample += scope_reads(node, "sample")
        reading.constants += scope_reads(node, "constants")
        reading.literals += literals(node)
    for _, code in reading.lets:  # what a `let` reads, the guard reads
        for root, into in (("args", reading.args), ("state", reading.state)):
            into += [part.split("[")[0].split(".")[0] for part in _python_reads(code, root)]
    for attr in ("args", "state", "sample", "constants", "literals"):
        setattr(reading, attr, list(dict.fromkeys(getattr(reading, attr))))
    return reading


def _python_reads(code: str, root: str) -> list[str]:
    """`s.args["x"]` / `s.state.x` names in written Python (a `let`'s value)."""
    import re

    if root == "args":
        return re.findall(r"s\.args\[['\"](\w+)['\"]\]", code)
    return re.findall(r"s\.state\.(\w+)", code)


def _state_domains(checked: Any) -> tuple[dict[str, list[Any] | None], dict[str, set[str]]]:
    """Each state variable's possible values where they are written out: its initial
    value and every value an effect assigns, when all are literals (or an argument
    with an `enum`); None where one is computed."""
    spec = checked.spec
    domains: dict[str, list[Any] | None] = {}
    writers: dict[str, set[str]] = {name: set() for name in spec.state}
    for name, var in spec.state.items():
        initial = var.initial
        if initial is None:
            domains[name] = [_empty(var.type)]
        elif isinstance(initial, (bool, int, float)) or (
            isinstance(initial, str) and ("state", name, "initial") not in checked.expressions
        ):
            domains[name] = [initial]
        else:
            domains[name] = None
    for tool_name, tool in spec.tools.items():
        for i in range(len(tool.effect)):
            statement = checked.statements.get(("tools", tool_name, "effect", i))
            if not isinstance(statement, ast.Assign):
                continue
            target = statement.target
            whole = isinstance(target, ast.Attr)
            while isinstance(target, ast.Index):
                target = target.obj
            if not (isinstance(target, ast.Attr) and isinstance(target.obj, ast.Name)):
                continue
            if target.obj.id != "state":
                continue
            var = target.attr
            writers.setdefault(var, set()).add(tool_name)
            known = domains.get(var)
            if known is None:
                continue
            values = _assigned(statement, tool) if whole and statement.op == "=" else None
            domains[var] = None if values is None else list(dict.fromkeys([*known, *values]))
    return domains, writers


def _assigned(statement: ast.Assign, tool: Any) -> list[Any] | None:
    value = statement.value
    if isinstance(value, ast.Literal):
        return [value.value]
    if isinstance(value, ast.IfExp) and all(
        isinstance(v, ast.Literal) for v in (value.body, value.orelse)
    ):
        return [value.body.value, value.orelse.value]  # type: ignore[attr-defined]
    if isinstance(value, ast.Attr) and isinstance(value.obj, ast.Name) and value.obj.id == "args":
        schema = tool.parameters.get(value.attr, {}) if isinstance(tool.parameters, dict) else {}
        enum = schema.get("enum") if isinstance(schema, Mapping) else None
        if isinstance(enum, list):
            return list(enum)
        if isinstance(schema, Mapping) and schema.get("type") == "boolean":
            return [True, False]
    return None


def _empty(kind: Any) -> Any:
    text = str(kind)
    if text.startswith(("list", "dict")) or text in ("list", "dict"):
        return [] if text.startswith("list") else {}
    return {"int": 0, "float": 0.0, "bool": False, "str": ""}.get(text)


def _read_tests(spec: TaskSpec, reading: Reading) -> None:
    """Which tools the spec's own `tests:` call and which components they expect."""
    for case in spec.tests.episodes:
        text = " ".join(case.turns)
        reading.tested_tools |= {name for name in spec.tools if name in text}
        reading.tested_rewards |= set(case.expect.rewards or {})
        reading.tested_state |= set(case.expect.state or {})
