"""The `agentspec` command line.

Start-up stays fast: each command imports what it needs inside its function,
and `validate`, `compile` and `schema` never import torch.
"""

from __future__ import annotations

import glob
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="agentspec",
    help="Define an LLM agent task in one YAML file; check it, compile it, train it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SPEC_SUFFIXES = (".yaml", ".yml")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    github = "github"


def _expand(paths: list[str]) -> list[Path]:
    """Files, directories (searched recursively for *.yaml / *.yml) and globs."""
    found: list[Path] = []
    for raw in paths:
        matches = sorted(glob.glob(raw, recursive=True)) if glob.has_magic(raw) else [raw]
        if not matches:
            raise typer.BadParameter(f"no file matches {raw!r}", param_hint="PATH")
        for match in matches:
            path = Path(match)
            if path.is_dir():
                found += sorted(
                    p for p in path.rglob("*") if p.suffix in SPEC_SUFFIXES and p.is_file()
                )
            elif path.is_file():
                found.append(path)
            else:
                raise typer.BadParameter(f"{raw!r} does not exist", param_hint="PATH")
    return list(dict.fromkeys(found))


@app.command()
def validate(
    paths: Annotated[list[str], typer.Argument(help="Spec files, directories or globs.")],
    output_format: Annotated[
        OutputFormat,
        typer.Option("--format", "-f", help="text, json, or github (Actions annotations)."),
    ] = OutputFormat.text,
    strict: Annotated[bool, typer.Option(help="Treat warnings as errors.")] = False,
) -> None:
    """Check specs without running anything. Exit 0 if valid, 1 if not, 2 on usage errors."""
    from agentspec.compiler.diagnostics import render_github, render_json, render_text
    from agentspec.compiler.frontend import check_file

    files = _expand(paths)
    if not files:
        raise typer.BadParameter("no .yaml or .yml files found", param_hint="PATH")
    results = [check_file(f) for f in files]
    failed = [r for r in results if not r.ok or (strict and r.warnings)]
    diagnostics = [d for r in results for d in r.diagnostics]
    if output_format is OutputFormat.json:
        typer.echo(render_json(diagnostics))
    elif output_format is OutputFormat.github:
        for d in diagnostics:
            typer.echo(render_github(d))
    else:
        sources = {k: v for r in results for k, v in r.sources.items()}
        for d in diagnostics:
            typer.echo(render_text(d, sources), err=False)
            typer.echo("")
        errors = sum(len(r.errors) for r in results)
        warnings = sum(len(r.warnings) for r in results)
        summary = (
            f"{len(results)} spec{'s' if len(results) != 1 else ''} checked: "
            f"{len(results) - len(failed)} valid, {len(failed)} invalid "
            f"({errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''})"
        )
        typer.echo(summary, err=True)
    raise typer.Exit(1 if failed else 0)


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
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output}", err=True)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
