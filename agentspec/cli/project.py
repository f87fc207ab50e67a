"""`init` (a starter spec) and `mcp pin` (a spec's MCP tools, pinned into the file)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentspec.cli.app import app, fail, output_path, report_spec_error

mcp_app = typer.Typer(help="MCP servers a spec takes tools from.", no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("pin")
def mcp_pin(
    spec: Annotated[Path, typer.Argument(help="The spec.", exists=True, dir_okay=False)],
    check: Annotated[
        bool, typer.Option(help="Write nothing; exit 1 if the pins differ from the servers.")
    ] = False,
) -> None:
    """Read the tools of the spec's MCP servers into its `mcp.NAME.tools` pins."""
    from agentspec.runtime.mcp.pin import PinError, pin_spec

    _require_readable_spec(spec)
    try:
        report = pin_spec(spec, check=check)
    except PinError as exc:
        raise fail(str(exc)) from None
    for server, tools in report.tools.items():
        typer.echo(f"mcp.{server}: {len(tools)} tools ({', '.join(tools) or 'none'})")
    for change in report.changes:
        typer.echo(f"  {change}")
    if check and report.changes:
        raise fail(f"{spec}: the MCP pins are out of date; run agentspec mcp pin {spec}")
    if not report.changes:
        typer.echo("pins are up to date")
    elif not check:
        typer.echo(f"pinned into {spec}")


def _require_readable_spec(spec: Path) -> None:
    """The spec's own errors first, as every command reports them: a file that cannot
    be read, is empty or is not valid YAML, or breaks the schema. What pinning
    fixes (E702, tools not pinned) and the checker's other findings do not stop it."""
    from agentspec.core.diagnostics import SpecError
    from agentspec.spec.load import load_spec, read_source

    source, problem = read_source(spec)
    diagnostics = [problem] if problem is not None else []
    if source is not None and problem is None:
        diagnostics = load_spec(source)[1]
    errors = [d for d in diagnostics if d.is_error]
    if errors:
        sources = {source.path: source} if source is not None else {}
        raise report_spec_error(SpecError(errors, sources))


@app.command()
def init(
    name: Annotated[str, typer.Argument(help="Task name; the spec is written to NAME.yaml.")],
    template: Annotated[str, typer.Option(help="tools, state-machine or environment.")] = "tools",
    directory: Annotated[Path, typer.Option("--dir", help="Where to write the spec.")] = Path("."),
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starter spec that validates and runs with the oracle out of the box."""
    from agentspec.init_templates import InitError, write_starter

    output_path(directory, "--dir", folder=True)
    try:
        path = write_starter(name, template, directory, force=force)
    except InitError as exc:
        raise fail(str(exc), code=2) from None
    typer.echo(f"wrote {path}")
    typer.echo(f"next: agentspec validate {path} && agentspec run {path} --policy oracle -n 5")
