"""The `mcp:` section: MCP servers a spec's tools come from, and their pinned tools."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from agentspec.spec.base import (
    Identifier,
    Section,
)
from agentspec.spec.mcp_limits import MAX_LOG_BYTES, MAX_RESULT_BYTES

__all__ = ["MAX_MCP_SESSIONS", "McpServerSpec", "McpToolSpec"]

MAX_MCP_SESSIONS = 256
"""Largest pool of sessions (server processes) of one MCP server."""


class McpToolSpec(Section):
    """A tool of an MCP server as pinned in the spec (written by `agentspec mcp pin`)."""

    description: str = Field("", description="The server's description of the tool.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="The tool's input JSON Schema (an `object` schema), as the server declares it.",
    )


class McpServerSpec(Section):
    """An MCP server whose tools the agent may call (through the official `mcp` SDK)."""

    command: list[str] | str | None = Field(
        None,
        description="Start the server and talk over stdio: a command line (list or string), run in the spec's folder.",
    )
    url: str | None = Field(
        None,
        description="Or connect to a running server over Streamable HTTP (e.g. `http://127.0.0.1:8000/mcp`).",
        pattern=r"^https?://\S+$",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment variables for a stdio server."
    )
    timeout: float = Field(30.0, gt=0, description="Seconds before one call is abandoned.")
    max_result_bytes: int = Field(
        MAX_RESULT_BYTES,
        ge=1024,
        le=1 << 30,
        description="The most bytes of one message the server sends (a call's result, as JSON): a larger answer fails its call (`too_large`) and is never read whole. Default 1 MiB (1048576). See docs/mcp.md.",
    )
    max_log_bytes: int = Field(
        MAX_LOG_BYTES,
        ge=0,
        le=1 << 40,
        description="The most bytes of a stdio server's stderr kept: of each process (then only its last lines when it ends), and in `RUN_DIR/mcp/NAME.log` for all its processes together. Default 10 MiB (10485760).",
    )
    sessions: Literal["shared", "episode"] | Annotated[int, Field(ge=1, le=MAX_MCP_SESSIONS)] = (
        Field(
            "shared",
            description="How episodes share the server: `shared` (one session, for stdio one process, for all calls), N from 1 to 256 (a pool of N; each call takes an idle one), or `episode` (one per episode, stopped when it ends). See docs/mcp.md.",
        )
    )
    openenv: bool = Field(
        False,
        description="`url` is an OpenEnv environment server (its base URL) that offers MCP tools: each episode plays one OpenEnv session, each call is a `call_tool` step, and the step's reward is `env.reward` (docs/openenv.md).",
    )
    reset: dict[str, Any] = Field(
        default_factory=dict,
        description="With `openenv`: fixed arguments of each episode's OpenEnv `reset`.",
    )
    reset_from_sample: dict[str, Identifier] = Field(
        default_factory=dict,
        description="With `openenv`: reset argument → sample field (e.g. `{seed: seed}`): each episode's `reset` gets its sample's value.",
    )
    include: list[str] | None = Field(
        None, description="The server's tools to use (default: all); pinning keeps only these."
    )
    tools: dict[str, McpToolSpec] | None = Field(
        None,
        description="The pinned tools (name → description and parameters); `agentspec mcp pin` writes them, and `validate` / `compile` read only these.",
    )

    @field_validator("sessions", mode="before")
    @classmethod
    def _session_mode(cls, value: Any) -> Any:
        # One message for every wrong value (the union would give one per branch),
        # and no lax coercion of `true` or "2" into a pool size.
        if value in ("shared", "episode") and isinstance(value, str):
            return value
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and 1 <= value <= MAX_MCP_SESSIONS
        ):
            return value
        raise ValueError(
            f"{value!r} is not a way to share the server: use `shared`, `episode`,"
            f" or a pool size from 1 to {MAX_MCP_SESSIONS}"
        )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of `command` or `url`")
        if self.openenv and self.url is None:
            raise ValueError(
                "an OpenEnv server (`openenv: true`) is reached by `url`, not `command`"
            )
        if (self.reset or self.reset_from_sample) and not self.openenv:
            raise ValueError(
                "`reset` and `reset_from_sample` are for OpenEnv servers (`openenv: true`)"
            )
        return self
