"""Environments: :class:`AgentEnv` (any state machine) and :class:`ToolEnv` (tools + a final answer).

An environment receives the policy's :class:`Action` and returns a
:class:`StepResult`: the observation for the model, whether the episode is over,
the events that happened and any reward components it computes itself. The loop
then adds its own events (``step``, ``truncated``, ...) and asks
:meth:`AgentEnv.rewards` for the named reward components of the finished step;
that hook is where generated code attaches a spec's rewards.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from agentspec.formats import FormatError, ToolCallFormat, get_format
from agentspec.runtime.episode.tools import BaseTool, ToolContext, ToolResult, cap_error
from agentspec.runtime.episode.trajectory import (
    Action,
    Event,
    EventKind,
    Observation,
    Step,
    TerminationReason,
    ToolCall,
)

__all__ = ["AgentEnv", "StepResult", "ToolEnv"]


@dataclass
class StepResult:
    """What :meth:`AgentEnv.step` returns.

    Attributes:
        observation: the next turn's text for the model (``None`` when done).
        done: the episode is over.
        events: what happened (``final``, ``tool:NAME``, ``tool_error``, ``parse_error``).
        rewards: reward components the environment computed itself (merged with
            :meth:`AgentEnv.rewards`).
        success: the episode's outcome, if this step decides it.
        termination: why the episode ended when ``done`` (default ``done``).
        tool_calls: the calls parsed from the action.
        info: anything else, kept on the step.
    """

    observation: Observation | None = None
    done: bool = False
    events: list[Event] = field(default_factory=list)
    rewards: dict[str, float] = field(default_factory=dict)
    success: bool | None = None
    termination: TerminationReason | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


class AgentEnv(ABC):
    """An episode's environment. One instance per episode; everything async.

    Subclasses implement :meth:`reset` and :meth:`step`; optionally :meth:`anchor`,
    :meth:`rewards`, :meth:`success`, :meth:`close`. ``state`` is what
    ``state_summary`` context templates and anchors read.
    """

    tool_semaphore: asyncio.Semaphore | None = None
    """Set by the loop: bounds tool calls in flight across all concurrent episodes."""
    max_steps: ClassVar[int] = 0
    """The episode's step limit where the environment knows it (a spec's
    ``episode.max_steps``: what ``step.max`` reads in templates); 0: not known."""
    constants: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    """Named values the context templates read as ``constants``; none by default."""

    def __init__(self) -> None:
        self.sample: Mapping[str, Any] = {}
        self.state: Any = None

    @abstractmethod
    async def reset(self, sample: Mapping[str, Any]) -> Observation:
        """Start an episode; return the initial conversation (``Observation.messages``)."""

    @abstractmethod
    async def step(self, action: Action) -> StepResult:
        """Apply the policy's action."""

    def anchor(self) -> str | None:
        """A hashable key of the current state (before the next action), for GiGPO groups."""
        return None

    def rewards(self, step: Step) -> dict[str, float]:
        """Named reward components of a finished step (events final, ``self.state`` current).

        Generated environments override this: one entry per spec reward whose
        ``on`` matches an event key in ``step.events`` (``step``, ``final``,
        ``tool:NAME``, ``tool_error``, ``parse_error``, ``truncated``).
        """
        return {}

    def reward_weights(self) -> Mapping[str, float]:
        """The weight of each named reward component in a step's reward (``Step.reward``);
        one not listed weighs 1. The components' values (``Step.rewards``) are unweighted."""
        return {}

    def success(self, steps: Sequence[Step], results: Sequence[StepResult]) -> bool | None:
        """The episode's outcome; by default the last non-``None`` ``StepResult.success``."""
        for result in reversed(results):
            if result.success is not None:
                return result.success
        return None

    def env_info(self) -> Mapping[str, Any]:
        """What the context templates read as ``env`` (an external environment's facts)."""
        return {}

    async def close(self) -> None:
        """Release resources (called once per episode, even after an error)."""
        return None


class ToolEnv(AgentEnv):
    """Multi-turn tool calling: parse calls in a format, run them concurrently, answer.

    A response with calls runs them (concurrently, bounded by ``tool_semaphore``)
    and shows their results; a response without calls is the final answer and
    ends the episode; a malformed response shows the format's error message.

    Args:
        tools: the tools the model may call.
        tool_format: a format name (``hermes``, ``json``, ``react``, ``bracket``) or instance.
        system_prompt: the system message (``None``: none); the format's tool
            instructions are appended when ``describe_tools`` is true.
        describe_tools: append :meth:`ToolCallFormat.instructions` to the system prompt.
        max_calls_per_step: more calls than this in one response is a parse error.
        observation_role: the chat role of tool results.
    """

    def __init__(
        self,
        tools: Sequence[BaseTool],
        tool_format: str | ToolCallFormat = "hermes",
        *,
        system_prompt: str | None = None,
        describe_tools: bool = True,
        max_calls_per_step: int = 8,
        observation_role: str = "user",
    ) -> None:
        super().__init__()
        self.tools: dict[str, BaseTool] = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self.tools[tool.name] = tool
        self.format = get_format(tool_format)
        self.system_prompt = system_prompt
        self.describe_tools = describe_tools
        self.max_calls_per_step = max_calls_per_step
        self.observation_role = observation_role
        self.step_index = 0  # steps taken; during step(), the current one is step_index - 1
        self._blocking_calls = asyncio.Lock()

    def initial_messages(self, sample: Mapping[str, Any]) -> list[dict[str, str]]:
        """The first prompt's messages. Default: the system prompt, then ``sample["messages"]``
        or a user message with ``sample["prompt"]`` / ``sample["question"]``."""
        messages: list[dict[str, str]] = []
        system = self.system_prompt
        if self.describe_tools and self.tools:
            instructions = self.format.instructions(list(self.tools.values()))
            system = f"{system}\n\n{instructions}" if system else instructions
        if system:
            messages.append({"role": "system", "content": system})
        if "messages" in sample:
            messages.extend(dict(m) for m in sample["messages"])
        else:
            for key in ("prompt", "question"):
                if key in sample:
                    messages.append({"role": "user", "content": str(sample[key])})
                    break
            else:
                raise KeyError("sample has none of 'messages', 'prompt', 'question'")
        return messages

    async def reset(self, sample: Mapping[str, Any]) -> Observation:
        self.sample = sample
        self.step_index = 0
        return Observation(messages=self.initial_messages(sample))

    async def close(self) -> None:
        """Tell each tool that the episode ended (an MCP tool stops its per-episode server)."""
        context = ToolContext(env=self, step_index=max(0, self.step_index - 1))
        for tool in self.tools.values():
            await tool.end_episode(context)

    async def on_final(self, answer: str, action: Action) -> StepResult:
        """Called when the response has no calls; ends the episode by default."""
        return StepResult(done=True, events=[Event(EventKind.FINAL, message=answer)])

    async def _run_call(self, index: int, call: ToolCall) -> ToolResult:
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            return ToolResult(
                call.name,
                cap_error(f"unknown tool {call.name!r}; available tools: {known}"),
                False,
                "unknown_tool",
            )
        ctx = ToolContext(env=self, step_index=self.step_index - 1)
        sem = self.tool_semaphore
        # Blocking tools run in worker threads; one at a time per episode, in call
        # order, as they would on the event loop (they read and write env state).
        # So do tools that declare `in_call_order` (spec tools that run inline),
        # or one could change the state while a worker thread reads it.
        in_order = tool.blocking or getattr(tool, "in_call_order", False)
        serial = self._blocking_calls if in_order else contextlib.nullcontext()
        async with sem if sem is not None else contextlib.nullcontext(), serial:
            return await tool.run(call.arguments, ctx)

    async def step(self, action: Action) -> StepResult:
        parsed = self.format.parse(action.text, self.tools)
        self.step_index += 1
        if parsed.ok and len(parsed.calls) > self.max_calls_per_step:
            parsed.errors.append(
                FormatError(
                    f"{len(parsed.calls)} calls in one response; at most {self.max_calls_per_step}",
                    "too_many_calls",
                )
            )
        if parsed.errors:
            return self._parse_failure(parsed.errors)
        if not parsed.calls:
            return await self.on_final(parsed.final_answer or "", action)
        if len(parsed.calls) == 1:  # the usual case: no task for gather to wrap it in
            results = [await self._run_call(0, parsed.calls[0])]
        else:
            results = await asyncio.gather(
                *(self._run_call(i, c) for i, c in enumerate(parsed.calls))
            )
        return self._after_calls(results, parsed.calls)

    def _parse_failure(self, errors: list[FormatError]) -> StepResult:
        """The format's words for what was wrong, as the observation; nothing ran."""
        return StepResult(
            observation=Observation(self.format.render_errors(errors), self.observation_role),
            events=[
                Event(
                    EventKind.PARSE_ERROR,
                    message=cap_error(e.message),
                    code=e.code,
                    call_index=e.call_index,
                )
                for e in errors
            ],
        )

    def _after_calls(self, results: list[ToolResult], calls: list[ToolCall]) -> StepResult:
        """The step after its tool calls ran: one event per call, the results as the
        observation unless a terminal tool ended the episode."""
        events = [
            Event.tool_ok(r.name, i)
            if r.ok
            else Event(EventKind.TOOL_ERROR, tool=r.name, message=r.text, code=r.code, call_index=i)
            for i, r in enumerate(results)
        ]
        done = any(r.done for r in results)
        success = next((r.success for r in results if r.success is not None), None)
        if done:
            events.append(Event(EventKind.FINAL, message="terminal tool"))
        # Each call's own result text: chat-completions policies answer each call by id.
        info = {
            "tool_results": [
                {"name": r.name, "ok": r.ok, "code": r.code, "text": r.text} for r in results
            ]
        }
        for r in results:
            info.update(r.info)
        return StepResult(
            observation=None
            if done
            else Observation(self.format.render_results(results), self.observation_role),
            done=done,
            events=events,
            success=success,
            tool_calls=list(calls),
            info=info,
        )


def state_fields(state: Any) -> dict[str, Any]:
    """A state dataclass as a dict keyed by spec names (for templates and traces)."""
    if not dataclasses.is_dataclass(state) or isinstance(state, type):
        return {}
    return {
        f.metadata.get("spec_name", f.name): getattr(state, f.name)
        for f in dataclasses.fields(state)
    }
