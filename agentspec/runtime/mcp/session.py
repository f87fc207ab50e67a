"""One connection to an MCP server — for a stdio server, one process — restarted when it dies.

A :class:`Session` opens its connection on first use and keeps it open in a
background task (the SDK's contexts belong to one task). When the server's
messages end — its process exited, or the connection closed — the calls in
flight fail with :class:`ServerCrashed`, and the next call starts the server
again. A server that cannot be started fails the calls waiting for it with
:class:`McpError`. Failures in a row back off: after the second, the server
is started again only 0.5 s later, then 1 s, 2 s, … up to 8 s, and calls in
between fail at once with the last failure (:class:`McpError`) instead of
piling up; a call that succeeds resets the count. Both errors quote the last
lines the server wrote on stderr (:mod:`agentspec.runtime.mcp.stderr`).

Every connection task stops its server when it ends: when the session is
closed, and when the event loop ends (``asyncio.run`` cancels the task,
success, error or Ctrl-C alike); the SDK's stdio transport then closes the
server's stdin and, if it does not exit, kills its process group. A
cancellation that arrives in the middle of that shutdown cuts it short, and
the SDK would then wait for good on a server that does not exit (one stuck in
a call): so a watchdog kills the server's process group itself once the task
has been stopping for :data:`KILL_GRACE` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from agentspec.runtime.mcp.launch import TOO_LARGE, too_large_message
from agentspec.runtime.mcp.stderr import StderrCapture, quote_tail

if TYPE_CHECKING:
    from agentspec.runtime.mcp.server import McpServer

__all__ = ["McpError", "ResultTooLarge", "ServerCrashed", "Session", "reason", "sdk"]

BACKOFF_FIRST = 0.25
"""Doubled per failure in a row: the wait before starting a failing server again."""
BACKOFF_MAX = 8.0
KILL_GRACE = 6.0
"""Seconds a stopping connection may take before its server's process group is killed
(longer than the SDK's own escalation: stdin closed, 2 s, SIGTERM, 2 s, SIGKILL)."""
REAP_LIMIT = 5.0
"""Seconds a connection's end waits for its killed server process to be gone."""


class McpError(RuntimeError):
    """The server could not be started, reached, or listed."""


class ServerCrashed(RuntimeError):
    """The server stopped (or its connection closed) while a call was in flight."""


class ResultTooLarge(RuntimeError):
    """The call's answer was larger than the server's ``max_result_bytes`` and was
    dropped unread (by the launcher over stdio, by the transport over HTTP)."""


def sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise McpError(
            "MCP tools need the `mcp` package: pip install 'agentspec-rl[mcp]'"
        ) from None
    return mcp


def reason(exc: BaseException) -> str:
    """The innermost message of an exception (task groups wrap them in groups)."""
    while getattr(exc, "exceptions", None):  # an ExceptionGroup
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(exc).__name__}: {exc}"


def backoff(failures: int) -> float:
    """Seconds before starting again a server that failed ``failures`` times in a row:
    none after one failure (a crash), then 0.5 s, 1 s, 2 s, … up to :data:`BACKOFF_MAX`."""
    if failures <= 1:
        return 0.0
    return min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (failures - 1))


class Session:
    """A connection to ``server`` that is (re)started on demand; see the module docstring."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self._connection: _Connection | None = None
        self._starts = 0  # connections opened so far: the current one's number
        self._failures = 0  # in a row: reset by a call that succeeds
        self._retry_at = 0.0
        self.last_failure = ""

    @property
    def generation(self) -> int:
        """Which start of the server the session is on (a call notes it before it runs,
        so that a restart after its timeout stops that start and never a newer one)."""
        return self._starts

    def _current(self) -> _Connection:
        """The live connection, or a new one; :class:`McpError` while backing off."""
        connection = self._connection
        if connection is None or connection.ended:
            wait = self._retry_at - asyncio.get_running_loop().time()
            if wait > 0:
                raise McpError(
                    f"MCP server {self.server.describe()} failed {self._failures} times in a"
                    f" row; it is started again in {wait:.1f} s. Last time: {self.last_failure}"
                )
            self._starts += 1
            connection = self._connection = _Connection(self, self._starts)
        return connection

    async def client(self) -> Any:
        """The connected ``mcp.Client``, starting the server if needed (:class:`McpError`)."""
        # Shielded: one caller's time limit must not cancel a start others wait for.
        return await asyncio.shield(self._current().ready)

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """``tools/call`` on this session; :class:`ServerCrashed` if the server goes away."""
        connection = self._current()
        client = await asyncio.shield(connection.ready)
        try:
            # A second of slack: within a tool run, the spec's timeout fires first and
            # reports `timeout`; the SDK's own bound only stops a stray call.
            result = await client.call_tool(
                name, arguments, read_timeout_seconds=self.server.timeout + 1.0
            )
        except Exception as exc:
            too_large = _too_large(exc, self.server.max_result_bytes)
            if too_large is not None:  # the connection is fine: only this answer is gone
                raise ResultTooLarge(too_large) from None
            if connection.ended or _connection_lost(exc):
                message = connection.crash_message(exc)
                connection.lost(message)
                raise ServerCrashed(message) from None
            raise
        self._failures = 0
        return result

    def failed(self, why: str) -> None:
        """A connection ended without being asked to, or could not be opened."""
        self._failures += 1
        self._retry_at = asyncio.get_running_loop().time() + backoff(self._failures)
        self.last_failure = why

    def stderr_tail(self) -> str:
        """The last stderr lines of the current server process, as an error's ending."""
        return self._connection.stderr_tail() if self._connection is not None else ""

    async def restart(self, generation: int, why: str) -> None:
        """Stop start ``generation`` of the server, if it is still the current one (a call
        on it timed out: the server may be wedged on it); the next call starts a new one.
        The other calls in flight on it fail as for a crash, with ``why``."""
        connection = self._connection
        if connection is not None and connection.generation == generation:
            await self.close(why)

    async def close(self, why: str = "") -> None:
        """Stop the server and wait until it is stopped; the next call starts a new one.

        The wait goes on even if the caller is cancelled meanwhile (Ctrl-C): a stop
        left running when the event loop ends would be cancelled in the middle of the
        SDK's shutdown, which then waits for good on a server that does not exit.
        """
        connection, self._connection = self._connection, None
        if connection is None:
            return
        connection.stop(why)
        try:
            await asyncio.wait([connection.task])  # unlike gather, never cancels the task
        except asyncio.CancelledError:
            await asyncio.wait([connection.task])
            raise


class _Connection:
    """One start of the server, held open by a background task until it ends or is stopped."""

    def __init__(self, session: Session, generation: int) -> None:
        loop = asyncio.get_running_loop()
        self.session = session
        self.generation = generation
        self.stop_reason = ""  # why it was stopped while calls were in flight, if it was
        self.ready: asyncio.Future[Any] = loop.create_future()
        self.ready.add_done_callback(_retrieve)  # nobody may be left waiting to read it
        self.ended = False  # the server's messages ended, or it was stopped: use a new one
        self.stopping = False  # asked to stop (not a failure)
        self._counted = False
        self._stop = asyncio.Event()
        self.capture: StderrCapture | None = None
        self.task = loop.create_task(self._hold())
        self._stopping_since: float | None = None
        self._watchdog = loop.call_later(1.0, self._watch)

    async def _hold(self) -> None:
        server = self.session.server
        try:
            self.capture = server.stderr_capture()
            transport = _watched(server.transport(self.capture), self._on_end)
            async with sdk().Client(transport, read_timeout_seconds=server.timeout) as client:
                self.ready.set_result(client)
                await self._stop.wait()  # stop() or the end of the server's messages
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a server that fails to start fails the calls waiting for it
            exited = self._stop.is_set() and not self.stopping  # its output ended first
            if "timed out" in reason(exc):  # the client gave up and closed the stream
                problem = f"did not answer within its timeout ({server.timeout:g} s): {reason(exc)}"
            elif exited:
                problem = "exited before it answered"
            else:
                problem = f"failed: {reason(exc)}"
            message = f"MCP server {server.describe()} {problem}{self.stderr_tail()}"
            self.lost(message)
            if not self.ready.done():
                self.ready.set_exception(McpError(message))
        finally:
            self.ended = True
            self._watchdog.cancel()
            if not self.ready.done():
                self.ready.set_exception(McpError(f"MCP server {server.describe()} was stopped"))
            pid = self.capture.pid() if self.capture is not None else None
            if self.capture is not None:
                self.capture.close()
            if pid is not None:
                await _reaped(pid)

    def _watch(self) -> None:
        """Once a second while the task lives: kill the server if stopping takes too long."""
        if self.task.done():
            return
        loop = asyncio.get_running_loop()
        cancelling = getattr(self.task, "cancelling", lambda: 0)()  # Python 3.11+
        if self.ended or cancelling:
            if self._stopping_since is None:
                self._stopping_since = loop.time()
            elif loop.time() - self._stopping_since >= KILL_GRACE:
                self._kill()
        self._watchdog = loop.call_later(1.0, self._watch)

    def _kill(self) -> None:
        if self.capture is not None:
            _kill_group(self.capture.pid())

    def _on_end(self) -> None:
        """The server's messages ended: called before the calls in flight hear of it."""
        if self.ready.done():  # it was running (a failed start is counted where it fails)
            self.lost(f"MCP server {self.session.server.describe()} stopped{self.stderr_tail()}")
        self.ended = True
        self._stop.set()

    def lost(self, why: str) -> None:
        """The connection is gone (once per connection; a requested stop is no failure)."""
        self.ended = True
        if not self._counted and not self.stopping:
            self._counted = True
            self.session.failed(why)

    def stop(self, why: str = "") -> None:
        self.stop_reason = why
        self.stopping = True
        self.ended = True
        if self.ready.done():
            self._stop.set()  # leave the client's context normally: the server is stopped
        else:
            self.task.cancel()  # still starting (the watchdog sees to the process)

    def stderr_tail(self) -> str:
        return quote_tail(self.capture.tail()) if self.capture is not None else ""

    def crash_message(self, exc: BaseException) -> str:
        name = self.session.server.describe()
        if self.stop_reason:
            return f"MCP server {name} {self.stop_reason}; it is started again for the next call"
        return (
            f"MCP server {name} stopped during the call ({reason(exc)}); it is started again"
            f" for the next call{self.stderr_tail()}"
        )


def _kill_group(pid: int | None) -> None:
    killpg = getattr(os, "killpg", None)  # POSIX: the server leads its process group
    if pid is not None and killpg is not None:
        with contextlib.suppress(OSError):  # gone already, or not ours to signal
            killpg(pid, signal.SIGKILL)


async def _reaped(pid: int) -> None:
    """Kill the server if it outlived its connection, and wait until it is gone.

    When the SDK's shutdown runs to its end the process is already gone. When a
    cancellation cut that shutdown short (Ctrl-C, an error in the run), the process is
    still running; if it exited only after the event loop had closed, the garbage
    collector would close its transport on the closed loop and print "Event loop is
    closed" tracebacks on the way out. So the server is killed now and waited for while
    the loop still runs, which reaps it and closes its pipes. A cancellation during
    this wait is held back until the end (the wait is short and bounded).
    """
    if not hasattr(os, "killpg"):  # not POSIX: no process groups, and no kill(pid, 0) probe
        return
    if not _running(pid):
        return
    _kill_group(pid)
    deadline = asyncio.get_running_loop().time() + REAP_LIMIT
    cancelled = False
    while _running(pid) and asyncio.get_running_loop().time() < deadline:
        try:
            await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


def _running(pid: int) -> bool:
    """Whether the process exists (a zombie not reaped yet counts: its pipes may be open)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, not ours to signal
        return True
    return True


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # marks it retrieved: no "never retrieved" noise at exit


_SSE_EVENT_TOO_LARGE = "Server-sent event exceeded the"  # the SDK's words (httpx2's)


def _too_large(exc: BaseException, limit: int) -> str | None:
    """The message of a call whose answer was dropped for its size, else None. Over
    stdio the launcher answers with its own error code; over HTTP the SDK reports a JSON
    body cut by our transport as a parse error, and an event over its own bound as a
    closed stream."""
    if not isinstance(exc, sdk().MCPError):
        return None
    message = str(exc)
    if exc.code == TOO_LARGE:
        return message
    if "max_result_bytes" in message and "dropped unread" in message:
        return message[message.index("the server's answer") :]
    if _SSE_EVENT_TOO_LARGE in message:
        return too_large_message(limit)
    return None


def _connection_lost(exc: BaseException) -> bool:
    """Whether a call failed because the connection is gone (not because of what it asked)."""
    mcp = sdk()
    closed = getattr(mcp.types, "CONNECTION_CLOSED", -32000)
    if isinstance(exc, mcp.MCPError):
        return exc.code == closed
    import anyio

    lost: tuple[type[BaseException], ...] = (
        OSError,
        EOFError,
        anyio.ClosedResourceError,
        anyio.BrokenResourceError,
        anyio.EndOfStream,
    )
    with contextlib.suppress(ImportError):
        import httpx

        lost += (httpx.TransportError,)
    return isinstance(exc, lost)


@contextlib.asynccontextmanager
async def _watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[Any]:
    """``transport``'s streams, calling ``on_end`` as soon as the server's messages
    end — before the session hears of it, so that no call is sent to a dead server."""
    import anyio

    async with transport as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def relay() -> None:
            try:
                async for item in read_stream:
                    await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # our side closed first: a stop, not an end of the server
            finally:
                on_end()
                send.close()

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            try:
                yield receive, write_stream
            finally:
                group.cancel_scope.cancel()
