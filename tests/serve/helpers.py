"""Servers for the serving tests: a free port, a process until it answers /health."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
