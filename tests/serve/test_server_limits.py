"""No client of a served spec locks the others out (docs/openenv.md, "Limits and
access"): sessions created over HTTP and idle WebSockets are closed after the idle
timeout, a flood of unread resets does not stall another client, bodies past the
limit are refused unread, and a token, when given, guards every route but /health."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from fastapi.testclient import TestClient
from openenv.core.generic_client import GenericEnvClient
from starlette.testclient import WebSocketDenialResponse
from typer.testing import CliRunner

from agentspec.cli import app as cli
from agentspec.runtime.serve.limits import ServerLimits
from agentspec.runtime.serve.openenv_server import build_app
from agentspec.runtime.serve.spec import ServedSpec

from .helpers import InProcessServer

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "calculator.yaml"
RESET = json.dumps({"type": "reset", "data": {"index": 1}})


@pytest.fixture(scope="module")
def calculator() -> ServedSpec:
    return ServedSpec.load(SPEC)


@pytest.fixture
def two_slots(calculator: ServedSpec) -> Iterator[InProcessServer]:
    """A server of two sessions that closes a session idle for 1 s."""
    limits = ServerLimits(idle_timeout_s=1.0)
    with InProcessServer(build_app(calculator, max_sessions=2, limits=limits)) as server:
        yield server


def ws_url(server: InProcessServer) -> str:
    return server.url.replace("http://", "ws://") + "/ws"


async def first_reply(server: InProcessServer) -> dict[str, Any]:
    """What a new client gets for a reset: an observation, or the capacity error."""
    async with websockets.connect(ws_url(server)) as ws:
        # a full server answers and closes at once: its answer is read below
        with contextlib.suppress(websockets.ConnectionClosed):
            await ws.send(RESET)
        return dict(json.loads(await asyncio.wait_for(ws.recv(), 30)))


def create_session(http: httpx.Client) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}
    return dict(http.post("/mcp", json=request).json())


def test_sessions_created_over_http_take_slots_until_they_expire(
    two_slots: InProcessServer,
) -> None:
    """64 `openenv/session/create` over HTTP took every slot until a restart."""
    with httpx.Client(base_url=two_slots.url) as http:
        created = [create_session(http) for _ in range(2)]
        refused = create_session(http)
        assert all("session_id" in c["result"] for c in created), created
        assert "error" in refused  # they count: both slots are taken
        assert asyncio.run(first_reply(two_slots))["data"]["code"] == "CAPACITY_REACHED"
        time.sleep(1.5)
        # the next request finds them expired: their slots are free again
        assert asyncio.run(first_reply(two_slots))["type"] == "observation"
        again = create_session(http)
    assert "session_id" in again["result"], again


def test_idle_websockets_are_closed_and_their_slots_freed(two_slots: InProcessServer) -> None:
    """Clients that answer pings but send nothing held every slot for as long as they
    stayed connected."""

    async def run() -> tuple[Any, ...]:
        idle = [await websockets.connect(ws_url(two_slots)) for _ in range(2)]
        for ws in idle:
            await ws.send(RESET)
            await ws.recv()
        turned_away = await first_reply(two_slots)
        await asyncio.sleep(1.5)
        # bounded waits: a server that never closes them fails here instead of hanging
        notices = [json.loads(await asyncio.wait_for(ws.recv(), 10)) for ws in idle]
        for ws in idle:
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 10)
        codes = [ws.close_code for ws in idle]
        return turned_away, notices, codes, await first_reply(two_slots)

    turned_away, notices, codes, served = asyncio.run(run())
    assert turned_away["data"]["code"] == "CAPACITY_REACHED"
    assert [n["data"]["code"] for n in notices] == ["CLOSED", "CLOSED"]
    assert "no message for 1 s" in notices[0]["data"]["message"]
    assert codes == [1001, 1001]
    assert served["type"] == "observation"


def test_a_flood_of_unread_resets_does_not_stall_another_client(
    calculator: ServedSpec,
) -> None:
    """20 clients sending resets without reading the replies kept a normal client from
    even connecting for minutes: each took the event loop for a burst of resets."""

    async def flood(url: str, stop: asyncio.Event) -> None:
        ws = await websockets.connect(url, max_size=None)
        try:
            while not stop.is_set():
                try:
                    await asyncio.wait_for(ws.send(RESET), 0.5)
                except asyncio.TimeoutError:
                    await asyncio.sleep(0.05)  # the server stopped reading: it waits for us
        finally:
            ws.transport.abort()

    async def normal_episode(url: str) -> float:
        started = time.monotonic()
        async with websockets.connect(url, open_timeout=60) as ws:
            await ws.send(RESET)
            assert json.loads(await ws.recv())["type"] == "observation"
            await ws.send(json.dumps({"type": "step", "data": {"text": "<answer>1</answer>"}}))
            assert json.loads(await ws.recv())["data"]["done"] is True
        return time.monotonic() - started

    async def run(url: str) -> float:
        stop = asyncio.Event()
        flooders = [asyncio.create_task(flood(url, stop)) for _ in range(20)]
        await asyncio.sleep(2)
        try:
            return await asyncio.wait_for(normal_episode(url), 60)
        finally:
            stop.set()
            await asyncio.gather(*flooders, return_exceptions=True)

    with InProcessServer(build_app(calculator, max_sessions=32)) as server:
        took = asyncio.run(run(ws_url(server)))
    assert took < 10, f"a normal episode took {took:.1f} s beside the flood"


def test_bodies_past_the_limit_are_refused_unread(calculator: ServedSpec) -> None:
    """No limit: 8 bodies of 100 MB took 1.5 GB."""
    limits = ServerLimits(max_message_bytes=1 << 20)
    with InProcessServer(build_app(calculator, max_sessions=2, limits=limits)) as server:
        # a declared 100 MB body is answered before a byte of it is sent
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
            raw.sendall(
                b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000000\r\n\r\n"
            )
            answer = b""
            while chunk := raw.recv(4096):  # the server closes: the rest is never read
                answer += chunk
            head = answer.decode()
        assert head.startswith("HTTP/1.1 413"), head
        assert "100,000,000 bytes" in head and "--max-message-bytes" in head

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it comes
            yield b'{"sample_id": "'
            for _ in range(40):
                yield b"x" * 65536

        with httpx.Client(base_url=server.url, timeout=30) as http:
            streamed = http.post("/reset", content=chunks())
            fine = http.post("/reset", json={"index": 1})
        assert streamed.status_code == 413
        assert fine.status_code == 200

        async def websocket() -> list[dict[str, Any]]:
            async with websockets.connect(ws_url(server), max_size=None) as ws:
                replies = []
                for frame in (RESET, json.dumps({"type": "step", "data": {"text": "x" * 2**21}})):
                    await ws.send(frame)
                    replies.append(json.loads(await ws.recv()))
                await ws.send(json.dumps({"type": "state"}))
                replies.append(json.loads(await ws.recv()))
                return replies

        started, refused, state = asyncio.run(websocket())
    assert started["type"] == "observation"
    assert refused["data"]["code"] == "MESSAGE_TOO_LARGE"
    assert "2,097,190 bytes" in refused["data"]["message"]
    assert state["data"]["sample_id"] == "train-1"  # the connection and its episode go on


def test_a_token_guards_every_route_but_health(calculator: ServedSpec) -> None:
    client = TestClient(build_app(calculator, limits=ServerLimits(token="s3cret")))
    basic = base64.b64encode(b"anyone:s3cret").decode()

    assert client.get("/health").status_code == 200
    assert client.get("/calculator/splits").status_code == 401
    assert client.post("/reset", json={}).status_code == 401
    wrong = {"Authorization": "Bearer guess"}
    assert client.get("/calculator/splits", headers=wrong).status_code == 401
    for header in ("Bearer s3cret", f"Basic {basic}"):
        assert (
            client.get("/calculator/splits", headers={"Authorization": header}).status_code == 200
        )
    with pytest.raises(WebSocketDenialResponse), client.websocket_connect("/ws"):
        pass
    with client.websocket_connect("/ws", headers={"Authorization": "Bearer s3cret"}) as ws:
        ws.send_text(RESET)
        assert ws.receive_json()["type"] == "observation"


def test_an_openenv_client_gives_the_token_in_its_url(
    calculator: ServedSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSPEC_SERVE_TOKEN", "s3cret")  # build_app's default limits read it

    async def episode(url: str) -> Any:
        async with GenericEnvClient(base_url=url) as env:
            return (await env.reset(index=1)).observation["sample_id"]

    with InProcessServer(build_app(calculator, max_sessions=2)) as server:
        with_token = server.url.replace("http://", "http://agentspec:s3cret@")
        assert asyncio.run(episode(with_token)) == "train-1"
        with pytest.raises(ConnectionError):
            asyncio.run(episode(server.url))


def test_binding_beyond_loopback_without_a_token_is_warned_about() -> None:
    with socket.create_server(("0.0.0.0", 0)) as taken:
        port = taken.getsockname()[1]
        args = ["serve", str(SPEC), "--openenv", "--host", "0.0.0.0", "--port", str(port)]
        result = CliRunner().invoke(cli, args, env={"AGENTSPEC_SERVE_TOKEN": ""})
        empty = CliRunner().invoke(cli, [*args, "--token", " "])
    assert result.exit_code == 2, result.output  # the port is taken: it never serves
    assert "warning: --host 0.0.0.0 without --token" in result.output
    assert empty.exit_code == 2 and "--token is empty" in empty.output
