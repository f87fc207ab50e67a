"""Running episodes: :class:`AgentEnvLoop` (the generic loop) and :class:`AgentFlowBase`.

The loop, per step: build the prompt with the context policy → generate →
``env.step`` → record the :class:`Step` (events, reward components from
:meth:`AgentEnv.rewards`, anchor) → until the environment is done or a limit
ends the episode. Every ending has a :class:`TerminationReason`; a limit that
cuts the episode short adds a ``truncated`` event to its last step.

:func:`run_episodes` runs many episodes as asyncio tasks on one event loop; the
policy batches their generations and one semaphore bounds the tool calls in
flight across all of them.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FunctionType
from typing import Any, cast

from agentspec.formats.caps import cap_error
from agentspec.runtime.episode.blocking import FifoSemaphore
from agentspec.runtime.episode.context import (
    ContextPolicy,
    ContextView,
    FullHistory,
    Prompt,
)
from agentspec.runtime.episode.conversation import ConversationError, conversation_of
from agentspec.runtime.episode.envs import AgentEnv, StepResult
from agentspec.runtime.episode.policy import (
    ConversationPolicy,
    Generation,
    Policy,
    SamplingParams,
)
from agentspec.runtime.episode.trajectory import (
    Action,
    Event,
    EventKind,
    PromptIds,
    Step,
    TerminationReason,
    Trajectory,
)
from agentspec.runtime.text.chat_templates import ModelTemplate, chat_for
from agentspec.runtime.text.tokenizer import ChatTemplate, Tokenizer, decode_text, encode_chat

__all__ = ["AgentEnvLoop", "AgentFlowBase", "EpisodeRun", "LoopConfig", "run_episodes"]


@dataclass(frozen=True)
class LoopConfig:
    """Limits and what each one does.

    Attributes:
        max_steps: policy calls per episode (then ``max_steps``).
        sampling: sampling settings of every policy call.
        end_on_response_truncated: a response that hits ``max_new_tokens`` ends the
            episode (``response_truncated``); otherwise the environment sees it as is.
        max_parse_errors: end after this many ``parse_error`` steps (``None``: never).
        max_tool_errors: end after this many ``tool_error`` events (``None``: never).
        end_on_tool_timeout: a tool timeout ends the episode (``tool_timeout``).
        max_concurrent_tool_calls: tool calls in flight across all episodes.
    """

    max_steps: int = 8
    sampling: SamplingParams = field(default_factory=SamplingParams)
    end_on_response_truncated: bool = True
    max_parse_errors: int | None = None
    max_tool_errors: int | None = None
    end_on_tool_timeout: bool = False
    max_concurrent_tool_calls: int = 32


@dataclass
class EpisodeRun:
    """One episode in progress (:meth:`AgentEnvLoop.start_episode`, then
    :meth:`AgentEnvLoop.play_step` until ``ended``).

    Attributes:
        env: the episode's environment (its caller closes it).
        view: what the context policy reads: first messages, steps so far.
        prompt: the next step's prompt.
        trajectory: the steps so far; termination and success once ended.
        results: the environment's result of each step.
        tokens: the episode's ids so far, shared by append-only prompts.
        ended: no step may follow.
    """

    env: AgentEnv
    view: ContextView
    prompt: Prompt
    trajectory: Trajectory
    results: list[StepResult] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    ended: bool = False


class AgentFlowBase(ABC):
    """Full control over one episode: implement :meth:`run` (one sample → one Trajectory).

    The helpers :meth:`generate` and :meth:`decode` give access to the policy; the
    shared ``tool_semaphore`` bounds tool calls across concurrent episodes.
    """

    def __init__(
        self,
        policy: Policy,
        tokenizer: Tokenizer,
        config: LoopConfig | None = None,
        chat: ChatTemplate | ModelTemplate | None = None,
    ) -> None:
        self.policy = policy
        self.tokenizer = tokenizer
        self.config = config or LoopConfig()
        self.chat = chat or chat_for(tokenizer)  # the model's own template, else ChatML
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._policy_kind: tuple[Any, bool] = (None, False)

    @property
    def chat_policy(self) -> bool:
        """Whether the policy answers chat messages (a :class:`ConversationPolicy`);
        cached per policy object, as a protocol check is slow on the hot path."""
        policy, is_chat = self._policy_kind
        if policy is not self.policy:
            is_chat = _answers_chat(self.policy)
            self._policy_kind = (self.policy, is_chat)
        return is_chat

    @property
    def tool_semaphore(self) -> asyncio.Semaphore:
        """One semaphore per event loop (``max_concurrent_tool_calls`` permits)."""
        key = id(asyncio.get_running_loop())
        if key not in self._semaphores:
            self._semaphores = {key: FifoSemaphore(self.config.max_concurrent_tool_calls)}
        return self._semaphores[key]

    async def generate(self, prompt_ids: Sequence[int]) -> Generation:
        (out,) = await self.policy.generate([list(prompt_ids)], self.config.sampling)
        if len(out.logprobs) != len(out.token_ids):
            raise ValueError("policy returned a different number of log-probs and token ids")
        return out

    def decode(self, token_ids: Sequence[int]) -> str:
        """The response's text (special tokens skipped), for parsing and reading."""
        return decode_text(self.tokenizer, token_ids)

    def encode_messages(self, messages: Sequence[Mapping[str, str]]) -> list[int]:
        """Prompt ids of a conversation, ending with the assistant's generation prompt."""
        if not isinstance(self.chat, ChatTemplate):  # the model's own template
            return self.chat.encode_conversation(self.tokenizer, [dict(m) for m in messages], None)
        return encode_chat(self.tokenizer, self.chat, messages)

    def make_step(
        self, index: int, prompt_ids: Sequence[int], gen: Generation, **fields: Any
    ) -> Step:
        """A :class:`Step` with the exact ids and log-probs of ``gen`` (other fields by keyword)."""
        return Step(
            index=index,
            prompt_ids=list(prompt_ids),
            response_ids=list(gen.token_ids),
            response_logprobs=list(gen.logprobs),
            action_text=self.decode(gen.token_ids),
            finish_reason=gen.finish_reason,
            **fields,
        )

    @abstractmethod
    async def run(
        self, sample: Mapping[str, Any], sample_id: str = "", group_id: str = ""
    ) -> Trajectory:
        """Play one episode on ``sample``."""


class AgentEnvLoop(AgentFlowBase):
    """The generic loop over an :class:`AgentEnv`.

    Args:
        env_factory: makes a fresh environment per episode.
        policy: generates the responses.
        tokenizer: the policy's tokenizer.
        context: the context policy (default ``full_history`` without a limit).
        config: limits; chat: the chat framing.
    """

    def __init__(
        self,
        env_factory: Callable[[], AgentEnv],
        policy: Policy,
        tokenizer: Tokenizer,
        context: ContextPolicy | None = None,
        config: LoopConfig | None = None,
        chat: ChatTemplate | None = None,
    ) -> None:
        framing: ChatTemplate | ModelTemplate | None = chat
        if framing is None:
            # the spec's `episode.reasoning` says what the template does with past reasoning
            keep = getattr(env_factory, "keep_reasoning", None)
            framing = chat_for(tokenizer, keep_reasoning=keep)
        super().__init__(policy, tokenizer, config, framing)
        self.env_factory = env_factory
        self.context = context or FullHistory()

    async def run(
        self, sample: Mapping[str, Any], sample_id: str = "", group_id: str = ""
    ) -> Trajectory:
        env = self.env_factory()
        env.tool_semaphore = self.tool_semaphore
        try:
            episode = await self.start_episode(env, sample, sample_id, group_id)
            while not episode.ended:
                await self.play_step(
                    episode, await self.generate_step(episode.view, episode.prompt)
                )
            return episode.trajectory
        finally:
            await env.close()

    def _limit_reached(
        self, steps: list[Step], step: Step, result: StepResult
    ) -> TerminationReason | None:
        cfg = self.config
        if result.done:
            return result.termination or TerminationReason.DONE
        if cfg.end_on_response_truncated and step.response_truncated:
            return TerminationReason.RESPONSE_TRUNCATED
        if cfg.end_on_tool_timeout and any(
            e.kind == EventKind.TOOL_ERROR and e.code == "timeout" for e in step.events
        ):
            return TerminationReason.TOOL_TIMEOUT
        if cfg.max_parse_errors is not None:
            all_steps = [*steps, step]
            n = sum(1 for s in all_steps if any(e.kind == EventKind.PARSE_ERROR for e in s.events))
            if n >= cfg.max_parse_errors:
                return TerminationReason.PARSE_ERROR_LIMIT
        if cfg.max_tool_errors is not None:
            all_steps = [*steps, step]
            n = sum(1 for s in all_steps for e in s.events if e.kind == EventKind.TOOL_ERROR)
            if n >= cfg.max_tool_errors:
                return TerminationReason.TOOL_ERROR_LIMIT
        if step.index + 1 >= cfg.max_steps:
            return TerminationReason.MAX_STEPS
        return None

    async def generate_step(self, view: ContextView, prompt: Prompt) -> Generation:
        """The policy's response: from the prompt ids, or — for a
        :class:`ConversationPolicy` — from the same turns written as chat messages."""
        if not self.chat_policy:
            return await self.generate(prompt.ids)
        try:
            conversation = conversation_of(view, prompt, self.context)
        except ConversationError as exc:
            return Generation([], [], error=str(exc))
        chatting = cast(ConversationPolicy, self.policy)  # checked by `chat_policy`
        return await chatting.generate_chat(conversation, self.config.sampling)

    def _failed_step(
        self,
        index: int,
        prompt: Prompt,
        prompt_ids: PromptIds,
        gen: Generation,
        anchor: str | None,
    ) -> Step:
        """The last step of an episode whose policy could not answer (``policy_error``)."""
        step = Step(
            index=index,
            prompt_ids=prompt_ids,
            response_ids=[],
            response_logprobs=[],
            events=[Event(EventKind.STEP), Event(EventKind.TRUNCATED, message="policy_error")],
            anchor=anchor,
            done=True,
            context_truncated=prompt.truncated,
            info={"policy_error": gen.error},
        )  # no reward: the model did not act (a dead server would pay a per-step reward)
        return step

    async def start_episode(
        self, env: AgentEnv, sample: Mapping[str, Any], sample_id: str = "", group_id: str = ""
    ) -> EpisodeRun:
        """Reset ``env`` on ``sample`` and build the first prompt; the episode has
        already ended (``episode.ended``) when either fails or the prompt overflows.
        The caller owns ``env`` (and closes it); :meth:`play_step` advances the episode."""
        traj = Trajectory(sample_id=sample_id, group_id=group_id)
        try:  # a prompt template or a custom context that fails on this sample: this episode's
            first = await env.reset(sample)
            view = ContextView(
                tokenizer=self.tokenizer,
                chat=self.chat,
                initial_messages=first.as_messages(),
                env=env,
                sample=sample,
            )
            prompt = self.context.prompt(view)
        except Exception as exc:  # `overflow: error` too: this episode's error, not the run's
            traj.termination = TerminationReason.ENV_ERROR
            traj.info["env_error"] = f"first prompt: {_error_text(exc)}"
            empty = ContextView(self.tokenizer, self.chat, [], env=env, sample=sample)
            return EpisodeRun(env, empty, Prompt([]), traj, ended=True)
        episode = EpisodeRun(env, view, prompt, traj)
        if prompt.overflow:
            traj.termination = TerminationReason.CONTEXT_OVERFLOW
            traj.info["overflow_tokens"] = len(prompt.ids)
            episode.ended = True
        return episode

    async def play_step(self, episode: EpisodeRun, gen: Generation) -> Step:
        """One step of ``episode`` with the policy's response ``gen``: step the
        environment, record the step (events, rewards, anchor), apply the limits
        and build the next prompt. The step that ends the episode also decides
        its success. Whoever generates — a policy here, a remote client through
        a session — the episode goes through this one function."""
        if episode.ended:
            raise RuntimeError("the episode has ended")
        env, view, traj = episode.env, episode.view, episode.trajectory
        index, prompt = len(traj.steps), episode.prompt
        episode.tokens, prompt_ids = _shared_prompt(episode.tokens, prompt.ids)
        anchor = _guarded(env.anchor, None, traj.info, "anchor")
        if gen.error is not None:
            step = self._failed_step(index, prompt, prompt_ids, gen, anchor)
            traj.steps.append(step)
            self._end(episode, TerminationReason.POLICY_ERROR)
            return step
        action = Action(self.decode(gen.token_ids), list(gen.token_ids), gen.finish_reason)
        result = await _step_env(env, action)
        episode.results.append(result)
        step = self._record(view, index, prompt, prompt_ids, gen, action, result, anchor)
        episode.tokens += step.response_ids
        episode.tokens += step.observation_ids
        termination = self._limit_reached(view.steps, step, result)
        view.steps.append(step)
        if termination is None:
            episode.prompt, termination = self._next_prompt(view, step, traj, prompt)
        if termination is not None and termination is not TerminationReason.DONE:
            step.events.append(Event(EventKind.TRUNCATED, message=termination.value))
        step.done = termination is not None
        step.rewards = {**result.rewards, **_guarded(env.rewards, {}, step.info, "rewards", step)}
        weights = _guarded(env.reward_weights, {}, step.info, "reward_weights")
        step.weights = {n: w for n, w in weights.items() if n in step.rewards and w != 1.0}
        traj.steps.append(step)
        if termination is not None:
            self._end(episode, termination)
        return step

    def _end(self, episode: EpisodeRun, termination: TerminationReason) -> None:
        traj = episode.trajectory
        traj.termination = termination
        episode.ended = True
        traj.success = _guarded(
            episode.env.success, None, traj.info, "success", traj.steps, episode.results
        )

    def _record(
        self,
        view: ContextView,
        index: int,
        prompt: Prompt,
        prompt_ids: PromptIds,
        gen: Generation,
        action: Action,
        result: StepResult,
        anchor: Any,
    ) -> Step:
        """The step as the trajectory keeps it: ids in, ids out, the observation's ids."""
        events = [Event(EventKind.STEP), *result.events]
        if action.truncated:
            events.append(Event(EventKind.RESPONSE_TRUNCATED))
        step = Step(
            index=index,
            prompt_ids=prompt_ids,
            response_ids=list(gen.token_ids),
            response_logprobs=list(gen.logprobs),
            action_text=action.text,
            finish_reason=gen.finish_reason,
            tool_calls=list(result.tool_calls),
            events=events,
            anchor=anchor,
            context_truncated=prompt.truncated,
            info=dict(result.info),
        )
        if result.observation is not None:
            step.observation = result.observation.text
            step.observation_ids = self.context.observation_ids(
                view, step, result.observation.text, result.observation.role
            )
        return step

    def _next_prompt(
        self, view: ContextView, step: Step, traj: Trajectory, prompt: Prompt
    ) -> tuple[Prompt, TerminationReason | None]:
        """The next step's prompt, or why the episode cannot go on."""
        try:
            following = self.context.prompt(view)
        except (
            Exception
        ) as exc:  # a state_summary template over model-written state, `overflow: error`
            step.info["env_error"] = f"context: {_error_text(exc)}"
            return prompt, TerminationReason.ENV_ERROR
        if following.overflow:
            traj.info["overflow_tokens"] = len(following.ids)
            return following, TerminationReason.CONTEXT_OVERFLOW
        return following, None


async def _step_env(env: AgentEnv, action: Action) -> StepResult:
    """``env.step(action)``; the environment's failure ends this episode only."""
    try:
        return await env.step(action)
    except Exception as exc:
        return StepResult(
            done=True, termination=TerminationReason.ENV_ERROR, info={"env_error": _error_text(exc)}
        )


def _shared_prompt(tokens: list[int], prompt: list[int]) -> tuple[list[int], PromptIds]:
    """The step's prompt as a view of the episode's token list.

    An append-only context's prompt is exactly the tokens so far (the last
    prompt, response and observation): the view shares them. Any other
    prompt (the first, or one that dropped or re-rendered context) starts a
    new list, which the following steps extend.
    """
    if len(prompt) != len(tokens) or prompt != tokens:
        tokens = list(prompt)
    return tokens, PromptIds(tokens, len(tokens))


_CHAT_POLICY_CLASSES: dict[type, bool] = {}


def _answers_chat(policy: Any) -> bool:
    """``isinstance(policy, ConversationPolicy)``, remembered per class where the class
    alone decides it (a flow is made per episode, and a protocol check walks the
    protocol's attributes each time): a plain ``generate_chat`` method or none,
    no ``__getattr__`` or custom attribute lookup, nothing of that name on the instance."""
    cls = type(policy)
    decided_by_class = (
        cls.__getattribute__ is object.__getattribute__
        and not hasattr(cls, "__getattr__")
        and isinstance(getattr(cls, "generate_chat", None), (FunctionType, type(None)))
        and "generate_chat" not in getattr(policy, "__dict__", ())
    )
    if not decided_by_class:
        return isinstance(policy, ConversationPolicy)
    known = _CHAT_POLICY_CLASSES.get(cls)
    if known is None:
        known = _CHAT_POLICY_CLASSES[cls] = isinstance(policy, ConversationPolicy)
    return known


def _error_text(exc: BaseException) -> str:
    return cap_error(f"{type(exc).__name__}: {exc}")


def _guarded(
    fn: Callable[..., Any], default: Any, info: dict[str, Any], what: str, *args: Any
) -> Any:
    """``fn(*args)``; an exception is recorded as ``info["env_error"]`` and gives ``default``."""
    try:
        return fn(*args)
    except Exception as exc:  # a hook's failure stays in this episode, on its step
        info["env_error"] = f"{what}: {_error_text(exc)}"
        return default


async def run_episodes(
    flow: AgentFlowBase,
    samples: Sequence[Mapping[str, Any]],
    group_size: int = 1,
    max_concurrent_episodes: int | None = None,
    sample_ids: Sequence[str] | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    """Play ``group_size`` episodes per sample concurrently; results in sample-major order.

    Trajectories of the same sample share ``group_id`` (the sample's id); ``on_episode``
    hears of each as it ends (a progress display).
    """
    ids = list(sample_ids) if sample_ids is not None else [str(i) for i in range(len(samples))]
    if len(ids) != len(samples):
        raise ValueError("sample_ids and samples differ in length")
    limit = asyncio.Semaphore(max_concurrent_episodes) if max_concurrent_episodes else None

    async def one(sample: Mapping[str, Any], sid: str) -> Trajectory:
        if limit is None:
            trajectory = await flow.run(sample, sample_id=sid, group_id=sid)
        else:
            async with limit:
                trajectory = await flow.run(sample, sample_id=sid, group_id=sid)
        if on_episode is not None:
            on_episode(trajectory)
        return trajectory

    tasks = [one(s, sid) for s, sid in zip(samples, ids, strict=True) for _ in range(group_size)]
    return list(await asyncio.gather(*tasks))
