"""The checker: names, scopes, types, templates and tool schemas.

Input: a schema-valid `LoadedSpec`. Output: a `CheckResult` (typed IR) and
the diagnostics. Every expression site of the spec is listed once in
`_sites`, with the scopes it may read; each site is parsed, then typed by a
visitor with one `visit_<Node>` method per AST node. The checker never stops
at the first problem: the user sees all of them in one run.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentspec.compiler import ast, comprehensions, sections
from agentspec.compiler.builtins import BUILTINS, EFFECT_CALLS, Signature
from agentspec.compiler.diagnostics import Diagnostic
from agentspec.compiler.ir import CheckResult, TypedExpr
from agentspec.compiler.mcp import check_mcp, mcp_tools
from agentspec.compiler.parser import ExprSyntaxError, parse_expression, parse_statement
from agentspec.compiler.types import (
    ANY,
    BOOL,
    DICT,
    FLOAT,
    INT,
    NONE,
    STR,
    ListOf,
    Type,
    TypeSyntaxError,
    assignable,
    is_numeric,
    join,
    json_schema_type,
    parse_type,
    python_value_type,
    strip_optional,
)
from agentspec.spec.load import LoadedSpec
from agentspec.spec.source import Span
from agentspec.spec.yaml_loader import Path

# The read-only records every spec has.
ACTION_FIELDS: dict[str, Type] = {
    "text": STR,  # the model's whole response
    "tool": parse_type("str?"),  # name of the first tool called, if any
    "answer": parse_type("str?"),  # the final answer, when the turn called no tool
}
STEP_FIELDS: dict[str, Type] = {"index": INT, "max_steps": INT}

ROOTS = ("state", "args", "sample", "action", "step", "result", "reward", "env", "constants")

# Why a scope is unavailable, for the E407 hint.
_WHERE = {
    "args": "inside a tool's `when`, `returns`, `effect` and `observe`, and in rewards `on: tool:NAME`",
    "result": "after a tool's `returns` (in its `effect` and `observe`), and in rewards `on: tool:NAME`",
    "reward": "in `episode.success`",
    "action": "in rewards, `episode.done_when` and `episode.success`",
    "state": "everywhere except prompts and `data.derived`",
    "step": "everywhere except prompts and `data.derived`",
    "env": "when the spec declares an `environment`",
    "sample": "everywhere",
    "constants": "everywhere",
}

_JSON_TYPES = ["string", "integer", "number", "boolean", "array", "object", "null"]

_ENV_FIELDS: dict[str, Type] = {}  # open record: adapters expose their own fields


@dataclass
class Scope:
    """What one expression site may read (and, in effects, write)."""

    roots: dict[str, dict[str, Type] | Type]  # record fields, or a plain type (result)
    writable: frozenset[str] = frozenset()
    open_roots: frozenset[str] = frozenset({"env"})  # any attribute allowed


@dataclass
class _Site:
    path: Path
    kind: str  # "expression" | "statement" | "condition" | "number" | "template"
    scope: Scope
    tool: str | None = None
    label: str = ""


@dataclass
class _Usage:
    reads: dict[str, Span] = field(default_factory=dict)
    writes: set[str] = field(default_factory=set)


class Checker:
    """Checks one spec. Use `check(loaded)`."""

    def __init__(self, loaded: LoadedSpec):
        self.loaded = loaded
        self.spec = loaded.spec
        self.map = loaded.source_map
        self.diagnostics: list[Diagnostic] = []
        self.usage = _Usage()
        self.functions: dict[str, Signature] = {}
        self.state_types: dict[str, Type] = {}
        self.sample_types: dict[str, Type] = {}
        self.arg_types: dict[str, dict[str, Type]] = {}
        self.result_types: dict[str, Type] = {}
        self.expressions: dict[Path, TypedExpr] = {}
        self.statements: dict[Path, ast.Statement] = {}
        self.value_types: dict[Path, Type] = {}
        self.constant_types: dict[str, Type] = {}
        self.repetitions: set[ast.Node] = set()
        self._site: _Site | None = None
        self._frames: list[dict[str, Type]] = [{}]
        self._lets: dict[str, dict[str, Type]] = {}

    # ------------------------------------------------------------------ driver

    def run(self) -> CheckResult:
        self._declarations()
        self._tool_schemas()
        check_mcp(self)
        self._reward_events()
        for site in self._sites():
            self._check_site(site)
        self._state_usage()
        return CheckResult(
            loaded=self.loaded,
            state_types=self.state_types,
            sample_types=self.sample_types,
            arg_types=self.arg_types,
            result_types=self.result_types,
            expressions=self.expressions,
            statements=self.statements,
            value_types=self.value_types,
            constant_types=self.constant_types,
            repetitions=self.repetitions,
            warnings=[d for d in self.diagnostics if not d.is_error],
        )

    def error(self, code: str, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, span, hint))

    # ------------------------------------------------------------ declarations

    def _type_at(self, path: Path, spelled: str) -> Type:
        try:
            return parse_type(spelled)
        except TypeSyntaxError as exc:
            close = difflib.get_close_matches(
                spelled, ["str", "int", "float", "bool", "dict", "any"], n=1
            )
            self.error(
                "E507",
                str(exc),
                self.map.value_span(path),
                f"did you mean '{close[0]}'?" if close else None,
            )
            return ANY

    def _reserved_names(self) -> None:
        """Declared names starting with `__` belong to Python: `__init__` or
        `__post_init__` as a state variable would break the generated
        dataclass, and no expression may mention such a name (E410)."""
        for section in ("state", "functions", "tools"):
            for name in getattr(self.spec, section):
                if name.startswith("__"):
                    kind = {"state": "state variable", "functions": "function", "tools": "tool"}
                    self.error(
                        "E413",
                        f"{kind[section]} '{name}': names starting with '__' are reserved for Python",
                        self.map.key_span((section, name)),
                        hint=f"rename it, e.g. '{name.strip('_') or 'value'}'",
                    )

    def _declarations(self) -> None:
        spec = self.spec
        self.constant_types = {
            name: python_value_type(value) for name, value in spec.constants.items()
        }
        self._reserved_names()
        for name, var in spec.state.items():
            path = ("state", name)
            declared = self._type_at((*path, "type"), var.type)
            self.state_types[name] = declared
            if sections.initial_is_expression(self, name):
                continue
            if var.initial is not None and not assignable(python_value_type(var.initial), declared):
                self.error(
                    "E508",
                    f"initial value of state.{name} is {python_value_type(var.initial)}, but its type is {declared}",
                    self.map.value_span((*path, "initial")),
                    hint=f"give an initial value of type {declared}, or change `type`",
                )
        if spec.data is not None:
            for name, spelled in spec.data.fields.items():
                self.sample_types[name] = self._type_at(("data", "fields", name), spelled)
            for name in spec.data.derived:
                if name in spec.data.fields:
                    self.error(
                        "E412",
                        f"derived field '{name}' has the name of a declared field",
                        self.map.key_span(("data", "derived", name)),
                        hint="rename one of them",
                    )
        for name, function in spec.functions.items():
            path = ("functions", name)
            if name in BUILTINS or name in EFFECT_CALLS or name in ROOTS:
                kind = "scope" if name in ROOTS else "built-in function"
                self.error(
                    "E412",
                    f"function '{name}' has the name of a {kind}",
                    self.map.key_span(path),
                    hint="choose another name",
                )
            params = (
                tuple(self._type_at((*path, "params", i), p) for i, p in enumerate(function.params))
                if function.params is not None
                else ()
            )
            returns = self._type_at((*path, "returns"), function.returns)
            variadic = ANY if function.params is None else None
            self.functions[name] = Signature(
                params, returns, function.description, variadic=variadic
            )
        for tool_name, tool in spec.tools.items():
            self.arg_types[tool_name] = {
                arg: json_schema_type(schema) for arg, schema in tool.parameters.items()
            }

    def _tool_schemas(self) -> None:
        from jsonschema import Draft202012Validator

        meta = Draft202012Validator(Draft202012Validator.META_SCHEMA)
        for tool_name, tool in self.spec.tools.items():
            base: Path = ("tools", tool_name, "parameters")
            for arg, schema in tool.parameters.items():
                for problem in meta.iter_errors(schema):
                    where = (*base, arg, *problem.absolute_path)
                    message = problem.message
                    hint = "parameters are JSON Schema, e.g. {type: string, description: …}"
                    if where[-1] == "type" and isinstance(problem.instance, str):
                        message = f"{problem.instance!r} is not a JSON Schema type"
                        close = difflib.get_close_matches(problem.instance, _JSON_TYPES, n=1)
                        hint = (
                            f"did you mean '{close[0]}'?"
                            if close
                            else "types: " + ", ".join(_JSON_TYPES)
                        )
                    self.error(
                        "E701",
                        f"parameter '{arg}' of tool '{tool_name}': {message}",
                        self.map.value_span(where),
                        hint=hint,
                    )
            for i, required in enumerate(tool.required or []):
                if required not in tool.parameters:
                    self._unknown(
                        "E403",
                        f"required argument '{required}' is not a parameter of tool '{tool_name}'",
                        self.map.value_span(("tools", tool_name, "required", i)),
                        required,
                        tool.parameters,
                    )

    def _reward_events(self) -> None:
        for name, reward in self.spec.rewards.items():
            if ":" in reward.on:
                tool = reward.on.partition(":")[2]
                known = [*self.spec.tools, *(t.name for t in mcp_tools(self.spec))]
                if tool not in known:
                    self._unknown(
                        "E409",
                        f"reward '{name}' is on unknown tool '{tool}'",
                        self.map.value_span(("rewards", name, "on")),
                        tool,
                        known,
                    )

    # ------------------------------------------------------------------- sites

    def _scope(self, *roots: str, tool: str | None = None, writable: Iterable[str] = ()) -> Scope:
        available: dict[str, dict[str, Type] | Type] = {"constants": self.constant_types}
        for root in roots:
            if root == "state":
                available[root] = self.state_types
            elif root == "sample":
                available[root] = self.sample_types
            elif root == "action":
                available[root] = ACTION_FIELDS
            elif root == "step":
                available[root] = STEP_FIELDS
            elif root == "reward":
                available[root] = dict.fromkeys(self.spec.rewards, FLOAT)
            elif root == "env" and self.spec.environment is not None:
                available[root] = _ENV_FIELDS
            elif root == "args" and tool is not None:
                available[root] = self.arg_types.get(tool, {})
            elif root == "result" and tool is not None and tool in self.result_types:
                available[root] = self.result_types[tool]
        return Scope(available, frozenset(writable))

    def _sites(self) -> Iterator[_Site]:
        """Every expression, statement and template of the spec, with its scope.

        Ordered so that a tool's `returns` is typed before its effects read
        `result`.
        """
        spec = self.spec
        prompt_scope = Scope(
            {"sample": self.sample_types, "tools": ANY, "constants": self.constant_types}
        )
        yield from sections.initial_sites(self)
        if spec.data is not None:
            for name in spec.data.derived:
                yield _Site(("data", "derived", name), "expression", self._scope("sample"))
        yield _Site(("prompt", "system"), "template", prompt_scope)
        yield _Site(("prompt", "user"), "template", prompt_scope)
        for tool_name, tool in spec.tools.items():
            base: Path = ("tools", tool_name)
            yield from sections.guard_sites(self, tool_name, tool)
            if tool.returns is not None:
                yield _Site(
                    (*base, "returns"),
                    "expression",
                    self._scope("state", "args", "sample", "step", "env", tool=tool_name),
                    tool_name,
                )
            after = ("state", "args", "sample", "step", "env", "result")
            for i in range(len(tool.effect)):
                yield _Site(
                    (*base, "effect", i),
                    "statement",
                    self._scope(*after, tool=tool_name, writable=["state"]),
                    tool_name,
                )
            if tool.observe is not None:
                yield _Site(
                    (*base, "observe"), "template", self._scope(*after, tool=tool_name), tool_name
                )
        episode_roots = ("state", "sample", "step", "env")
        if isinstance(spec.episode.done_when, str):
            yield _Site(
                ("episode", "done_when"), "condition", self._scope(*episode_roots, "action")
            )
        if spec.episode.anchor is not None:
            yield _Site(("episode", "anchor"), "expression", self._scope(*episode_roots))
        for name, reward in spec.rewards.items():
            on_tool = reward.on.removeprefix("tool:") if reward.on.startswith("tool:") else None
            roots = (*episode_roots, "action") + (("args", "result") if on_tool else ())
            scope = self._scope(*roots, tool=on_tool)
            if isinstance(reward.value, str):
                yield _Site(
                    ("rewards", name, "value"), "number", scope, on_tool, label=f"reward '{name}'"
                )
            if reward.when is not None:
                yield _Site(("rewards", name, "when"), "condition", scope, on_tool)
        if isinstance(spec.episode.success, str):
            yield _Site(
                ("episode", "success"), "condition", self._scope(*episode_roots, "action", "reward")
            )
        if spec.context.summary is not None:
            summary = self._scope("state", "sample", "step", "env")
            summary.roots.update(last_observation=STR, task=STR, steps=ANY)
            yield _Site(("context", "summary"), "template", summary)
        yield from sections.oracle_sites(self)

    def _check_site(self, site: _Site) -> None:
        self._site = site
        # A tool's `let` names live in one frame its later effects share.
        in_effects = site.kind == "statement" and site.tool is not None
        self._frames = [self._lets.setdefault(site.tool or "", {}) if in_effects else {}]
        text = self._text(site.path)
        if site.kind == "template":
            self._check_template(site, text)
            return
        try:
            if site.kind == "statement":
                statement = parse_statement(text)
            else:
                node = parse_expression(text)
        except ExprSyntaxError as exc:
            self.error(exc.code, exc.message, self.span(exc.start, exc.end), exc.hint)
            if site.path[-1] == "returns" and site.tool is not None:
                # The tool does have a result; its type is unknown, not missing.
                self.result_types[site.tool] = ANY
            return
        if site.kind == "statement":
            self.statements[site.path] = statement
            if isinstance(statement, ast.Let):
                comprehensions.check_let(self, statement)
            else:
                self._statement(statement)
            return
        typ = self.infer(node)
        self.expressions[site.path] = TypedExpr(node, typ)
        if site.kind == "condition":
            self._expect_condition(node, typ)
        elif site.kind == "list":
            sections.expect_list(self, node, typ)
        elif site.kind == "number" and not is_numeric(typ):
            self.error(
                "E506",
                f"{site.label} must be a number, but this is {typ}",
                self.node_span(node),
                hint="e.g. `1.0 if … else 0.0`, or convert with number(…)",
            )
        if site.path[0] == "state":
            sections.check_initial_type(self, site.path, node, typ)
        if site.path[:2] == ("data", "derived"):
            self.sample_types[str(site.path[2])] = typ
        if site.path[-1] == "returns" and site.tool is not None:
            self.result_types[site.tool] = typ

    def _text(self, path: Path) -> str:
        locator = self.map.locator(path)
        if locator is not None:
            return locator.value
        value: Any = self.spec.model_dump()
        for part in path:
            value = value[part]
        return str(value)

    def span(self, start: int, end: int) -> Span:
        assert self._site is not None
        locator = self.map.locator(self._site.path)
        if locator is None:
            return self.map.value_span(self._site.path)
        return locator.span(start, end)

    def node_span(self, node: ast.Node) -> Span:
        return self.span(node.start, node.end)

    def _expect_condition(self, node: ast.Node, typ: Type) -> None:
        self._decided_condition(node)
        if strip_optional(typ) not in (BOOL, ANY):
            self.error(
                "E505",
                f"a condition must be true or false, but this is {typ}",
                self.node_span(node),
                hint='compare it, e.g. `len(x) > 0` or `x != ""`',
            )

    def _unknown(
        self,
        code: str,
        message: str,
        span: Span,
        name: str,
        candidates: Iterable[str],
        prefix: str = "",
    ) -> None:
        close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
        hint = f"did you mean '{prefix}{close[0]}'?" if close else None
        if hint is None:
            options = sorted(candidates)
            if options and len(options) <= 12:
                hint = "known: " + ", ".join(prefix + o for o in options)
        self.error(code, message, span, hint)

    # --------------------------------------------------------------- templates

    def _check_template(self, site: _Site, text: str) -> None:
        from jinja2 import TemplateSyntaxError, nodes

        from agentspec.compiler import templates

        try:
            parsed = templates.parse(text)
            undeclared = parsed.undeclared()
        except TemplateSyntaxError as exc:
            offset = _line_offset(text, exc.lineno or 1)
            named = re.search(r"named '(\w+)'", exc.message or "")
            if named and named.group(1) in text:
                offset = _word_offset(text, named.group(1))
            self.error(
                "E601",
                f"template syntax error: {exc.message}",
                self.span(offset, offset + 1),
                hint="Jinja2 syntax: {{ sample.x }}, {% if … %}…{% endif %}",
            )
            return
        except RecursionError:
            self.error(
                "E603",
                "the template is nested too deeply to check",
                self.span(0, 1),
                hint="split the expression into {% set %} steps",
            )
            return
        for finding in parsed.problems():
            span = self.span(finding.start, finding.end)
            self.error(finding.code, finding.message, span, finding.hint)
        allowed = dict(site.scope.roots)
        for name in sorted(undeclared):
            if name in allowed:
                continue
            offset = parsed.name_offset(name)
            if name in ROOTS:
                self._unavailable(name, self.span(offset, offset + len(name)))
            else:
                fields = [
                    f"{root}.{f}"
                    for root, rec in allowed.items()
                    if isinstance(rec, dict)
                    for f in rec
                ]
                exact = [f for f in fields if f.split(".", 1)[1] == name]
                span = self.span(offset, offset + len(name))
                if exact:
                    self.error(
                        "E602",
                        f"undefined template variable '{name}'",
                        span,
                        f"did you mean '{exact[0]}'?",
                    )
                else:
                    self._unknown(
                        "E602",
                        f"undefined template variable '{name}'",
                        span,
                        name,
                        [*allowed, *fields],
                    )
        for getattr_node in parsed.find(nodes.Getattr):
            if getattr_node.attr.startswith("_"):
                continue  # reported among the problems
            target = getattr_node.node
            if isinstance(target, nodes.Name) and target.name in allowed:
                record = allowed[target.name]
                if isinstance(record, dict) and target.name not in site.scope.open_roots:
                    if getattr_node.attr not in record:
                        offset = parsed.attr_offset(getattr_node)
                        self._missing_field(
                            target.name,
                            getattr_node.attr,
                            self.span(offset, offset + len(getattr_node.attr)),
                            record,
                        )
                    elif target.name == "state":
                        self.usage.reads.setdefault(getattr_node.attr, self.span(0, 1))

    # ------------------------------------------------------------- statements

    def _statement(self, statement: ast.Assign | ast.CallStatement) -> None:
        if statement.cond is not None:
            self._expect_condition(statement.cond, self.infer(statement.cond))
        if isinstance(statement, ast.CallStatement):
            call = statement.call
            signature = EFFECT_CALLS.get(call.func)
            if signature is None:
                what = (
                    "built-in function"
                    if call.func in BUILTINS or call.func in self.functions
                    else "name"
                )
                self.error(
                    "E306",
                    f"calling {what} '{call.func}' as a statement has no effect",
                    self.span(call.start, call.func_end),
                    hint="an effect is `state.x = …`, `done()` or `fail(message)`",
                )
                return
            self._check_call_args(call, signature, [self.infer(a) for a in call.args])
            return
        target = statement.target
        root, var = self._target(target)
        if root is None:
            return
        value_type = self.infer(statement.value)
        assert self._site is not None
        # The type code generation sees (a container is copied into state); a
        # scalar target (`state.n -= price`) needs no copy, whatever `price` is.
        self.value_types[self._site.path] = value_type
        if root != "state":
            self.error(
                "E408",
                f"'{root}' is read-only: effects can only assign to state",
                self.node_span(target),
                hint=f"declare a state variable and assign to `state.{var}`" if var else None,
            )
            return
        if var not in self.state_types:
            self._missing_field(
                "state", var, self.span(target.end - len(var), target.end), self.state_types
            )
            return
        self.usage.writes.add(var)
        var_type = self.state_types[var]
        for index in _indices(target):  # `state.db[k][j] = …`: one item type per level
            self.infer(index)
            base = strip_optional(var_type)
            var_type = base.item if isinstance(base, ListOf) else ANY
        if strip_optional(var_type) in (STR, INT, FLOAT, BOOL):
            self.value_types[self._site.path] = var_type
        if statement.op != "=":
            value_type = self._arith(statement.op[0], var_type, value_type, statement)
        if not assignable(value_type, var_type):
            self.error(
                "E504",
                f"cannot assign {value_type} to state.{var} of type {var_type}",
                self.node_span(statement.value),
                hint=_conversion_hint(value_type, var_type),
            )

    def _target(self, target: ast.Node) -> tuple[str | None, str]:
        """(root, variable) of an assignment target: `root.var`, `root.var[i]`, `root.var[i][j]`…"""
        node = target
        while isinstance(node, ast.Index):
            node = node.obj
        if isinstance(node, ast.Attr) and isinstance(node.obj, ast.Name) and node.obj.id in ROOTS:
            return node.obj.id, node.attr
        self.error(
            "E306",
            "only a state variable can be assigned",
            self.node_span(target),
            hint="write `state.NAME = value`",
        )
        return None, ""

    # ------------------------------------------------------------ expressions

    def infer(self, node: ast.Node) -> Type:
        method = getattr(self, f"visit_{type(node).__name__}")
        result: Type = method(node)
        return result

    def visit_Literal(self, node: ast.Literal) -> Type:
        return python_value_type(node.value)

    def visit_ListExpr(self, node: ast.ListExpr) -> Type:
        item: Type | None = None
        for element in node.items:
            t = self.infer(element)
            item = t if item is None else join(item, t)
        return ListOf(item or ANY)

    def visit_DictExpr(self, node: ast.DictExpr) -> Type:
        seen: set[tuple[type, Any]] = set()
        for key, value in node.pairs:
            self.infer(key)
            self.infer(value)
            if isinstance(key, ast.Literal):
                literal = (type(key.value), key.value)
                if literal in seen:
                    self._redundant(key, f"key {key.value!r} is repeated: the last value wins")
                seen.add(literal)
        return DICT

    def visit_Comprehension(self, node: ast.Comprehension) -> Type:
        return comprehensions.check_comprehension(self, node)

    def visit_Name(self, node: ast.Name) -> Type:
        scope = self._scope_now()
        span = self.node_span(node)
        name = node.id
        local = comprehensions.local_type(self, name)
        if local is not None:
            return local
        if name.startswith("__"):
            self.error("E410", f"names starting with '__' are not allowed: '{name}'", span)
        elif name in scope.roots:
            root = scope.roots[name]
            if isinstance(root, Type):  # `result` is a value, not a record
                return root
            self.error(
                "E401",
                f"'{name}' is a scope, not a value",
                span,
                hint=f"read one of its fields, e.g. `{name}.{next(iter(root), 'NAME')}`",
            )
        elif name in ROOTS:
            self._unavailable(name, span)
        elif name in BUILTINS or name in self.functions or name in EFFECT_CALLS:
            self.error("E401", f"function '{name}' must be called", span, hint=f"write `{name}(…)`")
        else:
            candidates = [
                f"{root}.{f}"
                for root, rec in scope.roots.items()
                if isinstance(rec, dict)
                for f in rec
            ]
            exact = [c for c in candidates if c.split(".", 1)[1] == name]
            if exact:
                self.error(
                    "E401", f"unknown name '{name}'", span, hint=f"did you mean '{exact[0]}'?"
                )
            else:
                self._unknown(
                    "E401", f"unknown name '{name}'", span, name, [*scope.roots, *candidates]
                )
        return ANY

    def visit_Attr(self, node: ast.Attr) -> Type:
        span = self.span(node.attr_start, node.end)
        if node.attr.startswith("__"):
            self.error("E410", f"names starting with '__' are not allowed: '{node.attr}'", span)
            return ANY
        is_local = (
            isinstance(node.obj, ast.Name)
            and comprehensions.local_type(self, node.obj.id) is not None
        )
        if isinstance(node.obj, ast.Name) and node.obj.id not in ROOTS and not is_local:
            name = node.obj.id
            if name.startswith("__"):
                self.error(
                    "E410",
                    f"names starting with '__' are not allowed: '{name}'",
                    self.node_span(node.obj),
                )
            else:
                self._unknown(
                    "E401",
                    f"unknown name '{name}'",
                    self.node_span(node.obj),
                    name,
                    list(self._scope_now().roots),
                )
            return ANY
        if not isinstance(node.obj, ast.Name) or is_local:
            self.infer(node.obj)
            self.error(
                "E411",
                f"attribute access '.{node.attr}' is only allowed on scopes (state, args, sample, …)",
                span,
                hint=f'index dicts instead: ["{node.attr}"]',
            )
            return ANY
        root = node.obj.id
        scope = self._scope_now()
        if root not in scope.roots:
            self._unavailable(root, self.node_span(node.obj))
            return ANY
        record = scope.roots[root]
        if root in scope.open_roots:
            return ANY
        if isinstance(record, Type):
            self.error(
                "E411",
                f"'{root}' is a value of type {record}; it has no attribute '{node.attr}'",
                span,
                hint=f'index it instead: {root}["{node.attr}"]'
                if strip_optional(record) in (DICT, ANY)
                else None,
            )
            return ANY
        if node.attr not in record:
            self._missing_field(root, node.attr, span, record)
            return ANY
        if root == "state":
            self.usage.reads.setdefault(node.attr, span)
        return record[node.attr]

    def visit_Index(self, node: ast.Index) -> Type:
        container = strip_optional(self.infer(node.obj))
        index = self.infer(node.index)
        if container in (ANY, DICT):
            return ANY
        if isinstance(container, ListOf) or container == STR:
            if not assignable(index, INT):
                self.error(
                    "E502",
                    f"a {container} index must be an int, not {index}",
                    self.node_span(node.index),
                )
            return container.item if isinstance(container, ListOf) else STR
        self.error(
            "E509", f"a value of type {container} cannot be indexed", self.node_span(node.obj)
        )
        return ANY

    def visit_Call(self, node: ast.Call) -> Type:
        span = self.span(node.start, node.func_end)
        arg_types = [self.infer(arg) for arg in node.args]
        if node.func.startswith("__"):
            self.error("E410", f"names starting with '__' are not allowed: '{node.func}'", span)
            return ANY
        signature = self.functions.get(node.func) or BUILTINS.get(node.func)
        if signature is None:
            if node.func in EFFECT_CALLS:
                self.error(
                    "E405",
                    f"{node.func}() is an effect statement, not a value",
                    span,
                    hint=f"use it on its own line in a tool's `effect`, e.g. `{node.func}() if …`",
                )
            else:
                self._unknown(
                    "E405",
                    f"unknown function '{node.func}'",
                    span,
                    node.func,
                    [*BUILTINS, *self.functions],
                )
                if node.func not in BUILTINS and not self.functions:
                    self.diagnostics[-1] = Diagnostic(
                        "E405",
                        f"unknown function '{node.func}'",
                        span,
                        self.diagnostics[-1].hint
                        or "declare it under `functions:` with `impl: module:attr`",
                    )
            return ANY
        self._check_call_args(node, signature, arg_types)
        return signature.return_type(arg_types)

    def _check_call_args(self, node: ast.Call, signature: Signature, arg_types: list[Type]) -> None:
        count = len(arg_types)
        high = signature.max_args
        if count < signature.min_args or (high is not None and count > high):
            if high is None:
                expected = f"at least {signature.min_args}"
            elif high == signature.min_args:
                expected = str(high)
            else:
                expected = f"{signature.min_args} to {high}"
            plural = "" if expected == "1" else "s"
            self.error(
                "E503",
                f"{node.func}() takes {expected} argument{plural}, but {count} {'was' if count == 1 else 'were'} given",
                self.node_span(node),
                hint=f"signature: {signature.spelled(node.func)}",
            )
            return
        for i, (arg, actual) in enumerate(zip(node.args, arg_types, strict=True)):
            wanted = signature.params[i] if i < len(signature.params) else signature.variadic
            if wanted is not None and not assignable(actual, wanted):
                self.error(
                    "E502",
                    f"argument {i + 1} of {node.func}() must be {wanted}, not {actual}",
                    self.node_span(arg),
                    hint=_conversion_hint(actual, wanted)
                    or f"signature: {signature.spelled(node.func)}",
                )

    def visit_BinOp(self, node: ast.BinOp) -> Type:
        left, right = self.infer(node.left), self.infer(node.right)
        return self._arith(node.op, left, right, node)

    def _arith(self, op: str, left: Type, right: Type, node: ast.Node) -> Type:
        a, b = strip_optional(left), strip_optional(right)
        if op == "*" and (ANY in (a, b) or a == STR or isinstance(a, ListOf)):
            self.repetitions.add(node)  # may repeat a string or list: size-checked at run
            self._check_constant_repetition(node)
        if op in ("==", "!="):
            return BOOL
        if op in ("in", "not in"):
            if b in (ANY, DICT) or isinstance(b, ListOf) or (b == STR and a in (STR, ANY)):
                return BOOL
        elif op in ("<", "<=", ">", ">="):
            if ANY in (a, b) or (is_numeric(a) and is_numeric(b)) or a == b == STR:
                return BOOL
        elif op == "%" and a == STR:
            pass  # printf-style formatting is not part of the language (E501 below)
        elif ANY in (a, b):
            return ANY
        elif op == "+" and a == b == STR:
            return STR
        elif op == "+" and isinstance(a, ListOf) and isinstance(b, ListOf):
            return ListOf(join(a.item, b.item))
        elif op == "*" and (a == STR or isinstance(a, ListOf)) and b in (INT, BOOL):
            return a
        elif is_numeric(a) and is_numeric(b):
            if op == "/":
                return FLOAT
            return INT if {a, b} <= {INT, BOOL} else FLOAT
        self.error(
            "E501",
            f"operator '{op}' is not supported between {left} and {right}",
            self.node_span(node),
            hint=_operator_hint(op, a, b),
        )
        return ANY

    def _check_constant_repetition(self, node: ast.Node) -> None:
        from agentspec.stdlib.functions import ValueTooLarge, repeat

        if not isinstance(node, ast.BinOp):
            return
        left, right = node.left, node.right
        if isinstance(left, ast.Literal) and isinstance(right, ast.Literal):
            try:
                repeat(left.value, right.value)
            except ValueTooLarge as exc:
                self.error("E510", str(exc), self.node_span(node))
            except TypeError:
                pass

    def visit_BoolOp(self, node: ast.BoolOp) -> Type:
        left, right = self.infer(node.left), self.infer(node.right)
        if _negates(node.left, node.right) or _negates(node.right, node.left):
            value = "false" if node.op == "and" else "true"
            self._redundant(node, f"`x {node.op} not x` is always {value}")
        return BOOL if left == right == BOOL else join(left, right)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Type:
        operand = self.infer(node.operand)
        if node.op == "not":
            self._decided_condition(node.operand)
            return BOOL
        if not is_numeric(operand):
            self.error(
                "E501", f"unary '{node.op}' needs a number, not {operand}", self.node_span(node)
            )
            return ANY
        return INT if strip_optional(operand) in (INT, BOOL) else strip_optional(operand)

    def visit_IfExp(self, node: ast.IfExp) -> Type:
        self.infer(node.cond)
        self._decided_condition(node.cond)
        if _same(node.body, node.orelse):
            self._redundant(node, "both branches of this `if … else` are the same")
        return join(self.infer(node.body), self.infer(node.orelse))

    def _decided_condition(self, node: ast.Node) -> None:
        """As a condition, `x or true` is always true and `x and false` always false."""
        if isinstance(node, ast.UnaryOp) and node.op == "not":
            self._decided_condition(node.operand)
        elif isinstance(node, ast.BoolOp):
            self._decided_condition(node.left)
            self._decided_condition(node.right)
            if ast.is_constant(node.right) and ast.truthy(node.right) == (node.op == "or"):
                value = "true" if node.op == "or" else "false"
                self._redundant(node, f"as a condition, this is always {value}")

    def _redundant(self, node: ast.Node, message: str) -> None:
        diagnostic = Diagnostic(
            "W803", message, self.node_span(node), "probably a mistake: check it"
        )
        if diagnostic not in self.diagnostics:  # a condition can be reached twice
            self.diagnostics.append(diagnostic)

    # ---------------------------------------------------------------- helpers

    def _scope_now(self) -> Scope:
        assert self._site is not None
        return self._site.scope

    def _unavailable(self, root: str, span: Span) -> None:
        site = self._site
        where = _dotted(site.path) if site else "here"
        hint = f"'{root}' is available {_WHERE[root]}"
        if root == "result" and site is not None and site.tool is not None:
            hint = f"declare `returns:` on tool '{site.tool}' to give it a result"
        self.error("E407", f"'{root}' is not available in {where}", span, hint)

    def _missing_field(self, root: str, name: str, span: Span, record: dict[str, Type]) -> None:
        code = {
            "state": "E402",
            "args": "E403",
            "sample": "E404",
            "reward": "E406",
            "constants": "E414",
        }.get(root, "E411")
        noun = {
            "state": "state variable",
            "args": "tool argument",
            "sample": "sample field",
            "reward": "reward component",
            "constants": "constant",
        }.get(root, f"field of '{root}'")
        self._unknown(code, f"unknown {noun} '{name}'", span, name, record)
        if code == "E404" and self.spec.data is None:
            self.diagnostics[-1] = Diagnostic(
                code, f"unknown {noun} '{name}'", span, "declare sample fields under `data.fields`"
            )

    def _state_usage(self) -> None:
        for name in self.state_types:
            path = ("state", name)
            if name in self.usage.reads and name not in self.usage.writes:
                self.error(
                    "W801",
                    f"state.{name} is read but no tool ever writes it: it keeps its initial value",
                    self.usage.reads[name],
                    hint=f"assign it in a tool's effect (`state.{name} = …`) or make it a constant",
                )
            elif (
                name not in self.usage.reads
                and name not in self.usage.writes
                and not name.startswith("__")  # already an error (E413)
            ):
                self.error(
                    "W802",
                    f"state.{name} is never used",
                    self.map.key_span(path),
                    hint="remove it, or read it in a guard, reward or observation",
                )


def _indices(target: ast.Node) -> list[ast.Node]:
    """The indices of an assignment target, outermost variable first."""
    indices = []
    while isinstance(target, ast.Index):
        indices.append(target.index)
        target = target.obj
    return indices[::-1]


def _same(a: ast.Node, b: ast.Node) -> bool:
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
    if isinstance(x, ast.Node) and isinstance(y, ast.Node):
        return _same(x, y)
    return type(x) is type(y) and x == y


def _negates(a: ast.Node, b: ast.Node) -> bool:
    return isinstance(b, ast.UnaryOp) and b.op == "not" and _same(a, b.operand)


def _dotted(path: Path) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _conversion_hint(actual: Type, wanted: Type) -> str | None:
    actual, wanted = strip_optional(actual), strip_optional(wanted)
    if wanted == STR:
        return "convert with str(…)"
    if wanted in (INT, FLOAT) and actual == STR:
        return "convert with number(…) or int(…)"
    if isinstance(wanted, ListOf) and not isinstance(actual, ListOf):
        return "wrap it in a list: [value]"
    return None


def _operator_hint(op: str, a: Type, b: Type) -> str | None:
    if op == "+" and STR in (a, b):
        return "convert the other side with str(…), or the text with number(…)"
    if op in ("in", "not in"):
        return "`in` needs a str, list or dict on its right"
    if NONE in (a, b):
        return "a value may be none here; compare it with `!= None` first"
    return None


def _line_offset(text: str, line: int) -> int:
    offset = 0
    for _ in range(line - 1):
        nxt = text.find("\n", offset)
        if nxt == -1:
            break
        offset = nxt + 1
    return offset


def _word_offset(text: str, word: str, after: str = "") -> int:
    match = re.search(re.escape(after) + r"\b" + re.escape(word) + r"\b", text)
    if match is None:
        return 0
    return match.start() + len(after)


def check(loaded: LoadedSpec) -> tuple[CheckResult, list[Diagnostic]]:
    """Check a loaded spec; returns the IR and every diagnostic found."""
    checker = Checker(loaded)
    checked = checker.run()
    return checked, checker.diagnostics
