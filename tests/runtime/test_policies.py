from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from agentspec.runtime import (
    AgentEnvLoop,
    ChatTemplate,
    LoopConfig,
    OpenAIPolicy,
    SamplingParams,
    ScriptedPolicy,
    run_episodes,
)

from .helpers import TwoRoomEnv, assert_chained_layout

CHAT = ChatTemplate()


def _prompts(tok: Any, n: int = 4) -> list[list[int]]:
    return [
        tok.encode(CHAT.render([{"role": "user", "content": "What is " + "1+" * i + "2?"}]))
        for i in range(n)
    ]


def _gen(policy: Any, prompts: list[list[int]], **kw: Any) -> list[Any]:
    return asyncio.run(policy.generate(prompts, SamplingParams(**kw)))


@pytest.fixture(scope="module")
def hf(tiny: Any) -> Any:
    from agentspec.runtime.policies.hf import HFPolicy

    return HFPolicy(*tiny)


def test_greedy_is_argmax_and_batching_does_not_change_it(hf: Any, tiny: Any) -> None:
    from agentspec.runtime.policies.hf import sequence_logprobs

    prompts = _prompts(hf.tokenizer)
    batched = _gen(hf, prompts, temperature=0, max_new_tokens=10)
    for prompt, out in zip(prompts, batched, strict=True):
        (alone,) = _gen(hf, [prompt], temperature=0, max_new_tokens=10)
        assert alone.token_ids == out.token_ids
        assert alone.logprobs == pytest.approx(out.logprobs, abs=1e-5)
        assert out.logprobs == pytest.approx(
            sequence_logprobs(tiny[0], prompt, out.token_ids), abs=1e-4
        )
        # greedy: each token is the most likely one under a fresh forward pass
        import torch

        ids = torch.tensor([prompt + out.token_ids])
        logits = tiny[0](input_ids=ids).logits[0]
        assert logits[len(prompt) - 1 : -1].argmax(-1).tolist() == out.token_ids


def test_seeded_sampling_is_reproducible(hf: Any) -> None:
    prompts = _prompts(hf.tokenizer)
    a = _gen(hf, prompts, temperature=1.0, max_new_tokens=12, seed=11)
    b = _gen(hf, prompts, temperature=1.0, max_new_tokens=12, seed=11)
    c = _gen(hf, prompts, temperature=1.0, max_new_tokens=12, seed=12)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    assert [g.token_ids for g in a] != [g.token_ids for g in c]
    assert all(
        g.finish_reason == "length" and len(g.token_ids) == 12
        for g in a
        if hf.tokenizer.eos_token_id not in g.token_ids
    )


def test_top_k_1_and_tiny_top_p_are_greedy(hf: Any) -> None:
    prompts = _prompts(hf.tokenizer)
    greedy = [g.token_ids for g in _gen(hf, prompts, temperature=0, max_new_tokens=8)]
    assert [g.token_ids for g in _gen(hf, prompts, top_k=1, max_new_tokens=8, seed=1)] == greedy
    assert [g.token_ids for g in _gen(hf, prompts, top_p=1e-6, max_new_tokens=8, seed=1)] == greedy


def test_temperature_logprobs_are_of_the_scaled_distribution(hf: Any, tiny: Any) -> None:
    from agentspec.runtime.policies.hf import sequence_logprobs

    prompt = _prompts(hf.tokenizer, 1)[0]
    (out,) = _gen(hf, [prompt], temperature=0.7, max_new_tokens=8, seed=5)
    assert out.logprobs == pytest.approx(
        sequence_logprobs(tiny[0], prompt, out.token_ids, 0.7), abs=1e-4
    )


def test_stop_strings_and_stop_ids(hf: Any) -> None:
    tok = hf.tokenizer
    prompt = _prompts(tok, 1)[0]
    (full,) = _gen(hf, [prompt], temperature=0, max_new_tokens=16)
    text = tok.decode(full.token_ids)
    stop = text[len(text) // 2 : len(text) // 2 + 2]
    (cut,) = _gen(hf, [prompt], temperature=0, max_new_tokens=16, stop=(stop,))
    assert cut.finish_reason == "stop" and stop in tok.decode(cut.token_ids)
    assert stop not in tok.decode(cut.token_ids[:-1])
    assert full.token_ids[: len(cut.token_ids)] == cut.token_ids

    from agentspec.runtime.policies.hf import HFPolicy

    stopper = HFPolicy(hf.model, tok, stop_token_ids=[full.token_ids[2]])
    (short,) = _gen(stopper, [prompt], temperature=0, max_new_tokens=16)
    assert short.token_ids == full.token_ids[: full.token_ids.index(full.token_ids[2]) + 1]
    assert short.finish_reason == "stop"


def test_scripted_policy_limits(tok: Any) -> None:
    p = ScriptedPolicy(["look around", "go north"], tok)
    a, b = _gen(p, [[1], [1]])
    assert (
        a.token_ids == [*tok.encode("look around"), tok.eos_token_id] and a.finish_reason == "stop"
    )
    assert b.token_ids[:-1] == tok.encode("go north")
    (c,) = _gen(p, [[1]], stop=(" ar",))
    assert tok.decode(c.token_ids) == "look ar" and c.finish_reason == "stop"
    (d,) = _gen(p, [[1]], max_new_tokens=2)
    assert len(d.token_ids) == 2 and d.finish_reason == "length"


@pytest.fixture(scope="module")
def server(hf: Any) -> Any:
    from agentspec.runtime.serve.completions_server import CompletionServer

    with CompletionServer(hf, model_name="tiny") as srv:
        yield srv


def test_openai_policy_matches_local_model(server: Any, hf: Any) -> None:
    models = httpx.get(server.url + "/models").json()
    assert models["data"][0]["id"] == "tiny"
    remote = OpenAIPolicy(server.url, "tiny")
    prompts = _prompts(hf.tokenizer)
    local = _gen(hf, prompts, temperature=0, max_new_tokens=10)
    over_http = _gen(remote, prompts, temperature=0, max_new_tokens=10)
    assert [g.token_ids for g in over_http] == [g.token_ids for g in local]
    for a, b in zip(over_http, local, strict=True):
        assert (
            a.logprobs == pytest.approx(b.logprobs, abs=1e-6) and a.finish_reason == b.finish_reason
        )
    seeded = [g.token_ids for g in _gen(remote, prompts, max_new_tokens=10, seed=4)]
    assert seeded == [g.token_ids for g in _gen(hf, prompts, max_new_tokens=10, seed=4)]


def test_openai_policy_runs_episodes(server: Any, tiny: Any) -> None:
    from agentspec.runtime.policies.hf import sequence_logprobs

    model, tok = tiny
    config = LoopConfig(
        max_steps=3,
        sampling=SamplingParams(max_new_tokens=8, seed=2),
        end_on_response_truncated=False,
    )
    loop = AgentEnvLoop(TwoRoomEnv, OpenAIPolicy(server.url, "tiny"), tok, config=config)
    trajs = asyncio.run(run_episodes(loop, [{}] * 8))
    for traj in trajs:
        assert_chained_layout(traj, tok, CHAT, TwoRoomEnv().initial_messages_for_test())
        for step in traj.steps:
            fresh = sequence_logprobs(model, step.prompt_ids, step.response_ids)
            assert step.response_logprobs == pytest.approx(fresh, abs=1e-4)


def test_server_errors_reach_the_caller(server: Any) -> None:
    resp = httpx.post(
        server.url + "/completions", json={"model": "tiny", "prompt": [[1], {"x": 1}]}
    )
    assert resp.status_code == 400 and "each prompt must be" in resp.json()["error"]["message"]
    assert httpx.post(server.url + "/chat", json={}).status_code == 404
    # hostile bodies are 400s, not dropped connections (a seed torch cannot take, nesting
    # past the parser)
    for bad_body in (
        {"model": "tiny", "prompt": [[1]], "seed": "x"},
        {"prompt": [[1]], "seed": -1},
    ):
        answer = httpx.post(server.url + "/completions", json=bad_body)
        assert answer.status_code == 400 and "'seed' must be an integer" in answer.text
    deep = b'{"prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    answer = httpx.post(server.url + "/completions", content=deep)
    assert answer.status_code == 400 and "nests too deep" in answer.text
    bad = OpenAIPolicy(server.url, "tiny", extra_body={"n": 2})
    # the server's refusals are the episode's `policy_error`, not the run's exception
    (refused,) = _gen(bad, [[1, 2]])
    assert refused.error is not None and "only n=1" in refused.error
    plain = OpenAIPolicy(server.url, "tiny", extra_body={"return_tokens_as_token_ids": False})
    (no_ids,) = _gen(plain, [[1, 2]], max_new_tokens=2)
    assert no_ids.error is not None and "return_tokens_as_token_ids" in no_ids.error
    text = httpx.post(
        server.url + "/completions", json={"prompt": "hello", "max_tokens": 3, "temperature": 0}
    ).json()
    assert len(text["choices"]) == 1 and text["usage"]["completion_tokens"] <= 3


def test_ignore_eos_generates_to_the_limit(hf: Any, server: Any) -> None:
    from agentspec.runtime.policies.hf import HFPolicy

    tok = hf.tokenizer
    prompt = _prompts(tok, 1)[0]
    (first,) = _gen(hf, [prompt], temperature=0, max_new_tokens=4)
    eos_now = HFPolicy(hf.model, tok, stop_token_ids=[first.token_ids[0]])
    assert len(_gen(eos_now, [prompt], temperature=0, max_new_tokens=6)[0].token_ids) == 1
    (full,) = _gen(eos_now, [prompt], temperature=0, max_new_tokens=6, ignore_eos=True)
    assert len(full.token_ids) == 6 and full.finish_reason == "length"
    (remote,) = _gen(
        OpenAIPolicy(server.url, "tiny"), [prompt], temperature=0, max_new_tokens=6, ignore_eos=True
    )
    assert len(remote.token_ids) == 6


HOSTILE_REPLIES = {
    "not-json": b"<html>",
    "deep": b'{"choices": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "no-choices": b"{}",
    "bad-token": b'{"choices": [{"index": 0, "logprobs": {"tokens": ["token_id:abc"], "token_logprobs": [0.0]}}]}',
    "negative": b'{"choices": [{"index": 0, "logprobs": {"tokens": ["token_id:-5"], "token_logprobs": [0.0]}}]}',
    "huge-id": b'{"choices": [{"index": 0, "logprobs": {"tokens": ["token_id:99999999999"], "token_logprobs": [0.0]}}]}',
    "null-logprob": b'{"choices": [{"index": 0, "logprobs": {"tokens": ["token_id:5"], "token_logprobs": [null]}}]}',
    "two-choices": b'{"choices": [{"index": 0}, {"index": 1}]}',
}


@pytest.fixture
def hostile_server() -> Any:
    """A completions server that answers each path's hostile reply (`/NAME/v1`)."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = HOSTILE_REPLIES[self.path.split("/")[1]]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.mark.parametrize("reply", sorted(HOSTILE_REPLIES))
def test_a_hostile_completions_reply_is_the_episode_s_error(
    hostile_server: str, reply: str
) -> None:
    """What a broken or hostile server sends ends the prompts' episodes (`policy_error`,
    said), never the run: each of these raised out of `run` before."""
    (gen,) = _gen(OpenAIPolicy(f"{hostile_server}/{reply}/v1", "m"), [[1, 2]])
    assert gen.error and gen.token_ids == [], gen


def test_a_completions_server_that_cannot_be_reached_is_the_episode_s_error() -> None:
    (gen,) = _gen(OpenAIPolicy("http://127.0.0.1:9/v1", "m"), [[1, 2]])
    assert gen.error is not None and "ConnectError" in gen.error


def test_a_completions_reply_past_max_new_tokens_is_cut_there() -> None:
    tokens = [f"token_id:{i}" for i in range(100)]
    choice = {
        "logprobs": {"tokens": tokens, "token_logprobs": [-0.5] * 100},
        "finish_reason": "stop",
    }
    gen = OpenAIPolicy._parse_choice(choice, 8)
    assert gen.token_ids == list(range(8)) and gen.finish_reason == "length" and gen.error is None
