"""A unit-converter MCP server over stdio, written with the official SDK (for the tests).

Run as `python units_server.py` (MCP on stdin/stdout) or `python units_server.py --http
PORT` (Streamable HTTP at http://127.0.0.1:PORT/mcp). Tools: `convert`
(a length between units; an unknown unit is an error result) `add` (two numbers) and
`wait` (sleeps; for timeouts).
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

METRES = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "in": 0.0254, "ft": 0.3048}

server = MCPServer("units")


@server.tool()
def convert(value: float, source: str, target: str) -> str:
    """Convert a length from one unit to another (mm, cm, m, km, in, ft)."""
    for unit in (source, target):
        if unit not in METRES:
            raise ToolError(f"unknown unit {unit!r}; known: {', '.join(METRES)}")
    result = value * METRES[source] / METRES[target]
    return f"{round(result, 6):g}"


@server.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return f"{a + b:g}"


@server.tool()
async def wait(seconds: float) -> str:
    """Wait for the given seconds (to test call timeouts)."""
    await anyio.sleep(seconds)
    return "waited"


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--http":  # Streamable HTTP at /mcp on this port
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
