"""The Typer application and what its commands share: path expansion, errors, tables."""

from __future__ import annotations

import glob
from enum import Enum
from pathlib import Path
from typing import Any

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


def expand_paths(paths: list[str]) -> list[Path]:
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


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def print_summary(title: str, summary: Any) -> None:
    """The per-metric table of `run` and `eval` (a `RolloutSummary`)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in summary.rows():
        table.add_row(name, value)
    Console().print(table)


def report_spec_error(exc: Exception) -> typer.Exit:
    from agentspec.diagnostics import SpecError, render_text

    assert isinstance(exc, SpecError)
    for d in exc.diagnostics:
        typer.echo(render_text(d, exc.sources), err=True)
        typer.echo("", err=True)
    return typer.Exit(1)
