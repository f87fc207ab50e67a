"""A policy backed by any OpenAI-compatible completions server (vLLM, or ``policies.serve``).

Token in, token out over HTTP: prompts are sent as token ids and the generated
ids come back through vLLM's ``return_tokens_as_token_ids`` (log-prob entries
named ``token_id:N``), so no text is re-encoded. The server must support both
(vLLM does; so does :mod:`agentspec.runtime.policies.serve`).
"""

from __future__ import annotations

from typing import Any

import httpx

from agentspec.runtime.policies.base import BatchingPolicy, Generation, SamplingParams

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
    default (``--logprobs-mode``), which equals :class:`~agentspec.runtime.policies.base.Generation`'s
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
        body = self.request_body(prompts, params)
        async with httpx.AsyncClient(timeout=self.timeout, headers=self.headers) as client:
            resp = await client.post(f"{self.base_url}/completions", json=body)
        if resp.status_code != 200:
            raise OpenAIPolicyError(f"{resp.status_code} from {self.base_url}: {resp.text[:500]}")
        choices = sorted(resp.json()["choices"], key=lambda c: c["index"])
        if len(choices) != len(prompts):
            raise OpenAIPolicyError(f"sent {len(prompts)} prompts, got {len(choices)} choices")
        return [self._parse_choice(c) for c in choices]

    @staticmethod
    def _parse_choice(choice: dict[str, Any]) -> Generation:
        lp = choice.get("logprobs") or {}
        tokens = lp.get("tokens")
        values = lp.get("token_logprobs")
        if tokens is None or values is None:
            raise OpenAIPolicyError("the server returned no logprobs; it must support logprobs")
        ids = []
        for tok in tokens:
            if not isinstance(tok, str) or not tok.startswith("token_id:"):
                raise OpenAIPolicyError(
                    f"token {tok!r} is not 'token_id:N'; the server must support return_tokens_as_token_ids"
                )
            ids.append(int(tok.split(":", 1)[1]))
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        return Generation(ids, [float(v) for v in values], finish)
