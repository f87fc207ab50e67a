"""`validate`, `test`, `schema` and `compile`: the commands that never import torch."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentspec.cli.app import (
    OutputFormat,
    app,
    expand_paths,
    fail,
    output_path,
    report_spec_error,
)
from agentspec.core.presets import MAX_SEED

if TYPE_CHECKING:
    from agentspec.spec.imports import PythonImport
    from agentspec.stdlib.user import SpecCodeRefused

FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="text, json, or github (Actions annotations)."),
]
ListImportsOption = Annotated[
    bool,
    typer.Option(
        "--list-imports",
        help="Also list every Python `module:attribute` the spec imports at run"
        " (functions, adapter, oracle hook, custom context, generator data source) and"
        " every MCP server command it starts: code outside the sandbox.",
    ),
]
ImportOption = Annotated[
    bool,
    typer.Option(
        "--import",
        help="Also import the spec's own Python modules (functions, hooks, adapters) and check their signatures. Runs their import-time code.",
    ),
]


@app.command()
def validate(
    paths: Annotated[list[str], typer.Argument(help="Spec files, directories or globs.")],
    output_format: FormatOption = OutputFormat.text,
    strict: Annotated[bool, typer.Option(help="Treat warnings as errors.")] = False,
    list_imports: ListImportsOption = False,
    import_user_code: ImportOption = False,
) -> None:
    """Check specs without running anything. Exit 0 if valid, 1 if not, 2 on usage errors."""
    import json

    from agentspec.compiler.frontend import check_file
    from agentspec.core.diagnostics import render_json
    from agentspec.spec import imports

    files = expand_paths(paths)
    if not files:
        raise typer.BadParameter("no .yaml or .yml files found", param_hint="PATH")
    results = [check_file(f, import_user_code=import_user_code) for f in files]
    failed = [r for r in results if not r.ok or (strict and r.warnings)]
    diagnostics = [d for r in results for d in r.diagnostics]
    found = [
        item
        for r in results
        if list_imports and r.checked is not None
        for item in imports.python_imports(r.checked.loaded)
    ]
    if output_format is OutputFormat.json and list_imports:
        report = {
            "diagnostics": json.loads(render_json(diagnostics)),
            "imports": [imports.to_json(item) for item in found],
        }
        typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    elif output_format is OutputFormat.json:
        typer.echo(render_json(diagnostics))
    elif output_format is OutputFormat.github:
        _print_github(diagnostics, found)
    else:
        _print_text(results, found, failed)
    raise typer.Exit(1 if failed else 0)


def _print_github(diagnostics: list[Any], found: list[Any]) -> None:
    """Workflow commands: an annotation per diagnostic, a notice per user import."""
    from agentspec.core.diagnostics import render_github

    for d in diagnostics:
        typer.echo(render_github(d))
    for item in found:
        span = item.span
        typer.echo(
            f"::notice file={span.file},line={span.line},col={span.column}"
            f"::{item.verb} {item.target} ({item.field})"
        )


SHOWN_DIAGNOSTICS = 200
"""Diagnostics printed per spec as text: a generated file can have tens of thousands."""


def _print_text(results: list[Any], found: list[Any], failed: list[Any]) -> None:
    """Imports, then each diagnostic with its source line and caret, then the summary."""
    from agentspec.core.diagnostics import render_text
    from agentspec.spec import imports

    for item in found:
        typer.echo(imports.render_import(item))
    if found:
        typer.echo("")
    sources = {k: v for r in results for k, v in r.sources.items()}
    for result in results:
        for d in result.diagnostics[:SHOWN_DIAGNOSTICS]:
            typer.echo(render_text(d, sources), err=False)
            typer.echo("")
        hidden = len(result.diagnostics) - SHOWN_DIAGNOSTICS
        if hidden > 0:
            typer.echo(
                f"… and {hidden:,} more in {result.path}: the first {SHOWN_DIAGNOSTICS} are"
                " shown (`--format json` lists them all)\n"
            )
    errors = sum(len(r.errors) for r in results)
    warnings = sum(len(r.warnings) for r in results)
    summary = (
        f"{len(results)} spec{'s' if len(results) != 1 else ''} checked: "
        f"{len(results) - len(failed)} valid, {len(failed)} invalid "
        f"({errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''})"
    )
    typer.echo(summary, err=True)


@app.command(name="test")
def test_command(
    paths: Annotated[list[str], typer.Argument(help="Spec files, directories or globs.")],
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--format",
            "-f",
            help="text, json (one document on stdout), or github (Actions annotations).",
        ),
    ] = OutputFormat.text,
    oracle_samples: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Samples the oracle gate plays (the first N of the data; default: the spec's tests.oracle.samples).",
        ),
    ] = None,
    oracle: Annotated[bool, typer.Option(help="Run the oracle gate.")] = True,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the random policy.")] = 0,
) -> None:
    """Run each spec's scripted episodes (`tests:`) and its oracle gate. Exit 0 if all pass, 1 if not, 2 on usage errors."""
    from agentspec.runtime.commands.tests import run_spec_tests
    from agentspec.runtime.commands.tests_report import all_passed, report_results, results_json

    files = expand_paths(paths)
    if not files:
        raise typer.BadParameter("no .yaml or .yml files found", param_hint="PATH")
    outcomes = [
        run_spec_tests(f, oracle_samples=oracle_samples, seed=seed, gate=oracle) for f in files
    ]
    if output_format is OutputFormat.json:
        typer.echo(results_json(outcomes, [str(f) for f in files]))
        ok = all_passed(outcomes)
    else:
        github = output_format is OutputFormat.github
        ok = report_results(outcomes, github=github, echo=typer.echo)
    raise typer.Exit(0 if ok else 1)


@app.command()
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file.")
    ] = None,
) -> None:
    """Print the JSON Schema (draft 2020-12) of the spec language."""
    from agentspec.spec.schema import schema_json

    text = schema_json()
    if output is None:
        typer.echo(text, nl=False)
    else:
        output_path(output, "--output", folder=False)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output}", err=True)


@app.command(name="compile")
def compile_command(
    spec: Annotated[Path, typer.Argument(help="The spec to compile.", exists=True, dir_okay=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output directory.")] = Path(
        "build"
    ),
    target: Annotated[
        str,
        typer.Option(
            help="python (the module), verl (plus agent loop, parquet, overrides), "
            "openenv (an OpenEnv package: docs/openenv.md), trl (an environment_factory "
            "for TRL: docs/trl.md) or verifiers (a verifiers v1 environment: docs/verifiers.md)."
            " Each is a module of agentspec/runtime/targets/."
        ),
    ] = "python",
    run_spec_code: Annotated[
        bool,
        typer.Option(
            "--run-spec-code",
            help="Let the target run the spec's own code where it needs it (the code "
            "`validate --list-imports` lists): a user generator or functions for the samples "
            "(verl's parquet, OpenEnv's task counts), and for OpenEnv the oracle and random "
            "episodes that measure the reward range (tools, hooks, MCP servers). Without it "
            "compile runs nothing of the spec's (docs/security.md).",
        ),
    ] = False,
) -> None:
    """Generate the Python module (ToolEnv/AgentEnv, tools, flow, rewards) and manifest of a spec."""
    import contextlib

    from agentspec.compiler.build import compile_spec
    from agentspec.core.diagnostics import SpecError
    from agentspec.runtime.targets import TARGETS, TargetError, TargetRequest, write_target
    from agentspec.stdlib.data import DataError
    from agentspec.stdlib.user import SpecCodeRefused, spec_code_refused

    if target not in TARGETS:
        raise fail(f"unknown target {target!r}: use {', '.join(TARGETS)}", code=2)
    output_path(output, "--output", folder=True)
    try:
        compiled = compile_spec(spec)
    except SpecError as exc:
        raise report_spec_error(exc) from None
    original = spec.read_bytes()  # a generated file named like the spec must not replace it
    guard = contextlib.nullcontext() if run_spec_code else spec_code_refused()
    request = TargetRequest(spec, compiled, output, run_spec_code)
    try:
        with guard:
            written = write_target(target, request)
    except SpecCodeRefused as exc:
        raise fail(_refusal(target, compiled.spec_code, exc)) from None
    except TargetError as exc:
        raise fail(str(exc), code=2 if exc.usage else 1) from None
    except DataError as exc:  # the data a target packages must load
        raise fail(str(exc)) from None
    _put_back(spec, original, target, output)
    for note in written.notes:
        typer.echo(f"note: {note}", err=True)
    for path in written.paths:
        typer.echo(f"wrote {path}")


def _put_back(spec: Path, original: bytes, target: str, output: Path) -> None:
    """Restore the spec where the target wrote a file over it, and say so."""
    if not spec.is_file() or spec.read_bytes() != original:
        spec.write_bytes(original)
        raise fail(
            f"{spec.name} is also the name of a file `compile --target {target}` writes into"
            f" {output}: the spec was put back; compile into another folder (-o build)",
            code=2,
        )


def _refusal(target: str, code: Sequence[PythonImport], exc: SpecCodeRefused) -> str:
    """What `compile --target TARGET` would have run, where the spec says so, and the flag."""
    from agentspec.spec.imports import render_import

    listed = "".join(f"\n  {render_import(item)}" for item in code) or f"\n  {exc.what}"
    return (
        f"compile --target {target} needs to run the spec's own code, which compile does not"
        f" run unless asked:{listed}\nread that code, then pass --run-spec-code to run it"
        " (docs/security.md)"
    )
