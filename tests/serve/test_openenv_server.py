"""The OpenEnv server of a spec, driven through OpenEnv's own client: isolation under
concurrency, hostile clients, the Task API and the stateless HTTP routes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openenv  # noqa: F401 (the openenv extra installs it: a missing install fails)
import pytest
import websockets
from openenv.core.generic_client import GenericEnvClient

from agentspec.runtime.serve.openenv_server import build_app
from agentspec.runtime.serve.spec import ServedSpec

from .helpers import InProcessServer

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 16


@pytest.fixture(scope="module")
def calculator() -> ServedSpec:
    served = ServedSpec.load(ROOT / "specs" / "calculator.yaml")
    served.samples("test")
    return served


@pytest.fixture(scope="module")
def server(calculator: ServedSpec) -> Iterator[InProcessServer]:
    with InProcessServer(build_app(calculator, max_sessions=SESSIONS)) as running:
        yield running


def ws_url(server: InProcessServer) -> str:
    return server.url.replace("http://", "ws://") + "/ws"


def test_16_concurrent_sessions_each_see_only_their_own_sample(
    server: InProcessServer, calculator: ServedSpec
) -> None:
    baseline = server.quiet_tasks()
    samples = calculator.samples("test")

    async def episode(i: int) -> tuple[Any, ...]:
        index = 10 + i
        sample = samples[index]
        async with GenericEnvClient(base_url=server.url) as env:
            first = await env.reset(split="test", index=index)
            call = {"name": "calculator", "arguments": {"expression": sample["expression"]}}
            mid = await env.step({"text": "", "tool_calls": [call]})
            # half the sessions answer right, half wrong: each must get its own reward
            answer = sample["answer"] if i % 2 == 0 else sample["answer"] + 1
            last = await env.step({"text": f"<answer>{answer}</answer>"})
            state = await env.state()
        return index, first, mid, last, state

    results = asyncio.run(_gather([episode(i) for i in range(SESSIONS)]))
    for index, first, mid, last, state in results:
        sample = samples[index]
        right = (index - 10) % 2 == 0
        assert first.observation["sample_id"] == f"test-{index}"
        assert first.observation["messages"][-1]["content"] == sample["question"]
        assert mid.observation["text"] == f"<tool_response>\n{sample['answer']}\n</tool_response>"
        assert last.done and last.reward == (1.0 if right else 0.0)
        assert last.observation["rewards"] == {"correct": 1.0 if right else 0.0, "malformed": 0.0}
        assert last.observation["success"] is right
        assert state["sample_id"] == f"test-{index}" and state["step_count"] == 2
    assert server.settled_tasks(baseline) <= baseline


async def _gather(coroutines: list[Any]) -> list[Any]:
    return list(await asyncio.gather(*coroutines))


def test_a_session_past_the_limit_is_refused_and_the_others_go_on(server: InProcessServer) -> None:
    async def crowd() -> tuple[list[Any], dict[str, Any]]:
        clients = [GenericEnvClient(base_url=server.url) for _ in range(SESSIONS)]
        for client in clients:
            await client.connect()
            await client.reset(index=0)
        async with websockets.connect(ws_url(server)) as extra:
            refused = json.loads(await extra.recv())  # said as soon as it connects
        steps = [await c.step({"text": "<answer>0</answer>"}) for c in clients]
        for client in clients:
            await client.close()
        return steps, refused

    baseline = server.quiet_tasks()
    steps, refused = asyncio.run(crowd())
    assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
    assert refused["data"]["max_sessions"] == SESSIONS
    assert all(step.done for step in steps)
    assert server.settled_tasks(baseline) <= baseline


def test_hostile_clients_get_error_messages_and_the_server_keeps_serving(
    server: InProcessServer,
) -> None:
    async def hostile() -> list[dict[str, Any]]:
        replies = []
        async with websockets.connect(ws_url(server)) as ws:

            async def send(message: Any) -> dict[str, Any]:
                await ws.send(message if isinstance(message, str) else json.dumps(message))
                reply: dict[str, Any] = json.loads(await ws.recv())
                replies.append(reply)
                return reply

            await send({"type": "step", "data": {"text": "before any reset"}})
            await send({"type": "reset", "data": {"index": 0}})
            await send({"type": "step", "data": {"txt": "unknown field"}})
            await send({"type": "step", "data": {"text": 42}})
            await send({"type": "step", "data": {"text": "", "tool_calls": [{"nme": "x"}]}})
            await send("{not json")
            await send({"type": "reset", "data": {"split": "nope"}})
            await send({"type": "reset", "data": {"colour": "red"}})
            await send({"type": "step", "data": {"text": "<tool_call>{</tool_call>"}})
            await send({"type": "reset", "data": {"index": 5}})  # a reset mid-episode
            await send({"type": "step", "data": {"text": "<answer>0</answer>"}})
            await send({"type": "step", "data": {"text": "after done"}})
            await send({"type": "reset", "data": {"index": 2}})
        return replies

    baseline = server.quiet_tasks()
    (
        not_started,
        reset,
        unknown,
        wrong_type,
        bad_call,
        not_json,
        bad_split,
        bad_reset,
        parse_error,
        again,
        done,
        after_done,
        still_serving,
    ) = asyncio.run(hostile())
    assert not_started["data"]["observation"]["termination"] == "not_started"
    assert reset["type"] == "observation"
    for reply in (unknown, wrong_type, bad_call, not_json, bad_split, bad_reset, after_done):
        assert reply["type"] == "error", reply
    assert "extra" in json.dumps(unknown["data"]["errors"]).lower()
    assert "unknown split 'nope'" in bad_split["data"]["message"]
    assert "unknown reset field(s) colour" in bad_reset["data"]["message"]
    assert parse_error["data"]["observation"]["rewards"]["malformed"] == -0.2
    assert again["data"]["observation"]["sample_id"] == "train-5"
    assert again["data"]["observation"]["step_index"] == 0
    assert done["data"]["done"] is True
    assert "the episode is over" in after_done["data"]["message"]
    assert still_serving["data"]["observation"]["sample_id"] == "train-2"
    assert server.settled_tasks(baseline) <= baseline


def test_a_client_that_disconnects_mid_episode_leaves_nothing_behind(
    server: InProcessServer,
) -> None:
    async def vanish() -> None:
        ws = await websockets.connect(ws_url(server))
        await ws.send(json.dumps({"type": "reset", "data": {"index": 3}}))
        await ws.recv()
        await ws.send(json.dumps({"type": "step", "data": {"text": "<tool_call>{</tool_call>"}}))
        await ws.recv()
        ws.transport.abort()  # no close frame: the connection just drops

    baseline = server.quiet_tasks()
    for _ in range(3):
        asyncio.run(vanish())
    assert server.settled_tasks(baseline) <= baseline

    async def still_serving() -> Any:
        async with GenericEnvClient(base_url=server.url) as env:
            return await env.reset(index=4)

    assert asyncio.run(still_serving()).observation["sample_id"] == "train-4"


def test_a_client_that_leaves_before_its_reply_is_no_server_error(
    server: InProcessServer,
) -> None:
    # the reply to a long step went to a closed socket: starlette's
    # `WebSocketDisconnected` reached uvicorn, which logged a 70-line traceback each time
    import logging

    errors: list[str] = []
    handler = logging.Handler(level=logging.ERROR)
    handler.emit = lambda record: errors.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)

    async def leave_mid_step() -> None:
        ws = await websockets.connect(ws_url(server), max_size=None)
        await ws.send(json.dumps({"type": "reset", "data": {"index": 5}}))
        await ws.recv()
        await ws.send(json.dumps({"type": "step", "data": {"text": "c" * (4 << 20)}}))
        ws.transport.abort()
        await asyncio.sleep(1.5)  # the step finishes and its reply finds the socket gone

    baseline = server.quiet_tasks()
    try:
        for _ in range(2):
            asyncio.run(leave_mid_step())
        assert server.settled_tasks(baseline) <= baseline
    finally:
        logger.removeHandler(handler)
    assert errors == []


def test_the_stateless_http_routes_answer_without_a_500(server: InProcessServer) -> None:
    baseline = server.quiet_tasks()
    with httpx.Client(base_url=server.url) as http:
        answers = {
            "reset": http.post("/reset", json={"index": 1}),
            "step": http.post("/step", json={"action": {"text": "<answer>1</answer>"}}),
            "bad step": http.post("/step", json={"action": {"txt": "x"}}),
            "bad reset": http.post("/reset", json={"split": "nope"}),
            "state": http.get("/state"),
            "schema": http.get("/schema"),
            "metadata": http.get("/metadata"),
            "health": http.get("/health"),
            "splits": http.get("/calculator/splits"),
            "num_tasks": http.post("/calculator/num_tasks", json={"split": "test"}),
            "task": http.post("/calculator/task", json={"split": "test", "index": 3}),
            "range": http.post("/calculator/task_range", json={"split": "train", "stop": 2}),
            "tasks": http.post("/calculator/tasks", json={"split": "train"}),
            "bad index": http.post("/calculator/task", json={"split": "test", "index": -5}),
            "bad split": http.post("/calculator/num_tasks", json={"split": "dev"}),
        }
    assert {name: r.status_code for name, r in answers.items() if r.status_code >= 500} == {}
    assert answers["reset"].json()["observation"]["sample_id"] == "train-1"
    assert answers["step"].json()["observation"]["termination"] == "not_started"
    assert answers["bad step"].status_code == 422
    assert answers["bad reset"].status_code == 400
    assert answers["schema"].json()["action"]["required"] == ["text"]
    assert answers["metadata"].json()["name"] == "calculator"
    assert answers["splits"].json() == [
        {"name": "train", "type": "train"},
        {"name": "test", "type": "test"},
    ]
    assert answers["num_tasks"].json() == {"num_tasks": 100_000}
    assert answers["task"].json()["task"]["id"] == "test-3"
    assert [t["id"] for t in answers["range"].json()["tasks"]] == ["train-0", "train-1"]
    assert len(answers["tasks"].json()["tasks"]) == 100
    assert answers["bad index"].status_code == answers["bad split"].status_code == 400
    assert server.settled_tasks(baseline) <= baseline


def test_the_environment_class_works_in_process_without_an_event_loop(
    calculator: ServedSpec,
) -> None:
    """Sync reset/step/state/close, as an in-process caller (NeMo Gym's OpenEnv
    adapter) makes them from a thread with no event loop."""
    from agentspec.runtime.serve.openenv_server import AgentspecAction, environment_class

    env = environment_class(calculator)()
    first = env.reset(split="test", index=6)
    sample = calculator.samples("test")[6]
    call = {"name": "calculator", "arguments": {"expression": sample["expression"]}}
    mid = env.step(AgentspecAction(text="", tool_calls=[call]))
    last = env.step(AgentspecAction(text=f"<answer>{sample['answer']}</answer>"))
    assert first.sample_id == "test-6" and first.tools is not None
    assert mid.text == f"<tool_response>\n{sample['answer']}\n</tool_response>"
    assert (last.done, last.reward, last.success) == (True, 1.0, True)
    assert env.state.reward_totals == {"correct": 1.0, "malformed": 0.0}
    env.close()


def test_a_port_in_use_is_refused_before_serving_is_announced() -> None:
    import socket

    from typer.testing import CliRunner

    from agentspec.cli import app

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        args = ["serve", str(ROOT / "specs" / "calculator.yaml"), "--openenv"]
        result = CliRunner().invoke(app, [*args, "--host", "127.0.0.1", "--port", str(port)])
    assert result.exit_code == 2, result.output
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in result.output
    assert "serving" not in result.output
