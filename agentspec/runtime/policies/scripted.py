"""A policy that answers with given texts (for tests and oracles); no torch."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from agentspec.runtime.episode.policy import Generation, SamplingParams
from agentspec.runtime.text.tokenizer import Tokenizer

__all__ = ["REMOTE_MAX_RESPONSE_TOKENS", "ScriptedPolicy", "encode_head", "text_generation"]


class ScriptedPolicy:
    """Responds with scripted text, tokenised by the task tokenizer.

    Args:
        script: texts returned in order (cycling; any iterable, such as a
            generated module's lazy ``oracle_actions``, is read once), or a
            function of the decoded prompt (special tokens kept) returning the text.
        tokenizer: the task tokenizer.
        append_eos: end each response with the EOS token, as a model would.
        logprob: the log-prob recorded for every token.
        errors: exception types that the script may raise for one response (an oracle
            turn that fails to render on this sample): the response is then a
            ``Generation`` with that ``error``, which ends the episode with
            ``policy_error`` and keeps the message, instead of ending the run.

    ``max_new_tokens`` and stop strings apply as for a real model: a response cut
    at the limit ends with ``finish_reason="length"`` and no EOS.
    """

    def __init__(
        self,
        script: Iterable[str] | Callable[[str], str],
        tokenizer: Tokenizer,
        append_eos: bool = True,
        logprob: float = 0.0,
        errors: tuple[type[Exception], ...] = (),
    ) -> None:
        self.script: Sequence[str] | Callable[[str], str] = (
            script if callable(script) or isinstance(script, Sequence) else list(script)
        )
        self.tokenizer = tokenizer
        self.append_eos = append_eos
        self.logprob = logprob
        self.errors = errors
        self.calls = 0

    def _text(self, prompt: Sequence[int]) -> str:
        if callable(self.script):
            return self.script(self.tokenizer.decode(list(prompt), skip_special_tokens=False))
        if not self.script:
            raise ValueError("ScriptedPolicy has an empty script")
        return self.script[(self.calls - 1) % len(self.script)]

    def respond(self, prompt: Sequence[int], params: SamplingParams) -> Generation:
        self.calls += 1
        try:
            text = self._text(prompt)
        except self.errors as exc:
            return Generation([], [], error=str(exc))
        return text_generation(text, self.tokenizer, params, self.append_eos, self.logprob)

    async def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]:
        return [self.respond(p, params) for p in prompts]


def text_generation(
    text: str,
    tokenizer: Tokenizer,
    params: SamplingParams,
    append_eos: bool = True,
    logprob: float = 0.0,
) -> Generation:
    """A response written as text, as a model sampling under ``params`` would give it:
    cut after a stop string, encoded by ``tokenizer``, EOS appended (``append_eos``)
    unless a stop string ended it, and cut at ``max_new_tokens`` (``finish_reason``
    ``length``, no EOS). Scripted policies and served sessions both use it, so the
    same text makes the same step."""
    finish = "stop"
    cut = [i + len(s) for s in params.stop if (i := text.find(s)) != -1]
    if cut:
        text = text[: min(cut)]
    ids = encode_head(tokenizer, text, params.max_new_tokens)
    if append_eos and not cut and tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    if len(ids) > params.max_new_tokens:
        ids = ids[: params.max_new_tokens]
        finish = "length"
    return Generation(ids, [logprob] * len(ids), finish)


REMOTE_MAX_RESPONSE_TOKENS = 32_768
"""The most tokens (agentspec's) of one response written elsewhere (a chat server's
reply, a served session's action) that are encoded: that text was cut by its own
tokenizer's limit, not the spec's `max_response_tokens`, but a runaway or hostile one
(megabytes) is bounded."""

_BOUNDARY_TOKENS = 8
"""Tokens past the limit that a prefix must reach before its head is trusted: cutting
the text changes only how the last few tokens before the cut are merged."""


def encode_head(tokenizer: Tokenizer, text: str, limit: int) -> list[int]:
    """``tokenizer.encode(text)``, or — where that is longer than ``limit`` tokens — a
    list whose first ``limit`` tokens are its first ``limit``, found by encoding a
    prefix of the text twice as long each time. A caller may send megabytes as one
    response (a hostile client, a runaway model) of which only ``limit`` tokens count;
    encoding all of it took seconds, blocking every other episode on the event loop.

    The first prefix has a character per token wanted, plus an eighth (a token is
    rarely shorter than a character), and each next one is what the last one's
    characters per token say the wanted tokens take, plus a tenth (at most twice as
    long): what is encoded grows with ``limit``, never with the text. (It used to start at sixteen characters a
    token and double: with `max_response_tokens` 2^20, an 8 MB response of digits was
    encoded whole, 49 s and 3.1 GB for one episode.)"""
    wanted = limit + _BOUNDARY_TOKENS
    size = wanted + wanted // 8
    while size < len(text):
        ids = tokenizer.encode(text[:size], add_special_tokens=False)
        if len(ids) >= wanted:
            return ids[: limit + 1]  # over the limit either way: the caller cuts it
        estimate = int(wanted * size / max(1, len(ids)) * 1.1) + _BOUNDARY_TOKENS
        size = min(2 * size, estimate)
    return tokenizer.encode(text, add_special_tokens=False)
