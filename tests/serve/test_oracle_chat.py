"""`python -m agentspec.runtime.serve.oracle_chat SPEC`: the spec's oracle as a chat
server, the offline "model" docs/verifiers.md points vf-eval at (issue 52, item 16)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agentspec.runtime.serve.oracle_chat import oracle_turns, scripted_chat
from agentspec.runtime.serve.session import first_turn
from agentspec.runtime.serve.spec import ServedSpec

SPEC = Path(__file__).resolve().parents[2] / "specs" / "calculator.yaml"


def post(url: str, body: bytes) -> dict:
    request = urllib.request.Request(
        f"{url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def test_the_oracle_answers_each_turn_of_its_sample() -> None:
    spec = ServedSpec.load(SPEC)
    sample = spec.samples()[3]
    messages = first_turn(spec, sample).messages
    script = list(spec.module.oracle_actions(sample))
    with scripted_chat(oracle_turns(SPEC)) as (url, _):
        first = post(url, json.dumps({"model": "oracle", "messages": messages}).encode())
        assert first["choices"][0]["message"]["content"] == script[0]
        later = [
            *messages,
            {"role": "assistant", "content": script[0]},
            {"role": "user", "content": "4"},
        ]
        second = post(url, json.dumps({"model": "oracle", "messages": later}).encode())
        assert second["choices"][0]["message"]["content"] == script[1]
        unknown = post(url, json.dumps({"messages": [{"role": "user", "content": "?"}]}).encode())
        assert unknown["choices"][0]["message"]["content"] == ""


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'{"messages": 3}'])
def test_a_malformed_request_is_a_400(body: bytes) -> None:
    with scripted_chat(lambda task, taken: "") as (url, _):
        with pytest.raises(urllib.error.HTTPError) as refused:
            post(url, body)
        assert refused.value.code == 400
