"""MCP tools of an OpenEnv environment (`mcp.NAME: {url: ..., openenv: true}`).

An MCP-style OpenEnv environment (OpenEnv's ``MCPEnvironment``) offers tools
through its step API: ``list_tools`` and ``call_tool`` actions. Its ``/mcp``
route is bare JSON-RPC without the MCP handshake, and it has no reward, so
agentspec talks to it as OpenEnv's own ``MCPToolClient`` does, over the
WebSocket session (``/ws``):

- pinning (`agentspec mcp pin`) sends ``list_tools`` on a fresh session;
- each episode plays one OpenEnv session, opened and reset on its first call
  (with the server's `reset` arguments and, per `reset_from_sample`, fields of
  the episode's sample) and closed when the episode ends (so an OpenEnv
  server's `sessions` is always `episode`);
- a call is one ``call_tool`` step; the model sees the result's text, and the
  step's ``reward`` and ``done`` become the episode's ``env`` facts:
  ``env.reward`` (this step's, summed over its calls), ``env.total_reward`` and
  ``env.done`` (which ends the episode), as for a text-action OpenEnv
  environment (:mod:`agentspec.stdlib.openenv_env`).

A call the environment answers with an ``error`` (an unknown tool, arguments
its tool refuses, an exception) is a tool error (code ``failed``); a server
that cannot be reached is ``unavailable``. None of them ends the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from agentspec.runtime.episode.tools import ToolFailure
from agentspec.runtime.mcp.session import McpError, reason

if TYPE_CHECKING:
    from agentspec.runtime.mcp.server import McpServer

__all__ = ["OpenEnvSession", "call_text", "list_openenv_tools", "record_step"]


def _client(server: McpServer) -> Any:
    try:
        from openenv.core.mcp_client import MCPToolClient
    except ImportError:
        raise McpError(
            "OpenEnv servers need the `openenv-core` package: pip install 'agentspec-rl[openenv]'"
        ) from None
    assert server.url is not None
    return MCPToolClient(base_url=server.url, message_timeout_s=server.timeout)


class OpenEnvSession:
    """One OpenEnv session (an episode) of an MCP-style OpenEnv environment."""

    def __init__(self, server: McpServer, sample: Mapping[str, Any] | None = None) -> None:
        self.server = server
        self.sample = sample or {}
        self._client: Any = None
        self._lock = asyncio.Lock()

    def reset_arguments(self) -> dict[str, Any]:
        """The server's fixed `reset` arguments, and the episode's `reset_from_sample` ones."""
        arguments = dict(self.server.reset)
        for argument, field in self.server.reset_from_sample.items():
            if field not in self.sample:
                raise McpError(f"reset_from_sample.{argument}: the sample has no field {field!r}")
            arguments[argument] = self.sample[field]
        return arguments

    async def client(self) -> Any:
        """The connected, reset client (connected on first use)."""
        async with self._lock:
            if self._client is None:
                arguments = self.reset_arguments()
                client = _client(self.server)
                try:
                    await client.connect()
                    await client.reset(**arguments)
                except Exception as exc:
                    await _close_quietly(client)
                    raise McpError(
                        f"OpenEnv server {self.server.describe()}: {reason(exc)}"
                    ) from None
                self._client = client
            return self._client

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """One ``call_tool`` step: OpenEnv's ``StepResult`` (observation, reward, done)."""
        from openenv.core.env_server.mcp_types import CallToolAction

        client = await self.client()
        return await client.step(CallToolAction(tool_name=name, arguments=arguments))

    def stderr_tail(self) -> str:
        return ""  # a server reached by URL: its stderr is its own

    generation = 0
    """One session per episode: a restart after a timeout always ends this one."""

    async def restart(self, generation: int, why: str) -> None:
        """A call timed out: end the session (the next call connects and resets anew)."""
        await self.close()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await _close_quietly(client)


async def _close_quietly(client: Any) -> None:
    with contextlib.suppress(Exception):  # a connection already gone: nothing left to close
        await client.close()


async def list_openenv_tools(server: McpServer) -> dict[str, dict[str, Any]]:
    """Every tool the environment offers: name → {description, parameters}."""
    client = _client(server)
    try:
        await client.connect()
        tools = await client.list_tools(use_cache=False)
    except Exception as exc:
        raise McpError(f"OpenEnv server {server.describe()}: {reason(exc)}") from None
    finally:
        await _close_quietly(client)
    return {
        tool.name: {"description": tool.description, "parameters": tool.input_schema}
        for tool in tools
    }


def call_text(name: str, result: Any) -> str:
    """What the model sees of a ``call_tool`` step; a :class:`ToolFailure` for an error."""
    observation = result.observation
    error = getattr(observation, "error", None)
    if error is not None:
        raise ToolFailure(f"{name} failed: {error.message}")
    value = getattr(observation, "result", None)
    if isinstance(value, dict) and "content" in value:  # an MCP CallToolResult, as JSON
        texts = [
            block.get("text", "") if block.get("type") == "text" else f"[{block.get('type')}]"
            for block in value.get("content") or []
            if isinstance(block, dict)
        ]
        if value.get("is_error") or value.get("isError"):
            raise ToolFailure("\n".join(texts) or f"{name} failed in the environment")
        if texts:
            return "\n".join(texts)
        value = value.get("structured_content", value.get("data"))
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def record_step(facts: MutableMapping[str, Any], result: Any) -> None:
    """The step's reward and ending, into the episode's ``env`` facts."""
    reward = float(result.reward or 0.0)
    facts["reward"] = facts.get("reward", 0.0) + reward
    facts["total_reward"] = facts.get("total_reward", 0.0) + reward
    facts["done"] = bool(facts.get("done")) or bool(result.done)
