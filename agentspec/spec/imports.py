"""The Python code a spec would import when it runs.

Expressions and templates run in agentspec's sandbox; four fields do not:
`functions.NAME.impl`, `environment.adapter`, `oracle.hook` and
`context.custom` name any importable `module:attribute`, and running the spec
imports and calls it with the full power of Python (`impl: os:system` runs
shell commands). `validate --list-imports` prints this list so that a
reviewer sees every piece of code a spec brings in (docs/security.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentspec.source import Span
from agentspec.spec.load import LoadedSpec
from agentspec.spec.yaml_loader import Path


@dataclass(frozen=True)
class PythonImport:
    """One `module:attribute` the spec imports at run, and where it says so."""

    field: str  # e.g. "functions.search.impl"
    target: str  # e.g. "mypackage.search:build"
    span: Span

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]


def python_imports(loaded: LoadedSpec) -> list[PythonImport]:
    """Every user-named Python import of a spec, in file order."""
    spec = loaded.spec
    found: list[tuple[Path, str]] = []
    for name, function in spec.functions.items():
        if not function.impl.startswith("stdlib:"):
            found.append((("functions", name, "impl"), function.impl))
    if spec.environment is not None:
        adapter = spec.environment.adapter
        if ":" in adapter and not adapter.startswith(("gymnasium:", "http:")):
            found.append((("environment", "adapter"), adapter))
    hook = getattr(spec.oracle, "hook", None)
    if isinstance(hook, str):
        found.append((("oracle", "hook"), hook))
    if spec.context.custom is not None:
        found.append((("context", "custom"), spec.context.custom))
    imports = [
        PythonImport(".".join(map(str, path)), target, loaded.source_map.value_span(path))
        for path, target in found
    ]
    return sorted(imports, key=lambda i: (i.span.line, i.span.column))


def render_import(item: PythonImport) -> str:
    span = item.span
    return f"{span.file}:{span.line}:{span.column}: imports {item.target} ({item.field})"


def to_json(item: PythonImport) -> dict[str, object]:
    return {
        "field": item.field,
        "target": item.target,
        "module": item.module,
        "file": item.span.file,
        "line": item.span.line,
        "column": item.span.column,
    }
