"""What code generated from a spec stands on: scopes, spec tools, spec environments.

A generated module declares *what* (a `State` dataclass, tools with guards,
effects and observations, reward components, termination rules) as small
methods over a :class:`Scope`; the classes here do the *how* — running a tool
call's `returns` → effects → observation, dispatching reward components on
step events, `done_when`, success and anchors — once, for every spec.

Expressions are compiled to Python over one `Scope` object `s`:
`state.page` → `s.state.page`, `args.query` → `s.args["query"]`,
`sample.answer` → `s.sample["answer"]`, `reward.correct` → `s.reward["correct"]`.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agentspec.runtime.envs import AgentEnv, StepResult, ToolEnv
from agentspec.runtime.tools import (
    BaseTool,
    GuardMessage,
    ToolContext,
    ToolFailure,
    ToolOutput,
    cap_error,
)
from agentspec.runtime.trajectory import Action, Event, EventKind, Observation, Step

__all__ = [
    "ActionView",
    "EnvironmentAdapter",
    "RewardComponent",
    "Scope",
    "SpecAdapterEnv",
    "SpecTool",
    "SpecToolEnv",
    "StepView",
    "ToolFailure",
    "template",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ActionView:
    """`action` in expressions: the model's turn."""

    text: str = ""
    tool: str | None = None  # the first tool called, if any
    answer: str | None = None  # the final answer, when the turn called no tool

    @staticmethod
    def of(step: Step) -> ActionView:
        tool = step.tool_calls[0].name if step.tool_calls else None
        finals = [
            e.message for e in step.events if e.kind == EventKind.FINAL and not step.tool_calls
        ]
        return ActionView(step.action_text, tool, finals[0] if finals else None)


@dataclass(frozen=True)
class StepView:
    """`step` in expressions."""

    index: int = 0
    max_steps: int = 0


@dataclass
class Scope:
    """Everything an expression may read; effects also write `state`."""

    state: Any = None
    sample: Mapping[str, Any] = field(default_factory=dict)
    args: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None
    action: ActionView = field(default_factory=ActionView)
    step: StepView = field(default_factory=StepView)
    reward: Mapping[str, float] = field(default_factory=dict)
    env: Mapping[str, Any] = field(default_factory=dict)
    constants: Mapping[str, Any] = field(default_factory=dict)
    ended: bool = False

    def done(self) -> None:
        """The `done()` effect: end the episode after this step."""
        self.ended = True

    def fail(self, message: str = "the call failed") -> None:
        """The `fail(message)` effect: stop the call; the model sees `message`."""
        raise ToolFailure(message)

    @staticmethod
    def own(value: Any) -> Any:
        """A container assigned to state, copied: state never aliases the
        sample, a constant or another variable."""
        return copy.deepcopy(value) if isinstance(value, (list, dict)) else value

    @staticmethod
    def slot(container: Any, key: Any) -> Any:
        """A computed index, checked: a list or str index must be in range and
        not negative (no wrapping); dict keys pass through."""
        is_index = isinstance(key, int) and not isinstance(key, bool)
        if isinstance(container, (list, str)) and is_index and not 0 <= key < len(container):
            kind = "list" if isinstance(container, list) else "str"
            raise IndexError(f"index {key} is out of range for a {kind} of length {len(container)}")
        return key

    @classmethod
    def at(cls, container: Any, key: Any) -> Any:
        """`container[key]` for a computed key, checked by :meth:`slot`."""
        return container[cls.slot(container, key)]


class SpecTemplate:
    """A spec template (prompt, observation, oracle action), sandboxed, strict
    and within resource limits (`runtime/sandbox.py`): a template
    that passes one raises `TemplateLimitError`."""

    def __init__(self, source: str):
        from agentspec import sandbox

        self.source = source
        self._template = sandbox.environment().from_string(source)

    def render(self, **variables: Any) -> str:
        from agentspec import sandbox

        return sandbox.render(self._template, variables)


def template(source: str) -> SpecTemplate:
    """Compile a spec template once (at import of the generated module)."""
    return SpecTemplate(source)


@dataclass(frozen=True)
class RewardComponent:
    """One named reward: evaluated when `on` is among the step's event keys."""

    name: str
    on: str
    weight: float
    value: str  # name of the method computing it
    when: str | None = None  # name of the method guarding it


class SpecTool(BaseTool):
    """A tool declared in a spec: guard → `returns` → effects → observation.

    Generated subclasses set `name`, `description`, `parameters`, `timeout`,
    `terminal`, and override `available`, `returns`, `effects`, `observe`.
    """

    terminal: ClassVar[bool] = False
    blocking: ClassVar[bool] = True  # expressions over model text may be CPU-bound
    guard_text: ClassVar[str] = ""
    guard_messages: ClassVar[tuple[Any, ...]] = ()  # templates of guards with messages
    location: ClassVar[str] = ""  # spec file:line, for errors in the tool's expressions
    observation: ClassVar[Any] = None  # a template over args, state, result, sample, step

    def available(self, s: Scope) -> bool:
        return True

    def returns(self, s: Scope) -> Any:
        return None

    def effects(self, s: Scope) -> None:
        return None

    def failed_guard(self, s: Scope) -> int | None:
        """Index of the first guard with a message that fails, else None."""
        return None

    def guard(self, args: dict[str, Any], context: ToolContext) -> str | None:
        plain = type(self).available is SpecTool.available
        if plain and type(self).failed_guard is SpecTool.failed_guard:
            return None  # no `when`: skip building a scope
        env: SpecToolEnv = context.env
        s = env.scope(args=args)
        try:
            if not plain and not self.available(s):
                return f"it requires {self.guard_text}"
            failed = self.failed_guard(s)
            if failed is None:
                return None
            return GuardMessage(self.guard_messages[failed].render(**self.variables(s)))
        except Exception as exc:  # located on the step; the call fails as a tool error
            env.expression_error(f"tools.{self.name}.when ({self.location})", exc)
            raise

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str | ToolOutput:
        return self.execute_blocking(args, context)

    def execute_blocking(self, args: dict[str, Any], context: ToolContext) -> str | ToolOutput:
        env: SpecToolEnv = context.env
        s = env.scope(args=args)
        try:
            s.result = self.returns(s)
            self.effects(s)
        except ToolFailure:
            raise
        except Exception as exc:  # a spec expression failed: located, then a tool error
            env.expression_error(f"tools.{self.name} ({self.location})", exc)
            raise
        env.on_tool_success(self.name, s)
        text = self.render(s)
        return ToolOutput(text, done=s.ended or self.terminal)

    @staticmethod
    def variables(s: Scope) -> dict[str, Any]:
        """What an observation or guard-message template may read."""
        return {
            "args": s.args,
            "state": state_fields(s.state),
            "result": s.result,
            "sample": s.sample,
            "step": s.step,
            "constants": s.constants,
        }

    def render(self, s: Scope) -> str:
        if self.observation is None:
            return "" if s.result is None else str(s.result)
        return str(self.observation.render(**self.variables(s)))


class SpecEnvMixin:
    """Reward dispatch, success and expression-error capture shared by spec envs."""

    reward_components: ClassVar[tuple[RewardComponent, ...]] = ()
    max_steps: ClassVar[int] = 8
    state_class: ClassVar[type | None] = None
    constants: ClassVar[Mapping[str, Any]] = {}
    locations: ClassVar[Mapping[str, str]] = {}  # expression path → spec file:line

    sample: Mapping[str, Any]
    state: Any

    def _init_spec(self) -> None:
        self.pending: dict[str, float] = {}
        self.action = ActionView()
        self.expression_errors: list[str] = []

    def initial_state(self, s: Scope) -> Any:
        return None

    def new_state(self) -> Any:
        """The state an episode starts in: declared initial values, then the
        ones computed from the sample (`initial: sample.x`)."""
        if type(self).initial_state is not SpecEnvMixin.initial_state:
            state = self.evaluate("initial_state", self.scope(), "state.initial", default=None)
            if state is not None:
                return state
        return self.state_class() if self.state_class is not None else None

    @staticmethod
    def own_sample(sample: Mapping[str, Any]) -> dict[str, Any]:
        """The episode's private deep copy of a sample: nothing an episode does
        reaches the caller's sample, so every episode starts from the pristine one."""
        return copy.deepcopy(dict(sample))

    def expression_error(self, where: str, exc: Exception) -> None:
        if where in self.locations:
            where = f"{where} ({self.locations[where]})"
        message = cap_error(f"{where}: {type(exc).__name__}: {exc}")
        self.expression_errors.append(message)
        log.debug("expression failed: %s", message)

    def step_view(self) -> StepView:
        return StepView(index=getattr(self, "step_index", 0), max_steps=self.max_steps)

    def scope(self, **extra: Any) -> Scope:
        return Scope(
            state=getattr(self, "state", None),
            sample=self.sample,
            action=self.action,
            step=self.step_view(),
            env=self.env_info(),
            constants=self.constants,
            **extra,
        )

    def env_info(self) -> Mapping[str, Any]:
        return {}

    def evaluate(self, method: str, s: Scope, where: str, default: Any = 0.0) -> Any:
        """Run one compiled expression; a failure (e.g. `int("abc")` on model
        output) is recorded on the step and yields `default`, never a crash."""
        try:
            return getattr(self, method)(s)
        except Exception as exc:
            return self._expression_error(where, exc, default)

    def _expression_error(self, where: str, exc: Exception, default: Any) -> Any:
        self.expression_error(where, exc)
        return default

    def on_tool_success(self, tool: str, s: Scope) -> None:
        """Evaluate the `tool:NAME` rewards while the call's args and result exist."""
        for component in self.reward_components:
            if component.on == f"tool:{tool}":
                value = self._component(component, s)
                if value is not None:
                    self.pending[component.name] = self.pending.get(component.name, 0.0) + value

    def _component(self, component: RewardComponent, s: Scope) -> float | None:
        if component.when is not None and not self.evaluate(
            component.when, s, f"rewards.{component.name}.when", default=False
        ):
            return None
        where = f"rewards.{component.name}.value"
        value = self.evaluate(component.value, s, where)
        try:
            number = float(value if value is not None else 0.0)
        except (TypeError, ValueError, OverflowError) as exc:
            return self._expression_error(where, exc, 0.0)
        if not math.isfinite(number):  # a NaN reward would poison every update it enters
            return self._expression_error(where, ValueError(f"the reward is {number}"), 0.0)
        return component.weight * number

    def rewards(self, step: Step) -> dict[str, float]:
        self.action = ActionView.of(step)
        s = self.scope()
        values = dict(self.pending)
        self.pending = {}
        keys = event_keys(step.events)
        for component in self.reward_components:
            if component.on in keys and not component.on.startswith("tool:"):
                value = self._component(component, s)
                if value is not None:
                    values[component.name] = values.get(component.name, 0.0) + value
        if self.expression_errors:
            step.info["expression_errors"] = self.expression_errors
            self.expression_errors = []
        return values

    def is_success(self, s: Scope) -> bool | None:
        return None

    def success(self, steps: Sequence[Step], results: Sequence[StepResult]) -> bool | None:
        if type(self).is_success is SpecEnvMixin.is_success:
            return None
        totals: dict[str, float] = {c.name: 0.0 for c in self.reward_components}
        for step in steps:
            for name, value in step.rewards.items():
                totals[name] = totals.get(name, 0.0) + value
        s = self.scope(reward=totals)
        if steps:
            s.action = ActionView.of(steps[-1])
        outcome = self.evaluate("is_success", s, "episode.success", default=False)
        if self.expression_errors and steps:  # recorded on the last step, like its rewards' errors
            steps[-1].info.setdefault("expression_errors", []).extend(self.expression_errors)
            self.expression_errors = []
        return None if outcome is None else bool(outcome)

    def is_done(self, s: Scope) -> bool:
        return False

    def anchor_key(self, s: Scope) -> Any:
        return None

    def anchor(self) -> str | None:
        if type(self).anchor_key is SpecEnvMixin.anchor_key:
            return None
        key = self.evaluate("anchor_key", self.scope(), "episode.anchor", default=None)
        return None if key is None else str(key)

    def end_if_done(self, result: StepResult, action: Action) -> StepResult:
        """Apply `episode.done_when` after a step that did not end the episode."""
        self.action = ActionView(action.text)
        if type(self).is_done is SpecEnvMixin.is_done:
            return result
        if not result.done and self.evaluate("is_done", self.scope(), "episode.done_when", False):
            result.done = True
            result.observation = None
            result.events.append(Event(EventKind.FINAL, message="done_when"))
        return result


class SpecToolEnv(SpecEnvMixin, ToolEnv):
    """A spec with tools (and, optionally, a state machine over typed state).

    Generated subclasses set `tool_classes`, `tool_format`, the prompt
    templates, `state_class`, `reward_components`, and the expression methods.
    """

    tool_classes: ClassVar[tuple[type[SpecTool], ...]] = ()
    tool_format: ClassVar[str] = "hermes"
    final_answer: ClassVar[str] = "end"
    system_template: ClassVar[Any] = None
    user_template: ClassVar[Any] = None

    def __init__(self) -> None:
        super().__init__([cls() for cls in self.tool_classes], self.tool_format)
        self._init_spec()

    def initial_messages(self, sample: Mapping[str, Any]) -> list[dict[str, str]]:
        tools = [tool.schema() for tool in self.tools.values()]
        variables = {"sample": sample, "tools": tools, "constants": self.constants}
        system = self.system_template.render(**variables) if self.system_template else ""
        if self.tools:
            instructions = self.format.instructions(list(self.tools.values()))
            system = f"{system}\n\n{instructions}" if system else instructions
        messages = [{"role": "system", "content": system}] if system else []
        user = self.user_template.render(**variables) if self.user_template else ""
        messages.append({"role": "user", "content": user})
        return messages

    async def reset(self, sample: Mapping[str, Any]) -> Observation:
        sample = self.own_sample(sample)
        self.sample = sample
        self._init_spec()
        self.state = self.new_state()
        return await super().reset(sample)

    async def on_final(self, answer: str, action: Action) -> StepResult:
        if self.final_answer == "continue":
            names = ", ".join(sorted(self.tools))
            return StepResult(
                observation=Observation(
                    f"No tool call found. Call one of: {names}.", self.observation_role
                )
            )
        return await super().on_final(answer, action)

    async def step(self, action: Action) -> StepResult:
        self.action = ActionView(action.text)
        result = await super().step(action)
        return self.end_if_done(result, action)


class EnvironmentAdapter:
    """An external environment: text in, text out, plus facts (`env.NAME`).

    Adapters implement `reset(sample) -> str` and `step(command) -> str`, and
    keep `info` (a dict exposed to expressions as `env`, e.g. `score`, `won`,
    `done`) up to date.
    """

    info: dict[str, Any]

    async def reset(self, sample: Mapping[str, Any]) -> str:
        raise NotImplementedError

    async def step(self, command: str) -> str:
        raise NotImplementedError

    async def close(self) -> None:
        return None

    def walkthrough(self, sample: Mapping[str, Any]) -> list[str]:
        """Commands that solve the sample's game (the `walkthrough` oracle), if known."""
        raise NotImplementedError


class SpecAdapterEnv(SpecEnvMixin, AgentEnv):
    """A spec driving an external environment through an adapter.

    The model's whole response (stripped) is the command; the adapter's text
    is the observation. Generated subclasses set `make_adapter`, prompts,
    rewards and the expression methods.
    """

    make_adapter: ClassVar[Callable[[], EnvironmentAdapter]]
    system_template: ClassVar[Any] = None
    user_template: ClassVar[Any] = None

    def __init__(self) -> None:
        super().__init__()
        self.adapter = type(self).make_adapter()
        self.step_index = 0
        self._init_spec()

    def env_info(self) -> Mapping[str, Any]:
        return dict(self.adapter.info)

    async def reset(self, sample: Mapping[str, Any]) -> Observation:
        sample = self.own_sample(sample)
        self.sample = sample
        self._init_spec()
        self.step_index = 0
        self.state = self.new_state()
        first = await self.adapter.reset(sample)
        messages = []
        if self.system_template is not None:
            messages.append(
                {
                    "role": "system",
                    "content": self.system_template.render(sample=sample, constants=self.constants),
                }
            )
        user = (
            self.user_template.render(sample=sample, constants=self.constants)
            if self.user_template
            else ""
        )
        messages.append({"role": "user", "content": f"{user}\n\n{first}" if user else first})
        return Observation(messages=messages)

    async def step(self, action: Action) -> StepResult:
        self.action = ActionView(action.text)
        self.step_index += 1
        text = await self.adapter.step(action.text.strip())
        done = bool(self.adapter.info.get("done", False))
        events = [Event(EventKind.FINAL, message="environment")] if done else []
        result = StepResult(
            observation=None if done else Observation(text), done=done, events=events
        )
        return self.end_if_done(result, action)

    async def close(self) -> None:
        await self.adapter.close()


def state_fields(state: Any) -> dict[str, Any]:
    """A state dataclass as a dict (for traces and state-summary templates)."""
    if not dataclasses.is_dataclass(state) or isinstance(state, type):
        return {}
    return {
        f.metadata.get("spec_name", f.name): getattr(state, f.name)
        for f in dataclasses.fields(state)
    }


def event_keys(events: Sequence[Event]) -> set[str]:
    """The reward events a step fired: each event's key, plus `tool_error:NAME`
    for a failed call and `guard_failed` / `guard_failed:NAME` for a refused one."""
    keys = {e.key for e in events}
    for e in events:
        if e.kind == EventKind.TOOL_ERROR and e.tool:
            keys.add(f"tool_error:{e.tool}")
            if e.code == "guard":
                keys.update(("guard_failed", f"guard_failed:{e.tool}"))
    return keys
