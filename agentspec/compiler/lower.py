"""Lowering: the checked IR → the pieces of Python the templates emit.

Expressions become Python source over one scope object `s` (see
`agentspec.runtime.spec_env.Scope`); statements become lines. User strings
reach the output only through `repr`, and every identifier that comes from
the spec is validated or renamed, so no spec can inject code.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from typing import Any

from agentspec.compiler import ast
from agentspec.compiler.ir import CheckedSpec
from agentspec.compiler.literals import py_literal
from agentspec.compiler.lower_sections import (
    OracleStepModel,
    expression_locations,
    guard_models,
    location,
    oracle_models,
)
from agentspec.compiler.mcp import McpTool, mcp_tools, optional_arguments
from agentspec.compiler.names import (
    MODULE_NAMES,
    class_name,
    function_access,
    local_name,
    state_attribute,
    unique_names,
)
from agentspec.compiler.types import BOOL, FLOAT, INT, NONE, STR, ListOf, Optional, Prim, Type
from agentspec.spec.model import McpServerSpec, TaskSpec, ToolSpec

# Binding strength, as in Python's grammar (higher binds tighter).
_PRECEDENCE = {
    "if": 1, "or": 2, "and": 3, "not": 4,
    "==": 5, "!=": 5, "<": 5, "<=": 5, ">": 5, ">=": 5, "in": 5, "not in": 5,
    "+": 6, "-": 6, "*": 7, "/": 7, "//": 7, "%": 7, "unary": 8, "atom": 9,
}  # fmt: skip


_SCALARS = (STR, INT, FLOAT, BOOL, NONE)


def needs_copy(value: ast.Node, value_type: Type | None) -> bool:
    """Whether an assigned value may alias a sample, a constant or other state:
    containers (and values of unknown type) are copied; literals never are."""
    t = value_type.inner if isinstance(value_type, Optional) else value_type
    if isinstance(value, ast.Literal) or t in _SCALARS:
        return False
    if isinstance(value, ast.ListExpr) and all(isinstance(i, ast.Literal) for i in value.items):
        return False  # a fresh list of literals (`[]`, `[1, 2]`)
    if isinstance(value, ast.DictExpr) and all(isinstance(v, ast.Literal) for _, v in value.pairs):
        return False
    fresh = isinstance(value, (ast.ListExpr, ast.Comprehension, ast.BinOp))
    return not (fresh and isinstance(t, ListOf) and t.item in _SCALARS)  # a new list of scalars


def _literal_index(node: ast.Node) -> bool:
    """A literal key or index (`xs[0]`, `xs[-1]`, `d["k"]`): indexed as in Python.
    Computed indices go through `s.at`, which refuses negative and out-of-range ones."""
    return isinstance(node, ast.Literal) and type(node.value) in (int, str)


def python_type(t: Type) -> str:
    """The annotation for a state variable of type `t`."""
    if isinstance(t, Optional):
        return f"{python_type(t.inner)} | None"
    if isinstance(t, ListOf):
        return f"list[{python_type(t.item)}]"
    assert isinstance(t, Prim)
    return {
        "str": "str",
        "int": "int",
        "float": "float",
        "bool": "bool",
        "dict": "dict[str, Any]",
    }.get(t.name, "Any")


def empty_value(t: Type) -> Any:
    """The default initial value of a state variable of type `t`."""
    if isinstance(t, Optional):
        return None
    if isinstance(t, ListOf):
        return []
    return {"str": "", "int": 0, "float": 0.0, "bool": False, "dict": {}}.get(
        getattr(t, "name", "")
    )


class ExpressionWriter:
    """AST → Python source over the scope `s`; one `visit_<Node>` per node."""

    def __init__(
        self,
        optional_args: frozenset[str] = frozenset(),
        repetitions: set[ast.Node] | None = None,
    ):
        self.optional_args = optional_args
        self.repetitions = repetitions or set()

    def write(self, node: ast.Node) -> str:
        return self._visit(node)[0]

    def _visit(self, node: ast.Node) -> tuple[str, int]:
        method = getattr(self, f"visit_{type(node).__name__}")
        result: tuple[str, int] = method(node)
        return result

    def _operand(self, node: ast.Node, minimum: int) -> str:
        code, strength = self._visit(node)
        return code if strength >= minimum else f"({code})"

    def visit_Literal(self, node: ast.Literal) -> tuple[str, int]:
        code = py_literal(node.value)
        return code, _PRECEDENCE["unary"] if code.startswith("-") else _PRECEDENCE["atom"]

    def visit_ListExpr(self, node: ast.ListExpr) -> tuple[str, int]:
        return "[" + ", ".join(self.write(i) for i in node.items) + "]", _PRECEDENCE["atom"]

    def visit_DictExpr(self, node: ast.DictExpr) -> tuple[str, int]:
        pairs = ", ".join(f"{self.write(k)}: {self.write(v)}" for k, v in node.pairs)
        return "{" + pairs + "}", _PRECEDENCE["atom"]

    def visit_Name(self, node: ast.Name) -> tuple[str, int]:
        if node.id == "result":
            return "s.result", _PRECEDENCE["atom"]
        return local_name(node.id), _PRECEDENCE["atom"]  # a local (let or comprehension)

    def visit_Comprehension(self, node: ast.Comprehension) -> tuple[str, int]:
        names = ", ".join(local_name(n) for n in node.names)
        clause = f"for {names} in {self._operand(node.iterable, _PRECEDENCE['or'])}"
        for cond in node.conds:
            clause += f" if {self._operand(cond, _PRECEDENCE['or'])}"
        element = self._operand(node.element, _PRECEDENCE["if"])
        if node.key is None:
            return f"[{element} {clause}]", _PRECEDENCE["atom"]
        key = self._operand(node.key, _PRECEDENCE["if"])
        return f"{{{key}: {element} {clause}}}", _PRECEDENCE["atom"]

    def visit_Attr(self, node: ast.Attr) -> tuple[str, int]:
        assert isinstance(node.obj, ast.Name)
        root, attr = node.obj.id, node.attr
        if root == "state":
            code = f"s.state.{state_attribute(attr)}"
        elif root == "args":
            code = f"s.args.get({attr!r})" if attr in self.optional_args else f"s.args[{attr!r}]"
        elif root in ("sample", "reward", "constants"):
            code = f"s.{root}[{attr!r}]"
        elif root == "env":
            code = f"s.env.get({attr!r})"
        else:  # action, step: fixed records with identifier fields
            code = f"s.{root}.{attr}"
        return code, _PRECEDENCE["atom"]

    def visit_Index(self, node: ast.Index) -> tuple[str, int]:
        obj = self._operand(node.obj, _PRECEDENCE["atom"])
        if _literal_index(node.index):
            return f"{obj}[{self.write(node.index)}]", _PRECEDENCE["atom"]
        return f"s.at({obj}, {self.write(node.index)})", _PRECEDENCE["atom"]

    def negated(self, node: ast.Node) -> str:
        """`not (node)`, with `==`/`!=` and `in`/`not in` flipped rather than wrapped."""
        flipped = {"==": "!=", "!=": "==", "in": "not in", "not in": "in"}
        if isinstance(node, ast.BinOp) and node.op in flipped:
            return self.write(
                ast.BinOp(node.start, node.end, flipped[node.op], node.left, node.right)
            )
        if isinstance(node, ast.UnaryOp) and node.op == "not":
            return self.write(node.operand)
        return f"not {self._operand(node, _PRECEDENCE['not'])}"

    def target(self, node: ast.Node) -> str:
        """An assignment target: a computed index is checked (`s.slot`), not wrapped."""
        if isinstance(node, ast.Index) and not _literal_index(node.index):
            obj = self._operand(node.obj, _PRECEDENCE["atom"])
            return f"{obj}[s.slot({obj}, {self.write(node.index)})]"
        return self.write(node)

    def visit_Call(self, node: ast.Call) -> tuple[str, int]:
        args = ", ".join(self.write(a) for a in node.args)
        return f"{self.callee(node.func)}({args})", _PRECEDENCE["atom"]

    def callee(self, name: str) -> str:
        from agentspec.compiler.builtins import BUILTINS

        return f"fn.{name}" if name in BUILTINS else function_access(name)

    def visit_BinOp(self, node: ast.BinOp) -> tuple[str, int]:
        if node in self.repetitions:  # `text * n`: bounded, so no spec can ask for gigabytes
            code = f"fn.repeat({self.write(node.left)}, {self.write(node.right)})"
            return code, _PRECEDENCE["atom"]
        strength = _PRECEDENCE[node.op]
        if node.op in ("==", "!=") and (_is_none(node.left) or _is_none(node.right)):
            # `x == None` is `x is None` for every value (and ruff's E711 asks for it).
            other = node.left if _is_none(node.right) else node.right
            if ast.is_constant(other):  # `3 == None`: decided here (`3 is None` warns)
                return str(_is_none(other) == (node.op == "==")), _PRECEDENCE["atom"]
            op = "is" if node.op == "==" else "is not"
            return f"{self._operand(other, strength + 1)} {op} None", strength
        if node.op in _MIRRORED and ast.is_constant(node.left) and not ast.is_constant(node.right):
            # `0 < x` is written `x > 0` (same value; ruff's SIM300).
            node = dataclasses.replace(
                node, op=_MIRRORED[node.op], left=node.right, right=node.left
            )
        if node.op == "+" and (_is_list(node.left) or _is_list(node.right)):
            # `a + [b]` is written `[*a, b]`, as ruff's RUF005 asks (the same list when
            # `a` is a list; other iterables, which `+` would reject, are unpacked).
            return "[" + ", ".join(self._list_items(node)) + "]", _PRECEDENCE["atom"]
        # Left-associative: the right operand needs parentheses at equal strength,
        # and comparisons never chain (a < b < c means something else in Python).
        left_min = strength + 1 if strength == _PRECEDENCE["=="] else strength
        left = self._operand(node.left, left_min)
        right = self._operand(node.right, strength + 1)
        return f"{left} {node.op} {right}", strength

    def _list_items(self, node: ast.Node) -> list[str]:
        """The items of a list display equal to `node` (`*x` for a list not written out)."""
        if isinstance(node, ast.ListExpr):
            return [self.write(item) for item in node.items]
        if isinstance(node, ast.BinOp) and node.op == "+" and _is_list_concat(node):
            return [*self._list_items(node.left), *self._list_items(node.right)]
        return [f"*{self._operand(node, _PRECEDENCE['+'])}"]

    def visit_BoolOp(self, node: ast.BoolOp) -> tuple[str, int]:
        if ast.is_constant(node.left):
            # `true or x` is `true`, `0 or x` is `x`: Python decides on the constant
            # alone, so the constant's side is the value (ruff's SIM222, SIM223).
            decides = ast.truthy(node.left) == (node.op == "or")
            return self._visit(node.left if decides else node.right)
        strength = _PRECEDENCE[node.op]
        left = self._operand(node.left, strength)
        right = self._operand(node.right, strength + 1)
        if node.op == "or":  # `a and b or c` is written `(a and b) or c`: plain to read
            left = f"({left})" if _is_and(node.left) else left
            right = f"({right})" if _is_and(node.right) else right
        return f"{left} {node.op} {right}", strength

    def visit_UnaryOp(self, node: ast.UnaryOp) -> tuple[str, int]:
        if node.op == "not":
            inner = node.operand
            if isinstance(inner, ast.BinOp) and inner.op in _NEGATED:
                # `not a == b` is `a != b`, `not a in b` is `a not in b` (as Python defines them).
                return self._visit(dataclasses.replace(inner, op=_NEGATED[inner.op]))
            if isinstance(inner, ast.UnaryOp) and inner.op == "not":
                return f"bool({self.write(inner.operand)})", _PRECEDENCE["atom"]
            return f"not {self._operand(inner, _PRECEDENCE['not'])}", _PRECEDENCE["not"]
        inner = node.operand
        if isinstance(inner, ast.UnaryOp) and inner.op != "not":
            # Signs combine: `-(-x)` is `+x` for every number (and `--x` reads as a
            # decrement, ruff's B002).
            op = "+" if (node.op == "-") == (inner.op == "-") else "-"
            return self._visit(dataclasses.replace(inner, op=op))
        operand = self._operand(inner, _PRECEDENCE["unary"])
        if operand.startswith(("-", "+")):  # a negative literal: `-(-1)`
            operand = f"({operand})"
        return f"{node.op}{operand}", _PRECEDENCE["unary"]

    def visit_IfExp(self, node: ast.IfExp) -> tuple[str, int]:
        # Exact simplifications ruff asks for (SIM210, SIM211, SIM212).
        if _is_bool(node.body, True) and _is_bool(node.orelse, False):
            return f"bool({self.write(node.cond)})", _PRECEDENCE["atom"]
        if _is_bool(node.body, False) and _is_bool(node.orelse, True):
            return self._visit(ast.UnaryOp(node.start, node.end, "not", node.cond))
        if isinstance(node.cond, ast.UnaryOp) and node.cond.op == "not":
            node = dataclasses.replace(
                node, body=node.orelse, cond=node.cond.operand, orelse=node.body
            )
        body = self._operand(node.body, _PRECEDENCE["or"])
        cond = self._operand(node.cond, _PRECEDENCE["or"])
        orelse = self._operand(node.orelse, _PRECEDENCE["if"])
        return f"{body} if {cond} else {orelse}", _PRECEDENCE["if"]

    def statement(self, statement: ast.Statement, value_type: Type | None = None) -> list[str]:
        """Python lines of one effect statement (guarded ones become an `if`).

        A container assigned to state is copied (`s.own`), so state never
        aliases the sample, a constant or another variable."""
        if isinstance(statement, ast.Let):
            return [f"{local_name(statement.name)} = {self.write(statement.value)}"]
        if isinstance(statement, ast.CallStatement):
            args = ", ".join(self.write(a) for a in statement.call.args)
            line = f"s.{statement.call.func}({args})"
        else:
            value = self.write(statement.value)
            if needs_copy(statement.value, value_type):
                value = f"s.own({value})"
            line = f"{self.target(statement.target)} {statement.op} {value}"
        if statement.cond is None:
            return [line]
        return [f"if {self.write(statement.cond)}:", f"    {line}"]


# ---------------------------------------------------------------- the model


@dataclass
class StateField:
    name: str  # Python name
    spec_name: str
    annotation: str
    default: Any

    @property
    def mutable(self) -> bool:
        return isinstance(self.default, (list, dict))

    @property
    def factory(self) -> str:
        """`default_factory` for a list or dict default: `list`, `dict`, or a lambda."""
        if not self.default:
            return type(self.default).__name__
        return f"lambda: {py_literal(self.default)}"


@dataclass
class ToolModel:
    spec_name: str
    class_name: str
    description: str
    parameters: dict[str, Any]
    timeout: float
    terminal: bool
    guard: str | None = None
    guard_text: str = ""
    returns: str | None = None
    effects: list[str] = field(default_factory=list)
    observe: str | None = None
    mcp_server: str | None = None
    """For a tool of an MCP server: the module variable holding the server."""
    guards: list[tuple[str, str]] = field(default_factory=list)  # (condition, message template)
    location: str = ""  # spec file:line of the tool, for errors in its expressions


@dataclass
class RewardModel:
    name: str
    on: str
    weight: float
    value: str
    when: str | None
    source: str


@dataclass
class FunctionModel:
    name: str
    impl: str
    config: dict[str, Any]


@dataclass
class ModuleModel:
    """Everything the module template needs, already in Python spelling."""

    spec_name: str
    spec_file: str  # the spec's file name: no directory, so output is the same from anywhere
    spec_sha256: str
    description: str
    version: str
    env_class: str
    flow_class: str
    env_base: str  # SpecToolEnv | SpecAdapterEnv
    layout: str  # packed | per_step
    state_fields: list[StateField]
    initial_exprs: list[tuple[str, str]]  # (Python field name, expression) set at reset
    locations: dict[str, str]  # dotted path of an env expression → spec file:line
    constants: dict[str, Any]
    tools: list[ToolModel]
    rewards: list[RewardModel]
    functions: list[FunctionModel]
    system_prompt: str
    user_prompt: str
    tool_format: str
    final_answer: str
    max_steps: int
    max_response_tokens: int
    max_parse_errors: int | None
    context_policy: str
    context_args: dict[str, Any]
    success: str | None
    done_when: str | None
    anchor: str | None
    data_source: str | None
    data_split: str
    data_eval_split: str | None
    data_params: dict[str, Any]
    data_fields: dict[str, str]
    data_limit: int | None
    derived: list[tuple[str, str]]
    oracle: list[OracleStepModel] | None
    oracle_hook: str | None
    oracle_walkthrough: bool
    adapter: str | None
    adapter_config: dict[str, Any]
    training: dict[str, Any]
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Module variable → how to reach one MCP server (command or url, env, timeout)."""
    keep_reasoning: bool | None = None
    """`episode.reasoning.keep_in_history` (None: as the model's chat template does)."""


def _condition_or_constant(
    checked: CheckedSpec, path: tuple[Any, ...], value: Any, writer: ExpressionWriter
) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return writer.write(checked.expressions[path].node)
    return py_literal(value)


_MIRRORED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATED = {"==": "!=", "!=": "==", "in": "not in", "not in": "in"}


def _is_none(node: ast.Node) -> bool:
    return isinstance(node, ast.Literal) and node.value is None


def _is_bool(node: ast.Node, value: bool) -> bool:
    return isinstance(node, ast.Literal) and node.value is value


def _is_list(node: ast.Node) -> bool:
    return isinstance(node, ast.ListExpr) or _is_list_concat(node)


def _is_list_concat(node: ast.Node) -> bool:
    return (
        isinstance(node, ast.BinOp)
        and node.op == "+"
        and (_is_list(node.left) or _is_list(node.right))
    )


def _is_and(node: ast.Node) -> bool:
    return isinstance(node, ast.BoolOp) and node.op == "and"


def lower(checked: CheckedSpec, *, spec_file: str, spec_sha256: str, version: str) -> ModuleModel:
    """The checked spec as a `ModuleModel` for the emitter."""
    spec = checked.spec
    plain = ExpressionWriter(repetitions=checked.repetitions)

    state_fields, initial_exprs = [], []
    for name, var in spec.state.items():
        t = checked.state_types[name]
        path = ("state", name, "initial")
        if path in checked.expressions:
            code = plain.write(checked.expressions[path].node)
            initial_exprs.append((state_attribute(name), f"s.own({code})"))
        default = (
            var.initial
            if var.initial is not None and path not in checked.expressions
            else empty_value(t)
        )
        state_fields.append(StateField(state_attribute(name), name, python_type(t), default))

    # Generated classes never take a name the module already binds (`SpecTool`
    # for a tool named `spec`, `SpecToolEnv` for a spec named `spec_tool`).
    taken = set(MODULE_NAMES)
    served = list(mcp_tools(spec))
    class_names = unique_names(
        [class_name(n, "Tool") for n in [*spec.tools, *(t.name for t in served)]], taken
    )
    env_class, flow_class = unique_names(
        [class_name(spec.name, "Env"), class_name(spec.name, "Flow")], taken
    )
    tools = []
    for (name, tool), cls in zip(spec.tools.items(), class_names, strict=False):
        model = _tool_model(checked, name, tool, cls)
        writer = ExpressionWriter(_optional_args(tool), checked.repetitions)
        model.guards = guard_models(checked, name, tool, writer)
        model.location = location(checked, ("tools", name), spec_file)
        tools.append(model)
    for served_tool, cls in zip(served, class_names[len(spec.tools) :], strict=True):
        tools.append(_mcp_tool_model(served_tool, cls))

    rewards = []
    for name, reward in spec.rewards.items():
        optional: frozenset[str] = frozenset()
        if reward.on.startswith("tool:"):
            tool_name = reward.on.removeprefix("tool:")
            pins = {t.name: t.pin for t in served}
            optional = (
                _optional_args(spec.tools[tool_name])
                if tool_name in spec.tools
                else optional_arguments(pins[tool_name])
            )
        writer = ExpressionWriter(optional, checked.repetitions)
        base = ("rewards", name)
        value = (
            writer.write(checked.expressions[(*base, "value")].node)
            if isinstance(reward.value, str)
            else py_literal(float(reward.value))
        )
        when = writer.write(checked.expressions[(*base, "when")].node) if reward.when else None
        source = reward.value if isinstance(reward.value, str) else repr(reward.value)
        rewards.append(RewardModel(name, reward.on, reward.weight, value, when, source))

    context = spec.context
    context_args: dict[str, Any] = {
        "max_prompt_tokens": context.max_prompt_tokens,
        "overflow": context.overflow,
    }
    if context.policy == "sliding_window":
        context_args["k"] = context.window
    if context.policy == "state_summary":
        context_args["template"] = context.summary
    if context.policy == "token_budget":
        context_args = {
            "max_prompt_tokens": context.max_prompt_tokens,
            "overflow": context.overflow,
        }

    data = spec.data
    derived = []
    if data is not None:
        for name in data.derived:
            derived.append((name, plain.write(checked.expressions[("data", "derived", name)].node)))

    oracle = spec.oracle
    return ModuleModel(
        mcp_servers={_server_variable(n): _connection(server) for n, server in spec.mcp.items()},
        spec_name=spec.name,
        spec_file=spec_file,
        spec_sha256=spec_sha256,
        description=spec.description,
        version=version,
        env_class=env_class,
        flow_class=flow_class,
        env_base="SpecAdapterEnv" if spec.environment is not None else "SpecToolEnv",
        layout="packed" if context.policy == "full_history" else "per_step",
        state_fields=state_fields,
        initial_exprs=initial_exprs,
        locations=expression_locations(checked, spec_file, bool(initial_exprs)),
        constants=dict(spec.constants),
        tools=tools,
        rewards=rewards,
        functions=[FunctionModel(n, f.impl, f.config) for n, f in spec.functions.items()],
        system_prompt=spec.prompt.system,
        user_prompt=spec.prompt.user,
        tool_format=spec.episode.tool_format,
        final_answer=spec.episode.final_answer,
        keep_reasoning=spec.episode.reasoning.keep_in_history if spec.episode.reasoning else None,
        max_steps=spec.episode.max_steps,
        max_response_tokens=spec.episode.max_response_tokens,
        max_parse_errors=spec.episode.max_parse_errors,
        context_policy=context.policy,
        context_args=context_args,
        success=_condition_or_constant(
            checked, ("episode", "success"), spec.episode.success, plain
        ),
        done_when=_condition_or_constant(
            checked, ("episode", "done_when"), spec.episode.done_when, plain
        ),
        anchor=_condition_or_constant(checked, ("episode", "anchor"), spec.episode.anchor, plain),
        data_source=data.source if data else None,
        data_split=data.split if data else "train",
        data_eval_split=data.eval_split if data else None,
        data_params=dict(data.params) if data else {},
        data_fields=dict(data.fields) if data else {},
        data_limit=data.limit if data else None,
        derived=derived,
        oracle=oracle_models(checked, plain, spec_file) if isinstance(oracle, list) else None,
        oracle_hook=oracle.hook if oracle is not None and not isinstance(oracle, list) else None,
        oracle_walkthrough=bool(
            oracle is not None and not isinstance(oracle, list) and oracle.walkthrough
        ),
        adapter=spec.environment.adapter if spec.environment else None,
        adapter_config=_adapter_config(spec),
        training=spec.training.model_dump(),
    )


def _adapter_config(spec: TaskSpec) -> dict[str, Any]:
    """The adapter's keyword arguments: its `config`, plus `admissible_commands` when asked for."""
    if spec.environment is None:
        return {}
    config = dict(spec.environment.config)
    if spec.environment.admissible_commands:
        config.setdefault("admissible_commands", True)
    return config


def _optional_args(tool: ToolSpec) -> frozenset[str]:
    required = set(tool.required) if tool.required is not None else set(tool.parameters)
    return frozenset(set(tool.parameters) - required)


def _tool_model(checked: CheckedSpec, name: str, tool: ToolSpec, cls: str) -> ToolModel:
    writer = ExpressionWriter(_optional_args(tool), checked.repetitions)
    base = ("tools", name)
    required = list(tool.required) if tool.required is not None else list(tool.parameters)
    parameters: dict[str, Any] = {"type": "object", "properties": dict(tool.parameters)}
    if required:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    model = ToolModel(name, cls, tool.description, parameters, tool.timeout, tool.terminal)
    if isinstance(tool.when, str):
        model.guard = writer.write(checked.expressions[(*base, "when")].node)
        model.guard_text = " ".join(tool.when.split())
    elif tool.when is False:
        model.guard, model.guard_text = "False", "false"
    if tool.returns is not None:
        model.returns = writer.write(checked.expressions[(*base, "returns")].node)
    for i in range(len(tool.effect)):
        path = (*base, "effect", i)
        model.effects += writer.statement(checked.statements[path], checked.value_types.get(path))
    model.observe = tool.observe
    return model


def _server_variable(name: str) -> str:
    # MCP_ + an identifier: never a keyword, never one of the module's own names
    return "MCP_" + name.upper()


def _connection(server: McpServerSpec) -> dict[str, Any]:
    command = server.command
    connection: dict[str, Any] = {
        "command": shlex.split(command) if isinstance(command, str) else command,
        "url": server.url,
        "env": dict(server.env),
        "timeout": server.timeout,
    }
    return {k: v for k, v in connection.items() if v is not None}


def _mcp_tool_model(tool: McpTool, cls: str) -> ToolModel:
    model = ToolModel(
        tool.name, cls, tool.pin.description, dict(tool.pin.parameters), tool.server.timeout, False
    )
    model.mcp_server = _server_variable(tool.server_name)
    return model
