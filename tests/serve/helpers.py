"""Servers for the serving tests: a free port, a process until it answers /health."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A port to start a server on, below the kernel's range of ephemeral ports.

    A port that ``bind(0)`` hands out is free only until the server binds it; in
    between, any outgoing connection on the machine (Ray, pip, another test's client)
    may take it as its local port, and the server fails with EADDRINUSE. Ports below
    the ephemeral range go only to explicit binds; Ray's worker ports end at 19999."""
    low = _ephemeral_range_start()
    draw = random.Random()  # pytest's workers each draw their own
    for _ in range(200):
        port = draw.randrange(20000, low) if low > 21000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError("no free port below the ephemeral range")


def _ephemeral_range_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0  # unknown: let the kernel choose


def checkout_env() -> dict[str, str]:
    """The environment with this checkout first on the import path."""
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}


@contextmanager
def serving(
    arguments: Sequence[str], port: int, cwd: Path | None = None, python: Path | None = None
) -> Iterator[str]:
    """`python -m ARGUMENTS` in a process until it answers `GET /health`; its URL.
    `python`: another environment's interpreter (default this one)."""
    # stderr goes to a file, not a pipe nobody drains: a server that logs a lot (OpenEnv
    # logs a traceback per closed WebSocket) would block on a full pipe.
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed when the server is stopped)
    process = subprocess.Popen(
        [str(python or sys.executable), "-m", *arguments],
        cwd=cwd,
        env=checkout_env(),
        stdout=subprocess.DEVNULL,
        stderr=log,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{' '.join(arguments)} exited: {log.read()}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{' '.join(arguments)} did not answer in 180 s")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


class InProcessServer:
    """`build_app` served by uvicorn in a thread of this process: `agentspec serve`'s
    app without a process of its own (each of those imports OpenEnv and gradio: ~8 s of
    CPU), and a test can count the asyncio tasks of the server's own event loop."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.loop: asyncio.AbstractEventLoop | None = None
        app.router.on_startup.append(self._started)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    async def _started(self) -> None:
        self.loop = asyncio.get_running_loop()

    def __enter__(self) -> InProcessServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health").status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the server did not start")

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def tasks(self) -> int:
        """The server loop's pending tasks (this count's own task not included)."""
        assert self.loop is not None

        async def count() -> int:
            return len(asyncio.all_tasks()) - 1

        return asyncio.run_coroutine_threadsafe(count(), self.loop).result(timeout=10)

    def quiet_tasks(self, seconds: float = 5.0) -> int:
        """The task count once it has not changed for 0.3 s: what the server runs at
        rest, without the tail of an earlier test's closing connection."""
        deadline = time.monotonic() + seconds
        last, since = self.tasks(), time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - since < 0.3:
            time.sleep(0.05)
            if (n := self.tasks()) != last:
                last, since = n, time.monotonic()
        return last

    def settled_tasks(self, baseline: int, seconds: float = 10.0) -> int:
        """The task count once it is back at ``baseline`` or below (a connection of an
        earlier test may still have been closing when the baseline was taken), or
        whatever it is after ``seconds``: above the baseline, a task was left behind."""
        deadline = time.monotonic() + seconds
        while (n := self.tasks()) > baseline and time.monotonic() < deadline:
            time.sleep(0.05)
        return n


def agentspec_serve(spec: Path, port: int, max_sessions: int = 8) -> list[str]:
    """The arguments of `agentspec serve SPEC --openenv` on `port`."""
    return [
        "agentspec.cli", "serve", str(spec), "--openenv",
        "--port", str(port), "--max-sessions", str(max_sessions),
    ]  # fmt: skip


def side_venvs() -> Any:
    """benchmarks/side_venvs.py: the venvs of their own (TRL, openenv 0.10, verifiers)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "side_venvs", ROOT / "benchmarks" / "side_venvs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
