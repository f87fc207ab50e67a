"""A spec's oracle as an OpenAI-compatible chat-completions server: a "model" that
needs no weights, for trying a chat client (vf-eval, a harness of your own) offline.

    python -m agentspec.runtime.serve.oracle_chat specs/calculator.yaml --port 8000

serves ``http://127.0.0.1:8000/v1``, listing one model, ``oracle``. Each request's
episode is found by its first user message (the sample's task, as the spec renders
it); the reply is the oracle's next turn (one per assistant message already in the
conversation), streamed as server-sent events when asked; a task it does not know
gets an empty reply. `scripted_chat` serves any such script from Python.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Turns = Callable[[str, int], str]
"""(the episode's first user message, turns already taken) -> the next reply."""

MAX_BODY_BYTES = 16 << 20


def _chunk(text: str | None, finish: str | None) -> bytes:
    delta = {"role": "assistant", "content": text} if text is not None else {}
    body = {
        "id": "scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "oracle",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def _handler(turns: Turns, requests: list[dict[str, Any]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            return

        def do_GET(self) -> None:
            self._json({"object": "list", "data": [{"id": "oracle", "object": "model"}]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 <= length <= MAX_BODY_BYTES:
                self.send_error(413, f"a request body is at most {MAX_BODY_BYTES} bytes")
                return
            try:
                body = json.loads(self.rfile.read(length))
                messages = list(body.get("messages", []))
            except (ValueError, AttributeError, TypeError):
                self.send_error(400, "the body must be a JSON object with `messages`")
                return
            requests.append(body)
            messages = [m for m in messages if isinstance(m, dict)]
            task = next((m["content"] for m in messages if m.get("role") == "user"), "")
            if isinstance(task, list):  # content parts
                task = "".join(p.get("text", "") for p in task if isinstance(p, dict))
            taken = sum(1 for m in messages if m.get("role") == "assistant")
            reply = turns(str(task), taken)
            if not body.get("stream"):
                self._json(
                    {
                        "id": "scripted",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": "oracle",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                )
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(_chunk(reply, None))
            self.wfile.write(_chunk(None, "stop"))
            self.wfile.write(b"data: [DONE]\n\n")

        def _json(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def scripted_chat(turns: Turns, port: int = 0) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The server on ``port`` (0: a free one): its `/v1` base URL and the requests it
    answered."""
    requests: list[dict[str, Any]] = []
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(turns, requests))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()


def oracle_turns(spec_path: str | Path, split: str | None = None) -> Turns:
    """The spec's oracle as a script: each sample of ``split`` by its first user message."""
    from agentspec.runtime.serve.session import first_turn
    from agentspec.runtime.serve.spec import ServedSpec

    spec = ServedSpec.load(spec_path)
    scripts: dict[str, list[str]] = {}
    for sample in spec.samples(split):
        messages = first_turn(spec, sample).messages
        task = next((str(m["content"]) for m in messages if m.get("role") == "user"), "")
        scripts.setdefault(task, list(spec.module.oracle_actions(sample)))

    def turns(task: str, taken: int) -> str:
        script = scripts.get(task, [])
        return script[taken] if taken < len(script) else ""

    return turns


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m agentspec.runtime.serve.oracle_chat", description=__doc__.splitlines()[0]
    )
    parser.add_argument("spec", type=Path)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--split", default=None, help="the split whose samples it knows")
    options = parser.parse_args(argv)
    print(f"loading {options.spec} (its samples and tokenizer)...", flush=True)
    turns = oracle_turns(options.spec, options.split)
    with scripted_chat(turns, options.port) as (url, _):
        print(f"the oracle of {options.spec} at {url} (model: oracle); Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
