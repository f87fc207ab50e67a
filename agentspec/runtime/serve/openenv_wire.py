"""What OpenEnv's server does not handle on the wire, for every connection: frames that
are not JSON objects, binary frames, and error replies that would echo a refused value
whole (each reply is cut to a size a default client reads)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from agentspec.core.json_value import json_value

__all__ = ["ECHO_LIMIT", "WebSocketGuard", "short_inputs", "shortened"]


class WebSocketGuard:
    """What OpenEnv's WebSocket route does not handle, for every connection:

    - a frame of valid JSON that is not an object (a list, a string, a number, null)
      ended the connection without a word; it is answered with an error frame, as a
      malformed object is, and the connection (and its episode) goes on; so is JSON
      that Python refuses past OpenEnv's `JSONDecodeError` handler (an integer past
      4,300 digits, nesting past the parser's depth), which ended the session;
    - a binary frame (OpenEnv reads text only, and raised) is read as its UTF-8 text;
    - an error frame about a malformed message echoed the offending value whole (a
      megabyte action came back as a megabyte error, past a default client's frame
      limit): each error's `input` is cut to `ECHO_LIMIT` characters;
    - OpenEnv 0.3 closes a WebSocket its client already closed, and the resulting
      disconnect reaches the ASGI server as an error (logged with a traceback) after
      the session was cleaned up, and a reply sent after the client left raises
      starlette's `WebSocketDisconnected`: a client leaving is no error."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.websockets import WebSocketDisconnect, WebSocketDisconnected

        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def objects_only() -> Any:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                if message.get("text") is None:  # a binary frame: OpenEnv reads text only
                    message = _as_text(message)
                problem = _frame_problem(message.get("text"))
                if problem is None:
                    return message
                error = {"message": problem, "code": "VALIDATION_ERROR"}
                await send(
                    {"type": "websocket.send", "text": json.dumps({"type": "error", "data": error})}
                )

        async def short_errors(message: Any) -> None:
            text = message.get("text") if message["type"] == "websocket.send" else None
            if text is not None and len(text) > ECHO_LIMIT:
                message = {**message, "text": _error_frame_cut(text)}
            await send(message)

        with contextlib.suppress(WebSocketDisconnect, WebSocketDisconnected):
            await self.app(scope, objects_only, short_errors)


ECHO_LIMIT = 2_000
"""Characters of a refused value an error message repeats back to the client."""


def short_inputs(errors: Any) -> Any:
    """Pydantic's error details with each `input` longer than `ECHO_LIMIT` characters
    (as JSON) replaced by its beginning and its size."""
    if not isinstance(errors, list):
        return errors
    cut = []
    for error in errors:
        if isinstance(error, dict) and "input" in error:
            shown = json.dumps(json_value(error["input"]))
            if len(shown) > ECHO_LIMIT:
                error = {**error, "input": f"{shown[:200]}… ({len(shown):,} characters)"}
        cut.append(error)
    return cut


def _error_frame_cut(text: str) -> str:
    """A long outgoing WebSocket frame, with the inputs of its error details cut when it
    is an error frame; any other frame unchanged."""
    try:
        frame = json.loads(text)
    except ValueError:
        return text
    data = frame.get("data") if isinstance(frame, dict) else None
    if frame.get("type") != "error" or not isinstance(data, dict):
        return text
    # messages built from a refused value (an unknown sample id, a reset key) repeat it
    cut = {k: shortened(v) if isinstance(v, str) else v for k, v in data.items()}
    if "errors" in data:
        cut["errors"] = short_inputs(data["errors"])
    return json.dumps({**frame, "data": cut})


def shortened(text: str) -> str:
    if len(text) <= ECHO_LIMIT:
        return text
    return f"{text[:ECHO_LIMIT]}… ({len(text):,} characters)"


def _as_text(message: dict[str, Any]) -> dict[str, Any]:
    """A binary frame as the text frame it spells in UTF-8 (OpenEnv's `receive_text`
    raised on a binary one and ended the session); bytes that are not UTF-8 keep no text,
    which `_frame_problem` refuses."""
    try:
        text: str | None = (message.get("bytes") or b"").decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {**message, "text": text, "bytes": None}


def _frame_problem(raw: str | None) -> str | None:
    """Why a frame is answered with an error here (the connection and its episode go
    on), or None to pass it to OpenEnv: an object, or text that is not JSON at all,
    which OpenEnv answers itself. OpenEnv caught only `JSONDecodeError`, so JSON that
    Python refuses otherwise (an integer past 4,300 digits, nesting past the parser's
    depth) ended the session."""
    if raw is None:
        return "a message must be UTF-8 JSON text; got a binary frame that is not UTF-8"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return None
    except (ValueError, RecursionError) as exc:
        return f"a message this server cannot read: {str(exc)[:200]}"
    if isinstance(value, dict):
        return None
    names = {
        bool: "true or false",
        str: "a string",
        list: "a list",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    kind = names.get(type(value), type(value).__name__)
    return f'a message must be a JSON object, e.g. {{"type": "state"}}; got {kind}'
