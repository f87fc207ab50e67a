"""The oracle's turns, parsed in the spec's tool-call format and checked
against its tools, before anything runs.

Each template of a list oracle is rendered with a sample and parsed by the
runtime's own parser for `episode.tool_format` (hermes, json, react,
bracket); every call must name a declared tool with the declared arguments.
The sample is the data's first row when the data is a file on this machine
(then argument values are validated against the JSON Schemas too); else a
placeholder built from the declared field types (`str` → "x", `int` → 1, …),
which checks the template's fixed text: tool names, argument names, syntax,
and each argument's JSON type when every field has a declared one (a quoted
`"{{ sample.n }}"` is a string whatever the sample).
A template that cannot render with a placeholder is not reported (its
rendering depends on real values); with a real row, it is. An `each` step's
action is rendered once, with a placeholder `item` of the list's element type
(so its render failures and argument values are not judged as real).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any, cast

from agentspec.compiler.data_check import close_name, first_data_row
from agentspec.compiler.ir import CheckResult
from agentspec.compiler.mcp import mcp_tools, pinned_parameter_problems
from agentspec.compiler.types import (
    ANY,
    BOOL,
    DICT,
    FLOAT,
    INT,
    NONE,
    ListOf,
    Type,
    strip_optional,
)
from agentspec.core.diagnostics import Diagnostic
from agentspec.core.json_schema import schema_problems, value_problems
from agentspec.core.source import Span
from agentspec.spec.model import OracleEach, TaskSpec, ToolSpec


@dataclass
class _ToolView:
    """What the format parsers read of a tool: its parameter schema."""

    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def parameter_names(self) -> list[str]:
        return list(self.parameters.get("properties", {}))


def placeholder(typ: Type) -> Any:
    """A value of a declared type, for rendering templates without data."""
    inner = strip_optional(typ)
    if isinstance(inner, ListOf):
        return [placeholder(inner.item)]
    values: dict[Type, Any] = {INT: 1, FLOAT: 1.0, BOOL: True, DICT: {}, NONE: None}
    return values.get(inner, "x")  # str, any: "x"


@functools.cache
def template_environment() -> Any:
    """The runtime's template environment (sandboxed, within limits, undefined names
    are errors): an oracle renders here as it will when episodes run."""
    from agentspec.core import sandbox

    return sandbox.environment()


def bounded_template(tree: Any) -> bool:
    """Whether rendering a template surely stays small: no loop inside a loop, no
    macros (recursion), no `*` or `**` (a string repeated a billion times). The
    sandbox already caps `range` at 100,000; validate must not be exhausted."""
    from jinja2 import nodes

    if any(True for _ in tree.find_all((nodes.Macro, nodes.CallBlock, nodes.Mul, nodes.Pow))):
        return False
    return not any(True for loop in tree.find_all(nodes.For) for _ in loop.find_all(nodes.For))


def parsed_template(text: str) -> Any | None:
    """The template's syntax tree when validate may render it: None for a syntax
    error (the checker reports it, E601) or a template that is not
    `bounded_template` (rendering could take unbounded time or memory)."""
    try:
        tree = template_environment().parse(text)
    except Exception:
        return None
    return tree if bounded_template(tree) else None


def object_schema(tool: ToolSpec) -> dict[str, Any]:
    """A spec tool's parameters as one JSON Schema object."""
    required = list(tool.parameters) if tool.required is None else list(tool.required)
    return {"type": "object", "properties": dict(tool.parameters), "required": required}


def _tool_schemas(spec: TaskSpec) -> dict[str, dict[str, Any] | None]:
    """Every tool the model may call, spec tools and pinned MCP tools: its object schema;
    None for a pinned tool whose parameters are not a JSON Schema object (E704): the
    oracle may call it, but its arguments cannot be checked."""
    schemas: dict[str, dict[str, Any] | None] = {
        name: object_schema(tool) for name, tool in spec.tools.items()
    }
    for served in mcp_tools(spec):
        pinned = served.pin.parameters
        valid = not pinned_parameter_problems(pinned)
        schemas.setdefault(served.name, pinned if valid else None)  # a clash is E703's
    return schemas


def _argument_schema(schema: dict[str, Any], argument: str) -> dict[str, Any] | None:
    """The schema of one argument, with the definitions its `$ref`s may point to; None when
    the argument is not declared or its schema is not valid JSON Schema."""
    properties = schema.get("properties")
    sub = properties.get(argument) if isinstance(properties, dict) else None
    if not isinstance(sub, dict):
        return None
    definitions = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
    argument_schema = {**definitions, **sub}
    if next(schema_problems(argument_schema), None) is not None:
        return None  # reported where it is declared (E701); no value can be checked against it
    return argument_schema


class _OracleChecker:
    def __init__(self, checked: CheckResult, spec_dir: FsPath):
        self.spec = checked.spec
        self.map = checked.loaded.source_map
        self.checked = checked
        self.spec_dir = spec_dir
        self.diagnostics: list[Diagnostic] = []
        self.tools = _tool_schemas(self.spec)

    def run(self) -> list[Diagnostic]:
        if self.spec.episode.tool_format == "bracket":
            self._bracket_tools()
        # an adapter's oracle turns are commands, not tool calls; a spec without tools
        # or an adapter still gets its calls of tools it does not have reported (E909)
        if isinstance(self.spec.oracle, list) and (self.tools or self.spec.environment is None):
            self._turns(self.spec.oracle)
        return self.diagnostics

    def _bracket_tools(self) -> None:
        for name, tool in self.spec.tools.items():
            if len(tool.parameters) != 1:
                count = len(tool.parameters)
                self.diagnostics.append(
                    Diagnostic(
                        "E912",
                        f"tool '{name}' has {count} parameter{'s' * (count != 1)}, but the bracket format passes exactly one (`{name}[ARGUMENT]`)",
                        self.map.key_span(("tools", name)),
                        "give the tool one parameter, or use tool_format: hermes, json or react",
                    )
                )
                continue
            ((parameter, schema),) = tool.parameters.items()
            kinds = schema.get("type")
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if isinstance(kinds, list) and "string" not in kinds:
                self.diagnostics.append(
                    Diagnostic(
                        "E912",
                        f"parameter '{parameter}' of tool '{name}' is {' or '.join(map(str, kinds))},"
                        f" but the bracket format passes its argument as text (`{name}[3]` passes"
                        ' "3"): every call would be refused',
                        self.map.value_span(("tools", name, "parameters", parameter)),
                        f"declare it {{type: string}} and convert where it is used, e.g."
                        f" `int(args.{parameter})`; or use tool_format: hermes, json or react",
                    )
                )

    def _turns(self, steps: list[Any]) -> None:
        from agentspec.formats import get_format

        sample, real = self._sample()
        env = template_environment()
        fmt = get_format(self.spec.episode.tool_format)
        tools = {name: _ToolView(schema or {}) for name, schema in self.tools.items()}
        for i, step in enumerate(steps):
            template, variables, real_turn = self._variables(i, step, sample, real)
            # a turn without template syntax is the same for every sample: its values are known
            constant = not any(mark in template for mark in ("{{", "{%", "{#"))
            tree = parsed_template(template)
            if tree is None:
                continue
            try:
                text = env.from_string(tree).render(**variables)
            except (
                Exception
            ) as exc:  # undefined names etc. are the checker's (E6xx) unless data is real
                if real_turn:
                    self._report(
                        "E911",
                        i,
                        f"{self._label(i)} fails to render for the first sample: {exc}",
                    )
                continue
            parsed = fmt.parse(text, cast(Any, tools))
            # placeholder values ("x" for a text field that holds JSON) can break a call
            # that the real data writes well: only real or fixed text is judged
            judged = parsed.errors if real_turn or constant else []
            for error in judged:
                self._report(
                    "E911",
                    i,
                    f"{self._label(i)} is not valid {self.spec.episode.tool_format}: {error.message}",
                    hint=fmt.usage(),
                )
            for call in parsed.calls:
                self._call(i, call.name, call.arguments, real_turn or constant, constant)
            # a placeholder sample can render a real turn's `{% if %}` empty: only known text
            ends_early = (
                self.spec.episode.final_answer == "end"
                and self.spec.user is None  # with a user, a text turn goes to the user
                and i + 1 < len(steps)
                and (real_turn or constant)
            )
            if ends_early and not parsed.errors and not parsed.calls:
                self._report(
                    "E911",
                    i,
                    f"{self._label(i)} is a final answer under tool_format"
                    f" {self.spec.episode.tool_format}: the episode ends there and the"
                    " turns after it never run",
                    hint=fmt.usage(),
                )

    def _variables(
        self, i: int, step: Any, sample: dict[str, Any], real: bool
    ) -> tuple[str, dict[str, Any], bool]:
        """Template, variables and whether they are real data, for oracle entry `i`."""
        variables = {"sample": sample, "constants": dict(self.spec.constants)}
        if not isinstance(step, OracleEach):
            return step, variables, real
        typed = self.checked.expressions.get(("oracle", i, "each"))
        items = strip_optional(typed.type) if typed is not None else None
        item = placeholder(items.item) if isinstance(items, ListOf) else "x"
        return step.action, {**variables, "item": item, "index": 0}, False

    def _call(
        self, turn: int, name: str, arguments: Any, real: bool, constant: bool = False
    ) -> None:
        import difflib

        if name not in self.tools:
            close = difflib.get_close_matches(name, list(self.tools), n=1, cutoff=0.6)
            self._report(
                "E909",
                turn,
                f"{self._label(turn)} calls unknown tool '{name}'",
                f"did you mean '{close[0]}'?"
                if close
                else "tools: " + ", ".join(self.tools)
                if self.tools
                else "the spec declares no tools: this turn is a call, not an answer",
                word=name,
            )
            return
        schema = self.tools[name]
        if schema is None or not isinstance(arguments, dict):
            return
        parameters = list(schema.get("properties") or {})
        for arg in arguments:
            if arg not in parameters:
                self._report(
                    "E910",
                    turn,
                    f"{self._label(turn)} passes unknown argument '{arg}' to tool '{name}'",
                    f"did you mean '{meant[0]}'?"
                    if (meant := close_name(str(arg), parameters))
                    else "parameters: " + (", ".join(parameters) or "none"),
                    word=arg,
                )
        required = schema.get("required") or []
        for arg in required:
            if arg not in arguments:
                self._report(
                    "E910",
                    turn,
                    f"{self._label(turn)} calls '{name}' without its required argument '{arg}'",
                    word=name,
                )
        if real:
            self._values(turn, name, schema, arguments, constant)
        elif self._placeholders_keep_json_types:
            self._values(turn, name, schema, arguments, constant, types_only=True)

    @functools.cached_property
    def _placeholders_keep_json_types(self) -> bool:
        """Whether a placeholder sample renders every argument as the JSON type real
        samples give it: each field has a declared type (a quoted `"{{ sample.n }}"` is a
        string for every sample; an `any` field could render as anything)."""
        return all(
            strip_optional(t) != ANY and not (isinstance(t, ListOf) and t.item == ANY)
            for t in self.checked.sample_types.values()
        )

    def _values(
        self,
        turn: int,
        name: str,
        schema: dict[str, Any],
        arguments: dict[str, Any],
        constant: bool,
        types_only: bool = False,
    ) -> None:
        """E910 for argument values the tool's schema refuses; with `types_only` (values
        rendered from placeholders) only their JSON type, which every sample shares."""
        which = "" if constant else " for every sample" if types_only else " for the first sample"
        for arg, value in arguments.items():
            argument_schema = _argument_schema(schema, arg)
            if argument_schema is None:
                continue
            if types_only:
                wanted = argument_schema.get("type")
                if wanted is not None and value_problems({"type": wanted}, value):
                    from agentspec.formats.strict_json import json_type

                    takes = " or ".join(wanted) if isinstance(wanted, list) else wanted
                    self._report(
                        "E910",
                        turn,
                        f"{self._label(turn)}: argument '{arg}' of '{name}' is {json_type(value)}"
                        f" for every sample, and the tool takes {takes}",
                        "a number field: write `{{ sample.n }}` without quotes; a text"
                        " field: convert it (`{{ sample.s | int }}`)",
                        word=arg,
                    )
                continue
            for problem in value_problems(argument_schema, value):
                self._report(
                    "E910",
                    turn,
                    f"{self._label(turn)}: argument '{arg}' of '{name}'{which}: {problem}",
                    word=arg,
                )

    def _sample(self) -> tuple[dict[str, Any], bool]:
        """The data's first row when it is a file here, else a typed placeholder."""

        row = first_data_row(self.spec, self.spec_dir)
        if row is not None:
            return row, True
        return {name: placeholder(t) for name, t in self.checked.sample_types.items()}, False

    def _label(self, entry: int) -> str:
        """`oracle entry 3 (turn 5)`: an entry of `oracle:` and the turn it plays
        (an `each` entry plays one turn per item, so later turns depend on them)."""
        steps = self.spec.oracle if isinstance(self.spec.oracle, list) else []
        each_before = sum(isinstance(s, OracleEach) for s in steps[:entry])
        first = entry + 1 - each_before  # the turn, counting each `each` entry as none
        if entry < len(steps) and isinstance(steps[entry], OracleEach):
            turns = "one turn per item" + ("" if each_before else f", from turn {first}")
        elif each_before:
            turns = f"turn {first} plus one per item of the `each` entries before it"
        else:
            turns = f"turn {first}"
        return f"oracle entry {entry + 1} ({turns})"

    def _report(
        self, code: str, turn: int, message: str, hint: str | None = None, word: str | None = None
    ) -> None:
        each = isinstance(self.spec.oracle, list) and isinstance(self.spec.oracle[turn], OracleEach)
        path: tuple[str | int, ...] = ("oracle", turn, "action") if each else ("oracle", turn)
        span: Span = self.map.value_span(path)
        locator = self.map.locator(path)
        if word is not None and locator is not None:
            # the word as a whole: `mode` is not the end of `set_mode`
            found = re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", locator.value)
            if found is not None:
                span = locator.span(found.start(), found.end())
        self.diagnostics.append(Diagnostic(code, message, span, hint))


def check_oracle(checked: CheckResult, spec_dir: FsPath) -> list[Diagnostic]:
    """Findings about the oracle's turns and the tool format (codes E909–E912)."""
    return _OracleChecker(checked, spec_dir).run()
