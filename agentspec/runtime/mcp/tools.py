"""Tools served by an MCP server, called through the official `mcp` SDK (`agentspec-rl[mcp]`).

A spec's `mcp:` server becomes one :class:`McpServer` in the generated module
and each of its pinned tools a :class:`McpTool` subclass. A call validates its
arguments against the pinned schema (as every tool does), takes a session of
the server (its `sessions` setting: shared, a pool, or one per episode),
starts the server if needed, then sends ``tools/call`` with the server's
``timeout``. What the model sees, and the tool error code:

- the result's text blocks, joined by newlines (other blocks as ``[image]``,
  ``[audio]``, ``[resource URI]``; structured content as JSON when there is no
  text); `tool:NAME` rewards read it as ``result``;
- a result flagged ``isError``, or a protocol error (e.g. an unknown tool):
  the server's message, code ``failed``;
- the server stopped during the call (it crashed, or its connection closed):
  code ``crashed``, with the last lines of its stderr; the next call starts it
  again (with a backoff, :mod:`agentspec.runtime.mcp.session`);
- the server cannot be started or reached: code ``unavailable``, with the
  last lines of its stderr;
- a call longer than ``timeout``: code ``timeout`` (its server is restarted);
- an answer larger than the server's ``max_result_bytes``, dropped unread by the
  launcher (:mod:`agentspec.runtime.mcp.launch`): code ``too_large``.

None of them ends the run: each is a tool error on its step.
"""

from __future__ import annotations

import asyncio
import json
from contextvars import ContextVar
from typing import Any, ClassVar

from agentspec.runtime.episode.tools import BaseTool, ToolContext, ToolFailure, ToolResult
from agentspec.runtime.mcp.openenv import call_text, list_openenv_tools, record_step
from agentspec.runtime.mcp.server import McpServer
from agentspec.runtime.mcp.session import (
    McpError,
    ResultTooLarge,
    ServerCrashed,
    Session,
    reason,
)

__all__ = ["McpError", "McpServer", "McpTool", "list_server_tools", "result_text"]

# The session a call runs on, from `McpTool.run` (which leases it) to `execute`.
_CALL_SESSION: ContextVar[Session | None] = ContextVar("agentspec_mcp_session", default=None)


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
        ctx = context or ToolContext()
        try:
            refused = bool(self.validate(args))
        except Exception:  # input the schema check chokes on: BaseTool.run reports it
            refused = True
        if refused:  # refused by the pinned schema: the server is not needed
            return await super().run(args, ctx)
        async with self.server.session(ctx.env) as session:
            # Start the server before the call's time limit starts: the spec's `timeout`
            # bounds the call, not the server's start-up.
            try:
                await session.client()
            except McpError as exc:
                return self._error(f"{self.name} failed: {exc}", "unavailable")
            started = session.generation  # the server process this call runs on
            token = _CALL_SESSION.set(session)
            try:
                result = await super().run(args, ctx)
            finally:
                _CALL_SESSION.reset(token)
            if result.code == "timeout":  # the server may be wedged: it is restarted
                await self.server.after_timeout(session, started)
        return result

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str:
        session = _CALL_SESSION.get()
        if session is None:  # called without run(): no session was leased
            raise ToolFailure(f"{self.name} must be called through run()", code="unavailable")
        unsendable = unsendable_reason(args)
        if unsendable is not None:  # sent, it would break the connection other episodes share
            raise ToolFailure(f"{self.name}: its arguments cannot be sent: {unsendable}")
        if self.server.openenv:
            return await self._call_openenv(session, args, context)
        try:
            result = await session.call(self.name, args)
        except McpError as exc:
            raise ToolFailure(f"{self.name} failed: {exc}", code="unavailable") from None
        except ServerCrashed as exc:
            raise ToolFailure(f"{self.name} failed: {exc}", code="crashed") from None
        except ResultTooLarge as exc:
            raise ToolFailure(f"{self.name} failed: {exc}", code="too_large") from None
        except (asyncio.TimeoutError, TimeoutError):
            raise
        except Exception as exc:  # protocol errors (unknown tool, bad params) are the call's
            raise ToolFailure(f"{self.name} failed on the MCP server: {reason(exc)}") from None
        text = result_text(result)
        if result.is_error:
            raise ToolFailure(text or f"{self.name} failed on the MCP server")
        env = context.env
        if hasattr(env, "on_tool_success"):  # a spec env: `tool:NAME` rewards see args, result
            scope = env.scope(args=args)
            scope.result = text
            env.on_tool_success(self.name, scope)
        return text

    async def _call_openenv(self, session: Any, args: dict[str, Any], context: ToolContext) -> str:
        """One `call_tool` step of the episode's OpenEnv session; its reward and ending
        become the episode's `env` facts (see :mod:`agentspec.runtime.mcp.openenv`)."""
        try:
            result = await session.call(self.name, args)
        except McpError as exc:
            raise ToolFailure(f"{self.name} failed: {exc}", code="unavailable") from None
        except (asyncio.TimeoutError, TimeoutError):
            raise
        except Exception as exc:  # the connection closed, a reply OpenEnv's client refused
            message = f"{self.name} failed: OpenEnv server {self.server.describe()}: {reason(exc)}"
            raise ToolFailure(message, code="crashed") from None
        env = context.env
        facts = getattr(env, "env_facts", None)
        if facts is not None:  # a spec env: `env.reward`, `env.total_reward`, `env.done`
            record_step(facts, result)
        text = call_text(self.name, result)
        if hasattr(env, "on_tool_success"):
            scope = env.scope(args=args)
            scope.result = text
            env.on_tool_success(self.name, scope)
        return text

    async def end_episode(self, context: ToolContext) -> None:
        await self.server.end_episode(context.env)


async def list_server_tools(server: McpServer) -> dict[str, dict[str, Any]]:
    """Every tool the server offers: name → {description, parameters} (its input schema)."""
    if server.openenv:
        return await list_openenv_tools(server)
    session = Session(server)
    try:
        client = await session.client()
        tools: list[Any] = []
        cursor = None
        for _ in range(100):  # a server that pages forever cannot hang the pin
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
    except McpError:
        raise
    except Exception as exc:
        message = f"MCP server {server.describe()}: {reason(exc)}"
        raise McpError(message + session.stderr_tail()) from None
    finally:
        await session.close()
    return {
        tool.name: {"description": tool.description or "", "parameters": tool.input_schema}
        for tool in tools
    }


def unsendable_reason(args: dict[str, Any]) -> str | None:
    """Why ``args`` cannot travel to a server as UTF-8 JSON (a lone surrogate a Python
    caller left in them, a non-finite number), else None."""
    try:
        json.dumps(args, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, TypeError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        return reason(exc)
    return None
