"""A scripted OpenAI-compatible chat-completions server: the spec's oracle as the model.

Each request's episode is found by its first user message (the sample's task);
the reply is the oracle's next turn (one per assistant message already in the
conversation), streamed as server-sent events when asked. No model, no network.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turns = Callable[[str, int], str]
"""(the episode's first user message, turns already taken) -> the next reply."""


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
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            requests.append(body)
            messages = body.get("messages", [])
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
def scripted_chat(turns: Turns) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The server on a free port: its `/v1` base URL and the requests it answered."""
    requests: list[dict[str, Any]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(turns, requests))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()
