"""A spec as an OpenEnv environment (`agentspec serve SPEC --openenv`).

Each OpenEnv session (a WebSocket on ``/ws``) gets its own
:class:`~agentspec.runtime.serve.session.EpisodeSession`; ``reset`` starts an
episode on the chosen sample, ``step`` plays the client's action through it.
The wire contract (docs/openenv.md):

- action ``{"text": str, "tool_calls"?: [{"name", "arguments"}], "finish_reason"?}``;
- observation: ``done``, ``reward`` (this step's sum), ``messages`` (new ones),
  ``text``, ``rewards`` (every declared component), ``events``, ``termination``,
  ``success``, ``sample_id``, ``step_index``; the first one also ``tools``,
  ``tool_format`` and ``tool_instructions``; ``prompt`` on request;
- ``reset(split=, index=)`` / ``reset(sample_id=)`` / ``reset(seed=)`` /
  ``reset(sample=)``, plus ``full_prompt=true``;
- the Task API (``/{name}/splits``, ``tasks``, ``num_tasks``, ``task``,
  ``task_range``) over the spec's data: of each sample, only the fields the agent sees
  (``ServedSpec.public_fields``), never the grader's (an answer);
- ``state``: the spec's typed state as JSON, the variables the agent sees, with the
  episode's reward totals.

Bad input is answered with an error message (the WebSocket's ``error`` reply,
HTTP 400/422) and the server keeps serving. Works with ``openenv-core`` 0.3
(the Task API routes are added here) and ``openenv`` 0.10 (which has them).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar, Literal

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from agentspec.core.json_value import json_value
from agentspec.runtime.serve.limits import LimitsGuard, ServerLimits
from agentspec.runtime.serve.openenv_tasks import add_task_routes
from agentspec.runtime.serve.openenv_wire import WebSocketGuard, short_inputs, shortened
from agentspec.runtime.serve.session import End, EpisodeSession, Turn, run_sync
from agentspec.runtime.serve.spec import ServedSpec, SessionError

__all__ = [
    "AgentspecAction",
    "AgentspecObservation",
    "AgentspecState",
    "build_app",
    "environment_class",
]

TASK_PREVIEW = 100
"""Tasks listed by `/{name}/tasks` (a preview; `num_tasks` is the true count)."""
MAX_TASK_RANGE = 1_000  # tasks in one `task_range` reply: a client pages through more


class ToolCallModel(BaseModel):
    """A native tool call: the tool's name and its arguments (an object, or JSON text)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str = ""


class AgentspecAction(Action):
    """The model's response: its text, optional native tool calls, how sampling ended."""

    text: str = Field(description="The response as the model wrote it ('' with tool_calls).")
    tool_calls: list[ToolCallModel] | None = Field(
        default=None, description="Native tool calls, written after text in the spec's format."
    )
    finish_reason: Literal["stop", "length"] = Field(
        default="stop", description="'length' when the client's sampler cut the response."
    )


class AgentspecObservation(Observation):
    """One turn of the episode (see docs/openenv.md for every field)."""

    sample_id: str = ""
    step_index: int = 0
    text: str | None = Field(default=None, description="The environment's reply as text.")
    messages: list[dict[str, Any]] = Field(default_factory=list)
    rewards: dict[str, float] = Field(
        default_factory=dict,
        description="This step's value of each reward component, before its weight.",
    )
    weights: dict[str, float] = Field(
        default_factory=dict,
        description="The components' weights other than 1: `reward` is the weighted sum.",
    )
    events: list[dict[str, Any]] = Field(default_factory=list)
    tool_results: list[dict[str, Any]] = Field(default_factory=list)
    termination: str | None = None
    success: bool | None = None
    tools: list[dict[str, Any]] | None = None
    tool_format: str | None = None
    tool_instructions: str | None = None
    prompt: list[dict[str, Any]] | None = None
    error: str | None = None


class AgentspecState(State):
    """The episode's state: the spec's typed state as the agent may see it (the variables
    its templates read, and those declared public) and the reward totals so far."""

    spec: str = ""
    sample_id: str | None = None
    spec_state: dict[str, Any] = Field(default_factory=dict)
    reward_totals: dict[str, float] = Field(default_factory=dict)
    done: bool = False
    termination: str | None = None


class AgentspecEnvironment(Environment[AgentspecAction, AgentspecObservation, AgentspecState]):
    """One OpenEnv session of a served spec. Subclassed per spec by :func:`environment_class`."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    served: ClassVar[ServedSpec]

    def __init__(self) -> None:
        super().__init__()
        self.session = EpisodeSession(self.served)
        self.episode_id: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # where the episode runs

    # ---------------------------------------------------------------- reset

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        split: str | None = None,
        index: int | None = None,
        sample_id: str | None = None,
        sample: dict[str, Any] | None = None,
        full_prompt: bool = False,
        **unknown: Any,
    ) -> AgentspecObservation:
        if unknown:
            names = ", ".join(sorted(unknown))
            raise SessionError(
                f"unknown reset field(s) {names}; use split+index, sample_id, seed, sample, "
                "full_prompt"
            )
        _check_reset(
            seed=seed,
            episode_id=episode_id,
            split=split,
            index=index,
            sample_id=sample_id,
            sample=sample,
            full_prompt=full_prompt,
        )  # before anything starts: a bad request leaves the episode in progress be
        self._loop = asyncio.get_running_loop()
        self.session.full_prompt = full_prompt
        self.episode_id = episode_id
        turn = await self.session.start(
            split=split, index=index, sample_id=sample_id, sample=sample, seed=seed
        )
        return self._observation(turn, first=True)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> AgentspecObservation:
        return run_sync(self.reset_async(seed=seed, episode_id=episode_id, **kwargs))

    # ----------------------------------------------------------------- step

    async def step_async(
        self, action: AgentspecAction, timeout_s: float | None = None, **kwargs: Any
    ) -> AgentspecObservation:
        if not self.session.started:
            return AgentspecObservation(
                done=True,
                reward=0.0,
                termination="not_started",
                error="no episode: reset first (over HTTP /step is stateless: use the /ws"
                " session to keep an episode between calls)",
            )
        calls = [c.model_dump() for c in action.tool_calls or []]
        turn = await self.session.act(action.text, calls, action.finish_reason)
        return self._observation(turn, first=False)

    def step(
        self, action: AgentspecAction, timeout_s: float | None = None, **kwargs: Any
    ) -> AgentspecObservation:
        return run_sync(self.step_async(action, timeout_s))

    # ------------------------------------------------------- state, closing

    @property
    def state(self) -> AgentspecState:
        trajectory = self.session.trajectory
        totals = dict.fromkeys(self.served.reward_names, 0.0)
        if trajectory is not None:
            totals.update(trajectory.reward_components())
        return AgentspecState(
            episode_id=self.episode_id,
            step_count=len(trajectory.steps) if trajectory is not None else 0,
            spec=self.served.name,
            sample_id=trajectory.sample_id if trajectory is not None else None,
            spec_state=self.served.public_state(self.session.state()),  # not the grader's
            reward_totals=totals,
            done=self.session.done,
            termination=trajectory.termination.value
            if trajectory is not None and self.session.done
            else None,
        )

    def close(self) -> None:
        """Release the episode's environment, on the loop the episode ran on."""
        loop = self._loop
        if loop is None or loop.is_closed() or not loop.is_running():
            if self.session.started:
                run_sync(self.session.close())
            return
        if _on_loop_thread(loop):  # a stateless route closes on the server's loop
            loop.create_task(self.session.close())
            return
        asyncio.run_coroutine_threadsafe(self.session.close(), loop).result(timeout=60)

    def get_metadata(self) -> EnvironmentMetadata:
        from agentspec import __version__

        return EnvironmentMetadata(
            name=self.served.name, description=self.served.description, version=__version__
        )

    # ------------------------------------------------------------ Task API

    def list_splits(self) -> list[str]:
        return self.served.splits()

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return self.get_task_range(split, 0, TASK_PREVIEW)

    def num_tasks(self, split: str) -> int:
        return len(self._samples(split))

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return json_value(self.served.task(split, index))

    def get_task_range(
        self, split: str, start: int | None = None, stop: int | None = None
    ) -> list[dict[str, Any]]:
        """Tasks `start` to `stop` (exclusive) of a split, at most `MAX_TASK_RANGE` of them;
        a negative bound is refused, as `get_task` refuses a negative index."""
        if (start is not None and start < 0) or (stop is not None and stop < 0):
            raise IndexError(f"start and stop count from 0 (got {start}, {stop})")
        indices = range(len(self._samples(split)))[start:stop]
        if len(indices) > MAX_TASK_RANGE:
            raise IndexError(
                f"{len(indices):,} tasks asked for; at most {MAX_TASK_RANGE:,} a request"
                " (page through them with start and stop)"
            )
        return [json_value(self.served.task(split, i)) for i in indices]

    def _samples(self, split: str) -> list[dict[str, Any]]:
        try:
            return self.served.samples(split)
        except SessionError as exc:
            raise IndexError(str(exc)) from None

    # -------------------------------------------------------------- turns

    def _observation(self, turn: Turn, first: bool) -> AgentspecObservation:
        fields: dict[str, Any] = {
            "done": turn.done,
            "reward": turn.reward,
            "sample_id": turn.sample_id,
            "step_index": turn.step_index,
            "text": turn.observation,
            "messages": turn.messages,
            "rewards": turn.rewards,
            "weights": turn.weights,
            "events": turn.events,
            "tool_results": turn.tool_results,
            "prompt": turn.prompt,
        }
        if first:
            fields.update(
                tools=turn.tools,
                tool_format=turn.tool_format,
                tool_instructions=turn.tool_instructions,
            )
        if isinstance(turn, End):
            fields.update(termination=turn.termination, success=turn.success)
            error = turn.trajectory.info.get("env_error")
            if error:
                fields["error"] = str(error)
        return AgentspecObservation(**fields)


def _check_reset(**fields: Any) -> None:
    """Refuse a reset whose fields have the wrong type or text JSON cannot carry (a
    lone surrogate), naming each field: a pydantic ``ValidationError``, which the
    WebSocket answers ``VALIDATION_ERROR`` and HTTP 400 (:func:`build_app`)."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for name in ("seed", "index"):
        value = fields[name]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            problems.append(((name,), f"{name} must be an integer, not {_shown(value)}"))
    for name in ("episode_id", "split", "sample_id"):
        value = fields[name]
        if value is not None and not isinstance(value, str):
            problems.append(((name,), f"{name} must be a string, not {_shown(value)}"))
    if not isinstance(fields["full_prompt"], bool):  # "false" would be true
        problems.append(
            (
                ("full_prompt",),
                f"full_prompt must be true or false, not {_shown(fields['full_prompt'])}",
            )
        )
    if fields["sample"] is not None and not isinstance(fields["sample"], dict):
        problems.append((("sample",), f"sample must be an object, not {_shown(fields['sample'])}"))
    for name in ("episode_id", "split", "sample_id", "sample"):
        problems.extend(_unencodable(fields[name], (name,)))
    if problems:
        raise ValidationError.from_exception_data(
            "reset",
            [
                InitErrorDetails(
                    type=PydanticCustomError("reset_field", message),
                    loc=loc,
                    input=_refused(fields, loc),
                )
                for loc, message in problems
            ],
        )


def _refused(fields: dict[str, Any], loc: tuple[str | int, ...]) -> Any:
    """The refused value at `loc` for an error detail's `input`: itself when JSON can
    carry it, else as `ascii()` writes it (a lone surrogate cannot be sent)."""
    value: Any = fields.get(str(loc[0]))
    for part in loc[1:]:
        value = value.get(part) if isinstance(value, dict) else None
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError):
        return _shown(value)
    return value


def _unencodable(value: Any, loc: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], str]]:
    """Where ``value`` holds text that is not valid Unicode (a lone surrogate)."""
    if isinstance(value, str):
        if _encodes(value):
            return []
        where = ".".join(str(part) for part in loc)
        return [(loc, f"{where} is not valid Unicode text (a lone surrogate)")]
    found: list[tuple[tuple[str | int, ...], str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            at = key if isinstance(key, int) or (isinstance(key, str) and _encodes(key)) else None
            if at is None:  # the key itself: named as ascii() writes it
                at = _shown(key)
                found.append(((*loc, at), f"a key of {'.'.join(map(str, loc))} is not valid text"))
            found.extend(_unencodable(item, (*loc, at)))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found.extend(_unencodable(item, (*loc, i)))
    return found


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(value: Any) -> str:
    """``value`` as an error message can always carry it."""
    return ascii(value)[:80]


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def environment_class(served: ServedSpec) -> type[AgentspecEnvironment]:
    """The OpenEnv environment class of one served spec (a class, as OpenEnv's
    server wants a factory it can check for concurrency support)."""
    name = "".join(part.capitalize() for part in served.name.replace("-", "_").split("_"))
    return type(f"{name}Environment", (AgentspecEnvironment,), {"served": served})


def build_app(
    served: ServedSpec, max_sessions: int = 64, limits: ServerLimits | None = None
) -> Any:
    """The FastAPI app of OpenEnv's server for ``served`` (every split's samples loaded
    first), with the Task API routes (added here when the installed OpenEnv lacks
    them), bad input answered 400, and ``limits`` (default: the defaults, with the token
    of `AGENTSPEC_SERVE_TOKEN`) applied to every request and session."""
    from fastapi import HTTPException
    from fastapi.exception_handlers import http_exception_handler
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    for split in served.splits():  # loaded now, not on the event loop at a first reset
        served.samples(split)
    env_class = environment_class(served)
    app = create_app(
        env_class,
        AgentspecAction,
        AgentspecObservation,
        env_name=served.name,
        max_concurrent_envs=max_sessions,
    )

    # messages built from a refused value (an unknown split, a reset key) repeat it:
    # each reply is cut like the WebSocket's (`shortened`, `short_inputs`)
    async def bad_request(request: Any, exc: Exception) -> JSONResponse:
        return JSONResponse(status_code=400, content={"detail": shortened(str(exc))})

    async def invalid_request(request: Any, exc: Exception) -> JSONResponse:
        errors = exc.errors(include_url=False)  # type: ignore[attr-defined]
        short = [{**e, "msg": shortened(str(e.get("msg", "")))} for e in short_inputs(errors)]
        return JSONResponse(status_code=400, content={"detail": json_value(short)})

    async def invalid_body(request: Any, exc: Exception) -> JSONResponse:
        errors = exc.errors()  # type: ignore[attr-defined]
        return JSONResponse(status_code=422, content={"detail": json_value(short_inputs(errors))})

    async def http_error(request: Any, exc: Exception) -> Any:
        detail = getattr(exc, "detail", None)
        if isinstance(detail, (list, str)):  # OpenEnv's 422 for an action: pydantic's errors
            exc = StarletteHTTPException(
                exc.status_code,  # type: ignore[attr-defined]
                json_value(short_inputs(detail)) if isinstance(detail, list) else shortened(detail),
                headers=exc.headers,  # type: ignore[attr-defined]
            )
        return await http_exception_handler(request, exc)  # type: ignore[arg-type]

    app.add_exception_handler(SessionError, bad_request)
    app.add_exception_handler(ValidationError, invalid_request)  # a bad reset's fields
    # the refused value is not echoed whole (see `short_inputs`)
    app.add_exception_handler(RequestValidationError, invalid_body)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_middleware(WebSocketGuard)
    # added last, so outermost: the token and the size are checked before anything else
    app.add_middleware(LimitsGuard, limits=limits or ServerLimits.from_environment())
    paths = {getattr(route, "path", "") for route in app.routes}
    if "/{env_name}/splits" not in paths:
        add_task_routes(app, env_class, served.name, HTTPException)
    return app
