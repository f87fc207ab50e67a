"""A model user through `chat:URL`, against a real local HTTP server that
speaks chat completions (a fake customer: its replies are written from the
messages it receives, so the test sees exactly what the user model was sent).

The model user reads its instructions and the dialogue from its own side,
never a tool call or a tool result; its replies are the agent's observations,
and its stop signal ends the episode."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from codegen.helpers import build, call, play


class FakeCustomer:
    """A chat-completions server on 127.0.0.1 that plays a customer by rules of its own."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                data = json.dumps(outer.completion(body["messages"])).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def completion(messages: list[dict[str, str]]) -> dict[str, Any]:
        asked = messages[-1]["content"].lower()
        secret = messages[0]["content"].split("number is ")[1].split(".")[0]
        if "number" in asked:
            text = f"My number is {secret}."
        elif "done" in asked:
            text = "Great, thanks! ###STOP###"
        else:
            text = "Please help me."
        return {
            "choices": [
                {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ]
        }

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def customer() -> Iterator[FakeCustomer]:
    server = FakeCustomer()
    yield server
    server.close()


def _desk(url: str) -> str:
    return f"""\
state:
  done: {{type: bool}}
tools:
  finish:
    description: Finish the request.
    effect: [state.done = true]
    observe: finished (tool result)
user:
  instructions: "You are a customer; your number is {{{{ sample.n }}}}."
  model: chat:{url}
  sampling: {{temperature: 0.7, max_tokens: 40, seed: 7}}
rewards:
  served: {{on: final, value: "1.0 if user.ended and state.done else 0.0"}}
episode:
  success: reward.served == 1.0
"""


def test_a_model_user_answers_from_its_instructions_and_ends(
    customer: FakeCustomer, tmp_path: Path
) -> None:
    module = build(_desk(customer.url), tmp_path)
    thought = "<think>the customer must not read this</think>What is your number?"
    traj, env = play(module, [thought, call("finish"), "All done."])
    assert traj.steps[0].observation == "My number is 3."
    assert traj.steps[-1].info["user"] == {
        "rule": "model",
        "reply": "Great, thanks!",
        "ended": True,
    }
    assert traj.success is True and env.user.ended
    # two requests: the text turns only; the tool call and its result never reach the user
    assert len(customer.requests) == 2
    last = customer.requests[-1]
    assert (last["temperature"], last["max_tokens"], last["seed"]) == (0.7, 40, 7)
    seen = json.dumps(last["messages"])
    assert "finish" not in seen and "tool result" not in seen and "must not read" not in seen
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last["messages"][2]["content"] == "question"  # its own opening, as the assistant's
    assert "your number is 3" in last["messages"][0]["content"]


def test_the_user_model_tokens_are_observations_not_trained(
    customer: FakeCustomer, tmp_path: Path
) -> None:
    module = build(_desk(customer.url), tmp_path)
    traj, _ = play(module, ["What is your number?", "All done."])
    first = traj.steps[0]
    # the reply is in the step's observation ids (masked in training rows), not its response
    assert "My number is 3." in first.observation
    assert first.observation_ids and b"My number" not in bytes(
        i for i in first.response_ids if i < 256
    )


def test_a_failing_model_user_ends_only_its_episode(tmp_path: Path) -> None:
    module = build(_desk("http://127.0.0.1:9/v1"), tmp_path)
    traj, _ = play(module, ["What is your number?"])
    assert traj.termination.value == "env_error"
    assert "model user" in traj.steps[0].info["env_error"]


class FakeStoreCustomer(FakeCustomer):
    """The retail desk's customer, played from the instructions it is sent."""

    @staticmethod
    def completion(messages: list[dict[str, str]]) -> dict[str, Any]:
        import re

        told = " ".join(messages[0]["content"].split())
        email = re.search(r"your email is (\S+)\.", told)
        order = re.search(r"order (W\d+)", told)
        asked = messages[-1]["content"].lower()
        if "refunded" in asked:
            text = "Thank you, that's all! ###STOP###"
        elif "email" in asked and email:
            text = f"My email is {email.group(1)}."
        elif "order" in asked and order:
            text = f"It's order {order.group(1)}."
        else:
            text = "I need help with an order."
        choice = {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        return {"choices": [choice]}


def test_the_retail_desk_against_a_model_user(tmp_path: Path) -> None:
    """The same recipe, its rules replaced by `model: chat:URL`: the oracle's side of
    the dialogue still succeeds, every reply coming from the server."""
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    text = (root / "specs" / "retail_desk.yaml").read_text(encoding="utf-8")
    server = FakeStoreCustomer()
    try:
        rules = re.compile(r"  replies:\n.*?\n  otherwise: [^\n]*\n", re.S)
        spec = rules.sub(f"  model: chat:{server.url}\n", text, count=1)
        spec = spec.split("\ntests:\n")[0] + "\n"  # its scripted tests expect the rules' words
        assert "model: chat:" in spec and "replies:" not in spec
        path = tmp_path / "retail_desk.yaml"
        path.write_text(spec, encoding="utf-8")
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentspec.cli",
                "eval",
                str(path),
                "--policy",
                "oracle",
                "-n",
                "8",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.close()
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    line = next(x for x in result.stdout.splitlines() if "success rate" in x)
    assert float(line.split("│")[2]) == 1.0, result.stdout
    assert len(server.requests) == 8 * 3  # three messages of the oracle's per episode
