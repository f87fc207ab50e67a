"""Hostile resets of the OpenEnv server: text JSON cannot carry (a lone surrogate)
and a mistyped `episode_id` are refused before any episode starts, naming the field."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from agentspec.runtime.serve.limits import ServerLimits
from agentspec.runtime.serve.openenv_server import build_app
from agentspec.runtime.serve.spec import ServedSpec

from .helpers import InProcessServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = json.dumps({"type": "state"})
SURROGATE_SAMPLE = '{"question": "what is \\ud800?", "answer": 1}'  # JSON text: a lone surrogate


@pytest.fixture(scope="module")
def server() -> Iterator[InProcessServer]:
    served = ServedSpec.load(ROOT / "specs" / "calculator.yaml")
    # 3 MB messages reach the checks these tests are about (the default refuses them
    # unread: tests/serve/test_server_limits.py)
    limits = ServerLimits(max_message_bytes=8 << 20)
    with InProcessServer(build_app(served, max_sessions=4, limits=limits)) as running:
        yield running


def exchange(server: InProcessServer, frames: list[str | bytes]) -> list[dict[str, Any]]:
    async def run() -> list[dict[str, Any]]:
        url = server.url.replace("http://", "ws://") + "/ws"
        async with websockets.connect(url) as ws:
            replies = []
            for frame in frames:
                await ws.send(frame)
                replies.append(json.loads(await ws.recv()))
            return replies

    return asyncio.run(run())


def test_a_lone_surrogate_in_the_sample_is_refused_over_http_with_a_400(
    server: InProcessServer,
) -> None:
    body = '{"sample": ' + SURROGATE_SAMPLE + "}"
    with httpx.Client(base_url=server.url) as http:
        answer = http.post("/reset", content=body, headers={"Content-Type": "application/json"})
        after = http.post("/reset", json={"index": 1})
    assert answer.status_code == 400, answer.text
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["sample", "question"]
    assert "lone surrogate" in error["msg"]
    assert after.status_code == 200  # the server keeps serving
    assert after.json()["observation"]["sample_id"] == "train-1"


def test_a_lone_surrogate_over_the_websocket_starts_no_episode(server: InProcessServer) -> None:
    state = json.dumps({"type": "state"})
    bad, after = exchange(
        server, ['{"type": "reset", "data": {"sample": ' + SURROGATE_SAMPLE + "}}", state]
    )
    assert bad["type"] == "error"
    assert bad["data"]["code"] == "VALIDATION_ERROR", bad
    assert [e["loc"] for e in bad["data"]["errors"]] == [["sample", "question"]]
    assert after["type"] == "state"
    assert after["data"]["sample_id"] is None and after["data"]["step_count"] == 0


def test_a_bad_reset_mid_episode_leaves_the_episode_in_progress(server: InProcessServer) -> None:
    good, bad, state = exchange(
        server,
        [
            json.dumps({"type": "reset", "data": {"index": 3}}),
            '{"type": "reset", "data": {"sample_id": "\\udfff"}}',
            json.dumps({"type": "state"}),
        ],
    )
    assert good["type"] == "observation"
    assert bad["data"]["code"] == "VALIDATION_ERROR"
    assert [e["loc"] for e in bad["data"]["errors"]] == [["sample_id"]]
    assert state["data"]["sample_id"] == "train-3" and state["data"]["done"] is False


def test_an_episode_id_that_is_not_a_string_is_refused_over_the_websocket(
    server: InProcessServer,
) -> None:
    bad, state, good, state_again = exchange(
        server,
        [
            json.dumps({"type": "reset", "data": {"episode_id": 5}}),
            json.dumps({"type": "state"}),
            json.dumps({"type": "reset", "data": {"episode_id": "ep-1", "index": 2}}),
            json.dumps({"type": "state"}),
        ],
    )
    assert bad["type"] == "error" and bad["data"]["code"] == "VALIDATION_ERROR", bad
    assert [e["loc"] for e in bad["data"]["errors"]] == [["episode_id"]]
    assert "episode_id must be a string" in bad["data"]["errors"][0]["msg"]
    assert state["type"] == "state", state  # no half-set episode id: state still answers
    assert good["type"] == "observation"
    assert state_again["type"] == "state" and state_again["data"]["episode_id"] == "ep-1"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("full_prompt", "false", "full_prompt must be true or false, not 'false'"),
        ("full_prompt", 0, "full_prompt must be true or false, not 0"),
        ("sample", [1, 2], "sample must be an object, not [1, 2]"),
        ("sample", "x", "sample must be an object, not 'x'"),
    ],
)
def test_a_reset_field_of_the_wrong_kind_is_refused_over_http(
    server: InProcessServer, field: str, value: Any, message: str
) -> None:
    with httpx.Client(base_url=server.url) as http:
        answer = http.post("/reset", json={field: value})
    assert answer.status_code == 400, answer.text
    (error,) = answer.json()["detail"]
    assert error["loc"] == [field] and error["msg"] == message


def test_a_sample_without_a_declared_field_is_an_error_naming_it(server: InProcessServer) -> None:
    missing = "the sample has no field 'question' (declared in data.fields)"
    bad, state = exchange(
        server,
        [
            json.dumps({"type": "reset", "data": {"sample": {"expression": "1+1", "answer": 2}}}),
            json.dumps({"type": "state"}),
        ],
    )
    assert bad["type"] == "error" and missing in bad["data"]["message"], bad
    assert state["data"]["sample_id"] is None  # no episode started
    with httpx.Client(base_url=server.url) as http:
        answer = http.post(
            "/reset", json={"sample": {"question": "q", "expression": 5, "answer": 2}}
        )
    assert answer.status_code == 400
    assert "field 'expression' is the number 5, but data.fields declares it str" in answer.text


@pytest.mark.parametrize(
    ("frame", "kind"),
    [("[1, 2]", "a list"), ('"reset"', "a string"), ("5", "a number"), ("null", "null")],
)
def test_a_frame_that_is_not_an_object_is_an_error_and_the_episode_goes_on(
    server: InProcessServer, frame: str, kind: str
) -> None:
    """OpenEnv closed the connection on such a frame without a word."""
    good, bad, state = exchange(
        server, [json.dumps({"type": "reset", "data": {"index": 2}}), frame, '{"type": "state"}']
    )
    assert good["type"] == "observation"
    assert bad["type"] == "error" and bad["data"]["code"] == "VALIDATION_ERROR", bad
    assert bad["data"]["message"].endswith(f"must be a JSON object, e.g. {EXAMPLE}; got {kind}")
    assert state["data"]["sample_id"] == "train-2" and state["data"]["done"] is False


@pytest.mark.parametrize(
    ("frame", "said"),
    [
        ('{"type": "step", "data": {"text": "", "seed": ' + "9" * 5000 + "}}", "4300 digits"),
        ('{"type": "step", "data": ' + "[" * 100_000 + "]" * 100_000 + "}", "recursion"),
        (b"\xff\xfe not UTF-8", "not UTF-8"),
    ],
)
def test_json_python_cannot_read_is_an_error_and_the_episode_goes_on(
    server: InProcessServer, frame: str | bytes, said: str
) -> None:
    """An integer past 4,300 digits or nesting past the parser's depth raised past
    OpenEnv's JSONDecodeError handler: SESSION_ERROR, and the socket and episode closed."""
    good, bad, state = exchange(
        server, [json.dumps({"type": "reset", "data": {"index": 2}}), frame, '{"type": "state"}']
    )
    assert good["type"] == "observation"
    assert bad["type"] == "error" and bad["data"]["code"] == "VALIDATION_ERROR", bad
    assert said in bad["data"]["message"]
    assert state["data"]["sample_id"] == "train-2" and state["data"]["done"] is False


def test_a_binary_frame_of_json_is_read_as_its_text(server: InProcessServer) -> None:
    """OpenEnv reads text frames only: a binary one raised KeyError('text') and closed
    the session."""
    good, state = exchange(
        server, [json.dumps({"type": "reset", "data": {"index": 2}}).encode(), b'{"type": "state"}']
    )
    assert good["type"] == "observation"
    assert state["data"]["sample_id"] == "train-2"


def test_a_huge_refused_action_is_not_echoed_back_whole(server: InProcessServer) -> None:
    """Pydantic's error details repeat the refused value: a 3 MB action came back as a
    3 MB error, past a default WebSocket client's 1 MiB frame limit (the client hung up)."""
    huge = ["x" * 100] * 30_000
    started, bad, state = exchange(
        server,
        [
            json.dumps({"type": "reset", "data": {"index": 2}}),
            json.dumps({"type": "step", "data": {"text": huge}}),
            json.dumps({"type": "state"}),
        ],
    )
    assert started["type"] == "observation"
    assert bad["type"] == "error" and bad["data"]["code"] == "VALIDATION_ERROR"
    (error,) = bad["data"]["errors"]
    assert error["loc"] == ["text"] and error["input"].endswith(" characters)")
    assert len(json.dumps(bad)) < 1_000
    assert state["data"]["sample_id"] == "train-2" and state["data"]["done"] is False
    with httpx.Client(base_url=server.url) as http:
        for body in ({"action": {"text": huge}}, {"action": huge}):
            answer = http.post("/step", json=body)
            assert answer.status_code == 422 and len(answer.text) < 1_000, answer.text[:300]
            assert answer.json()["detail"][0]["input"].endswith(" characters)")
        assert http.post("/step", json={"action": {"text": 5}}).json()["detail"][0]["input"] == 5


def test_a_huge_refused_reset_value_is_not_echoed_back_whole(server: InProcessServer) -> None:
    """An unknown 3 MB sample id came back in a 3 MB error message (past a default
    WebSocket client's 1 MiB frame limit)."""
    (bad,) = exchange(
        server, [json.dumps({"type": "reset", "data": {"sample_id": "x" * 3_000_000}})]
    )
    assert bad["type"] == "error" and len(json.dumps(bad)) < 5_000
    assert bad["data"]["message"].endswith(" characters)")


@pytest.mark.parametrize(
    "body",
    [
        {"split": "x" * 3_000_000},
        {"sample_id": "x" * 3_000_000},
        {"x" * 3_000_000: 1},
        {"index": "x" * 3_000_000},
    ],
    ids=["split", "sample_id", "unknown field", "mistyped index"],
)
def test_a_huge_refused_reset_is_not_echoed_back_whole_over_http(
    server: InProcessServer, body: dict[str, Any]
) -> None:
    """Over HTTP the same 3 MB resets came back as 3 MB 400 replies."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        answer = http.post("/reset", json=body)
        after = http.post("/reset", json={"index": 1})
    assert answer.status_code in (400, 422) and len(answer.content) < 10_000, len(answer.content)
    assert "characters)" in answer.text
    assert after.status_code == 200


def test_a_refused_reset_field_carries_its_value_as_input(server: InProcessServer) -> None:
    (bad,) = exchange(server, [json.dumps({"type": "reset", "data": {"index": "3"}})])
    (error,) = bad["data"]["errors"]
    assert error["loc"] == ["index"] and error["input"] == "3"
    with httpx.Client(base_url=server.url) as http:
        answer = http.post("/reset", json={"full_prompt": "yes"})
    assert answer.status_code == 400
    (detail,) = answer.json()["detail"]
    assert detail["loc"] == ["full_prompt"] and detail["input"] == "yes"


def test_an_action_that_is_not_valid_unicode_is_refused_and_the_episode_goes_on(
    server: InProcessServer,
) -> None:
    started, bad, good = exchange(
        server,
        [
            json.dumps({"type": "reset", "data": {"index": 2}}),
            '{"type": "step", "data": {"text": "\\ud800"}}',
            json.dumps({"type": "state"}),
        ],
    )
    assert started["type"] == "observation"
    assert bad["type"] == "error" and "not valid Unicode text" in json.dumps(bad)
    assert "TextInputSequence" not in json.dumps(bad)
    assert good["data"]["done"] is False


def test_the_task_range_is_bounded_and_counts_from_0(server: InProcessServer) -> None:
    with httpx.Client(base_url=server.url) as http:
        huge = http.post(
            "/calculator/task_range", json={"split": "test", "start": 0, "stop": 10**8}
        )
        negative = http.post(
            "/calculator/task_range", json={"split": "test", "start": -3, "stop": 2}
        )
        page = http.post("/calculator/task_range", json={"split": "test", "start": 0, "stop": 5})
    assert huge.status_code == 400 and "at most 1,000 a request" in huge.json()["detail"]
    assert negative.status_code == 400 and "count from 0" in negative.json()["detail"]
    assert page.status_code == 200 and len(page.json()["tasks"]) == 5
