"""What a spec expression or template reads: the `Scope`, its views, templates.

Expressions are compiled to Python over one `Scope` object `s`:
`state.page` → `s.state.page`, `args.query` → `s.args["query"]`,
`sample.answer` → `s.sample["answer"]`, `reward.correct` → `s.reward["correct"]`.
Templates (prompts, observations, oracle turns) render in the sandbox over
the same values (`template`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentspec.runtime.episode.envs import state_fields
from agentspec.runtime.episode.tools import ToolFailure
from agentspec.runtime.episode.trajectory import EventKind, Step

__all__ = ["ActionView", "Scope", "SpecTemplate", "StepView", "state_fields", "template"]


@dataclass(frozen=True)
class ActionView:
    """`action` in expressions: the model's turn."""

    text: str = ""
    tool: str | None = None  # the first tool called, if any
    answer: str | None = None  # the final answer, when the turn called no tool

    @staticmethod
    def of(step: Step) -> ActionView:
        if step.tool_calls:
            return ActionView(step.action_text, step.tool_calls[0].name)
        for event in step.events:  # the first final event's message
            if event.kind == EventKind.FINAL:
                return ActionView(step.action_text, None, event.message)
        return ActionView(step.action_text)


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
    locals: Mapping[str, Any] = field(default_factory=dict)  # a failed guard's `let` names
    user: Any = None  # `user` of a spec with a simulated user: a `compiled.user.UserView`
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
    and within resource limits (`agentspec/core/sandbox.py`): a template
    that passes one raises `TemplateLimitError`."""

    def __init__(self, source: str):
        from agentspec.core import sandbox

        self.source = source
        self._template = sandbox.environment().from_string(source)

    def render(self, **variables: Any) -> str:
        from agentspec.core import sandbox

        return sandbox.render(self._template, variables)


class ConstantTemplate(SpecTemplate):
    """A template without Jinja syntax: it renders as its own text (what the
    sandbox would give, without a render per call)."""

    def __init__(self, source: str):
        self.source = source

    def render(self, **variables: Any) -> str:
        return self.source


class FieldTemplate(SpecTemplate):
    """A template that is one `{{ root.field }}` and nothing else (a prompt of
    `{{ sample.question }}`): rendered as the sandbox would — `root[field]`
    through `str` — without a sandboxed render, where that is exact: `root` a
    plain dict holding `field` (a name no dict attribute takes, so Jinja's
    attribute lookup falls through to the item) and the text within the
    output limit. Anything else renders in the sandbox, its errors included."""

    def __init__(self, source: str, root: str, field: str):
        from agentspec.core import sandbox

        super().__init__(source)
        self.root, self.field = root, field
        self._max_output = sandbox.MAX_OUTPUT

    def render(self, **variables: Any) -> str:
        values = variables.get(self.root)
        if type(values) is dict and self.field in values:
            text = str(values[self.field])
            if len(text) <= self._max_output:
                return text
        return super().render(**variables)


_ONE_FIELD = re.compile(r"\{\{ *([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*) *\}\}")


def template(source: str) -> SpecTemplate:
    """Compile a spec template once (at import of the generated module).

    Every Jinja delimiter starts with `{` and Jinja turns `\\r\\n` into `\\n`;
    text with neither renders as itself, so it is kept as it is. A lone
    `{{ root.field }}` is a `FieldTemplate`."""
    if "{" not in source and "\r" not in source:
        return ConstantTemplate(source)
    one_field = _ONE_FIELD.fullmatch(source)
    if one_field is not None and not hasattr(dict, one_field.group(2)):
        return FieldTemplate(source, one_field.group(1), one_field.group(2))
    return SpecTemplate(source)
