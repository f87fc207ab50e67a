"""The code a spec would import or start when it runs.

Expressions and templates run in agentspec's sandbox; five fields do not:
`functions.NAME.impl`, `environment.adapter`, `oracle.hook`, `context.custom`
and a `data.source` of the form `generator:module:attribute` name any
importable `module:attribute`, and running the spec imports and calls it with
the full power of Python (`impl: os:system` runs shell commands). And
`mcp.NAME.command` is a program that `mcp pin`, `test`, `run` and `train`
start. `validate --list-imports` prints this list so that a reviewer sees
every piece of code a spec brings in (docs/security.md).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from agentspec.core.source import Span
from agentspec.spec.load import LoadedSpec
from agentspec.spec.yaml_loader import Path


@dataclass(frozen=True)
class PythonImport:
    """One `module:attribute` the spec imports at run (or, of kind ``command``, a
    program it starts), and where it says so."""

    field: str  # e.g. "functions.search.impl", "mcp.units.command"
    target: str  # e.g. "mypackage.search:build", "python units_server.py"
    span: Span
    kind: str = "import"  # "import" or "command"

    @property
    def module(self) -> str | None:
        return self.target.partition(":")[0] if self.kind == "import" else None

    @property
    def verb(self) -> str:
        return "runs" if self.kind == "command" else "imports"


def python_imports(loaded: LoadedSpec) -> list[PythonImport]:
    """Every user-named Python import of a spec, in file order."""
    spec = loaded.spec
    found: list[tuple[Path, str]] = []
    for name, function in spec.functions.items():
        if not function.impl.startswith("stdlib:"):
            found.append((("functions", name, "impl"), function.impl))
    if spec.environment is not None:
        adapter = spec.environment.adapter
        if ":" in adapter:
            found.append((("environment", "adapter"), adapter))
    hook = getattr(spec.oracle, "hook", None)
    if isinstance(hook, str):
        found.append((("oracle", "hook"), hook))
    if spec.context.custom is not None:
        found.append((("context", "custom"), spec.context.custom))
    if spec.data is not None and spec.data.source.count(":") >= 2:  # generator:module:attr
        kind, _, target = spec.data.source.partition(":")
        if kind == "generator":
            found.append((("data", "source"), target))
    imports = [
        PythonImport(".".join(map(str, path)), target, loaded.source_map.value_span(path))
        for path, target in found
    ]
    for name, server in spec.mcp.items():
        if server.command is not None:
            command = server.command
            line = command if isinstance(command, str) else shlex.join(command)
            path = ("mcp", name, "command")
            span = loaded.source_map.value_span(path)
            imports.append(PythonImport(".".join(path), line, span, kind="command"))
    return sorted(imports, key=lambda i: (i.span.line, i.span.column))


def render_import(item: PythonImport) -> str:
    span = item.span
    return f"{span.file}:{span.line}:{span.column}: {item.verb} {item.target} ({item.field})"


def to_json(item: PythonImport) -> dict[str, object]:
    return {
        "kind": item.kind,
        "field": item.field,
        "target": item.target,
        "module": item.module,
        "file": item.span.file,
        "line": item.span.line,
        "column": item.span.column,
    }
