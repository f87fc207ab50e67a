"""`serve`: a spec as an environment server other trainers connect to."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentspec.cli.app import app, fail, report_spec_error
from agentspec.cli.extras import require


@app.command()
def serve(
    spec: Annotated[Path, typer.Argument(help="The spec to serve.", exists=True, dir_okay=False)],
    openenv: Annotated[
        bool,
        typer.Option("--openenv", help="Serve it as an OpenEnv environment (WebSocket sessions)."),
    ] = False,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    max_sessions: Annotated[
        int, typer.Option(min=1, help="Concurrent sessions (one episode each) at most.")
    ] = 64,
) -> None:
    """Serve a spec's episodes to another trainer (TRL, verifiers, SkyRL, ...): see docs/openenv.md."""
    if not openenv:
        raise fail("say what to serve the spec as: --openenv", code=2)
    require("agentspec serve --openenv", "openenv")
    import uvicorn

    from agentspec.diagnostics import SpecError
    from agentspec.runtime.serve.openenv_server import build_app
    from agentspec.runtime.serve.spec import ServedSpec
    from agentspec.stdlib.data import DataError

    try:
        served = ServedSpec.load(spec)
        for split in served.splits():  # here, so that a data error is one line
            served.samples(split)
    except SpecError as exc:
        raise report_spec_error(exc) from None
    except DataError as exc:
        raise fail(str(exc)) from None
    except Exception as exc:  # a generator's own failure (a missing file, say): one line
        raise fail(f"cannot load the spec's data: {type(exc).__name__}: {exc}") from None
    _check_port(host, port)
    application = build_app(served, max_sessions=max_sessions)
    typer.echo(
        f"serving {served.name} as an OpenEnv environment on http://{host}:{port} "
        f"(WebSocket /ws, at most {max_sessions} sessions)",
        err=True,
    )
    uvicorn.run(application, host=host, port=port, log_level="warning")


def _check_port(host: str, port: int) -> None:
    """Refuse a port that cannot be listened on before saying "serving" (uvicorn would
    print its own error after that line)."""
    import socket

    try:
        socket.create_server((host, port)).close()
    except OSError as exc:
        raise fail(
            f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})", code=2
        ) from None
