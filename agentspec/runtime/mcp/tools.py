"""Tools served by an MCP server, called through the official `mcp` SDK (`agentspec[mcp]`).

A spec's `mcp:` server becomes one :class:`McpServer` in the generated module
and each of its pinned tools a :class:`McpTool` subclass. A call validates its
arguments against the pinned schema (as every tool does), then goes to the
server as ``tools/call`` with the server's ``timeout``. What the model sees:

- the result's text blocks, joined by newlines (other blocks as ``[image]``,
  ``[audio]``, ``[resource URI]``; structured content as JSON when there is no
  text);
- a result flagged ``isError`` fails the call with the server's text (a tool
  error, code ``failed``), and so does a protocol error; a server that cannot be
  started or reached fails every call of the episode with the reason (code
  ``exception``); a slow call is a ``timeout``. None of them ends the run.

Connections: one per server and event loop, opened on the first call and shared
by every episode on that loop (a stdio server is one subprocess), held by a
background task and closed when the loop ends (``asyncio.run`` cancels it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from agentspec.runtime.episode.tools import BaseTool, ToolContext, ToolFailure, ToolResult

__all__ = ["McpError", "McpServer", "McpTool", "list_server_tools", "result_text"]


class McpError(RuntimeError):
    """The server could not be started, reached, or listed."""


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise McpError("MCP tools need the `mcp` package: pip install 'agentspec[mcp]'") from None
    return mcp


class McpServer:
    """How to reach one MCP server (a spec's `mcp.NAME`); connections per event loop.

    Args:
        config: ``command`` (argument list, run in ``base_dir``) or ``url``
            (Streamable HTTP); ``env`` (extra environment variables of a stdio
            server); ``timeout`` (seconds per call).
        base_dir: the spec's folder, or a callable giving it when the server
            starts (a generated module learns its folder after import); None
            means the working directory.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        base_dir: str | os.PathLike[str] | Callable[[], str | os.PathLike[str] | None] | None = ".",
    ) -> None:
        self.command: list[str] | None = list(config["command"]) if config.get("command") else None
        self.url: str | None = config.get("url")
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of `command` or `url`")
        self.env = {str(k): str(v) for k, v in (config.get("env") or {}).items()}
        self.timeout = float(config.get("timeout", 30.0))
        self._base_dir = base_dir
        self._connections: dict[asyncio.AbstractEventLoop, _Connection] = {}

    @property
    def base_dir(self) -> Path:
        folder = self._base_dir() if callable(self._base_dir) else self._base_dir
        return Path(folder if folder is not None else ".")

    def describe(self) -> str:
        return self.url if self.url is not None else " ".join(self.command or [])

    def target(self) -> Any:
        """What `mcp.Client` connects to: the URL, or a stdio transport running the command."""
        mcp = _sdk()
        if self.url is not None:
            return self.url
        assert self.command is not None
        program = self.command[0]
        if program in ("python", "python3"):  # the interpreter (and packages) agentspec runs on
            program = sys.executable
        parameters = mcp.StdioServerParameters(
            command=program,
            args=self.command[1:],
            env={**os.environ, **self.env},
            cwd=str(self.base_dir),
        )
        return mcp.stdio_client(parameters, errlog=_server_log())

    async def client(self) -> Any:
        """This event loop's connected client (opened on first use)."""
        loop = asyncio.get_running_loop()
        connection = self._connections.get(loop)
        if connection is None:
            self._connections = {lp: c for lp, c in self._connections.items() if not lp.is_closed()}
            connection = self._connections[loop] = _Connection(self)
        return await asyncio.shield(connection.ready)

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        client = await self.client()
        # A second of slack: within a tool run, the spec's timeout (BaseTool.run) fires
        # first and reports `timeout`; the SDK's own bound only stops a stray call.
        return await client.call_tool(name, arguments, read_timeout_seconds=self.timeout + 1.0)


class _Connection:
    """A client held open by a background task (the SDK's contexts belong to one task)."""

    def __init__(self, server: McpServer) -> None:
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[Any] = loop.create_future()
        self.task = loop.create_task(self._hold(server))

    async def _hold(self, server: McpServer) -> None:
        try:
            mcp = _sdk()
            async with mcp.Client(server.target(), read_timeout_seconds=server.timeout) as client:
                self.ready.set_result(client)
                await asyncio.Event().wait()  # until the loop ends and cancels this task
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a server that fails to start fails its calls
            if not self.ready.done():
                self.ready.set_exception(
                    McpError(f"MCP server {server.describe()!r}: {_reason(exc)}")
                )


def _server_log() -> Any:
    """Where a stdio server's stderr goes: ours when it is a real file (a captured
    stream, as under a test runner, has no descriptor to hand to the process)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (OSError, ValueError, AttributeError):
            continue
    return subprocess.DEVNULL


def _reason(exc: BaseException) -> str:
    """The innermost message of an exception (task groups wrap them in groups)."""
    while getattr(exc, "exceptions", None):  # an ExceptionGroup
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(exc).__name__}: {exc}"


def result_text(result: Any) -> str:
    """What the model sees of a ``CallToolResult``."""
    parts = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            parts.append(f"[resource {getattr(block.resource, 'uri', '')}]")
        elif kind == "resource_link":
            parts.append(f"[resource {getattr(block, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'content'}]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


class McpTool(BaseTool):
    """A tool that runs on an MCP server. Generated subclasses set `name`,
    `description`, `parameters` (the pins), `timeout` and `server`."""

    server: ClassVar[McpServer]

    async def run(self, args: dict[str, Any], context: ToolContext | None = None) -> ToolResult:
        # Connect (start a stdio server) before the call's time limit starts: the
        # spec's `timeout` bounds the call, not the server's start-up.
        with contextlib.suppress(McpError):  # execute() reports it as the call's error
            await self.server.client()
        return await super().run(args, context)

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
        try:
            result = await self.server.call(self.name, args)
        except McpError:
            raise
        except Exception as exc:  # protocol errors (unknown tool, bad params) are the call's
            if isinstance(exc, asyncio.TimeoutError | TimeoutError):
                raise
            raise ToolFailure(f"{self.name} failed on the MCP server: {_reason(exc)}") from None
        text = result_text(result)
        if result.is_error:
            raise ToolFailure(text or f"{self.name} failed on the MCP server")
        env = context.env
        if hasattr(env, "on_tool_success"):  # a spec env: `tool:NAME` rewards see args, result
            scope = env.scope(args=args)
            scope.result = text
            env.on_tool_success(self.name, scope)
        return text


async def list_server_tools(server: McpServer) -> dict[str, dict[str, Any]]:
    """Every tool the server offers: name → {description, parameters} (its input schema)."""
    mcp = _sdk()
    try:
        async with mcp.Client(server.target(), read_timeout_seconds=server.timeout) as client:
            tools: list[Any] = []
            cursor = None
            for _ in range(100):  # a server that pages forever cannot hang the pin
                page = await client.list_tools(cursor=cursor)
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    break
    except Exception as exc:
        raise McpError(f"MCP server {server.describe()!r}: {_reason(exc)}") from None
    return {
        tool.name: {"description": tool.description or "", "parameters": tool.input_schema}
        for tool in tools
    }
