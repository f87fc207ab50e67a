"""Streamable HTTP to an MCP server, with answers of at most ``max_result_bytes``.

The SDK bounds an answer sent as server-sent events (its ``max_sse_event_size``);
one sent as a plain JSON body it reads whole, however large. So the HTTP client
the SDK is given counts a JSON body as it arrives and ends it in an error past
the limit, which the SDK reports as that call's error (the message names the
limit: :func:`agentspec.runtime.mcp.session` turns it into ``too_large``).
Imported only for a server reached by `url`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from agentspec.runtime.mcp.launch import too_large_message

__all__ = ["bounded_http_client"]


@contextlib.asynccontextmanager
async def bounded_http_client(url: str, limit: int) -> AsyncIterator[Any]:
    """The SDK's Streamable HTTP transport to ``url``, answers bounded by ``limit`` bytes."""
    client = httpx2.AsyncClient(  # the SDK's default client, but for its transport
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        transport=_BoundedJsonTransport(httpx2.AsyncHTTPTransport(), limit),
    )
    async with (
        client,
        streamable_http_client(url, http_client=client, max_sse_event_size=limit) as streams,
    ):
        yield streams


class _BoundedJsonTransport(httpx2.AsyncBaseTransport):
    """Responses of ``inner`` whose JSON bodies end in an error past ``limit`` bytes."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("application/json"):
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = _BoundedBody(response.stream, self.limit)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class _BoundedBody(httpx2.AsyncByteStream):
    """A response body that raises once more than ``limit`` bytes have arrived."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self.inner:
            size += len(chunk)
            if size > self.limit:
                raise httpx2.StreamError(too_large_message(self.limit, size, at_least=True))
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()
