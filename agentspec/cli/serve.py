"""`serve`: a spec as an environment server other trainers connect to."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentspec.cli.app import app, fail, report_spec_error
from agentspec.cli.extras import require
from agentspec.runtime.serve.defaults import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_SEND_BUFFER_BYTES,
    TOKEN_ENV,
)

if TYPE_CHECKING:
    from agentspec.runtime.serve.limits import ServerLimits
    from agentspec.runtime.serve.spec import ServedSpec


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
    idle_timeout: Annotated[
        float,
        typer.Option(
            min=0.001,
            help="Seconds a session may stay idle (no message, or a reply not taken; pings"
            " do not count) before it is closed and its slot freed.",
        ),
    ] = DEFAULT_IDLE_TIMEOUT_S,
    max_message_bytes: Annotated[
        int,
        typer.Option(min=1024, help="The largest request body or WebSocket message taken."),
    ] = DEFAULT_MAX_MESSAGE_BYTES,
    send_buffer_bytes: Annotated[
        int,
        typer.Option(
            min=4096,
            help="Bytes of a connection's replies held unread before the server waits for"
            " the client to read.",
        ),
    ] = DEFAULT_SEND_BUFFER_BYTES,
    token: Annotated[
        str | None,
        typer.Option(
            envvar=TOKEN_ENV,
            show_default=False,
            help="A shared token every route but /health needs (Authorization: Bearer"
            " TOKEN, or http://user:TOKEN@host as an OpenEnv client's URL). Give it when"
            " binding beyond 127.0.0.1.",
        ),
    ] = None,
) -> None:
    """Serve a spec's episodes to another trainer (TRL, verifiers, SkyRL, ...): see docs/openenv.md."""
    if not openenv:
        raise fail("say what to serve the spec as: --openenv", code=2)
    require("agentspec serve --openenv", "openenv")
    limits = _limits(host, port, idle_timeout, max_message_bytes, send_buffer_bytes, token)
    served = _load(spec)
    _check_port(host, port)
    _run(served, host, port, max_sessions, limits)


def _limits(
    host: str,
    port: int,
    idle_timeout: float,
    max_message_bytes: int,
    send_buffer_bytes: int,
    token: str | None,
) -> ServerLimits:
    """The server's limits; a warning where the port is open beyond this machine."""
    from agentspec.runtime.serve.limits import ServerLimits, is_loopback

    if token is not None and not token.strip():
        raise fail(f"--token is empty (or {TOKEN_ENV} is set to nothing): give a token", code=2)
    limits = ServerLimits(
        idle_timeout_s=idle_timeout,
        max_message_bytes=max_message_bytes,
        send_buffer_bytes=send_buffer_bytes,
        token=token,
    )
    if token is None and not is_loopback(host):
        typer.echo(
            f"warning: --host {host} without --token: anyone who can reach port {port} can"
            " play episodes, read the tasks and run the spec's tools (see docs/security.md)",
            err=True,
        )
    return limits


def _load(spec: Path) -> ServedSpec:
    """The spec and every split's samples, loaded here so that an error is one line."""
    from agentspec.core.diagnostics import SpecError
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
    return served


def _run(served: ServedSpec, host: str, port: int, max_sessions: int, limits: ServerLimits) -> None:
    """Build the OpenEnv app and serve it until stopped."""
    import uvicorn

    from agentspec.runtime.serve.limits import bounded_websocket_protocol
    from agentspec.runtime.serve.openenv_server import build_app

    application = build_app(served, max_sessions=max_sessions, limits=limits)
    typer.echo(
        f"serving {served.name} as an OpenEnv environment on http://{host}:{port} "
        f"(WebSocket /ws, at most {max_sessions} sessions, idle ones closed after"
        f" {limits.idle_timeout_s:g} s{', token required' if limits.token else ''})",
        err=True,
    )
    uvicorn.run(
        application,
        host=host,
        port=port,
        log_level="warning",
        ws=bounded_websocket_protocol(limits.send_buffer_bytes),
        ws_max_size=limits.max_message_bytes,  # a larger frame closes the connection (1009) unread
    )


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
