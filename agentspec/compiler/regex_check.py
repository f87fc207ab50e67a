"""The deep check of regular expressions: a literal pattern passed to a built-in
that takes one (`extract`, `extract_all`, `regex_match`) must compile (E908).
Used by `compiler.deep.DeepChecker`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from agentspec.compiler import ast
from agentspec.compiler.ir import CheckResult
from agentspec.core.diagnostics import Diagnostic
from agentspec.spec.yaml_loader import SourceMap
from agentspec.stdlib.text import pattern_problem

# Built-ins whose second argument is a regular expression.
REGEX_FUNCTIONS = ("extract", "extract_all", "regex_match")


class RegexChecks:
    """The regex checks, mixed into `DeepChecker` (which provides these attributes)."""

    checked: CheckResult
    map: SourceMap
    diagnostics: list[Diagnostic]

    def _regexes(self) -> None:
        sites = [(p, e.node) for p, e in self.checked.expressions.items()]
        sites += list(self.checked.statements.items())
        for path, root in sites:
            for call in _calls(root):
                if call.func not in REGEX_FUNCTIONS or len(call.args) < 2:
                    continue
                pattern = call.args[1]
                if not (isinstance(pattern, ast.Literal) and isinstance(pattern.value, str)):
                    continue
                problem = pattern_problem(pattern.value)
                if problem is not None:
                    locator = self.map.locator(path)
                    span = (
                        locator.span(pattern.start, pattern.end)
                        if locator is not None
                        else self.map.value_span(path)
                    )
                    self.diagnostics.append(
                        Diagnostic(
                            "E908",
                            f"invalid regular expression in {call.func}(): {problem}",
                            span,
                            "Python's `regex` syntax (a superset of `re`); escape ( ) [ ] . * + ?"
                            " with a backslash to match them literally",
                        )
                    )


def _calls(node: Any) -> Iterator[ast.Call]:
    """Every call inside an AST (any node type, present or future)."""
    if isinstance(node, ast.Call):
        yield node
    if isinstance(node, ast.Node):
        for name in _child_fields(type(node)):
            yield from _calls(getattr(node, name))
    elif isinstance(node, (tuple, list)):
        for item in node:
            yield from _calls(item)


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of an AST node class that can hold nodes (not positions), cached."""
    if kind not in _CHILD_FIELDS:
        names = (f.name for f in dataclasses.fields(kind))
        _CHILD_FIELDS[kind] = tuple(n for n in names if n not in ("start", "end", "func_end"))
    return _CHILD_FIELDS[kind]
