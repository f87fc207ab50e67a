"""The checked representation of a spec: what code generation consumes.

Every expression and statement is parsed and typed; every name it uses is
known to exist. Paths are the YAML paths of the source values, so later stages
can still point diagnostics at the user's file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentspec.compiler import ast
from agentspec.compiler.types import Type
from agentspec.core.diagnostics import Diagnostic
from agentspec.spec.load import LoadedSpec
from agentspec.spec.model import TaskSpec
from agentspec.spec.yaml_loader import Path


@dataclass(frozen=True)
class TypedExpr:
    node: ast.Node
    type: Type


@dataclass
class CheckResult:
    """What the checker learned about a spec: its types and typed expressions.

    Also returned for a spec with errors (`check` gives it with the
    diagnostics), so it says nothing about validity: `frontend.FrontendResult.ok` does."""

    loaded: LoadedSpec
    state_types: dict[str, Type]
    sample_types: dict[str, Type]
    arg_types: dict[str, dict[str, Type]]  # tool → argument → type
    result_types: dict[str, Type]  # tool → type of `result`
    expressions: dict[Path, TypedExpr] = field(default_factory=dict)
    statements: dict[Path, ast.Statement] = field(default_factory=dict)
    value_types: dict[Path, Type] = field(default_factory=dict)  # effect path → assigned type
    constant_types: dict[str, Type] = field(default_factory=dict)
    # `*` nodes that may repeat a string or list; lowered to a size-checked call
    repetitions: set[ast.Node] = field(default_factory=set)
    warnings: list[Diagnostic] = field(default_factory=list)

    @property
    def spec(self) -> TaskSpec:
        return self.loaded.spec
