"""A spec's `mcp.NAME` server at run time: how to reach it, and which sessions calls use.

`sessions` chooses how episodes share the server (per event loop, i.e. per
rollout):

- ``"shared"`` (default): one session — for stdio, one process — for every
  call; calls run concurrently over it. Cheapest; a server that blocks on one
  call blocks them all.
- ``N`` (an integer): a pool of N sessions; each call takes an idle one and
  waits while all N are busy, so one stuck call holds one session.
- ``"episode"``: a session per episode, started on its first call and stopped
  when the episode ends; nothing the server keeps leaks between episodes.

A call that times out restarts the server it ran on, which may be wedged on
it (a blocking call, a huge query): with a pool or per-episode sessions that
is the call's own session; with ``shared`` it is the one server, and the other
calls in flight on it fail as for a crash (left running, it would time out
every later call).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from agentspec.runtime.mcp.session import Session, sdk
from agentspec.runtime.mcp.stderr import StderrCapture
from agentspec.spec.mcp_limits import MAX_LOG_BYTES, MAX_RESULT_BYTES
from agentspec.stdlib.user import check_spec_code_allowed

__all__ = ["McpServer"]

LAUNCHER = Path(__file__).resolve().with_name("launch.py")


class McpServer:
    """How to reach one MCP server (a spec's `mcp.NAME`), and its sessions per event loop.

    Args:
        config: ``name`` (the spec's name for it, used in messages and log
            files); ``command`` (argument list, run in ``base_dir``) or ``url``
            (Streamable HTTP; with ``openenv``, an OpenEnv environment's base URL:
            :mod:`agentspec.runtime.mcp.openenv`); ``env`` (extra environment variables of a stdio
            server); ``timeout`` (seconds per call); ``sessions`` (``"shared"``,
            ``"episode"`` or a pool size); ``max_result_bytes`` (one message the
            server sends: a larger answer fails its call, ``too_large``, unread) and
            ``max_log_bytes`` (its stderr kept): :mod:`agentspec.runtime.mcp.launch`,
            :mod:`agentspec.runtime.mcp.stderr`.
        base_dir: the spec's folder, or a callable giving it when the server
            starts (a generated module learns its folder after import); None
            means the working directory.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        base_dir: str | os.PathLike[str] | Callable[[], str | os.PathLike[str] | None] | None = ".",
    ) -> None:
        self.command: list[str] | None = list(config["command"]) if config.get("command") else None
        self.url: str | None = config.get("url")
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of `command` or `url`")
        self.name = str(config.get("name") or "server")
        self.env = {str(k): str(v) for k, v in (config.get("env") or {}).items()}
        self.timeout = float(config.get("timeout", 30.0))
        self.max_result_bytes = int(config.get("max_result_bytes", MAX_RESULT_BYTES))
        self.max_log_bytes = int(config.get("max_log_bytes", MAX_LOG_BYTES))
        # An OpenEnv environment keeps an episode's state in its session: one per episode.
        self.openenv = bool(config.get("openenv", False))
        if self.openenv and self.url is None:
            raise ValueError("an OpenEnv server is reached by `url`")
        self.sessions: str | int = "episode" if self.openenv else config.get("sessions", "shared")
        self.reset: dict[str, Any] = dict(config.get("reset") or {})
        self.reset_from_sample: dict[str, str] = dict(config.get("reset_from_sample") or {})
        if not (self.sessions in ("shared", "episode") or _pool_size(self.sessions)):
            raise ValueError(
                f"sessions must be 'shared', 'episode' or a pool size, not {self.sessions!r}"
            )
        self._base_dir = base_dir
        self._loops: dict[asyncio.AbstractEventLoop, _Sessions] = {}

    @property
    def base_dir(self) -> Path:
        folder = self._base_dir() if callable(self._base_dir) else self._base_dir
        return Path(folder if folder is not None else ".")

    def describe(self) -> str:
        """How messages name the server: `'units' (python units_server.py)`."""
        where = self.url if self.url is not None else " ".join(self.command or [])
        return f"{self.name!r} ({where})"

    def stderr_capture(self) -> StderrCapture | None:
        """Where the next process's stderr goes (None for a server reached by URL)."""
        if not self.command:
            return None
        return StderrCapture(self.name, " ".join(self.command), self.max_log_bytes)

    def transport(self, capture: StderrCapture | None) -> Any:
        """The SDK transport to the server: Streamable HTTP, or a stdio process."""
        mcp = sdk()
        if self.url is not None:
            from agentspec.runtime.mcp.http import bounded_http_client

            return bounded_http_client(self.url, self.max_result_bytes)
        assert self.command is not None and capture is not None
        check_spec_code_allowed(" ".join(self.command))
        program = self.command[0]
        if program in ("python", "python3"):  # the interpreter (and packages) agentspec runs on
            program = sys.executable
        command, args = program, self.command[1:]
        if os.name == "posix":  # the launcher tells its pid, bounds its output, and execs
            limits = [str(self.max_result_bytes), str(self.max_log_bytes)]
            command, args = sys.executable, ["-I", "-S", str(LAUNCHER), *limits, program, *args]
        parameters = mcp.StdioServerParameters(
            command=command, args=args, env={**os.environ, **self.env}, cwd=str(self.base_dir)
        )
        return mcp.stdio_client(parameters, errlog=capture.file)

    @contextlib.asynccontextmanager
    async def session(self, episode: object | None) -> AsyncIterator[Session]:
        """The session one call of ``episode`` (an environment, or None) runs on."""
        async with self._on_this_loop().lease(episode) as session:
            yield session

    async def after_timeout(self, session: Session, generation: int) -> None:
        """A call on start ``generation`` of ``session``'s server timed out: stop that
        server (it may be wedged on the call; the next call starts a new one). Other calls
        in flight on it (``shared``) fail as ``crashed``."""
        why = (
            f"was restarted during the call: another call on it timed out after"
            f" {self.timeout:g} s, and the server may be stuck on it"
        )
        await session.restart(generation, why)

    async def end_episode(self, episode: object) -> None:
        """Stop the session of ``episode`` (per-episode sessions); nothing otherwise."""
        sessions = self._loops.get(asyncio.get_running_loop())
        if sessions is not None:
            await sessions.end(episode)

    def _on_this_loop(self) -> _Sessions:
        loop = asyncio.get_running_loop()
        sessions = self._loops.get(loop)
        if sessions is None:
            self._loops = {lp: s for lp, s in self._loops.items() if not lp.is_closed()}
            sessions = self._loops[loop] = _Sessions(self)
        return sessions


def _pool_size(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 0


class _Sessions:
    """The sessions of one server on one event loop, leased to calls as `sessions` says."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.shared = Session(server)
        self.per_episode: dict[int, Session] = {}
        size = _pool_size(server.sessions)
        self.idle: asyncio.Queue[Session] = asyncio.Queue()
        for _ in range(size):
            self.idle.put_nowait(Session(server))

    @contextlib.asynccontextmanager
    async def lease(self, episode: object | None) -> AsyncIterator[Session]:
        mode = self.server.sessions
        if mode == "shared":
            yield self.shared
        elif mode == "episode":
            key = id(episode)
            session = self.per_episode.get(key)
            if session is None:
                session = self.per_episode[key] = self.new_session(episode)
            yield session
        else:
            session = await self.idle.get()
            try:
                yield session
            finally:
                self.idle.put_nowait(session)

    def new_session(self, episode: object | None) -> Session:
        if self.server.openenv:  # the episode's OpenEnv session, reset for its sample
            from agentspec.runtime.mcp.openenv import OpenEnvSession

            sample = getattr(episode, "sample", None)
            return OpenEnvSession(self.server, sample)  # type: ignore[return-value]  # same face
        return Session(self.server)

    async def end(self, episode: object) -> None:
        session = self.per_episode.pop(id(episode), None)
        if session is not None:
            await session.close()
