"""What keeps one client of a served spec from locking the others out.

`agentspec serve --openenv` holds at most `--max-sessions` sessions, and a client
could hold them all: open WebSockets that never send (pings alone kept them alive),
sessions created over HTTP (`POST /mcp` `openenv/session/create`) whose ids were then
lost, a flood of resets whose replies are never read, bodies of 100 MB. So
(:class:`ServerLimits`, docs/openenv.md "Limits and access"):

- a session idle for `idle_timeout_s` is closed: a WebSocket whose client sends no
  message, or does not take a reply, for that long (pings do not count), and a session
  created over HTTP that no request names for that long;
- each message a connection sends is handled in turn with the other connections' (a
  client flooding messages gets one turn at a time), and what a connection has not read
  is bounded (`send_buffer_bytes`, with the uvicorn protocol of
  :func:`bounded_websocket_protocol`): a client that stops reading stops being served;
- a request body or WebSocket message past `max_message_bytes` is refused unread;
- with a `token`, every route but `/health` needs it (`Authorization: Bearer TOKEN`,
  or HTTP basic auth with the token as the password, which an OpenEnv client sends for
  a base URL `http://user:TOKEN@host:port`).

:class:`LimitsGuard` is the ASGI middleware that does all of this in `build_app`'s app,
so the generated OpenEnv package's server gets it too.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hmac
import json
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agentspec.runtime.serve.defaults import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_SEND_BUFFER_BYTES,
    TOKEN_ENV,
)

__all__ = [
    "DEFAULT_IDLE_TIMEOUT_S",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_SEND_BUFFER_BYTES",
    "TOKEN_ENV",
    "LimitsGuard",
    "ServerLimits",
    "bounded_websocket_protocol",
    "is_loopback",
]


_CLOSE_WAIT_S = 1.0  # how long a closing notice waits for a client that may not read
_UNAUTHORIZED = (
    "this server needs its token: `Authorization: Bearer TOKEN` (or http://user:TOKEN@host)"
)

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True)
class ServerLimits:
    """The limits of a served spec (defaults in docs/openenv.md, "Limits and access").

    Attributes:
        idle_timeout_s: a session the client leaves idle this long is closed.
        max_message_bytes: the largest request body or WebSocket message taken.
        send_buffer_bytes: the most of a connection's replies the server holds unread
            (with :func:`bounded_websocket_protocol`; `agentspec serve` uses it).
        token: the shared token every route but `/health` needs (None: open).
    """

    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    send_buffer_bytes: int = DEFAULT_SEND_BUFFER_BYTES
    token: str | None = None

    def __post_init__(self) -> None:
        if not self.idle_timeout_s > 0:
            raise ValueError(f"the idle timeout must be positive, not {self.idle_timeout_s}")
        if self.max_message_bytes < 1 or self.send_buffer_bytes < 1:
            raise ValueError("message and buffer sizes must be at least 1 byte")
        if self.token is not None and not self.token.strip():
            raise ValueError("the token is empty: give one, or none")

    @classmethod
    def from_environment(cls) -> ServerLimits:
        """The defaults, with the token of `AGENTSPEC_SERVE_TOKEN` if it is set."""
        return cls(token=os.environ.get(TOKEN_ENV) or None)


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _ClientStalled(Exception):
    """A client took no reply for the idle timeout: its connection is given up."""


class LimitsGuard:
    """The ASGI middleware that applies :class:`ServerLimits` to every request and
    WebSocket of the app it wraps (see the module's docstring)."""

    def __init__(self, app: Any, limits: ServerLimits) -> None:
        self.app = app
        self.limits = limits
        # sessions created over HTTP (`openenv/session/create`): id → when last named
        self.http_sessions: dict[str, float] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if not self._authorized(scope):
            await self._refuse(scope, send)
            return
        await self._expire_http_sessions(scope)
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self._http(scope, receive, send)

    # --------------------------------------------------------------- the token

    def _authorized(self, scope: Scope) -> bool:
        token = self.limits.token
        if token is None or scope.get("path") == "/health":
            return True
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, credentials = header.partition(" ")
        given = credentials.strip()
        if scheme.lower() == "basic":  # http://user:TOKEN@host: the password is the token
            try:
                given = base64.b64decode(given, validate=True).decode("utf-8").partition(":")[2]
            except (binascii.Error, UnicodeDecodeError):
                return False
        elif scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))

    async def _refuse(self, scope: Scope, send: Send) -> None:
        body = json.dumps({"detail": _UNAUTHORIZED}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
            (b"www-authenticate", b'Bearer realm="agentspec"'),
        ]
        if scope["type"] == "websocket":
            if "websocket.http.response" not in scope.get("extensions", {}):
                await send({"type": "websocket.close", "code": 1008})  # the server says 403
                return
            start = "websocket.http.response.start"
            await send({"type": start, "status": 401, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body})
            return
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    # ------------------------------------------------------------------- HTTP

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await self._read_body(scope, receive, send)
        if body is None:
            return  # refused as too large
        sent = False

        async def replay() -> Message:  # the body read here, then whatever comes next
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        if scope.get("path") == "/mcp" and scope.get("method") == "POST":
            await self._mcp(scope, replay, send, body)
        else:
            await self.app(scope, replay, send)

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The request's body, or None after answering 413 when it is larger than
        `max_message_bytes` (refused from its `Content-Length` before reading it)."""
        limit = self.limits.max_message_bytes
        length = dict(scope.get("headers") or []).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            await self._too_large(send, int(length))
            return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client left: the app sees an empty body, then the disconnect
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._too_large(send, None)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _too_large(self, send: Send, size: int | None) -> None:
        sized = f"{size:,} bytes" if size is not None else "larger"
        detail = (
            f"the request body is {sized}; this server takes at most"
            f" {self.limits.max_message_bytes:,} (agentspec serve --max-message-bytes)"
        )
        body = json.dumps({"detail": detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
            (b"connection", b"close"),  # what is left of the body is never read
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    # ------------------------------------------- sessions created over HTTP

    async def _mcp(self, scope: Scope, receive: Receive, send: Send, body: bytes) -> None:
        """`POST /mcp`, noting the sessions it creates, names and closes: a session
        created over HTTP lives while requests name it, and expires after the idle
        timeout (OpenEnv kept it, and its slot, until the server restarted)."""
        try:
            request = json.loads(body)
        except (ValueError, RecursionError):
            request = None
        method = request.get("method") if isinstance(request, dict) else None
        params = request.get("params") if isinstance(request, dict) else None
        named = params.get("session_id") if isinstance(params, dict) else None
        if isinstance(named, str) and named in self.http_sessions:
            self.http_sessions[named] = time.monotonic()
        if method != "openenv/session/create":
            await self.app(scope, receive, send)
            if method == "openenv/session/close" and isinstance(named, str):
                self.http_sessions.pop(named, None)
            return
        reply: list[bytes] = []

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.body":
                reply.append(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, noting)
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            created = json.loads(b"".join(reply))["result"]["session_id"]
            if isinstance(created, str):
                self.http_sessions[created] = time.monotonic()

    async def _expire_http_sessions(self, scope: Scope) -> None:
        """Close the sessions created over HTTP that no request named for the idle
        timeout: before any request is served, so a slot they held is free for it."""
        now = time.monotonic()
        expired = [
            sid
            for sid, last in self.http_sessions.items()
            if now - last > self.limits.idle_timeout_s
        ]
        for sid in expired:
            self.http_sessions.pop(sid, None)
            await self._close_http_session(scope, sid)

    async def _close_http_session(self, scope: Scope, session_id: str) -> None:
        """OpenEnv's own `openenv/session/close`, sent to the app from here (whatever the
        OpenEnv version, it releases the session and its slot as a client's close does)."""
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "openenv/session/close",
                "params": {"session_id": session_id},
                "id": "agentspec-idle-timeout",
            }
        ).encode()
        internal = {
            key: value
            for key, value in scope.items()
            if key in ("asgi", "scheme", "root_path", "server", "state", "app", "client")
        }
        internal.update(
            type="http",
            http_version="1.1",
            method="POST",
            path="/mcp",
            raw_path=b"/mcp",
            query_string=b"",
            headers=[
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ],
        )
        delivered = False

        async def request() -> Message:
            nonlocal delivered
            if delivered:
                await asyncio.Event().wait()  # nothing more comes: as a client that waits
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def discard(message: Message) -> None:
            return None

        with contextlib.suppress(Exception):  # a session closed meanwhile is no error here
            await self.app(internal, request, discard)

    # -------------------------------------------------------------- WebSocket

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        limits = self.limits
        closed = False  # the connection was given up: nothing more goes to the client

        async def close(reason: str, code: int) -> None:
            nonlocal closed
            if closed:
                return
            closed = True
            notice = json.dumps({"type": "error", "data": {"message": reason, "code": "CLOSED"}})
            with contextlib.suppress(Exception):  # the client may be gone or not reading
                await asyncio.wait_for(
                    send({"type": "websocket.send", "text": notice}), _CLOSE_WAIT_S
                )
                await asyncio.wait_for(
                    send({"type": "websocket.close", "code": code, "reason": reason[:120]}),
                    _CLOSE_WAIT_S,
                )

        async def limited_receive() -> Message:
            while True:
                try:
                    message = await asyncio.wait_for(receive(), limits.idle_timeout_s)
                except asyncio.TimeoutError:
                    await close(
                        f"no message for {limits.idle_timeout_s:g} s: the session is closed"
                        " (agentspec serve --idle-timeout)",
                        1001,
                    )
                    return {"type": "websocket.disconnect", "code": 1001}
                if message["type"] != "websocket.receive":
                    return message
                size = _message_size(message)
                if size > limits.max_message_bytes:
                    await limited_send(_too_large_frame(size, limits.max_message_bytes))
                    continue
                # One message, then the other connections' turn: a client that floods
                # messages gets one turn at a time, not the event loop.
                await asyncio.sleep(0)
                return message

        async def limited_send(message: Message) -> None:
            if closed:
                if message["type"] == "websocket.close":
                    return  # already closed here
                raise _ClientStalled()
            try:
                await asyncio.wait_for(send(message), limits.idle_timeout_s)
            except asyncio.TimeoutError:
                await close(
                    f"no reply taken for {limits.idle_timeout_s:g} s: the session is closed",
                    1008,
                )
                raise _ClientStalled() from None

        with contextlib.suppress(_ClientStalled):
            await self.app(scope, limited_receive, limited_send)


def _message_size(message: Message) -> int:
    """The bytes a received WebSocket message holds (its text as UTF-8)."""
    if message.get("text") is None:
        return len(message["bytes"])
    return len(message["text"].encode("utf-8", "surrogatepass"))


def _too_large_frame(size: int, limit: int) -> Message:
    error = {
        "message": f"the message is {size:,} bytes; this server takes at most {limit:,}"
        " (agentspec serve --max-message-bytes)",
        "code": "MESSAGE_TOO_LARGE",
    }
    return {"type": "websocket.send", "text": json.dumps({"type": "error", "data": error})}


def bounded_websocket_protocol(send_buffer_bytes: int) -> type:
    """uvicorn's WebSocket protocol with at most about `send_buffer_bytes` of a
    connection's replies held unread: in the transport (past it, the app's next send
    waits for the client to read) and in the kernel's socket buffer. Without it, a client
    that sends without reading had megabytes of replies buffered before anything waited,
    and the server worked for it all that time."""
    from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

    if AutoWebSocketsProtocol is None:  # no WebSocket library: uvicorn serves none
        raise RuntimeError("uvicorn has no WebSocket support: pip install websockets")
    base: Any = AutoWebSocketsProtocol

    class BoundedSendBuffer(base):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            transport.set_write_buffer_limits(high=send_buffer_bytes)
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer_bytes)

    return BoundedSendBuffer
