"""A small OpenAI-compatible completions server for a local checkpoint.

``python -m agentspec.runtime.serve.completions_server DIR --port 8000`` serves the model in
``DIR`` at ``http://127.0.0.1:8000/v1``: ``GET /v1/models`` and ``POST
/v1/completions`` (prompts as text or token ids, ``logprobs``, ``stop``,
``seed``, vLLM's ``return_tokens_as_token_ids``). Requests are served one at a
time by :class:`~agentspec.runtime.policies.hf.HFPolicy`; a request with a list
of prompts is one batch. Meant for evaluation and tests, not production traffic.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from agentspec.runtime.episode.policy import SamplingParams
from agentspec.runtime.serve.local_api import (
    LocalAPIServer,
    request_seed,
    serve_until_interrupted,
    server_arguments,
)

__all__ = ["CompletionServer", "main"]


class CompletionServer(LocalAPIServer):
    """Serve ``policy`` (an ``HFPolicy``) as a completions API (see :class:`LocalAPIServer`)."""

    route = "/v1/completions"

    def __init__(
        self, policy: Any, model_name: str = "local", host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(policy, model_name, host, port)

    def _prompts(self, prompt: Any) -> list[list[int]]:
        tok = self.policy.tokenizer
        if isinstance(prompt, str):
            return [tok.encode(prompt, add_special_tokens=False)]
        if isinstance(prompt, list) and prompt and all(isinstance(x, int) for x in prompt):
            return [list(prompt)]
        if isinstance(prompt, list) and prompt:
            out = []
            for p in prompt:
                if isinstance(p, str):
                    out.append(tok.encode(p, add_special_tokens=False))
                elif isinstance(p, list) and all(isinstance(x, int) for x in p):
                    out.append(list(p))
                else:
                    raise ValueError("each prompt must be a string or a list of token ids")
            return out
        raise ValueError("'prompt' must be a string, token ids, or a non-empty list of them")

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("n", 1) != 1:
            raise ValueError("only n=1 is supported")
        prompts = self._prompts(body["prompt"])
        stop = body.get("stop") or ()
        params = SamplingParams(
            max_new_tokens=int(body.get("max_tokens", 16)),
            temperature=float(body.get("temperature", 1.0)),
            top_p=float(body.get("top_p", 1.0)),
            top_k=max(0, int(body.get("top_k", 0) or 0)),
            stop=(stop,) if isinstance(stop, str) else tuple(stop),
            seed=request_seed(body),
            ignore_eos=bool(body.get("ignore_eos", False)),
        )
        with self._lock:
            outs = self.policy.generate_batch(prompts, params)
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        want_logprobs = body.get("logprobs") is not None
        tok = self.policy.tokenizer
        choices = []
        for i, out in enumerate(outs):
            choice: dict[str, Any] = {
                "index": i,
                "text": tok.decode(
                    out.token_ids, skip_special_tokens=bool(body.get("skip_special_tokens", True))
                ),
                "finish_reason": out.finish_reason,
                "logprobs": None,
            }
            if want_logprobs:
                choice["logprobs"] = {
                    "tokens": [
                        f"token_id:{t}" if as_ids else tok.decode([t]) for t in out.token_ids
                    ],
                    "token_logprobs": out.logprobs,
                }
            choices.append(choice)
        n_prompt = sum(len(p) for p in prompts)
        n_out = sum(len(o.token_ids) for o in outs)
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": choices,
            "usage": {
                "prompt_tokens": n_prompt,
                "completion_tokens": n_out,
                "total_tokens": n_prompt + n_out,
            },
        }


def main(argv: list[str] | None = None) -> None:
    parser = server_arguments(
        "Serve a local causal LM as an OpenAI-compatible completions API.", port=8000
    )
    args = parser.parse_args(argv)
    from agentspec.runtime.policies.hf import HFPolicy
    from agentspec.runtime.text.tiny_model import load_tiny

    model, tokenizer = load_tiny(args.model_dir)
    server = CompletionServer(
        HFPolicy(model, tokenizer), args.name or args.model_dir, args.host, args.port
    )
    serve_until_interrupted(server, args.model_dir)


if __name__ == "__main__":
    main()
