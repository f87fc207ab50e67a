"""A tool declared in a spec: its guard, then `returns` → effects → observation,
run on the spec's `Scope` (the generated module lists its parts in `ToolRules`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar

from agentspec.runtime.compiled.contract import ToolRules
from agentspec.runtime.compiled.scope import Scope, SpecTemplate, state_fields
from agentspec.runtime.episode.tools import (
    BaseTool,
    GuardMessage,
    ToolContext,
    ToolFailure,
    ToolOutput,
)

if TYPE_CHECKING:
    from agentspec.runtime.compiled.env import SpecToolEnv

__all__ = ["SpecTool"]

# Python 3.11+ bounds a call with `asyncio.timeout`, which can only end it at an
# `await`; 3.10's `asyncio.wait_for` runs it as a task, kept as it was.
_INLINE_TIMEOUT_IS_MOOT = hasattr(asyncio, "timeout")


class SpecTool(BaseTool):
    """A tool declared in a spec: guard → `returns` → effects → observation.

    Generated subclasses set `name`, `description`, `parameters`, `timeout`,
    `terminal`, the observation template and `rules` (their expressions).
    """

    terminal: ClassVar[bool] = False
    blocking: ClassVar[bool] = True  # expressions over model text may be CPU-bound
    # Calls of one step run one at a time, in call order, whether in a worker
    # thread or (`blocking = False`, bounded code) on the event loop.
    in_call_order: ClassVar[bool] = True
    rules: ClassVar[ToolRules] = ToolRules()
    guard_text: ClassVar[str] = ""
    # The refusal of each check of a guard list: a message, or a plain condition's text.
    guard_messages: ClassVar[tuple[SpecTemplate | str, ...]] = ()
    location: ClassVar[str] = ""  # spec file:line, for errors in the tool's expressions
    observation: ClassVar[SpecTemplate | None] = None  # over args, state, result, sample, step

    def guard(self, args: dict[str, Any], context: ToolContext) -> str | None:
        rules = self.rules
        if not rules.guarded:
            return None  # no `when`: skip building a scope
        env: SpecToolEnv = context.env
        s = env.scope(args=args)
        try:
            if rules.available is not None and not rules.available(s):
                return f"it requires {self.guard_text}"
            failed = rules.failed_guard(s) if rules.failed_guard is not None else None
            if failed is None:
                return None
            refusal = self.guard_messages[failed]
            if isinstance(refusal, str):  # a plain condition of a guard list
                return f"it requires {refusal}"
            try:
                message = refusal.render(**s.locals, **self.variables(s))
            except Exception as exc:  # the guard still refused: only its message failed
                where = f"the refusal message of tools.{self.name}.when ({self.location})"
                env.expression_error(where, exc)
                return "its guard refused the call"
            return GuardMessage(message)
        except Exception as exc:  # located on the step; the call fails as a tool error
            env.expression_error(f"tools.{self.name}.when ({self.location})", exc)
            raise

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str | ToolOutput:
        return self.execute_blocking(args, context)

    async def _guarded_execute(
        self, args: dict[str, Any], context: ToolContext
    ) -> str | ToolOutput:
        if type(self).execute is SpecTool.execute and _INLINE_TIMEOUT_IS_MOOT:
            # A call that runs on the event loop (`blocking = False`) never awaits:
            # no timer can fire before it ends, so none is set (`asyncio.timeout`
            # around it changes nothing but the cost).
            self._check_guard(args, context)
            return self.execute_blocking(args, context)
        return await super()._guarded_execute(args, context)

    def execute_blocking(self, args: dict[str, Any], context: ToolContext) -> str | ToolOutput:
        env: SpecToolEnv = context.env
        s = env.scope(args=args)
        rules = self.rules
        try:
            if rules.returns is not None:
                s.result = rules.returns(s)
            if rules.effects is not None:
                rules.effects(s)
        except ToolFailure:
            raise
        except Exception as exc:  # a spec expression failed: located, then a tool error
            env.expression_error(f"tools.{self.name} ({self.location})", exc)
            raise
        env.on_tool_success(self.name, s)
        try:
            text = self.render(s)
        except Exception as exc:  # the observe template failed: located, then a tool error
            env.expression_error(f"tools.{self.name}.observe", exc)
            raise
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
