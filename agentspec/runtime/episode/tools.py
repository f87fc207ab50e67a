"""Tools: a name, a description, JSON-Schema parameters and an async ``execute``.

:meth:`BaseTool.run` is what environments call. It never raises on bad input:
arguments that fail the schema, a failed guard, an exception inside ``execute``
and a timeout all come back as a :class:`ToolResult` with ``ok=False``, an error
``code`` and a message meant for the model (capped at :data:`MAX_ERROR_CHARS`).
A ``blocking`` tool (every spec tool) runs its guard and body in a worker
thread with a hard time limit, so CPU-bound work cannot stall other episodes.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jsonschema

from agentspec.core.json_schema import JSON_TYPE_TESTS, validator_of
from agentspec.formats.caps import MAX_ERROR_CHARS, cap_error
from agentspec.runtime.episode.blocking import TooManyStuckCalls, run_blocking

_timeout = getattr(asyncio, "timeout", None)  # Python 3.11+

__all__ = [
    "MAX_ERROR_CHARS",
    "BaseTool",
    "GuardMessage",
    "ToolContext",
    "ToolFailure",
    "ToolOutput",
    "ToolResult",
    "cap_error",
    "schema_errors",
]


class ToolFailure(Exception):
    """Raised by a tool to fail the call with a message meant for the model
    (a spec's `fail(message)` effect); :meth:`BaseTool.run` reports it verbatim,
    with the error ``code`` (``failed`` unless the tool names another kind)."""

    def __init__(self, message: str, code: str = "failed") -> None:
        super().__init__(message)
        self.code = code


class GuardMessage(str):
    """A guard's refusal written by the spec: shown to the model verbatim,
    without the generic "NAME cannot be used now" prefix."""


@dataclass
class ToolContext:
    """What a tool may read besides its arguments."""

    env: Any = None
    """The environment running the tool (``env.state``, ``env.sample``)."""
    step_index: int = 0


@dataclass
class ToolOutput:
    """A tool's answer when it is more than text.

    Attributes:
        text: what the model sees.
        done: end the episode after this step (a terminal tool).
        success: the episode's outcome, if this tool decides it.
        info: anything to keep in the step's ``info``.
    """

    text: str
    done: bool = False
    success: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolResult:
    """The outcome of one call, as the environment records it."""

    name: str
    text: str
    ok: bool
    code: str = ""
    """Empty when ok; else ``unknown_tool``, ``invalid_arguments``, ``guard``, ``failed``,
    ``exception`` or ``timeout`` (also a blocking call not run because the episode's
    timed-out calls still hold their threads), or a kind the tool names (MCP tools:
    ``crashed``, ``unavailable``, ``too_large``)."""
    done: bool = False
    success: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    """A checked validator per distinct schema (tools are created once per episode)."""
    schema = json.loads(schema_json)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    return validator_of(schema)


_FLAT_SCHEMA_KEYS = frozenset(
    {"type", "properties", "required", "additionalProperties", "description", "title"}
)
_FLAT_PROPERTY_KEYS = frozenset({"type", "description", "title"})


@functools.lru_cache(maxsize=256)
def _flat_check(schema_json: str) -> Callable[[Any], bool] | None:
    """A quick test for a flat object schema (properties of one scalar type each,
    required names, open or closed), or ``None`` for any other schema.

    It accepts only arguments that jsonschema accepts too (it may refuse a few
    that jsonschema accepts, e.g. ``2.0`` for an integer): refused arguments go
    to jsonschema, which decides and writes the error messages.
    """
    schema = json.loads(schema_json)
    if set(schema) - _FLAT_SCHEMA_KEYS or schema.get("type") != "object":
        return None
    properties, required = schema.get("properties", {}), schema.get("required", [])
    extra_allowed = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(extra_allowed, bool):
        return None
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    tests: dict[str, Callable[[Any], bool] | None] = {}
    for name, prop in properties.items():
        if not isinstance(prop, dict) or set(prop) - _FLAT_PROPERTY_KEYS:
            return None
        if "type" in prop and not (
            isinstance(prop["type"], str) and prop["type"] in JSON_TYPE_TESTS
        ):
            return None
        tests[name] = JSON_TYPE_TESTS[prop["type"]] if "type" in prop else None
    names = tuple(required)

    def check(args: Any) -> bool:
        if type(args) is not dict:
            return False
        for name in names:
            if name not in args:
                return False
        for key, value in args.items():
            if key not in tests:
                if extra_allowed:
                    continue
                return False
            test = tests[key]
            if test is not None and not test(value):
                return False
        return True

    return check


def schema_errors(schema: Mapping[str, Any], args: Any) -> list[str]:
    """Every way ``args`` fails ``schema``, as ``path: message`` lines (empty if valid)."""
    errors = sorted(validator_of(schema).iter_errors(args), key=lambda e: list(e.absolute_path))
    out = []
    for err in errors:
        path = ".".join(str(p) for p in err.absolute_path)
        out.append(f"{path}: {err.message}" if path else err.message)
    return out


class BaseTool:
    """Base class of every tool; generated tools subclass it.

    Set the class attributes and implement :meth:`execute`; override :meth:`guard`
    for a precondition on the environment's state (a spec's ``when``).

    Attributes:
        name: the name the model calls.
        description: one or two sentences for the model.
        parameters: JSON Schema of the arguments (an ``object`` schema).
        timeout: seconds before a call is abandoned (``None``: no limit).
        blocking: run the guard and :meth:`execute_blocking` off the event loop.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    timeout: ClassVar[float | None] = 30.0
    blocking: ClassVar[bool] = False
    """The tool's work is synchronous (CPU-bound or blocking): :meth:`run` calls
    :meth:`guard` and :meth:`execute_blocking` in a worker thread, off the event
    loop, and interrupts it at the timeout (:mod:`agentspec.runtime.episode.blocking`)."""

    def __init__(self) -> None:
        if not self.name:
            raise TypeError(f"{type(self).__name__} must set the class attribute 'name'")
        schema_json = json.dumps(self.parameters, sort_keys=True)
        self._validator = _validator(schema_json)
        self._quick_check = _flat_check(schema_json)
        # an argument's JSON Schema `default` is its value when the model leaves it out
        properties = self.parameters.get("properties")
        self._defaults = {
            name: schema["default"]
            for name, schema in (properties.items() if isinstance(properties, dict) else ())
            if isinstance(schema, dict) and "default" in schema
        }

    async def execute(self, args: dict[str, Any], context: ToolContext) -> str | ToolOutput:
        """Run the tool on validated ``args``; return the text the model sees."""
        raise NotImplementedError

    def guard(self, args: dict[str, Any], context: ToolContext) -> str | None:
        """``None`` if the call may run now, else the reason it may not (shown to the model)."""
        return None

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema (for prompts and chat templates)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    @property
    def parameter_names(self) -> list[str]:
        return list(self.parameters.get("properties", {}))

    def validate(self, args: Any) -> list[str]:
        """Schema errors of ``args`` (empty if valid)."""
        if self._quick_check is not None and self._quick_check(args):
            return []
        if self._validator.is_valid(args):
            return []
        return schema_errors(self.parameters, args)

    async def end_episode(self, context: ToolContext) -> None:
        """Called once when an episode whose environment holds this tool ends
        (release what the tool keeps per episode; nothing by default)."""
        return None

    def execute_blocking(self, args: dict[str, Any], context: ToolContext) -> str | ToolOutput:
        """The synchronous body of a ``blocking`` tool (run in a worker thread)."""
        raise NotImplementedError

    async def run(self, args: dict[str, Any], context: ToolContext | None = None) -> ToolResult:
        """Validate, check the guard, execute with the timeout; never raises on bad input.

        Every failure — the arguments, the guard, the tool, the timeout —
        comes back as a :class:`ToolResult` with ``ok=False`` and a capped message.
        """
        ctx = context or ToolContext()
        try:
            problems = self.validate(args)
        except Exception as exc:  # a schema check that chokes on the input: the input's fault
            problems = [f"{type(exc).__name__}: {exc}"]
        if problems:
            return self._error(
                f"invalid arguments for {self.name}: " + "; ".join(problems), "invalid_arguments"
            )
        if any(name not in args for name in self._defaults):
            left_out = {k: copy.deepcopy(v) for k, v in self._defaults.items() if k not in args}
            args = {**args, **left_out}
        try:
            if self.blocking:
                # The episode (its environment) is whom a thread stuck past the timeout
                # counts against: it, and not the other episodes, runs out of them.
                out = await run_blocking(
                    lambda: self._guarded_call(args, ctx), self.timeout, owner=ctx.env
                )
            else:
                out = await self._guarded_execute(args, ctx)
        except _Refused as refused:
            if isinstance(refused.reason, GuardMessage):  # the spec's own words, verbatim
                return self._error(str(refused.reason), "guard")
            return self._error(f"{self.name} cannot be used now: {refused}", "guard")
        except _GuardError as exc:
            return self._error(
                f"{self.name} cannot be used now: its condition failed: {exc}", "exception"
            )
        except ToolFailure as failure:  # the tool refused on purpose: its message, verbatim
            return self._error(str(failure), failure.code)
        except (asyncio.TimeoutError, TimeoutError):  # the same class from Python 3.11 on
            return self._error(f"{self.name} timed out after {self.timeout:g} s", "timeout")
        except TooManyStuckCalls as exc:  # this episode's earlier calls still hold threads
            return self._error(f"{self.name} {exc}", "timeout")
        except Exception as exc:  # a tool's failure is an observation, not a crash
            return self._error(f"{self.name} failed: {type(exc).__name__}: {exc}", "exception")
        if isinstance(out, ToolOutput):
            return ToolResult(self.name, out.text, True, "", out.done, out.success, dict(out.info))
        return ToolResult(self.name, str(out), True)

    def _error(self, message: str, code: str) -> ToolResult:
        return ToolResult(self.name, cap_error(message), False, code)

    def _check_guard(self, args: dict[str, Any], context: ToolContext) -> None:
        try:
            refusal = self.guard(args, context)
        except Exception as exc:
            raise _GuardError(f"{type(exc).__name__}: {exc}") from exc
        if refusal is not None:
            raise _Refused(refusal)

    def _guarded_call(self, args: dict[str, Any], context: ToolContext) -> str | ToolOutput:
        self._check_guard(args, context)
        return self.execute_blocking(args, context)

    async def _guarded_execute(
        self, args: dict[str, Any], context: ToolContext
    ) -> str | ToolOutput:
        self._check_guard(args, context)
        if self.timeout is None:
            return await self.execute(args, context)
        if _timeout is None:  # Python 3.10
            return await asyncio.wait_for(self.execute(args, context), self.timeout)
        async with _timeout(self.timeout):  # no task per call, unlike wait_for
            return await self.execute(args, context)


class _Refused(Exception):
    """The guard said no (its reason is the message)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _GuardError(Exception):
    """The guard itself raised."""
