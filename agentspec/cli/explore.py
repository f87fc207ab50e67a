"""`explore`: a bounded search for reward hacks, trivial successes and dead parts of a spec."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentspec.cli.app import OutputFormat, app, fail, report_spec_error
from agentspec.core.presets import MAX_SEED


@app.command()
def explore(
    spec: Annotated[Path, typer.Argument(help="The spec to search.", exists=True, dir_okay=False)],
    samples: Annotated[
        int, typer.Option(min=1, help="How many samples (the first of the data) to play.")
    ] = 8,
    budget: Annotated[
        int,
        typer.Option(
            min=1,
            help="Most episodes the search plays (the random baseline may add one per sample).",
        ),
    ] = 600,
    seconds: Annotated[
        float,
        typer.Option(
            min=0.001, help="Most seconds to search (a safety stop; as tests.explore.seconds)."
        ),
    ] = 40.0,
    depth: Annotated[
        int, typer.Option(min=1, help="Longest sequence breadth-first search enumerates.")
    ] = 4,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of every random choice.")
    ] = 0,
    output_format: Annotated[
        OutputFormat,
        typer.Option("--format", "-f", help="text, json, or github (Actions annotations)."),
    ] = OutputFormat.text,
    strict: Annotated[bool, typer.Option(help="Warnings fail too (exit 1).")] = False,
) -> None:
    """Search a spec's action sequences for loopholes: reward without success, success
    without the work, farmable rewards, dead tools, guards and rewards, no ending.
    Exit 0 when nothing is found; 1 for a loophole, an invalid spec or a search that
    played nothing; 2 on usage errors."""
    from agentspec.core.diagnostics import SpecError
    from agentspec.runtime.commands.explore.explorer import ExploreError, ExploreSettings
    from agentspec.runtime.commands.explore.explorer import explore as run_search
    from agentspec.runtime.commands.explore.report import render
    from agentspec.stdlib.data import DataError

    settings = ExploreSettings(samples, budget, seconds, depth, seed)
    try:
        report = run_search(spec, settings)
    except SpecError as exc:
        raise report_spec_error(exc) from None
    except (ExploreError, DataError) as exc:
        raise fail(str(exc)) from None
    typer.echo(render(report, output_format.value))
    failing = [f for f in report.findings if strict or not f.code.startswith("W")]
    raise typer.Exit(1 if failing else 0)
