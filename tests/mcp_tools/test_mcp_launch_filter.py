"""The launcher's filter of a stdio server's stdout (agentspec/runtime/mcp/launch.py): an
oversized message is scanned as it passes, whatever its key order and however its bytes
arrive, and replaced by an error for its call's id; other messages pass unchanged."""

from __future__ import annotations

import json

import pytest

from agentspec.runtime.mcp import launch

BIG = "x" * 5000


def _filtered(lines: list[bytes], limit: int, chunk: int, monkeypatch: pytest.MonkeyPatch) -> list:
    written: list[bytes] = []
    monkeypatch.setattr(launch, "_write", lambda fd, data: written.append(bytes(data)))
    messages = launch._Messages(limit)
    stream = b"".join(line + b"\n" for line in lines)
    for at in range(0, len(stream), chunk):
        messages.feed(stream[at : at + chunk])
    messages.finish()
    return [json.loads(line) for line in b"".join(written).splitlines()]


ANSWERS = [
    # the SDK's order, a TypeScript server's (id last), an id among nested ids,
    # a string id, escapes and brackets inside strings, whitespace around the id
    {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": BIG}]}},
    {"result": {"content": [{"type": "text", "text": BIG, "id": 99}]}, "jsonrpc": "2.0", "id": 7},
    {"jsonrpc": "2.0", "result": {"id": 1, "items": [{"id": 2}] * 300}, "id": "req-7"},
    {"jsonrpc": "2.0", "id": 7, "result": {"text": 'a \\"quoted\\" {[}] ' * 300}},
]


@pytest.mark.parametrize("chunk", [1, 7, 4096])
@pytest.mark.parametrize("answer", ANSWERS)
def test_an_oversized_answer_becomes_an_error_for_its_id(
    answer: dict, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = {"jsonrpc": "2.0", "id": 1, "result": {"text": "ok"}}
    raw = json.dumps(answer).encode()
    if chunk == 1:
        raw = raw.replace(b'"id": ', b'"id" :\t')  # whitespace JSON allows
    out = _filtered([json.dumps(small).encode(), raw], 1024, chunk, monkeypatch)
    assert out[0] == small
    assert out[1]["id"] == answer["id"]
    assert out[1]["error"]["code"] == launch.TOO_LARGE
    assert f"({len(raw):,} bytes)" in out[1]["error"]["message"]


def test_an_oversized_notification_or_request_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": BIG}}
    request = {"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": {"x": BIG}}
    after = {"jsonrpc": "2.0", "id": 2, "result": {}}
    lines = [json.dumps(m).encode() for m in (note, request, after)]
    assert _filtered(lines, 1024, 100, monkeypatch) == [after]


def test_messages_within_the_limit_pass_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": i, "result": {"t": "é" * i}}).encode()
        for i in range(50)
    ]
    written: list[bytes] = []
    monkeypatch.setattr(launch, "_write", lambda fd, data: written.append(bytes(data)))
    messages = launch._Messages(1024)
    messages.feed(b"\n".join(lines) + b"\n")
    assert b"".join(written) == b"\n".join(lines) + b"\n"
