"""`agentspec test`'s results, as text for a terminal, annotations for GitHub, or JSON."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentspec.core.diagnostics import SpecError, clip_line, visible
from agentspec.runtime.commands.tests import CaseResult
from agentspec.runtime.commands.tests_match import Failure

__all__ = ["all_passed", "report_results", "results_json"]


def report_results(
    outcomes: Sequence[tuple[list[CaseResult], SpecError | None]],
    *,
    github: bool,
    echo: Any,
) -> bool:
    """Print pytest-style results (or GitHub annotations); True when nothing failed."""
    from agentspec.core.diagnostics import render_github, render_text
    from agentspec.core.source import SourceFile

    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failed: list[tuple[CaseResult, Failure]] = []
    start_total = sum(case.seconds for results, _ in outcomes for case in results)
    for results, error in outcomes:
        if error is not None:
            counts["failed"] += 1
            for d in error.diagnostics:
                echo(render_github(d) if github else render_text(d, error.sources))
            continue
        for case in results:
            counts[case.status] += 1
            if not github:
                note = f" ({case.skipped})" if case.skipped else ""
                shown = case.status.upper()
                echo(visible(f"{case.spec}::{case.name} {shown}{note} [{case.seconds:.2f}s]"))
            failed += [(case, f) for f in case.failures]
    sources: dict[str, SourceFile] = {}
    if failed and not github:
        echo("\n" + " FAILURES ".center(72, "="))
    for case, failure in failed:
        if github:
            echo(_github_line(case, failure))
            continue
        span = failure.span
        location = f"{span.file}:{span.line}:{span.column}" if span else case.spec
        echo(visible(f"{location}: {case.name}: {failure.message}"))
        if span is not None:
            source = sources.get(span.file) or SourceFile(span.file, Path(span.file).read_text())
            sources[span.file] = source
            text = source.line_text(span.line)
            if text is not None:
                gutter = f"{span.line:>4} | "
                text, column = clip_line(text, span.column)
                echo(gutter + visible(text) + "\n" + " " * (len(gutter) + column - 1) + "^")
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n or k == "passed")
    echo(f"{'=' * 8} {summary} in {start_total:.2f}s {'=' * 8}")
    return counts["failed"] == 0


def all_passed(outcomes: Sequence[tuple[list[CaseResult], SpecError | None]]) -> bool:
    """No spec invalid and no case failed (skipped cases do not fail)."""
    return all(
        error is None and all(case.status != "failed" for case in results)
        for results, error in outcomes
    )


def results_json(
    outcomes: Sequence[tuple[list[CaseResult], SpecError | None]], specs: Sequence[str]
) -> str:
    """The results as one JSON document: counts, and each case with its status, time and
    failures (located like `validate --format json`'s diagnostics); an invalid spec (its
    path from `specs`, one per outcome) is one failed `validate` case carrying its
    diagnostics."""
    from agentspec.core.diagnostics import to_json

    cases: list[dict[str, Any]] = []
    for spec, (results, error) in zip(specs, outcomes, strict=True):
        if error is not None:
            cases.append(
                {
                    "spec": spec,
                    "name": "validate",
                    "status": "failed",
                    "skipped": None,
                    "seconds": 0.0,
                    "failures": [to_json(d) for d in error.diagnostics],
                }
            )
            continue
        for case in results:
            failures = [
                {"message": f.message, **(dataclasses.asdict(f.span) if f.span else {"file": None})}
                for f in case.failures
            ]
            cases.append(
                {
                    "spec": case.spec,
                    "name": case.name,
                    "status": case.status,
                    "skipped": case.skipped,
                    "seconds": round(case.seconds, 3),
                    "failures": failures,
                }
            )
    counts = {k: sum(c["status"] == k for c in cases) for k in ("passed", "failed", "skipped")}
    return json.dumps({**counts, "cases": cases}, indent=2, ensure_ascii=False)


def _github_line(case: CaseResult, failure: Failure) -> str:
    from agentspec.core.diagnostics import github_command

    return github_command(
        "error", failure.span, "agentspec test", f"{case.name}: {failure.message}"
    )
