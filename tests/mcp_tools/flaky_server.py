"""An MCP server that misbehaves on purpose, written with the official SDK (for the tests of
crashes, stalls, start failures and clean-up). Run as `python flaky_server.py` (stdio).

Tools: `add` (two numbers), `hang` (blocks the whole server: a synchronous sleep
on its event loop, as a database stuck on a huge query does), `big` (a result of
`size` characters) and `chatty` (writes `size` bytes of log lines on stderr).

Options: `--database PATH` must name an existing file (a missing one is a start
failure, reported on stderr as real servers do); an unknown option is argparse's
usage error; `--http PORT` serves Streamable HTTP at http://127.0.0.1:PORT/mcp
instead of stdio, answering with server-sent events, or with plain JSON bodies
under `--json-response`. Environment variables:

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


@server.tool()
async def big(size: int) -> str:
    """Answer with a text of `size` characters."""
    return "A" * size


@server.tool()
async def chatty(size: int) -> str:
    """Write `size` bytes of log lines on stderr, then answer."""
    line = "flaky: a chatty log line, as some servers write for every request\n"
    sys.stderr.write(line * (size // len(line)))
    sys.stderr.write("flaky: the last chatty line\n")
    sys.stderr.flush()
    return "done"


def main() -> None:
    parser = argparse.ArgumentParser(prog="flaky_server.py")
    parser.add_argument("--database", help="a file that must exist")
    parser.add_argument("--http", type=int, metavar="PORT", help="Streamable HTTP on this port")
    parser.add_argument("--json-response", action="store_true", help="answers as JSON bodies")
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
    if options.http:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=options.http,
            json_response=options.json_response,
        )
    else:
        server.run()


if __name__ == "__main__":
    main()
