"""What code generated from a spec stands on: spec tools and spec environments.

A generated module declares *what* (a `State` dataclass, tools with guards,
effects and observations, reward components, termination rules) as small
functions over a `Scope` (`compiled/scope.py`), listed in the data of
`compiled/contract.py`; the classes here do the *how* — dispatching reward
components on step events, `done_when`, success and anchors — once, for every
spec. A spec tool's call (`returns` → effects → observation) is run by
`SpecTool` (`compiled/spec_tool.py`, importable from here).
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from agentspec.runtime.compiled.contract import EpisodeRules, RewardComponent, ToolRules
from agentspec.runtime.compiled.scope import (
    ActionView,
    Scope,
    SpecTemplate,
    StepView,
    state_fields,
    template,
)
from agentspec.runtime.compiled.spec_tool import SpecTool
from agentspec.runtime.episode.envs import AgentEnv, StepResult, ToolEnv
from agentspec.runtime.episode.tools import (
    BaseTool,
    ToolFailure,
    cap_error,
)
from agentspec.runtime.episode.trajectory import Action, Event, EventKind, Observation, Step
from agentspec.stdlib.adapters import EnvironmentAdapter

__all__ = [
    "ActionView",
    "EnvironmentAdapter",
    "EpisodeRules",
    "RewardComponent",
    "Scope",
    "SpecAdapterEnv",
    "SpecTool",
    "SpecToolEnv",
    "StepView",
    "ToolFailure",
    "ToolRules",
    "state_fields",
    "template",
]

log = logging.getLogger(__name__)

_SCALARS = frozenset({str, int, float, bool, type(None)})

# SpecToolEnv class → its tools, and their schemas with the format's instructions
_TOOLS: dict[type, list[BaseTool]] = {}
_TOOL_PROMPTS: dict[type, tuple[list[dict[str, Any]], str]] = {}
_OPENENV: dict[type, bool] = {}


class SpecEnvMixin:
    """Reward dispatch, success and expression-error capture shared by spec envs."""

    reward_components: ClassVar[tuple[RewardComponent, ...]] = ()
    rules: ClassVar[EpisodeRules] = EpisodeRules()
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
        # `env.NAME` of a spec whose tools are an OpenEnv environment's (runtime/mcp/openenv.py)
        self.env_facts: dict[str, Any] = {}

    def new_state(self) -> Any:
        """The state an episode starts in: declared initial values, then the
        ones computed from the sample (`initial: sample.x`)."""
        state = self.state_class() if self.state_class is not None else None
        scope = self.scope()
        for field_name, value in self.rules.initial_values:
            # a value that fails on this sample keeps its declared default (recorded)
            where = f"state.{field_name}.initial"
            default = getattr(state, field_name)
            setattr(state, field_name, self.evaluate(value, scope, where, default=default))
        return state

    @staticmethod
    def own_sample(sample: Mapping[str, Any]) -> dict[str, Any]:
        """The episode's private deep copy of a sample: nothing an episode does
        reaches the caller's sample, so every episode starts from the pristine one.
        (A sample of plain scalars needs only a new dict: its values cannot change.)"""
        own = dict(sample)
        if all(type(value) in _SCALARS for value in own.values()):
            return own
        return copy.deepcopy(own)

    def expression_error(self, where: str, exc: Exception) -> None:
        if where in self.locations:
            where = f"{where} ({self.locations[where]})"
        message = cap_error(f"{where}: {type(exc).__name__}: {exc}")
        self.expression_errors.append(message)
        log.debug("expression failed: %s", message)

    def step_view(self, ahead: bool = False) -> StepView:
        """`step`: `index` is the 0-based index of the step being played (the one a
        trajectory records it under), also in its rewards and `done_when`, which run
        after the env counted it; `ahead`, the step about to be played (`anchor`)."""
        taken = getattr(self, "step_index", 0)
        index = taken if ahead else max(0, taken - 1)
        return StepView(index=index, max_steps=self.max_steps)

    def scope(self, ahead: bool = False, **extra: Any) -> Scope:
        return Scope(
            state=getattr(self, "state", None),
            sample=self.sample,
            action=self.action,
            step=self.step_view(ahead),
            env=self.env_info(),
            constants=self.constants,
            **extra,
        )

    def env_info(self) -> Mapping[str, Any]:
        return dict(self.env_facts)

    def evaluate(
        self, expression: Callable[[Scope], Any], s: Scope, where: str, default: Any = 0.0
    ) -> Any:
        """Run one compiled expression; a failure (e.g. `int("abc")` on model
        output) is recorded on the step and yields `default`, never a crash."""
        try:
            return expression(s)
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
        return number  # its weight applies in the step's total (`Step.reward`)

    def reward_weights(self) -> Mapping[str, float]:
        return {c.name: c.weight for c in self.reward_components if c.weight != 1.0}

    def rewards(self, step: Step) -> dict[str, float]:
        self.action = ActionView.of(step)
        values = dict(self.pending)
        self.pending = {}
        keys = event_keys(step.events)
        fired = [c for c in self.reward_components if c.on in keys and not c.on.startswith("tool:")]
        if fired:  # (a step that fires none needs no scope)
            s = self.scope()
            for component in fired:
                value = self._component(component, s)
                if value is not None:
                    values[component.name] = values.get(component.name, 0.0) + value
        weights = self.reward_weights()
        total = sum(weights.get(name, 1.0) * value for name, value in values.items())
        if not math.isfinite(total):  # finite parts, weights or sums can still overflow
            message = f"the step's weighted reward is {total}: every component counts 0"
            self.expression_error("rewards", ValueError(message))
            values = dict.fromkeys(values, 0.0)
        if self.expression_errors:
            step.info["expression_errors"] = self.expression_errors
            self.expression_errors = []
        return values

    def success(self, steps: Sequence[Step], results: Sequence[StepResult]) -> bool | None:
        rule = self.rules.success
        if rule is None:
            return None
        totals: dict[str, float] = {c.name: 0.0 for c in self.reward_components}
        for step in steps:
            for name, value in step.rewards.items():
                totals[name] = totals.get(name, 0.0) + value
        s = self.scope(reward=totals)
        if steps:
            s.action = ActionView.of(steps[-1])
        outcome = self.evaluate(rule, s, "episode.success", default=False)
        if self.expression_errors and steps:  # recorded on the last step, like its rewards' errors
            steps[-1].info.setdefault("expression_errors", []).extend(self.expression_errors)
            self.expression_errors = []
        return None if outcome is None else bool(outcome)

    def anchor(self) -> str | None:
        rule = self.rules.anchor
        if rule is None:
            return None
        key = self.evaluate(rule, self.scope(ahead=True), "episode.anchor", default=None)
        return None if key is None else str(key)

    def end_if_done(self, result: StepResult, action: Action) -> StepResult:
        """Apply `episode.done_when` after a step that did not end the episode."""
        seen = self.action  # `step` set this view at its start: kept unless it differs
        if seen.text != action.text or seen.tool is not None or seen.answer is not None:
            self.action = ActionView(action.text)
        rule = self.rules.done_when
        if rule is None or result.done:
            return result
        if self.evaluate(rule, self.scope(), "episode.done_when", False):
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
    system_template: ClassVar[SpecTemplate | None] = None
    user_template: ClassVar[SpecTemplate | None] = None

    def __init__(self) -> None:
        super().__init__(self._shared_tools(), self.tool_format)
        self._init_spec()

    def _init_spec(self) -> None:
        super()._init_spec()
        if self._openenv_tools():
            self.env_facts.update(reward=0.0, total_reward=0.0, done=False)

    @classmethod
    def _openenv_tools(cls) -> bool:
        """Whether a tool of this class is an OpenEnv environment's (asked once per class)."""
        known = _OPENENV.get(cls)
        if known is None:
            known = _OPENENV[cls] = any(
                getattr(getattr(t, "server", None), "openenv", False) for t in cls.tool_classes
            )
        return known

    @classmethod
    def _shared_tools(cls) -> list[BaseTool]:
        """One instance of each tool class for every episode of this env class:
        spec tools keep no state of their own (the episode's is the env's,
        reached through the call's context), so none is built per episode."""
        tools = _TOOLS.get(cls)
        if tools is None:
            tools = _TOOLS[cls] = [tool_class() for tool_class in cls.tool_classes]
        return tools

    def initial_messages(self, sample: Mapping[str, Any]) -> list[dict[str, str]]:
        tools, instructions = self._tool_prompt()
        variables = {"sample": sample, "tools": tools, "constants": self.constants}
        system = render_prompt("system", self.system_template, variables)
        if instructions:
            system = f"{system}\n\n{instructions}" if system else instructions
        messages = [{"role": "system", "content": system}] if system else []
        user = render_prompt("user", self.user_template, variables)
        messages.append({"role": "user", "content": user})
        return messages

    def tool_instructions(self) -> str:
        """The format's paragraph on the tools (``format.instructions(tools)``), built once per class."""
        return self._tool_prompt()[1]

    def _tool_prompt(self) -> tuple[list[dict[str, Any]], str]:
        """The tools' schemas and the format's instructions: fixed by the class
        (its tool classes and format), so built once per class, not per episode."""
        cls = type(self)
        cached = _TOOL_PROMPTS.get(cls)
        if cached is None:
            tools = list(self.tools.values())
            instructions = self.format.instructions(tools) if tools else ""
            cached = _TOOL_PROMPTS[cls] = ([tool.schema() for tool in tools], instructions)
        return cached

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
        if self.env_facts:
            self.env_facts["reward"] = 0.0  # `env.reward` is this step's
        result = await super().step(action)
        if self.env_facts.get("done") and not result.done:  # the OpenEnv environment ended it
            result.done = True
            result.observation = None
            result.events.append(Event(EventKind.FINAL, message="environment"))
        return self.end_if_done(result, action)


class SpecAdapterEnv(SpecEnvMixin, AgentEnv):
    """A spec driving an external environment through an adapter.

    The model's whole response (stripped) is the command; the adapter's text
    is the observation. Generated subclasses set `make_adapter`, prompts,
    rewards and the expression methods.
    """

    make_adapter: ClassVar[Callable[[], EnvironmentAdapter]]
    system_template: ClassVar[SpecTemplate | None] = None
    user_template: ClassVar[SpecTemplate | None] = None

    def __init__(self) -> None:
        super().__init__()
        # Built at the first reset, not here: an adapter that cannot be built (a missing
        # class, a wrong config) fails each episode (`env_error`), not whoever merely
        # constructs the env to read its prompts or tools.
        self._adapter: EnvironmentAdapter | None = None
        self.step_index = 0
        self._init_spec()

    @property
    def adapter(self) -> EnvironmentAdapter:
        if self._adapter is None:
            self._adapter = type(self).make_adapter()
        return self._adapter

    def env_info(self) -> Mapping[str, Any]:
        return dict(self._adapter.info) if self._adapter is not None else {}

    async def reset(self, sample: Mapping[str, Any]) -> Observation:
        sample = self.own_sample(sample)
        self.sample = sample
        self._init_spec()
        self.step_index = 0
        self.state = self.new_state()
        first = await self.adapter.reset(sample)
        messages = []
        variables = {"sample": sample, "constants": self.constants}
        if self.system_template is not None:
            system = render_prompt("system", self.system_template, variables)
            messages.append({"role": "system", "content": system})
        user = render_prompt("user", self.user_template, variables)
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
        if self._adapter is not None:
            await self._adapter.close()


class PromptError(ValueError):
    """A spec's prompt template does not render for a sample (that episode's failure)."""


def render_prompt(part: str, template: SpecTemplate | None, variables: dict[str, Any]) -> str:
    """`prompt.system` or `prompt.user` rendered; its failure named as a `PromptError`."""
    if template is None:
        return ""
    try:
        return template.render(**variables)
    except Exception as exc:  # the sandbox's limits, an undefined name on this sample
        raise PromptError(f"prompt.{part}: {type(exc).__name__}: {exc}") from exc


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
