"""A policy backed by an OpenAI-compatible chat-completions API with native tool calling.

``--policy chat:URL`` (e.g. ``chat:http://localhost:8000/v1``, a vLLM or SGLang
chat server, or a hosted API) plays a spec's episodes for a baseline: each step
sends ``POST {URL}/chat/completions`` with the episode as messages (see
:mod:`agentspec.runtime.episode.conversation`) and the spec's tools as JSON schemas in
``tools``; returned ``tool_calls`` are written in the spec's tool format so the
environment parses and runs them exactly as a local model's.

Such an API returns text, not token ids: the response's text is encoded with the
task tokenizer (as the oracle's is) and its log-probs are zeros, so a chat policy
serves ``agentspec run`` / ``agentspec eval`` and never training.

Robustness: at most ``max_concurrency`` requests in flight per event loop;
transport errors, timeouts, HTTP 408/429/5xx are retried up to ``max_retries``
times with exponential backoff and jitter, a ``Retry-After`` header (seconds or
an HTTP date) deciding the wait when the server sends one. A request that still
fails, or a reply that is not a chat completion, ends that episode on its step
with ``policy_error`` (the message is kept in the step's ``info``); the other
episodes and the run go on.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Sequence
from typing import Any

import httpx

from agentspec.formats.strict_json import LONE_SURROGATE
from agentspec.runtime.episode.conversation import ChatCall, Conversation, render_calls
from agentspec.runtime.episode.policy import Generation, SamplingParams
from agentspec.runtime.policies.scripted import REMOTE_MAX_RESPONSE_TOKENS, encode_head
from agentspec.runtime.text.tokenizer import Tokenizer

__all__ = ["ChatPolicy", "ChatPolicyError"]

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class ChatPolicyError(RuntimeError):
    """A request that failed for good, or a reply that is not a chat completion."""


class ChatPolicy:
    """Chat completions with native tool calls from ``{base_url}/chat/completions``.

    Args:
        base_url: e.g. ``http://localhost:8000/v1``.
        model: the served model's name.
        tokenizer: the task tokenizer (encodes the response text into the step's ids).
        api_key: sent as a bearer token if given.
        timeout: seconds per HTTP request.
        max_concurrency: requests in flight at once (per event loop).
        max_retries: retries of a retryable failure (then the step fails).
        backoff: the first retry's base wait in seconds (doubling, with jitter).
        max_backoff: the longest computed wait.
        max_retry_after: the longest wait a ``Retry-After`` header may ask for.
        extra_body: more fields for every request (server-specific options).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        tokenizer: Tokenizer,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_concurrency: int = 8,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_retry_after: float = 120.0,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.tokenizer = tokenizer
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.extra_body = dict(extra_body or {})
        self.waits: list[float] = []
        """Every wait before a retry, in seconds (for reports and tests)."""
        self._semaphores: dict[int, asyncio.Semaphore] = {}

    async def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]:
        raise ChatPolicyError(
            "a chat-completions policy answers conversations, not token ids; "
            "it runs in agentspec run / eval (the loop calls generate_chat), never in training"
        )

    def request_body(self, conversation: Conversation, params: SamplingParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": conversation.messages,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "n": 1,
        }
        if conversation.tools:
            body["tools"] = conversation.tools
        if params.stop:
            body["stop"] = list(params.stop)
        if params.seed is not None:
            body["seed"] = params.seed
        body.update(self.extra_body)
        return body

    async def generate_chat(self, conversation: Conversation, params: SamplingParams) -> Generation:
        """One response; never raises for the server's or the network's failures."""
        body = self.request_body(conversation, params)
        try:
            async with self._semaphore():
                reply = await self._post(body)
            content, calls, finish = parse_reply(reply)
        except ChatPolicyError as exc:
            return Generation([], [], error=str(exc))
        text = render_calls(conversation.tool_format, content, calls)
        # a lone surrogate (JSON's "\\ud800") cannot be encoded: it reads as U+FFFD
        text = LONE_SURROGATE.sub("\ufffd", text)
        # the server cut the reply at `max_tokens` in its own tokens, not ours; one that
        # ignores it and sends megabytes is cut at a bound, the rest never encoded
        ids = encode_head(self.tokenizer, text, REMOTE_MAX_RESPONSE_TOKENS)
        if len(ids) > REMOTE_MAX_RESPONSE_TOKENS:
            ids, finish = ids[:REMOTE_MAX_RESPONSE_TOKENS], "length"
        eos = self.tokenizer.eos_token_id
        if finish != "length" and eos is not None:
            ids.append(eos)
        return Generation(ids, [0.0] * len(ids), finish)

    def _semaphore(self) -> asyncio.Semaphore:
        key = id(asyncio.get_running_loop())
        if key not in self._semaphores:
            self._semaphores = {key: asyncio.Semaphore(self.max_concurrency)}
        return self._semaphores[key]

    async def _post(self, body: dict[str, Any]) -> Any:
        url = f"{self.base_url}/chat/completions"
        problem = ""
        async with httpx.AsyncClient(timeout=self.timeout, headers=self.headers) as client:
            for attempt in range(self.max_retries + 1):
                wait = self._backoff(attempt)
                try:
                    resp = await client.post(url, json=body)
                except httpx.InvalidURL as exc:  # no retry mends the URL
                    raise ChatPolicyError(f"invalid URL {url!r}: {exc}") from None
                except httpx.HTTPError as exc:
                    problem = f"{type(exc).__name__}: {exc}".rstrip(": ")
                else:
                    if resp.status_code == 200:
                        try:
                            return resp.json()
                        except (ValueError, RecursionError):  # or nested past the parser
                            raise ChatPolicyError(
                                f"the reply from {url} is not JSON: {resp.text[:200]!r}"
                            ) from None
                    problem = f"HTTP {resp.status_code} from {url}: {resp.text[:300]}"
                    if resp.status_code not in RETRY_STATUS:
                        raise ChatPolicyError(problem)
                    asked = retry_after_seconds(resp.headers.get("Retry-After"))
                    if asked is not None:
                        wait = min(asked, self.max_retry_after)
                if attempt == self.max_retries:
                    break
                self.waits.append(wait)
                await asyncio.sleep(wait)
        raise ChatPolicyError(f"gave up after {self.max_retries + 1} attempts: {problem}")

    def _backoff(self, attempt: int) -> float:
        base = min(self.max_backoff, self.backoff * 2**attempt)
        return base * (0.5 + random.random() / 2)


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header as seconds from now (delta seconds or an HTTP date)."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def parse_reply(reply: Any) -> tuple[str | None, list[ChatCall], str]:
    """(content, tool calls, finish reason) of a chat completion; a bad shape raises."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ChatPolicyError(f"the reply has no choices: {json.dumps(reply)[:200]}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ChatPolicyError("the reply's first choice has no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ChatPolicyError(f"the message's content is not text: {json.dumps(content)[:200]}")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ChatPolicyError("the message's tool_calls is not a list")
    calls = [_call(c, i) for i, c in enumerate(raw_calls)]
    finish = "length" if choices[0].get("finish_reason") == "length" else "stop"
    return content, calls, finish


def _call(raw: Any, index: int) -> ChatCall:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ChatPolicyError(f"tool call {index + 1} has no function name")
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, dict):  # some servers send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, str):
        raise ChatPolicyError(
            f"tool call {index + 1}: arguments are neither JSON text nor an object"
        )
    return ChatCall(function["name"], arguments, str(raw.get("id", "")))
