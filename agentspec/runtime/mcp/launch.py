"""Start a stdio MCP server so that agentspec knows its process id.

Run as ``python -I -S launch.py PROGRAM ARGS…`` with the server's stderr as
this process's stderr: it writes ``agentspec-mcp pid N`` there, then becomes
the server (``exec``: the same process, the same id, the same process group).
With the id, agentspec can kill the server's process group itself when the
SDK's own shutdown is cut short (the event loop ending in the middle of it).
Standard library only, and nothing imported but ``os`` and ``sys``: it adds
milliseconds to a server's start.
"""

from __future__ import annotations

import os
import sys

PID_MARKER = "agentspec-mcp pid"


def main(argv: list[str]) -> None:
    os.write(2, f"{PID_MARKER} {os.getpid()}\n".encode())
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:  # no such program, not executable, ...
        os.write(2, f"cannot start {argv[0]!r}: {exc.strerror or exc}\n".encode())
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
