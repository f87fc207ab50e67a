"""The HTTP side shared by the local OpenAI-style servers (`serve`, `chat_serve`).

Each serves one policy in a background thread: ``GET /v1/models`` and one
``POST`` route whose JSON body goes to the server's ``complete`` method. A
body that is not a JSON object, or that ``complete`` rejects with
``ValueError``/``KeyError``/``TypeError``, is a 400 ``invalid_request_error``
as in OpenAI's API; an unknown path is a 404.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "MAX_BODY_BYTES",
    "LocalAPIServer",
    "request_seed",
    "serve_until_interrupted",
    "server_arguments",
]

MAX_BODY_BYTES = 64 * 2**20
"""The largest request body read (a test or evaluation server: prompts, not corpora)."""


def request_seed(body: Mapping[str, Any]) -> int | None:
    """The request's ``seed``: an integer torch can seed with, or None."""
    seed = body.get("seed")
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"'seed' must be an integer 0..2**63-1, got {str(seed)[:40]!r}")
    return seed


class LocalAPIServer:
    """A policy behind one OpenAI-style route, served on ``host:port`` (``0``: any free port).

    ``url`` is the ``/v1`` base URL. Use as a context manager or call :meth:`close`.
    Subclasses set ``route`` and implement :meth:`complete`.
    """

    route = ""

    def __init__(self, policy: Any, model_name: str, host: str, port: int) -> None:
        self.policy = policy
        self.model_name = model_name
        self._lock = threading.Lock()  # one request at a time reaches the model
        self.httpd = ThreadingHTTPServer((host, port), _handler(self))
        self.httpd.daemon_threads = True
        self.url = f"http://{host}:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LocalAPIServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(server: LocalAPIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _no_route(self) -> None:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                return self._no_route()
            models = [{"id": server.model_name, "object": "model"}]
            self._send(200, {"object": "list", "data": models})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != server.route:
                return self._no_route()
            try:
                length = int(self.headers.get("Content-Length", "0"))
                if not 0 <= length <= MAX_BODY_BYTES:  # -1 waited for the client to close
                    raise ValueError(f"Content-Length must be 0..{MAX_BODY_BYTES:,}, got {length}")
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                self._send(200, server.complete(body))
            except RecursionError:
                error = {"message": "the body nests too deep", "type": "invalid_request_error"}
                self._send(400, {"error": error})
            except (ValueError, KeyError, TypeError) as exc:
                error = {"message": str(exc), "type": "invalid_request_error"}
                self._send(400, {"error": error})

    return Handler


def serve_until_interrupted(server: LocalAPIServer, what: str) -> None:
    """Print where ``what`` is served and block until Ctrl-C."""
    print(f"serving {what} at {server.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.close()


def server_arguments(description: str, port: int) -> argparse.ArgumentParser:
    """The command line both servers share: the model folder, host, port, served name."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("model_dir")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--name", default=None, help="model name reported by the API")
    return parser
