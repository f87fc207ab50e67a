"""The served session's limits, as defaults: their own module so that the CLI can show
them in `--help` without importing the server (asyncio and the rest cost every command's
start-up)."""

from __future__ import annotations

__all__ = [
    "DEFAULT_IDLE_TIMEOUT_S",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_SEND_BUFFER_BYTES",
    "TOKEN_ENV",
]

DEFAULT_IDLE_TIMEOUT_S = 300.0
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20  # 1 MiB: a 32,768-token response is ~130 KB
DEFAULT_SEND_BUFFER_BYTES = 1 << 16  # 64 KiB: a first observation is a few KB
TOKEN_ENV = "AGENTSPEC_SERVE_TOKEN"
"""The environment variable a shared token is read from (`--token` wins)."""
