"""`init` (a starter spec) and `mcp pin` (a spec's MCP tools, pinned into the file)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentspec.cli.app import app, fail

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


@app.command()
def init(
    name: Annotated[str, typer.Argument(help="Task name; the spec is written to NAME.yaml.")],
    template: Annotated[str, typer.Option(help="tools, state-machine or environment.")] = "tools",
    directory: Annotated[Path, typer.Option("--dir", help="Where to write the spec.")] = Path("."),
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starter spec that validates and runs with the oracle out of the box."""
    from agentspec.init_templates import InitError, write_starter

    try:
        path = write_starter(name, template, directory, force=force)
    except InitError as exc:
        raise fail(str(exc), code=2) from None
    typer.echo(f"wrote {path}")
    typer.echo(f"next: agentspec validate {path} && agentspec run {path} --policy oracle -n 5")
