"""Static checks of a spec's `tests:` section, so that `agentspec validate`
catches a misspelt expectation before `agentspec test` plays anything:
expected state variables and reward components must exist (E402, E406),
constants a test sets must be declared, with their type (E414, E508),
written-out samples must have the declared fields, of their types (E907), and patterns must
compile (E908)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from agentspec.compiler.data_check import field_type_problems
from agentspec.compiler.ir import CheckResult
from agentspec.compiler.types import assignable, python_value_type
from agentspec.core.diagnostics import Diagnostic
from agentspec.spec.model import TextMatch
from agentspec.spec.yaml_loader import Path
from agentspec.stdlib.text import pattern_problem


def check_tests(checked: CheckResult) -> list[Diagnostic]:
    spec, source_map = checked.spec, checked.loaded.source_map
    found: list[Diagnostic] = []

    def unknown(code: str, what: str, name: str, path: Path, known: Iterable[str]) -> None:
        options = sorted(known)
        close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
        hint = (
            f"did you mean '{close[0]}'?" if close else "known: " + (", ".join(options) or "none")
        )
        found.append(Diagnostic(code, f"unknown {what} '{name}'", source_map.key_span(path), hint))

    for i, test in enumerate(spec.tests.episodes):
        base: Path = ("tests", "episodes", i)
        expect = test.expect
        for name in expect.state or {}:
            if name not in spec.state:
                unknown(
                    "E402", "state variable", name, (*base, "expect", "state", name), spec.state
                )
        for name in expect.rewards or {}:
            if name not in spec.rewards:
                path = (*base, "expect", "rewards", name)
                unknown("E406", "reward component", name, path, spec.rewards)
        for name in test.constants:
            if name not in spec.constants:
                path = (*base, "constants", name)
                unknown("E414", "constant", name, path, spec.constants)
        found += _constant_types(checked, base, test.constants)
        if test.sample is not None and spec.data is not None:
            found += _sample_types(checked, base, test.sample)
            derived = set(spec.data.derived)
            for field in [*spec.data.fields, *derived]:
                if field not in test.sample:
                    found.append(
                        Diagnostic(
                            "E907",
                            f"the test's sample has no field '{field}'",
                            source_map.key_span((*base, "sample")),
                            "write every declared field"
                            + (" (and the derived ones)" if derived else ""),
                        )
                    )
        for j, wanted in enumerate(expect.observations or []):
            if isinstance(wanted, TextMatch) and wanted.pattern is not None:
                problem = pattern_problem(wanted.pattern)
                if problem is not None:
                    found.append(
                        Diagnostic(
                            "E908",
                            f"invalid regular expression: {problem}",
                            source_map.value_span((*base, "expect", "observations", j, "pattern")),
                        )
                    )
    return found


def _sample_types(checked: CheckResult, base: Path, sample: dict[str, Any]) -> list[Diagnostic]:
    """E907 for each declared field a test's written-out sample gives a value of another
    type (the data loader refuses such a row; the test would play one no data can hold)."""
    assert checked.spec.data is not None
    source_map = checked.loaded.source_map
    return [
        Diagnostic(
            "E907",
            f"the test's sample: field '{field}' {what}",
            source_map.value_span((*base, "sample", field)),
            fix,
        )
        for field, what, fix in field_type_problems(sample, checked.spec.data.fields)
    ]


def _constant_types(checked: CheckResult, base: Path, values: dict[str, Any]) -> list[Diagnostic]:
    """E508 for each constant a test sets to a value of another type."""
    found = []
    for name, value in values.items():
        declared = checked.constant_types.get(name)
        if declared is not None and not assignable(
            python_value_type(value), declared, bool_is_number=False
        ):
            found.append(
                Diagnostic(
                    "E508",
                    f"constants.{name} is {declared}, but the test gives it a {python_value_type(value)}",
                    checked.loaded.source_map.value_span((*base, "constants", name)),
                    f"give a value of type {declared}",
                )
            )
    return found
