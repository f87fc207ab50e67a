"""Context policies: what the model sees at each step.

A context policy turns the episode so far (:class:`ContextView`) into the next
prompt's token ids. It only ever concatenates ids that already exist — the first
prompt's ids, the policy's own response ids, and each observation's ids — or, for
``state_summary`` / ``custom``, renders fresh text for the prompt. A response is
never decoded and re-encoded.

Layout of the step-wise policies (``full_history``, ``sliding_window``,
``token_budget``)::

    prompt_t = initial_ids + Σ_{i in kept steps < t} (response_ids_i + observation_ids_i)

where ``initial_ids`` encodes the chat-rendered first messages ending with the
assistant generation prompt, and ``observation_ids_i`` encodes
:meth:`ChatTemplate.continuation` of the observation: the end-of-turn token if the
response did not end with it, the observation's message, and the next generation
prompt. ``full_history`` keeps every step, so ``prompt_{t+1} = prompt_t +
response_t + observation_t`` (append-only); ``sliding_window`` keeps the last k;
``token_budget`` keeps as many of the latest as fit ``max_prompt_tokens``.

Overflow (a prompt longer than ``max_prompt_tokens``) is explicit, per
:class:`Overflow`: ``truncate`` drops the oldest steps (step-wise policies; the
last step is always kept) and flags the step ``context_truncated``; when that is
not enough, or for ``state_summary`` / ``custom``, it ends the episode like
``end``, which ends it with reason ``context_overflow``; ``error`` raises
:class:`ContextOverflowError`.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

from agentspec.core.contexts import ContextPolicyKind, declare_context_policy
from agentspec.core.registry import Registry
from agentspec.runtime.episode.envs import AgentEnv, state_fields
from agentspec.runtime.episode.trajectory import Step
from agentspec.runtime.text.tokenizer import (
    ChatTemplate,
    Message,
    Tokenizer,
    encode_chat,
    framing_ids,
)

if TYPE_CHECKING:
    from agentspec.runtime.text.chat_templates import ModelTemplate

__all__ = [
    "POLICY_CLASSES",
    "ContextOverflowError",
    "ContextPolicy",
    "ContextView",
    "CustomContext",
    "FullHistory",
    "Overflow",
    "Prompt",
    "SlidingWindow",
    "StateSummary",
    "TokenBudget",
    "available_context_policies",
    "make_context_policy",
    "register_context_policy",
]


class Overflow(str, Enum):
    """What happens when the next prompt exceeds ``max_prompt_tokens``."""

    TRUNCATE = "truncate"
    END = "end"
    ERROR = "error"


class ContextOverflowError(RuntimeError):
    """The prompt does not fit and the overflow mode is ``error``."""


@dataclass
class ContextView:
    """The episode so far, as a context policy reads it."""

    tokenizer: Tokenizer
    chat: ChatTemplate | ModelTemplate
    initial_messages: list[dict[str, str]]
    steps: list[Step] = field(default_factory=list)
    env: AgentEnv | None = None
    sample: Mapping[str, Any] = field(default_factory=dict)
    _initial_ids: list[int] | None = None
    # The model template's last rendering (messages, tools, text): the conversation
    # after one step is the one the next step starts from, so it renders once.
    last_rendering: tuple[list[dict[str, Any]], Any, str] | None = field(default=None, repr=False)
    # The model template's start of the conversation: (the first messages it was worked
    # out from, the messages it renders, the tools it passes), once per episode.
    template_start: tuple[list[dict[str, Any]], list[dict[str, Any]], Any] | None = field(
        default=None, repr=False
    )

    @property
    def initial_ids(self) -> list[int]:
        """The first prompt: ``chat.render(initial_messages)`` encoded (cached)."""
        if self._initial_ids is None:
            self._initial_ids = self.encode_messages(self.initial_messages)
        return self._initial_ids

    @property
    def step_index(self) -> int:
        """Index of the step whose prompt is being built."""
        return len(self.steps)

    def encode_messages(self, messages: Sequence[Message]) -> list[int]:
        """Chat-rendered ``messages``; their contents are encoded as text (no forged turns)."""
        if not isinstance(self.chat, ChatTemplate):  # the model's own template (chat_templates)
            return self.chat.encode_messages(self, messages)
        return encode_chat(self.tokenizer, self.chat, messages)


@dataclass
class Prompt:
    """A built prompt: its ids, whether earlier context was dropped, whether it overflowed."""

    ids: list[int]
    truncated: bool = False
    overflow: bool = False
    dropped_steps: int = 0


def end_of_turn_id(tokenizer: Tokenizer, chat: ChatTemplate) -> int | None:
    ids = framing_ids(tokenizer, chat.end_of_turn)  # cached: asked at every step
    return ids[0] if len(ids) == 1 else None


def observation_ids(
    tokenizer: Tokenizer, chat: ChatTemplate, response_ids: Sequence[int], text: str, role: str
) -> list[int]:
    """Tokens that follow ``response_ids`` to append an observation and reopen the assistant turn."""
    eot = end_of_turn_id(tokenizer, chat)
    ended = bool(response_ids) and eot is not None and response_ids[-1] == eot
    head = ("" if ended else chat.end_of_turn) + chat.after_end_of_turn
    # The observation is text: special-token text a tool echoes stays text.
    return encode_chat(tokenizer, chat, [{"role": role, "content": text}], prefix=head)


POLICY_CLASSES: Registry[type[ContextPolicy]] = Registry("context policy")
"""The classes that build each context policy's prompts, by name (``context.policy``);
each is declared in :data:`agentspec.core.contexts.CONTEXT_POLICIES` with its facts."""


def register_context_policy(name: str) -> Callable[[type[ContextPolicy]], type[ContextPolicy]]:
    """Class decorator: register a :class:`ContextPolicy` subclass under ``name``; its
    ``append_only`` and ``spec_setting`` must match the name's declaration, if any."""

    def decorate(cls: type[ContextPolicy]) -> type[ContextPolicy]:
        declare_context_policy(ContextPolicyKind(name, cls.append_only, cls.spec_setting))
        return POLICY_CLASSES.register_class(name)(cls)

    return decorate


def available_context_policies() -> list[str]:
    return list(POLICY_CLASSES.names())


def make_context_policy(name: str, **kwargs: Any) -> ContextPolicy:
    """A context policy by name; an unknown name lists the valid ones."""
    return POLICY_CLASSES.get(name)(**kwargs)


class ContextPolicy(ABC):
    """Builds each step's prompt ids; subclasses implement :meth:`build`.

    Args:
        max_prompt_tokens: the longest prompt allowed (``None``: no limit).
        overflow: ``truncate``, ``end`` or ``error`` (see the module docstring).
    """

    name: str = ""
    append_only: ClassVar[bool] = False
    """Whether consecutive prompts extend each other, ``prompt_{t+1} = prompt_t +
    response_t + observation_t``: then an episode's steps can share one packed
    training row (:func:`agentspec.core.row_layout.row_layout`)."""
    spec_setting: ClassVar[str | None] = None
    """The key of a spec's ``context`` section this policy cannot do without, if any
    (``window`` for ``sliding_window``); the spec model requires it."""

    def __init__(
        self, max_prompt_tokens: int | None = None, overflow: str | Overflow = "end"
    ) -> None:
        self.max_prompt_tokens = max_prompt_tokens
        self.overflow = Overflow(overflow)

    @abstractmethod
    def build(self, view: ContextView) -> list[int]:
        """The untruncated prompt for the next step."""

    def shrink(self, view: ContextView, limit: int) -> Prompt | None:
        """A prompt within ``limit`` tokens that keeps less context, or ``None`` if impossible."""
        return None

    def observation_ids(self, view: ContextView, step: Step, text: str, role: str) -> list[int]:
        if not isinstance(view.chat, ChatTemplate):  # the model's own template (chat_templates)
            return view.chat.observation_ids(view, step, text, role)
        return observation_ids(view.tokenizer, view.chat, step.response_ids, text, role)

    def prompt(self, view: ContextView) -> Prompt:
        """Build the next prompt and apply the overflow mode."""
        ids = self.build(view)
        limit = self.max_prompt_tokens
        if limit is None or len(ids) <= limit:
            return Prompt(ids)
        if self.overflow is Overflow.ERROR:
            raise ContextOverflowError(
                f"step {view.step_index}: prompt of {len(ids)} tokens exceeds "
                f"max_prompt_tokens={limit} ({self.name})"
            )
        if self.overflow is Overflow.TRUNCATE:
            shrunk = self.shrink(view, limit)
            if shrunk is not None:
                return shrunk
        return Prompt(ids, overflow=True)


class _StepWindow(ContextPolicy):
    """initial_ids + (response + observation) of the last ``keep`` steps."""

    def _keep(self, view: ContextView) -> int:
        return len(view.steps)

    def _assemble(self, view: ContextView, keep: int) -> list[int]:
        kept = view.steps[len(view.steps) - keep :] if keep else []
        if not isinstance(view.chat, ChatTemplate) and view.chat.rerenders(kept):
            # a template that rewrites earlier turns: re-rendered each step (per-step rows)
            return view.chat.prompt_ids(view, kept)
        ids = list(view.initial_ids)
        for step in kept:
            ids += step.response_ids
            ids += step.observation_ids
        return ids

    def build(self, view: ContextView) -> list[int]:
        return self._assemble(view, self._keep(view))

    def shrink(self, view: ContextView, limit: int) -> Prompt | None:
        keep = self._keep(view)
        for k in range(keep - 1, 0, -1):
            ids = self._assemble(view, k)
            if len(ids) <= limit:
                return Prompt(ids, truncated=True, dropped_steps=len(view.steps) - k)
        return None


@register_context_policy("full_history")
class FullHistory(_StepWindow):
    """Append-only: ``prompt_{t+1} = prompt_t + response_t + observation_t``."""

    append_only = True


@register_context_policy("sliding_window")
class SlidingWindow(_StepWindow):
    """The first messages (system + task) and the last ``k`` steps."""

    spec_setting = "window"

    def __init__(
        self, k: int = 4, max_prompt_tokens: int | None = None, overflow: str | Overflow = "end"
    ) -> None:
        super().__init__(max_prompt_tokens, overflow)
        if k < 1:
            raise ValueError("sliding_window needs k >= 1")
        self.k = k

    def _keep(self, view: ContextView) -> int:
        return min(self.k, len(view.steps))

    def prompt(self, view: ContextView) -> Prompt:
        out = super().prompt(view)
        if len(view.steps) > self.k and not out.truncated:
            out.truncated = True
            out.dropped_steps = len(view.steps) - self.k
        return out


@register_context_policy("token_budget")
class TokenBudget(_StepWindow):
    """Drop the oldest steps until the prompt fits ``max_prompt_tokens`` (always kept: the last step).

    Dropping is this policy's normal behaviour; ``overflow`` applies only when the
    first messages plus the last step do not fit.
    """

    def __init__(self, max_prompt_tokens: int, overflow: str | Overflow = "end") -> None:
        super().__init__(max_prompt_tokens, overflow)

    def prompt(self, view: ContextView) -> Prompt:
        ids = self.build(view)
        assert self.max_prompt_tokens is not None
        if len(ids) <= self.max_prompt_tokens:
            return Prompt(ids)
        shrunk = self.shrink(view, self.max_prompt_tokens)
        if shrunk is not None:
            return shrunk
        if self.overflow is Overflow.ERROR:
            raise ContextOverflowError(
                f"step {view.step_index}: even the first messages and the last step "
                f"({len(self._assemble(view, min(1, len(view.steps))))} tokens) exceed "
                f"max_prompt_tokens={self.max_prompt_tokens} (token_budget)"
            )
        return Prompt(ids, overflow=True)


@dataclasses.dataclass(frozen=True)
class StepNumber:
    """`step` in a state-summary template: prints as the index; has `.index`, `.max_steps`."""

    index: int
    max_steps: int = 0

    def __str__(self) -> str:
        return str(self.index)


@register_context_policy("state_summary")
class StateSummary(ContextPolicy):
    """Re-render the prompt from the environment's state at every step.

    The prompt is the initial system message (if any) and one user message from
    ``template``: a Jinja2 string (sandboxed) or a callable of the view. Template
    variables: ``state`` (``env.state``), ``sample``, ``step`` (prints as the
    index; ``.index``, ``.max_steps``), ``last_observation`` (text or ``""``),
    ``steps`` (the steps so far), ``task`` (the first user message), ``env``
    (an external environment's facts, if any) and ``constants`` (a spec's constants).
    """

    spec_setting = "summary"

    def __init__(
        self,
        template: str | Callable[[ContextView], str],
        max_prompt_tokens: int | None = None,
        overflow: str | Overflow = "end",
    ) -> None:
        super().__init__(max_prompt_tokens, overflow)
        if isinstance(template, str):
            from agentspec.core import sandbox

            compiled = sandbox.environment(keep_trailing_newline=False).from_string(template)
            self._render: Callable[[ContextView], str] = lambda view: sandbox.render(
                compiled, self.variables(view)
            )
        else:
            self._render = template

    @staticmethod
    def variables(view: ContextView) -> dict[str, Any]:
        last = view.steps[-1].observation if view.steps else None
        task = next((m["content"] for m in view.initial_messages if m["role"] == "user"), "")
        env = view.env
        state = env.state if env is not None else None
        if dataclasses.is_dataclass(state) and not isinstance(state, type):
            # Spec states: by their spec names (a keyword-named field is renamed in Python).
            state = state_fields(state)
        return {
            "state": state,
            "sample": view.sample,
            "step": StepNumber(view.step_index, env.max_steps if env is not None else 0),
            "last_observation": last or "",
            "steps": view.steps,
            "task": task,
            "env": dict(env.env_info()) if env is not None else {},
            "constants": env.constants if env is not None else {},
        }

    def render(self, view: ContextView) -> str:
        """The user message of the next prompt (also what chat-completions policies send)."""
        return self._render(view)

    def build(self, view: ContextView) -> list[int]:
        messages = [m for m in view.initial_messages if m["role"] == "system"][:1]
        messages.append({"role": "user", "content": self.render(view)})
        return view.encode_messages(messages)


@register_context_policy("custom")
class CustomContext(ContextPolicy):
    """A user callable ``fn(view) -> token ids | messages`` builds each prompt.

    Returned messages are chat-rendered and encoded; returned ids are used as they are.
    """

    spec_setting = "custom"

    def __init__(
        self,
        fn: Callable[[ContextView], Sequence[int] | Sequence[Message]],
        max_prompt_tokens: int | None = None,
        overflow: str | Overflow = "end",
    ) -> None:
        super().__init__(max_prompt_tokens, overflow)
        self.fn = fn

    def build(self, view: ContextView) -> list[int]:
        out: list[Any] = list(self.fn(view))
        if out and not isinstance(out[0], int):
            return view.encode_messages(out)
        return [int(i) for i in out]
