"""The checker: names, scopes, types, templates and tool schemas.

Input: a schema-valid `LoadedSpec`. Output: a `CheckResult` (typed IR) and
the diagnostics. Every expression site of the spec is listed once in
`sections.all_sites`, with the scopes it may read; each site is parsed, then
typed by a visitor with one `visit_<Node>` method per AST node. The checker
never stops at the first problem: the user sees all of them in one run.

The jobs around the visitor live in their own modules, as functions of the
running checker: declarations and tool schemas (`check_declarations`),
templates (`check_templates`), effect statements (`check_statements`),
operators (`check_operators`), name diagnostics (`check_names`), sites and
the newer sections (`sections`), comprehensions and `let` (`comprehensions`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentspec.compiler import (
    ast,
    check_declarations,
    check_names,
    check_operators,
    check_statements,
    check_templates,
    comprehensions,
    sections,
)
from agentspec.compiler.builtins import BUILTINS, EFFECT_CALLS, Signature
from agentspec.compiler.check_state import CheckState
from agentspec.compiler.ir import CheckResult, TypedExpr
from agentspec.compiler.mcp import check_mcp
from agentspec.compiler.parser import (
    MAX_TOTAL_CHARS,
    ExprSyntaxError,
    parse_expression,
    parse_statement,
)
from agentspec.compiler.scopes import (
    ACTION_FIELDS,
    ENV_FIELDS,
    ROOTS,
    STEP_FIELDS,
    Scope,
    Site,
)
from agentspec.compiler.types import (
    ANY,
    BOOL,
    DICT,
    FLOAT,
    INT,
    STR,
    ListOf,
    Type,
    assignable,
    is_numeric,
    join,
    python_value_type,
    strip_optional,
)
from agentspec.compiler.user_check import USER_FIELDS
from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import Span
from agentspec.spec.load import LoadedSpec
from agentspec.spec.yaml_loader import Path

__all__ = ["ROOTS", "Checker", "Scope", "Site", "check"]


YAML_11_BOOLEANS = frozenset({"yes", "no", "on", "off", "y", "n"})
"""Words YAML 1.1 read as booleans; agentspec reads YAML 1.2, where they are names."""


class Checker(CheckState):
    """Checks one spec. Use `check(loaded)`."""

    @property
    def has_environment(self) -> bool:
        """`env.NAME` facts exist: an `environment` adapter's, or an OpenEnv server's."""
        return self.spec.environment is not None or any(s.openenv for s in self.spec.mcp.values())

    # ------------------------------------------------------------------ driver

    def run(self) -> CheckResult:
        check_declarations.declare(self)
        check_declarations.tool_schemas(self)
        check_mcp(self)
        check_declarations.reward_events(self)
        check_declarations.something_to_learn(self)
        check_declarations.data_splits(self)
        check_declarations.public_fields(self)
        check_declarations.warm_start_needs_an_oracle(self)
        check_declarations.algorithm_needs(self)
        check_declarations.unread_settings(self)
        check_declarations.answer_without_tools(self)
        check_declarations.unused_context_settings(self)
        for site in sections.all_sites(self):
            self._check_site(site)
        check_declarations.state_usage(self)
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

    # ------------------------------------------------------------------- sites

    def make_scope(
        self, *roots: str, tool: str | None = None, writable: Iterable[str] = ()
    ) -> Scope:
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
            elif root == "env" and self.has_environment:
                available[root] = ENV_FIELDS
            elif root == "user" and self.spec.user is not None:
                available[root] = USER_FIELDS  # compiler/user_check.py
            elif root == "args" and tool is not None:
                available[root] = self.arg_types.get(tool, {})
            elif root == "result" and tool is not None and tool in self.result_types:
                available[root] = self.result_types[tool]
        return Scope(available, frozenset(writable))

    def _check_site(self, site: Site) -> None:
        self.site = site
        # A tool's `let` names live in one frame its later effects share; a
        # guard's, in one its later steps share.
        in_effects = site.kind == "statement" and site.tool is not None
        frame = site.frame if site.frame is not None else (site.tool or "" if in_effects else None)
        self.frames = [self.lets.setdefault(frame, {}) if frame is not None else {}]
        text = self._text(site.path)
        if site.kind == "template":
            check_templates.check_template(self, site, text)
            return
        if self._over_budget(site, text):
            return
        try:
            if site.kind in ("statement", "let"):
                statement = parse_statement(text)
            else:
                node = parse_expression(text)
        except ExprSyntaxError as exc:
            self.error(exc.code, exc.message, self.span(exc.start, exc.end), exc.hint)
            if site.path[-1] == "returns" and site.tool is not None:
                # The tool does have a result; its type is unknown, not missing.
                self.result_types[site.tool] = ANY
            return
        if site.kind in ("statement", "let"):
            self.statements[site.path] = statement
            if isinstance(statement, ast.Let):
                comprehensions.check_let(self, statement)
            else:
                check_statements.check_statement(self, statement)
            return
        typ = self.infer(node)
        self.expressions[site.path] = TypedExpr(node, typ)
        if site.kind == "condition":
            self.expect_condition(node, typ)
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

    def _over_budget(self, site: Site, text: str) -> bool:
        """Whether `text` takes the spec's expressions past `MAX_TOTAL_CHARS` (E310, said
        once): it is not parsed, and a tool's result it gives is of unknown type."""
        self.parsed_chars += len(text)
        if self.parsed_chars <= MAX_TOTAL_CHARS:
            return False
        if self.parsed_chars - len(text) <= MAX_TOTAL_CHARS:  # said once, at the first past it
            self.error(
                "E310",
                f"the spec's expressions hold more than {MAX_TOTAL_CHARS:,} characters in all;"
                " this one and those after it are not checked",
                self.map.value_span(site.path),
                hint="move long computations into a function (`impl:`) or `data.derived`",
            )
        if site.path[-1] == "returns" and site.tool is not None:
            self.result_types[site.tool] = ANY
        return True

    def _text(self, path: Path) -> str:
        locator = self.map.locator(path)
        if locator is not None:
            return locator.value
        value: Any = self.spec.model_dump()
        for part in path:
            value = value[part]
        return str(value)

    def expect_condition(self, node: ast.Node, typ: Type) -> None:
        self._decided_condition(node)
        if strip_optional(typ) not in (BOOL, ANY):
            self.error(
                "E505",
                f"a condition must be true or false, but this is {typ}",
                self.node_span(node),
                hint='compare it, e.g. `len(x) > 0` or `x != ""`',
            )

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
        if check_names.reserved(self, name, span):
            pass
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
            check_names.unavailable(self, name, span)
        elif name in BUILTINS or name in self.functions or name in EFFECT_CALLS:
            self.error("E401", f"function '{name}' must be called", span, hint=f"write `{name}(…)`")
        else:
            fields = [
                f"{root}.{f}"
                for root, rec in scope.roots.items()
                if isinstance(rec, dict)
                for f in rec
            ]
            hint = check_names.close_match_hint(name, [*scope.roots, *fields], fields)
            constant = {"none": "None", "nil": "None", "TRUE": "true", "FALSE": "false"}
            if name in constant:
                hint = f"did you mean `{constant[name]}`?"
            elif name.lower() in YAML_11_BOOLEANS:  # `initial: no`, YAML 1.1's spelling
                hint = (
                    f"a boolean is `true` or `false`; a text is quoted inside the expression:"
                    f" \"'{name}'\""
                )
            elif (hint is None or hint.startswith("known:")) and name.isidentifier():
                # `state.mode != off`; in YAML the quotes go inside the value's own
                quoted = f"a text is quoted inside the expression: '{name}' (in YAML: \"'{name}'\")"
                hint = quoted if hint is None else f"{quoted}; {hint}"
            self.error("E401", f"unknown name '{name}'", span, hint)
        return ANY

    def visit_Attr(self, node: ast.Attr) -> Type:
        span = self.span(node.attr_start, node.end)
        if check_names.reserved(self, node.attr, span):
            return ANY
        is_local = (
            isinstance(node.obj, ast.Name)
            and comprehensions.local_type(self, node.obj.id) is not None
        )
        if isinstance(node.obj, ast.Name) and node.obj.id not in ROOTS and not is_local:
            name, name_span = node.obj.id, self.node_span(node.obj)
            if not check_names.reserved(self, name, name_span):
                roots = list(self._scope_now().roots)
                message = f"unknown name '{name}'"
                check_names.unknown(self, "E401", message, name_span, name, roots)
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
            check_names.unavailable(self, root, self.node_span(node.obj))
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
            check_names.missing_field(self, root, node.attr, span, record)
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
        if check_names.reserved(self, node.func, span):
            return ANY
        signature = self.functions.get(node.func) or BUILTINS.get(node.func)
        if signature is None:
            self._unknown_function(node, span)
            return ANY
        self.check_call_args(node, signature, arg_types)
        return signature.return_type(arg_types)

    def _unknown_function(self, node: ast.Call, span: Span) -> None:
        if node.func in EFFECT_CALLS:
            self.error(
                "E405",
                f"{node.func}() is an effect statement, not a value",
                span,
                hint=f"use it on its own line in a tool's `effect`, e.g. `{node.func}() if …`",
            )
            return
        hint = check_names.did_you_mean(node.func, [*BUILTINS, *self.functions])
        if node.func not in BUILTINS and not self.functions:
            hint = hint or "declare it under `functions:` with `impl: module:attr`"
        self.error("E405", f"unknown function '{node.func}'", span, hint)

    def check_call_args(self, node: ast.Call, signature: Signature, arg_types: list[Type]) -> None:
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
                    hint=check_operators.conversion_hint(actual, wanted)
                    or f"signature: {signature.spelled(node.func)}",
                )

    def visit_BinOp(self, node: ast.BinOp) -> Type:
        left, right = self.infer(node.left), self.infer(node.right)
        return check_operators.arith(self, node.op, left, right, node)

    def visit_BoolOp(self, node: ast.BoolOp) -> Type:
        left, right = self.infer(node.left), self.infer(node.right)
        if ast.negates(node.left, node.right) or ast.negates(node.right, node.left):
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
        if ast.same(node.body, node.orelse):
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
        assert self.site is not None
        return self.site.scope


def check(loaded: LoadedSpec) -> tuple[CheckResult, list[Diagnostic]]:
    """Check a loaded spec; returns the IR and every diagnostic found."""
    checker = Checker(loaded)
    checked = checker.run()
    return checked, checker.diagnostics
