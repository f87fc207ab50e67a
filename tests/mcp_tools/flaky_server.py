"""An MCP server that misbehaves on purpose, written with the official SDK (for the tests of
crashes, stalls, start failures and clean-up). Run as `python flaky_server.py` (stdio).

Tools: `add` (two numbers) and `hang` (blocks the whole server: a synchronous sleep
on its event loop, as a database stuck on a huge query does).

Options: `--database PATH` must name an existing file (a missing one is a start
failure, reported on stderr as real servers do); an unknown option is argparse's
usage error. Environment variables:

- ``FLAKY_CRASH_ON=N``: exit (status 3) when `add` is called for the Nth time in
  this process, without answering;
- ``FLAKY_CRASH_IN_FLIGHT=K``: exit once K calls of `add` are in flight together;
- ``FLAKY_CRASH_MARK=PATH``: crash only while PATH does not exist (it is created
  on crashing), so that the restarted server behaves;
- ``FLAKY_PIDS=PATH``: append this process's id to PATH at start.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("flaky")
calls = 0
in_flight = 0
all_in = anyio.Event()


def _armed() -> bool:
    """Whether this process may still crash (see FLAKY_CRASH_MARK)."""
    mark = os.environ.get("FLAKY_CRASH_MARK")
    return not (mark and Path(mark).exists())


def _crash(why: str) -> None:
    mark = os.environ.get("FLAKY_CRASH_MARK")
    if mark:
        Path(mark).touch()
    print(f"flaky: {why}; exiting", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
async def add(a: float, b: float) -> str:
    """Add two numbers."""
    global calls, in_flight
    calls += 1
    if calls == int(os.environ.get("FLAKY_CRASH_ON", "0")) and _armed():
        _crash(f"call {calls} of add")
    wanted = int(os.environ.get("FLAKY_CRASH_IN_FLIGHT", "0"))
    if wanted and _armed():
        in_flight += 1
        if in_flight == wanted:
            all_in.set()
        await all_in.wait()  # every one of the K calls is in flight when it crashes
        _crash(f"{in_flight} calls in flight")
    return f"{a + b:g}"


@server.tool()
async def hang() -> str:
    """Never answer, and block every other call of this server meanwhile."""
    time.sleep(3600)
    return "woke up"


def main() -> None:
    parser = argparse.ArgumentParser(prog="flaky_server.py")
    parser.add_argument("--database", help="a file that must exist")
    options = parser.parse_args()
    if options.database and not Path(options.database).is_file():
        print(
            f"flaky: cannot open the database {options.database!r}: no such file", file=sys.stderr
        )
        sys.exit(1)
    pids = os.environ.get("FLAKY_PIDS")
    if pids:
        with open(pids, "a") as f:
            f.write(f"{os.getpid()}\n")
    print("flaky: ready (this line goes to stderr, not to agentspec's output)", file=sys.stderr)
    server.run()


if __name__ == "__main__":
    main()
