"""What the checker's jobs share: the running check's state, its diagnostics and
source positions, and the expression checks they call back into.

The `check_*` modules, `sections`, `comprehensions`, `guards` and `mcp` are
functions of a `CheckState`; the driver (`checker.Checker`) subclasses it with
the expression visitor and calls them. So they stand below the driver: none of
them imports `checker`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from agentspec.compiler import ast
from agentspec.compiler.builtins import Signature
from agentspec.compiler.ir import TypedExpr
from agentspec.compiler.scopes import Scope, Site, Usage
from agentspec.compiler.types import Type
from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import Span
from agentspec.spec.load import LoadedSpec
from agentspec.spec.yaml_loader import Path

__all__ = ["CheckState"]


class CheckState(ABC):
    """One spec's check in progress (see `checker.check`)."""

    def __init__(self, loaded: LoadedSpec):
        self.loaded = loaded
        self.spec = loaded.spec
        self.map = loaded.source_map
        self.diagnostics: list[Diagnostic] = []
        self.usage = Usage()
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
        self.site: Site | None = None
        self.frames: list[dict[str, Type]] = [{}]
        self.lets: dict[Any, dict[str, Type]] = {}
        self.used_guards: set[str] = set()  # named guards some tool's `when` uses
        self.parsed_chars = 0  # of expressions and statements, against MAX_TOTAL_CHARS
        self._reported: set[Diagnostic] = set()

    def error(self, code: str, message: str, span: Span | None, hint: str | None = None) -> None:
        diagnostic = Diagnostic(code, message, span, hint)
        if diagnostic not in self._reported:  # a named guard is checked for each tool using it
            self._reported.add(diagnostic)
            self.diagnostics.append(diagnostic)

    def span(self, start: int, end: int) -> Span:
        assert self.site is not None
        locator = self.map.locator(self.site.path)
        if locator is None:
            return self.map.value_span(self.site.path)
        return locator.span(start, end)

    def node_span(self, node: ast.Node) -> Span:
        return self.span(node.start, node.end)

    # ------------------------------------------- what the driver's visitor provides

    @abstractmethod
    def infer(self, node: ast.Node) -> Type:
        """The type of an expression of the current site (diagnostics on the way)."""

    @abstractmethod
    def expect_condition(self, node: ast.Node, typ: Type) -> None:
        """A diagnostic unless `typ` is a condition's (true or false)."""

    @abstractmethod
    def check_call_args(self, node: ast.Call, signature: Signature, arg_types: list[Type]) -> None:
        """Diagnostics for a call's arguments against the function's signature."""

    @abstractmethod
    def make_scope(
        self, *roots: str, tool: str | None = None, writable: Iterable[str] = ()
    ) -> Scope:
        """The names an expression may read at a site of these roots."""
