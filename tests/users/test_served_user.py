"""Served over OpenEnv, a spec's user stays on the server: the client is the agent
only. It gets the opening, then each of the user's replies as the observation of its
text turns; the user's instructions, its rules and the sample fields only the user
reads (the order, the item, which customer it is) are never served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agentspec.runtime.serve.openenv_server import build_app
from agentspec.runtime.serve.spec import ServedSpec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def desk() -> TestClient:
    return TestClient(build_app(ServedSpec.load(ROOT / "specs" / "retail_desk.yaml")))


def test_the_task_holds_nothing_private_to_the_user(desk: TestClient) -> None:
    task = desk.post("/retail_desk/task", json={"split": "test", "index": 0}).json()["task"]
    # the opening reads `kind`; the name, email, order and item are the user's
    assert sorted(task) == ["id", "index", "kind"]


def test_a_served_dialogue_never_shows_the_users_instructions(desk: TestClient) -> None:
    from agentspec.stdlib.desk import retail_desk

    sample = next(retail_desk(split="test"))
    received = []
    with desk.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"split": "test", "index": 0}})
        received.append(ws.receive_json())
        for text in ["Could you tell me the email on your account?", "Which order is it?"]:
            ws.send_json({"type": "step", "data": {"text": text}})
            received.append(ws.receive_json())
        ws.send_json({"type": "state"})
        received.append(ws.receive_json())
    wire = json.dumps(received)
    # the user's replies arrive as observations of the agent's text turns ...
    assert f"It's {sample['email']}." in wire
    assert f"It's order {sample['order']}" in wire
    # ... but never its instructions or its rules (the store's database, names and
    # emails included, is the state the tools show: served like any spec's)
    for secret in (
        "Say only what the agent asks for",
        "###STOP###",
        "wrong_request",
    ):
        assert secret not in wire, secret
    assert "user_instructions" not in wire
