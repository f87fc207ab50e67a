"""The policy protocol: batched, async generation from prompt token ids."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["BatchingPolicy", "ConversationPolicy", "Generation", "Policy", "SamplingParams"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one response.

    Attributes:
        max_new_tokens: the response's length limit (``finish_reason="length"`` when hit).
        temperature: 0 for greedy decoding.
        top_p: nucleus sampling mass (1.0: off).
        top_k: keep the k most likely tokens (0: off).
        stop: strings that end the response (the token completing one is kept).
        seed: seed of the sampler (``None``: nondeterministic).
        ignore_eos: keep generating past EOS (benchmarks; vLLM's ``ignore_eos``).
    """

    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop: tuple[str, ...] = ()
    seed: int | None = None
    ignore_eos: bool = False


@dataclass
class Generation:
    """One response.

    Attributes:
        token_ids: the generated ids (EOS included when the model emitted it).
        logprobs: per generated token, ``log softmax(logits / temperature)`` at the
            chosen token, before top-p/top-k filtering (at temperature 0: the raw
            model distribution); same length as ``token_ids``.
        finish_reason: ``stop`` (EOS or a stop string) or ``length``.
        error: set when the policy could not produce a response (a remote API that
            kept failing, a malformed reply): the loop ends the episode on this step
            with ``policy_error`` instead of acting, and keeps the message in the
            step's ``info``.
    """

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str = "stop"
    info: dict[str, float] = field(default_factory=dict)
    error: str | None = None


@runtime_checkable
class Policy(Protocol):
    """Anything that turns prompts (token ids) into responses."""

    async def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]: ...


@runtime_checkable
class ConversationPolicy(Protocol):
    """A policy that reads the episode as chat messages (a chat-completions API).

    The loop gives it the step's :class:`~agentspec.runtime.episode.conversation.Conversation`
    instead of prompt ids. Its :class:`Generation` carries the response's text
    encoded by the task tokenizer and no real log-probs: such a policy serves
    baselines and evaluation, never training.
    """

    async def generate_chat(self, conversation: Any, params: SamplingParams) -> Generation: ...


@dataclass
class _Request:
    prompt: list[int]
    params: SamplingParams
    future: asyncio.Future[Generation]


class BatchingPolicy:
    """Collects concurrent ``generate`` calls from many episodes into batches.

    Subclasses implement :meth:`generate_batch` (synchronous, run in a worker
    thread so the event loop keeps serving tools) or override :meth:`agenerate_batch`.
    Requests with equal sampling settings made while a batch runs are merged into
    the next batch (up to ``max_batch_size``).
    """

    def __init__(self, max_batch_size: int = 64) -> None:
        self.max_batch_size = max_batch_size
        self._queue: list[_Request] = []
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.model_seconds = 0.0
        """Wall time spent inside :meth:`agenerate_batch` (for overhead measurements)."""

    def generate_batch(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        raise NotImplementedError

    async def agenerate_batch(
        self, prompts: list[list[int]], params: SamplingParams
    ) -> list[Generation]:
        return await asyncio.to_thread(self.generate_batch, prompts, params)

    async def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._worker is None or self._worker.done():
            self._loop = loop
            self._queue = []
            self._wakeup = asyncio.Event()
            self._worker = loop.create_task(self._serve())
        futures = []
        for prompt in prompts:
            fut: asyncio.Future[Generation] = loop.create_future()
            self._queue.append(_Request(list(prompt), params, fut))
            futures.append(fut)
        assert self._wakeup is not None
        self._wakeup.set()
        return list(await asyncio.gather(*futures))

    async def _serve(self) -> None:
        assert self._wakeup is not None
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            # Let every episode that is ready submit before the batch is cut.
            for _ in range(3):
                await asyncio.sleep(0)
            while self._queue:
                params = self._queue[0].params
                batch = [r for r in self._queue if r.params == params][: self.max_batch_size]
                taken = {id(r) for r in batch}
                self._queue = [r for r in self._queue if id(r) not in taken]
                live = [r for r in batch if not r.future.cancelled()]
                if not live:
                    continue
                start = asyncio.get_running_loop().time()
                try:
                    outs = await self.agenerate_batch([r.prompt for r in live], params)
                except Exception as exc:
                    for r in live:
                        if not r.future.done():
                            r.future.set_exception(exc)
                    continue
                finally:
                    self.model_seconds += asyncio.get_running_loop().time() - start
                for r, out in zip(live, outs, strict=True):
                    if not r.future.done():
                        r.future.set_result(out)
