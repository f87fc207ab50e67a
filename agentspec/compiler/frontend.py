"""The front end as one call: file → checked IR, or every diagnostic.

`check_file` never raises for bad input; `load_checked` raises one
`SpecError` carrying all of a file's diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentspec.compiler.checker import check
from agentspec.compiler.diagnostics import Diagnostic, SpecError
from agentspec.compiler.ir import CheckedSpec
from agentspec.spec.load import load_spec, read_source
from agentspec.spec.source import SourceFile


@dataclass
class FrontendResult:
    path: str
    checked: CheckedSpec | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sources: dict[str, SourceFile] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.checked is not None and not any(d.is_error for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if not d.is_error]


def check_source(source: SourceFile) -> FrontendResult:
    """Load, parse and check one spec's text."""
    loaded, diagnostics = load_spec(source)
    result = FrontendResult(source.path, None, diagnostics, {source.path: source})
    if loaded is None:
        return result
    checked, found = check(loaded)
    result.diagnostics += found
    result.diagnostics.sort(key=Diagnostic.sort_key)
    result.checked = checked
    return result


def check_file(path: str | Path) -> FrontendResult:
    source, problem = read_source(path)
    if source is None or problem is not None:
        sources = {source.path: source} if source is not None else {}
        return FrontendResult(str(path), None, [problem] if problem else [], sources)
    return check_source(source)


def require_ok(result: FrontendResult) -> CheckedSpec:
    """The checked spec, or a `SpecError` listing every problem."""
    if not result.ok or result.checked is None:
        raise SpecError(result.diagnostics, result.sources)
    return result.checked


def load_checked(path: str | Path) -> CheckedSpec:
    """Check a spec file; raise one `SpecError` listing every problem."""
    return require_ok(check_file(path))
