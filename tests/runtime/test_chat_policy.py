"""The chat-completions policy (`chat:URL`) against real local HTTP servers.

Two kinds of server: a scripted stdlib server that answers with chosen statuses
and bodies (rate limits, outages, malformed replies), and
:class:`ChatCompletionServer` serving the tiny model, trained here for a few
seconds to reproduce the calculator's oracle so that it really calls the tool.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentspec.formats import get_format
from agentspec.runtime import ChatTemplate, SamplingParams, ScriptedPolicy, run_episodes
from agentspec.runtime.episode.conversation import ChatCall, Conversation, render_calls
from agentspec.runtime.episode.trajectory import EventKind, TerminationReason
from agentspec.runtime.policies.chat import ChatPolicy, retry_after_seconds
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer

from .helpers import CalculatorTool

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "specs" / "calculator.yaml"


class ScriptedServer:
    """A real HTTP server that answers each POST with the next (status, headers, body)."""

    def __init__(self, replies: list[tuple[int, dict[str, str], Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                server.requests.append(json.loads(self.rfile.read(length)))
                status, headers, body = server.replies[
                    min(len(server.requests), len(server.replies)) - 1
                ]
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def scripted() -> Iterator[Any]:
    servers: list[ScriptedServer] = []

    def make(replies: list[tuple[int, dict[str, str], Any]]) -> ScriptedServer:
        servers.append(ScriptedServer(replies))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def _completion(content: str | None, calls: list[tuple[str, str]] = ()) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


CONVERSATION = Conversation(
    messages=[{"role": "user", "content": "What is 2+3?"}],
    tools=[CalculatorTool().schema()],
    tool_format="hermes",
)


def _ask(policy: ChatPolicy) -> Any:
    return asyncio.run(policy.generate_chat(CONVERSATION, SamplingParams(max_new_tokens=32)))


def test_rate_limits_are_retried_after_the_servers_wait(scripted: Any) -> None:
    server = scripted(
        [
            (429, {"Retry-After": "0"}, {"error": "slow down"}),
            (503, {}, "overloaded"),
            (200, {}, _completion(None, [("calculator", '{"expression": "2+3"}')])),
        ]
    )
    policy = ChatPolicy(server.url, "m", ByteTokenizer(), backoff=0.01, api_key="sekret")
    gen = _ask(policy)
    assert gen.error is None
    text = ByteTokenizer().decode(gen.token_ids, skip_special_tokens=True)
    assert (
        text == '<tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>'
    )
    assert len(server.requests) == 3
    assert policy.waits[0] == 0.0  # Retry-After decided the first wait
    assert 0.0 < policy.waits[1] <= 0.01 * 2  # then exponential backoff with jitter
    body = server.requests[0]
    assert body["tools"][0]["function"]["name"] == "calculator" and body["max_tokens"] == 32


def test_a_server_that_keeps_failing_fails_the_step_not_the_call(scripted: Any) -> None:
    server = scripted([(500, {}, "boom")])
    gen = _ask(ChatPolicy(server.url, "m", ByteTokenizer(), backoff=0.001, max_retries=2))
    assert gen.error is not None and "gave up after 3 attempts" in gen.error
    assert gen.token_ids == [] and len(server.requests) == 3


def test_a_client_error_is_not_retried(scripted: Any) -> None:
    server = scripted([(400, {}, {"error": {"message": "bad model"}})])
    gen = _ask(ChatPolicy(server.url, "m", ByteTokenizer(), backoff=0.001))
    assert gen.error is not None and "HTTP 400" in gen.error and len(server.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        "not json at all",
        {"choices": []},
        {"choices": [{"message": "hi"}]},
        {"choices": [{"message": {"content": 42}}]},
        {"choices": [{"message": {"content": None, "tool_calls": {"x": 1}}}]},
        {"choices": [{"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]},
        {"choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": 3}}]}}]},
        [1, 2, 3],
        '{"choices": ' + "[" * 5000 + "]" * 5000 + "}",  # past the JSON parser's depth
    ],
)
def test_malformed_replies_are_failed_steps(scripted: Any, body: Any) -> None:
    server = scripted([(200, {}, body)])
    gen = _ask(ChatPolicy(server.url, "m", ByteTokenizer(), backoff=0.001))
    assert gen.error is not None and gen.token_ids == []


def test_a_lone_surrogate_in_a_reply_is_read_as_a_replacement_character(scripted: Any) -> None:
    body = '{"choices": [{"message": {"content": "<answer>\\ud800</answer>"}}]}'
    server = scripted([(200, {}, body)])
    gen = _ask(ChatPolicy(server.url, "m", ByteTokenizer(), backoff=0.001))
    assert gen.error is None
    assert (
        ByteTokenizer().decode(gen.token_ids, skip_special_tokens=True) == "<answer>\ufffd</answer>"
    )


def test_a_reply_past_any_bound_is_cut(scripted: Any) -> None:
    """A server that ignores `max_tokens` and sends megabytes: the reply is cut at
    REMOTE_MAX_RESPONSE_TOKENS of agentspec's tokens (`length`), the rest never encoded
    (encoding 15 MB took 46 s and 4 GB); under it, the server's own cut stands."""
    from agentspec.runtime.policies.scripted import REMOTE_MAX_RESPONSE_TOKENS

    server = scripted([(200, {}, _completion("ab " * 2_000_000))])
    gen = _ask(ChatPolicy(server.url, "m", ByteTokenizer(), backoff=0.001))
    assert len(gen.token_ids) == REMOTE_MAX_RESPONSE_TOKENS and gen.finish_reason == "length"


def test_an_invalid_url_fails_the_step() -> None:
    gen = _ask(ChatPolicy("http://[::1/v1", "m", ByteTokenizer(), backoff=0.001))
    assert gen.error is not None and "invalid URL" in gen.error


def test_unreachable_server_fails_the_step() -> None:
    policy = ChatPolicy("http://127.0.0.1:9/v1", "m", ByteTokenizer(), backoff=0.001, max_retries=1)
    gen = _ask(policy)
    assert gen.error is not None and "gave up after 2 attempts" in gen.error


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


@pytest.mark.parametrize("fmt", ["hermes", "json", "react", "bracket", "harmony"])
def test_rendered_calls_parse_back_to_the_same_calls(fmt: str) -> None:
    tools = {"calculator": CalculatorTool()}
    call = ChatCall("calculator", '{"expression": "2 + 3"}')
    parsed = get_format(fmt).parse(render_calls(fmt, "Let me compute.", [call]), tools)
    assert parsed.ok, parsed.errors
    assert [(c.name, c.arguments) for c in parsed.calls] == [
        ("calculator", {"expression": "2 + 3"})
    ]


@pytest.mark.parametrize("fmt", ["hermes", "json", "react", "harmony"])
def test_arguments_that_are_not_json_become_parse_errors(fmt: str) -> None:
    for arguments in ['{"expression": ', "expression=2+3"]:
        text = render_calls(fmt, None, [ChatCall("calculator", arguments)])
        parsed = get_format(fmt).parse(text, {"calculator": CalculatorTool()})
        assert not parsed.ok, (fmt, arguments, text)


@pytest.mark.parametrize("fmt", ["hermes", "json", "react", "bracket", "harmony"])
@pytest.mark.parametrize(
    "name", ["calculator foo", "calculator\nAction: calculator", "calculator\tx", "calc<|call|>"]
)
def test_a_native_call_of_an_unknown_name_never_runs_another_tool(fmt: str, name: str) -> None:
    """A chat server's tool name with whitespace inside must not read as its first word
    (harmony's recipient ends at whitespace)."""
    text = render_calls(fmt, None, [ChatCall(name, '{"expression": "1+1"}')])
    parsed = get_format(fmt).parse(text, {"calculator": CalculatorTool()})
    assert "calculator" not in [c.name for c in parsed.calls], (fmt, text)


def test_two_calls_in_a_one_call_format_are_a_parse_error() -> None:
    calls = [ChatCall("calculator", '{"expression": "1"}')] * 2
    for fmt in ("react", "bracket"):
        parsed = get_format(fmt).parse(
            render_calls(fmt, None, calls), {"calculator": CalculatorTool()}
        )
        assert not parsed.ok and parsed.errors[0].code == "multiple_calls"


# --- episodes of the calculator spec -------------------------------------------------


@pytest.fixture(scope="module")
def calculator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from agentspec.compiler.build import import_spec

    with pytest.MonkeyPatch.context() as patch:  # this module's tests only
        patch.setenv("AGENTSPEC_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield import_spec(CALCULATOR)


def test_policy_errors_end_only_their_episode(scripted: Any, calculator: Any, tok: Any) -> None:
    call = _completion(None, [("calculator", '{"expression": "1+1"}')])
    server = scripted(
        [(200, {}, call), (200, {}, "garbage"), (200, {}, _completion("<answer>2</answer>"))]
    )
    flow = calculator.FLOW_CLASS(ChatPolicy(server.url, "m", tok, max_concurrency=1), tok)
    samples = calculator.load_samples()[:2]
    trajectories = asyncio.run(run_episodes(flow, samples))
    # replies in order: a call, garbage, then answers; the garbage hits one episode
    failed = [t for t in trajectories if t.termination is TerminationReason.POLICY_ERROR]
    done = [t for t in trajectories if t.termination is TerminationReason.DONE]
    assert len(failed) == 1 and len(done) == 1
    assert "not JSON" in failed[0].steps[-1].info["policy_error"]
    assert failed[0].steps[-1].has_event(EventKind.TRUNCATED) and failed[0].steps[-1].done
    assert done[0].steps[0].tool_calls and len(done[0].steps) == 2


def test_the_conversation_carries_native_tool_calls_and_results(
    scripted: Any, calculator: Any, tok: Any
) -> None:
    call = _completion("I will compute.", [("calculator", '{"expression": "6*7"}')])
    server = scripted([(200, {}, call), (200, {}, _completion("<answer>42</answer>"))])
    flow = calculator.FLOW_CLASS(ChatPolicy(server.url, "m", tok), tok)
    (traj,) = asyncio.run(run_episodes(flow, calculator.load_samples()[:1]))
    assert len(traj.steps) == 2
    first, second = server.requests
    system = first["messages"][0]["content"]
    assert first["messages"][0]["role"] == "system" and "You can call these tools" not in system
    assert "<answer>" in system  # the spec's own instructions stay
    assistant, tool = second["messages"][2:4]
    assert assistant["content"] == "I will compute."
    assert assistant["tool_calls"][0]["function"] == {
        "name": "calculator",
        "arguments": '{"expression": "6*7"}',
    }
    assert tool == {
        "role": "tool",
        "tool_call_id": assistant["tool_calls"][0]["id"],
        "name": "calculator",
        "content": "42",
    }


# --- a real model behind a real chat server ------------------------------------------


@pytest.fixture(scope="module")
def oracle_model(tiny: Any, calculator: Any) -> tuple[Any, Any, list[dict[str, Any]]]:
    """The tiny model trained for a few seconds to repeat the oracle on two samples."""
    import torch

    from agentspec.runtime.episode.rows import training_rows

    model, tokenizer = copy.deepcopy(tiny[0]).train(), tiny[1]
    samples = calculator.load_samples()[:2]
    rows = []
    for sample in samples:
        policy = ScriptedPolicy(calculator.oracle_actions(sample), tokenizer)
        flow = calculator.FLOW_CLASS(policy, tokenizer)
        rows += [row for t in asyncio.run(run_episodes(flow, [sample])) for row in training_rows(t)]
    ids = [torch.tensor(row.input_ids) for row in rows]
    masks = [torch.tensor(row.response_mask[1:], dtype=torch.bool) for row in rows]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    try:
        for _ in range(400):
            losses = []
            for row_ids, mask in zip(ids, masks, strict=True):
                logits = model(input_ids=row_ids[None]).logits[0, :-1]
                loss = torch.nn.functional.cross_entropy(logits[mask], row_ids[1:][mask])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            if max(losses) < 0.02:
                break
    finally:
        torch.set_num_threads(threads)
    return model.eval(), tokenizer, samples


@pytest.mark.slow
def test_chat_server_and_local_model_play_the_same_episodes(
    oracle_model: Any, calculator: Any
) -> None:
    from agentspec.runtime.policies.hf import HFPolicy
    from agentspec.runtime.serve.chat_server import ChatCompletionServer

    model, tokenizer, samples = oracle_model
    local = calculator.FLOW_CLASS(HFPolicy(model, tokenizer), tokenizer, temperature=0.0)
    expected = asyncio.run(run_episodes(local, samples))
    assert all(t.success for t in expected)  # the model really calls the tool, then answers
    with ChatCompletionServer(HFPolicy(model, tokenizer), "tiny") as server:
        remote = calculator.FLOW_CLASS(
            ChatPolicy(server.url, "tiny", tokenizer), tokenizer, temperature=0.0
        )
        got = asyncio.run(run_episodes(remote, samples))
    for want, have in zip(expected, got, strict=True):
        assert [s.action_text for s in have.steps] == [s.action_text for s in want.steps]
        assert [s.observation for s in have.steps] == [s.observation for s in want.steps]
        assert have.success and have.total_reward == want.total_reward
        assert have.steps[0].tool_calls[0].name == "calculator"


@pytest.mark.slow
def test_cli_run_and_eval_with_a_chat_policy_print_the_table(
    oracle_model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from agentspec.cli import app
    from agentspec.runtime.episode.trajectory import read_jsonl
    from agentspec.runtime.policies.hf import HFPolicy
    from agentspec.runtime.serve.chat_server import ChatCompletionServer

    model, tokenizer, _ = oracle_model
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))
    runner = CliRunner()
    oracle = runner.invoke(app, ["run", str(CALCULATOR), "-n", "4", "--out", str(tmp_path / "o")])
    with ChatCompletionServer(HFPolicy(model, tokenizer), "tiny") as server:
        result = runner.invoke(
            app,
            [
                "run",
                str(CALCULATOR),
                "--policy",
                f"chat:{server.url}",
                "--served-model",
                "tiny",
                "-n",
                "4",
                "--temperature",
                "0",
                "--out",
                str(tmp_path / "c"),
            ],
        )
        assert result.exit_code == 0, result.output
        evaluated = runner.invoke(
            app,
            ["eval", str(CALCULATOR), "--policy", f"chat:{server.url}", "-n", "3"],
        )
        assert evaluated.exit_code == 0, evaluated.output
    labels = lambda out: [ln.split("│")[1].strip() for ln in out.splitlines() if ln.count("│") == 3]  # noqa: E731
    assert labels(result.output)[:8] == labels(oracle.output)[:8]  # the same table
    assert "success rate" in evaluated.output
    trajectories = list(read_jsonl(tmp_path / "c" / "trajectories.jsonl"))
    assert len(trajectories) == 4 and all(t.termination for t in trajectories)


def test_train_refuses_a_chat_model(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentspec.cli import app

    result = CliRunner().invoke(
        app,
        [
            "train",
            str(CALCULATOR),
            "--set",
            "model=chat:http://127.0.0.1:1/v1",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 2
    assert "chat-completions API" in result.output and "--policy chat:" in result.output


def test_a_chat_policy_needs_a_url(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentspec.cli import app

    result = CliRunner().invoke(
        app,
        ["run", str(CALCULATOR), "--policy", "chat:localhost", "-n", "1", "--out", str(tmp_path)],
    )
    assert result.exit_code == 2 and "needs the API's base URL" in result.output


def _step(index: int, text: str, observation: str, calls: list[Any], results: list[Any]) -> Any:
    from agentspec.runtime.episode.trajectory import Step

    info = {"tool_results": results} if results else {}
    return Step(
        index, [], [], [], action_text=text, observation=observation, tool_calls=calls, info=info
    )


def test_the_conversation_keeps_only_the_turns_the_context_policy_keeps(tok: Any) -> None:
    from agentspec.runtime import ToolEnv
    from agentspec.runtime.episode.context import ContextView, SlidingWindow, StateSummary
    from agentspec.runtime.episode.conversation import conversation_of
    from agentspec.runtime.episode.trajectory import ToolCall

    env = ToolEnv([CalculatorTool()], "hermes", system_prompt="Be exact.")
    initial = env.initial_messages({"question": "2+3?"})
    call = ToolCall("calculator", {"expression": "2+3"})
    view = ContextView(tok, ChatTemplate(), initial, env=env)
    view.steps = [
        _step(0, "hmm", "Error: parse", [], []),
        _step(
            1,
            "<tool_call>…</tool_call>",
            "<tool_response>…",
            [call],
            [{"name": "calculator", "ok": False, "code": "exception", "text": "boom"}],
        ),
    ]
    window = SlidingWindow(k=1)
    conversation = conversation_of(view, window.prompt(view), window)
    roles = [m["role"] for m in conversation.messages]
    assert roles == ["system", "user", "assistant", "tool"]  # step 0 was dropped
    assert conversation.messages[0]["content"] == "Be exact."  # the tool paragraph is cut
    assert conversation.messages[-1]["content"] == "Error: boom"
    assert conversation.tools == [CalculatorTool().schema()]

    summary = StateSummary("Question: {{ task }} after {{ step }} steps")
    conversation = conversation_of(view, summary.prompt(view), summary)
    assert conversation.messages == [
        {"role": "system", "content": "Be exact."},
        {"role": "user", "content": "Question: 2+3? after 2 steps"},
    ]
