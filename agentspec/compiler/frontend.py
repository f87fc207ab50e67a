"""The front end as one call: file → checked IR, or every diagnostic.

`check_file` never raises for bad input; `load_checked` raises one
`SpecError` carrying all of a file's diagnostics.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from pathlib import Path as FsPath

from agentspec.compiler.checker import check
from agentspec.compiler.ir import CheckResult
from agentspec.core.diagnostics import Diagnostic, SpecError
from agentspec.core.source import SourceFile
from agentspec.spec.load import load_spec, read_source


@dataclass
class FrontendResult:
    path: str
    checked: CheckResult | None
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


def check_source(
    source: SourceFile, *, deep: bool = True, import_user_code: bool = False
) -> FrontendResult:
    """Load, parse and check one spec's text.

    `deep` adds the checks of what the spec points to (`compiler.deep`): stdlib
    functions, user modules, data, regexes, the oracle; `import_user_code`
    also imports the user's modules to check their signatures.
    """
    loaded, diagnostics = load_spec(source)
    result = FrontendResult(source.path, None, diagnostics, {source.path: source})
    if loaded is None:
        return result
    checked, found = check(loaded)
    result.diagnostics += found
    if deep:
        from agentspec.compiler.deep import deep_check

        spec_dir = FsPath(source.path).resolve().parent
        result.diagnostics += deep_check(
            checked, spec_dir, import_user_code=import_user_code, checker_found=found
        )
    result.diagnostics.sort(key=Diagnostic.sort_key)
    result.checked = checked
    return result


def check_file(path: str | Path, *, import_user_code: bool = False) -> FrontendResult:
    source, problem = read_source(path)
    if source is None or problem is not None:
        sources = {source.path: source} if source is not None else {}
        return FrontendResult(str(path), None, [problem] if problem else [], sources)
    return check_source(source, import_user_code=import_user_code)


def require_ok(result: FrontendResult, waive: Collection[str] = ()) -> CheckResult:
    """The checked spec, or a `SpecError` listing every problem; errors whose code is in
    `waive` do not count (`TRAINING_SETTING_CODES` for a command that runs the spec)."""
    if result.checked is None or any(d.code not in waive for d in result.errors):
        raise SpecError(result.diagnostics, result.sources)
    return result.checked


def load_checked(path: str | Path, waive: Collection[str] = ()) -> CheckResult:
    """Check a spec file; raise one `SpecError` listing every problem (but `waive`'s)."""
    return require_ok(check_file(path), waive)
