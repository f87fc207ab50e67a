"""The public episode session: drive a compiled spec where the caller is the policy.

``start(...)`` resets a fresh environment on the chosen sample and returns the
first :class:`Turn`; each ``act(text | tool_calls, finish_reason)`` plays one
step and returns the next :class:`Turn`, or an :class:`End` when the episode is
over. Every step goes through :meth:`AgentEnvLoop.play_step`, the function
`agentspec run` and training use: limits, parse and tool errors, named step
rewards, success, endings and the context policy's prompt are theirs.

A text response is encoded as a scripted policy's is (:func:`text_generation`),
so the same text makes the same step as `agentspec run --policy oracle` — except
for length: the caller sampled it under its own limits, with its own tokenizer, so
the spec's `max_response_tokens` (a budget in agentspec's tokens, for its own
sampler) does not cut it; ``finish_reason="length"`` says the caller's sampler
did, and :data:`SERVED_MAX_RESPONSE_TOKENS` bounds what a server encodes. Native
tool calls are first written in the spec's tool format (as a chat-completions
policy's are), so both give the same step.

:class:`SyncEpisodeSession` gives the same methods blocking, on one background
event loop per process, for callers without an event loop (SkyRL, NeMo Gym).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentspec.core.json_value import LONE_SURROGATE, json_value
from agentspec.runtime.episode.conversation import ChatCall, ConversationError, conversation_of
from agentspec.runtime.episode.conversation import render_calls as write_calls
from agentspec.runtime.episode.loop import EpisodeRun
from agentspec.runtime.episode.trajectory import Event, Step, Trajectory
from agentspec.runtime.policies.scripted import REMOTE_MAX_RESPONSE_TOKENS, text_generation
from agentspec.runtime.serve.spec import ServedSpec, SessionError

# The most tokens (agentspec's) of one response a session encodes: a caller's text is
# not cut at the spec's `max_response_tokens`, but a runaway or hostile one is bounded.
SERVED_MAX_RESPONSE_TOKENS = REMOTE_MAX_RESPONSE_TOKENS
_LONG_RESPONSE_CHARS = 8_192  # a response encoded in a worker thread, not on the event loop

__all__ = [
    "End",
    "EpisodeSession",
    "SessionError",
    "SyncEpisodeSession",
    "Turn",
    "first_turn",
    "run_sync",
]

FINISH_REASONS = ("stop", "length")


@dataclass
class Turn:
    """What the caller sees before its next action.

    Attributes:
        sample_id: the sample this episode plays.
        step_index: steps played so far.
        messages: the new messages: at the start, the first prompt as chat
            messages (tool paragraph cut: the tools travel in ``tools``); after a
            step, the environment's reply.
        observation: the environment's reply as text (``None`` at the start and end).
        tool_results: each call of the last step: ``name``, ``ok``, ``text``.
        tools: the spec's tools as chat-completions function schemas.
        tool_format: the spec's tool-call format.
        tool_instructions: the format's paragraph, for clients that write calls as text.
        rewards: this step's reward, per declared component (0.0 when it did not fire),
            before the component's weight.
        weights: the components' weights other than 1; ``reward`` is the weighted sum.
        events: what happened on the step (``kind``, ``tool``, ``message``, ``code``).
        state: the spec's typed state as JSON.
        prompt: the whole next prompt as the context policy built it, as chat
            messages (when the session was asked for it).
    """

    sample_id: str
    step_index: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tool_format: str
    tool_instructions: str
    rewards: dict[str, float]
    state: Any
    weights: dict[str, float] = field(default_factory=dict)
    observation: str | None = None
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    prompt: list[dict[str, Any]] | None = None

    @property
    def done(self) -> bool:
        return False

    @property
    def reward(self) -> float:
        """This step's reward: the weighted sum of its components."""
        return float(sum(self.weights.get(n, 1.0) * v for n, v in self.rewards.items()))


@dataclass
class End(Turn):
    """The last turn: the step that ended the episode, and how it ended.

    Attributes:
        termination: why it ended (``done``, ``max_steps``, ``parse_error_limit``, ...).
        success: the spec's success rule (``None`` without one).
        trajectory: the whole episode (steps with their ids, rewards and events).
    """

    termination: str = "done"
    success: bool | None = None
    trajectory: Trajectory = field(default_factory=Trajectory)

    @property
    def done(self) -> bool:
        return True

    @property
    def reward_totals(self) -> dict[str, float]:
        """Each declared component summed over the episode."""
        totals = dict.fromkeys(self.rewards, 0.0)
        for name, value in self.trajectory.reward_components().items():
            totals[name] = totals.get(name, 0.0) + value
        return totals


class EpisodeSession:
    """One client's episodes of a served spec, one at a time (async).

    ``EpisodeSession(ServedSpec.load(path))``; ``full_prompt``: every turn also
    carries the whole prompt. A new :meth:`start` ends the episode in progress;
    :meth:`close` ends it and releases its environment.
    """

    def __init__(self, spec: ServedSpec, *, full_prompt: bool = False) -> None:
        self.spec = spec
        self.full_prompt = full_prompt
        self.flow = spec.flow()
        self._episode: EpisodeRun | None = None
        self._open_env: Any = None  # the episode's environment until it is released
        self._sample_id = ""

    @property
    def started(self) -> bool:
        return self._episode is not None

    @property
    def done(self) -> bool:
        """No action may follow (not started, or the episode ended)."""
        return self._episode is None or self._episode.ended

    @property
    def trajectory(self) -> Trajectory | None:
        return None if self._episode is None else self._episode.trajectory

    async def start(
        self,
        *,
        split: str | None = None,
        index: int | None = None,
        sample_id: str | None = None,
        sample: Mapping[str, Any] | None = None,
        seed: int | None = None,
    ) -> Turn:
        """Start an episode on the chosen sample (see :meth:`ServedSpec.choose`)."""
        chosen_id, chosen = self.spec.choose(  # a bad choice leaves the episode in progress be
            split=split, index=index, sample_id=sample_id, sample=sample, seed=seed
        )
        await self.close()
        self._sample_id = chosen_id
        env = self.flow.env_factory()
        env.tool_semaphore = self.flow.tool_semaphore
        try:
            episode = await self.flow.start_episode(env, chosen, self._sample_id, self._sample_id)
        except BaseException:
            await env.close()
            raise
        self._episode, self._open_env = episode, env
        messages = self._prompt_messages() or []
        if episode.ended:
            return await self._end(None, messages)
        return self._turn(None, messages)

    async def act(
        self,
        text: str = "",
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        finish_reason: str = "stop",
    ) -> Turn:
        """Play one step with the caller's response: ``text``, and native
        ``tool_calls`` (``name``, ``arguments`` as an object or JSON text) written
        after it in the spec's tool format; ``finish_reason`` ``length`` says the
        caller's sampler cut the response."""
        episode = self._episode
        if episode is None:
            raise SessionError("no episode: start one (reset) before acting")
        if episode.ended:
            raise SessionError("the episode is over: start a new one (reset) before acting")
        response = self.response_text(text, tool_calls)
        if LONE_SURROGATE.search(response):  # a tokenizer cannot encode it
            raise SessionError(
                "the response is not valid Unicode text (a lone surrogate, e.g. \\ud800):"
                " send the text as the model wrote it, decoded"
            )
        if finish_reason not in FINISH_REASONS:
            raise SessionError(f"finish_reason must be one of {', '.join(FINISH_REASONS)}")
        params = dataclasses.replace(
            self.flow.config.sampling, max_new_tokens=SERVED_MAX_RESPONSE_TOKENS
        )
        encode = (response, self.flow.tokenizer, params, finish_reason != "length")
        if len(response) > _LONG_RESPONSE_CHARS:  # off the event loop: other sessions go on
            gen = await asyncio.to_thread(text_generation, *encode)
        else:
            gen = text_generation(*encode)
        if finish_reason == "length":
            gen.finish_reason = "length"
        step = await self.flow.play_step(episode, gen)
        if episode.ended:
            return await self._end(step, [])
        role = getattr(episode.env, "observation_role", "user")  # as the prompt has it
        message = {"role": role, "content": step.observation or ""}
        return self._turn(step, [message] if step.observation is not None else [])

    def state(self) -> dict[str, Any]:
        """The spec's typed state (``{}`` before the first episode)."""
        if self._episode is None:
            return {}
        value = json_value(getattr(self._episode.env, "state", None))
        return value if isinstance(value, dict) else {"value": value}

    async def close(self) -> None:
        """End the episode in progress (if any) and release its environment."""
        self._episode = None
        await self._release()

    async def _release(self) -> None:
        env, self._open_env = self._open_env, None
        if env is not None:
            await env.close()

    # ------------------------------------------------------------ turns

    def response_text(self, text: str, calls: Sequence[Mapping[str, Any]] | None) -> str:
        """The response `act(text, calls)` plays: the native calls written after the text
        in the spec's tool format."""
        if not isinstance(text, str):
            raise SessionError("text must be a string")
        if not calls:
            return text
        if not self.spec.tool_schemas:
            raise SessionError("this spec has no tools: send the action as text")
        return write_calls(self.spec.tool_format, text, [_chat_call(c) for c in calls])

    def _prompt_messages(self) -> list[dict[str, Any]] | None:
        """The next prompt as chat messages, as the context policy built it."""
        episode = self._episode
        if episode is None or not episode.view.initial_messages:
            return None
        try:
            return conversation_of(episode.view, episode.prompt, self.flow.context).messages
        except ConversationError:  # a custom context of raw token ids
            return None

    def _turn(self, step: Step | None, messages: list[dict[str, Any]]) -> Turn:
        return Turn(**self._fields(step, messages))

    def _fields(self, step: Step | None, messages: list[dict[str, Any]]) -> dict[str, Any]:
        rewards = dict.fromkeys(self.spec.reward_names, 0.0)
        if step is not None:
            rewards.update(step.rewards)
        assert self._episode is not None
        # What tools wrote goes to a wire as JSON: a lone surrogate in it (a tool's own
        # `chr(0xD800)`) becomes U+FFFD here, not an error after the step was played.
        return {
            "sample_id": self._sample_id,
            "step_index": len(self._episode.trajectory.steps),
            "messages": json_value(messages),
            "observation": None if step is None else json_value(step.observation),
            "tool_results": json_value(list(step.info.get("tool_results", []))) if step else [],
            "tools": self.spec.tool_schemas,
            "tool_format": self.spec.tool_format,
            "tool_instructions": self.spec.tool_instructions,
            "rewards": rewards,
            # the declared weights other than 1, on every turn (`reward` is the weighted sum)
            "weights": {k: w for k, w in self.spec.reward_weights.items() if w != 1.0},
            "events": [] if step is None else json_value([_event(e) for e in step.events]),
            "state": self.state(),
            "prompt": json_value(self._prompt_messages()) if self.full_prompt else None,
        }

    async def _end(self, step: Step | None, messages: list[dict[str, Any]]) -> End:
        episode = self._episode
        assert episode is not None
        fields = self._fields(step, messages)
        fields["prompt"] = None
        traj = episode.trajectory
        if traj.info.get("env_error") and step is None:
            fields["events"] = [{"kind": "env_error", "message": traj.info["env_error"]}]
        end = End(
            **fields, termination=traj.termination.value, success=traj.success, trajectory=traj
        )
        await self._release()  # the episode's resources go now; its state stays readable
        return end


def _chat_call(call: Mapping[str, Any]) -> ChatCall:
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        raise SessionError('each tool call must be an object {"name": str, "arguments": {...}}')
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        # NaN and ±Infinity are written as the bare words Python reads (not as the
        # strings `json_safe` would make of them), so the format's parser refuses them
        # as it refuses the same call written as text: one rule for every way in.
        try:
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        except (ValueError, RecursionError) as exc:  # a cycle, an integer of 5,000 digits
            raise SessionError(
                f"a tool call's arguments cannot be written as JSON: {exc}"
            ) from None
    return ChatCall(call["name"], arguments, str(call.get("id", "")))


def _event(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": str(event.kind)}
    for key in ("tool", "message", "code", "call_index"):
        value = getattr(event, key)
        if value not in (None, ""):
            out[key] = value
    return out


T = TypeVar("T")


_background_lock = threading.Lock()
_background: list[asyncio.AbstractEventLoop] = []


def background_loop() -> asyncio.AbstractEventLoop:
    """The event loop of every sync session of this process, in a daemon thread."""
    with _background_lock:
        if not _background or _background[0].is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="agentspec-sessions", daemon=True
            ).start()
            _background[:] = [loop]
        return _background[0]


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on the background loop and wait for its result (any thread
    but the background loop's own)."""
    return asyncio.run_coroutine_threadsafe(coroutine, background_loop()).result()


def first_turn(spec: ServedSpec, sample: Mapping[str, Any]) -> Turn:
    """The first turn of an episode on ``sample`` (its prompt, tools, instructions),
    blocking; its environment is released at once."""

    async def first() -> Turn:
        session = EpisodeSession(spec)
        try:
            return await session.start(sample=sample)
        finally:
            await session.close()

    return run_sync(first())


class SyncEpisodeSession:
    """:class:`EpisodeSession` with blocking methods, for callers without an event loop."""

    def __init__(self, spec: ServedSpec, *, full_prompt: bool = False) -> None:
        self.session = EpisodeSession(spec, full_prompt=full_prompt)

    @property
    def done(self) -> bool:
        return self.session.done

    @property
    def trajectory(self) -> Trajectory | None:
        return self.session.trajectory

    def start(self, **choice: Any) -> Turn:
        return run_sync(self.session.start(**choice))

    def act(
        self,
        text: str = "",
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        finish_reason: str = "stop",
    ) -> Turn:
        return run_sync(self.session.act(text, tool_calls, finish_reason))

    def state(self) -> dict[str, Any]:
        return self.session.state()

    def close(self) -> None:
        run_sync(self.session.close())
