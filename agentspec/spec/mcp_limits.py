"""The defaults of a spec's `mcp.NAME` size limits: the language documents them (its
schema and reference) and the runtime enforces them, which imports nothing else of the
spec's model for it."""

from __future__ import annotations

__all__ = ["MAX_LOG_BYTES", "MAX_RESULT_BYTES"]

MAX_RESULT_BYTES = 1_048_576
"""The most bytes of one message a server sends (a call's result as JSON-RPC): a larger
one fails its call (`too_large`) and is never read whole."""
MAX_LOG_BYTES = 10_485_760
"""The most bytes of a server's stderr kept: per process, and in `RUN_DIR/mcp/NAME.log`
for all its processes together."""
