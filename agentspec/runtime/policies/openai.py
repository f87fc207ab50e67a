"""A policy backed by any OpenAI-compatible completions server (vLLM, or ``policies.serve``).

Token in, token out over HTTP: prompts are sent as token ids and the generated
ids come back through vLLM's ``return_tokens_as_token_ids`` (log-prob entries
named ``token_id:N``), so no text is re-encoded. The server must support both
(vLLM does; so does :mod:`agentspec.runtime.serve.completions_server`).
"""

from __future__ import annotations

from typing import Any

import httpx

from agentspec.runtime.episode.policy import BatchingPolicy, Generation, SamplingParams

__all__ = ["OpenAIPolicy", "OpenAIPolicyError"]


class OpenAIPolicyError(RuntimeError):
    """The server answered with an error or with a response missing token ids."""


class OpenAIPolicy(BatchingPolicy):
    """Completions with log-probs from ``{base_url}/completions``.

    Args:
        base_url: e.g. ``http://localhost:8000/v1``.
        model: the served model's name.
        api_key: sent as a bearer token if given.
        timeout: seconds per HTTP request.
        max_batch_size: prompts per request (one request carries a list of prompts).
        extra_body: more fields for every request (server-specific options).

    Log-probs are whatever the server reports; vLLM reports the raw model's by
    default (``--logprobs-mode``), which equals :class:`~agentspec.runtime.episode.policy.Generation`'s
    convention at temperature 1.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 300.0,
        max_batch_size: int = 64,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(max_batch_size=max_batch_size)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})

    def request_body(self, prompts: list[list[int]], params: SamplingParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompts,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "logprobs": 0,
            "n": 1,
            "return_tokens_as_token_ids": True,
            "skip_special_tokens": False,
            "include_stop_str_in_output": True,
        }
        if params.top_k:
            body["top_k"] = params.top_k
        if params.stop:
            body["stop"] = list(params.stop)
        if params.seed is not None:
            body["seed"] = params.seed
        if params.ignore_eos:
            body["ignore_eos"] = True
        body.update(self.extra_body)
        return body

    async def agenerate_batch(
        self, prompts: list[list[int]], params: SamplingParams
    ) -> list[Generation]:
        """One request for the batch. The server's or the network's failure, or a reply
        that is not a completion with token ids, is each prompt's ``error``: those
        episodes end with ``policy_error`` and the run goes on. A response longer than
        ``max_new_tokens`` (a server that ignores ``max_tokens``) is cut there."""
        try:
            choices = await self._choices(prompts, params)
        except OpenAIPolicyError as exc:
            return [Generation([], [], error=str(exc)) for _ in prompts]
        return [self._parse_choice(c, params.max_new_tokens) for c in choices]

    async def _choices(self, prompts: list[list[int]], params: SamplingParams) -> list[dict]:
        url = f"{self.base_url}/completions"
        try:
            async with httpx.AsyncClient(timeout=self.timeout, headers=self.headers) as client:
                resp = await client.post(url, json=self.request_body(prompts, params))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise OpenAIPolicyError(f"{type(exc).__name__} from {url}: {exc}") from None
        if resp.status_code != 200:
            raise OpenAIPolicyError(f"{resp.status_code} from {self.base_url}: {resp.text[:500]}")
        try:
            reply = resp.json()
        except (ValueError, RecursionError):  # not JSON; nested past the parser's depth
            raise OpenAIPolicyError(
                f"the reply from {url} is not JSON: {resp.text[:200]!r}"
            ) from None
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise OpenAIPolicyError(f"the reply from {url} has no list of choices")
        if len(choices) != len(prompts):
            raise OpenAIPolicyError(f"sent {len(prompts)} prompts, got {len(choices)} choices")
        return sorted(choices, key=_index)

    @staticmethod
    def _parse_choice(choice: dict[str, Any], limit: int) -> Generation:
        """A choice's generation (at most ``limit`` tokens), or one with the ``error``
        that says what the choice lacks."""
        lp = choice.get("logprobs")
        tokens = lp.get("tokens") if isinstance(lp, dict) else None
        values = lp.get("token_logprobs") if isinstance(lp, dict) else None
        if (
            not isinstance(tokens, list)
            or not isinstance(values, list)
            or len(tokens) != len(values)
        ):
            return Generation(
                [], [], error="the server returned no log-prob per token; it must support logprobs"
            )
        ids: list[int] = []
        logprobs: list[float] = []
        for token, value in zip(tokens[:limit], values[:limit], strict=True):
            number = token.removeprefix("token_id:") if isinstance(token, str) else ""
            if not (number.isascii() and number.isdigit() and len(number) <= 9):
                return Generation(
                    [],
                    [],
                    error=f"token {str(token)[:40]!r} is not 'token_id:N'; the server must "
                    "support return_tokens_as_token_ids",
                )
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                return Generation([], [], error=f"log-prob {str(value)[:40]!r} is not a number")
            ids.append(int(number))
            logprobs.append(float(value))
        cut = len(tokens) > limit
        finish = "length" if cut or choice.get("finish_reason") == "length" else "stop"
        return Generation(ids, logprobs, finish)


def _index(choice: dict[str, Any]) -> int:
    index = choice.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else 0
