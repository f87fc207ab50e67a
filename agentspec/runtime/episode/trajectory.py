"""Observations, actions, steps and trajectories: what a rollout records.

A :class:`Trajectory` is one episode: its ordered :class:`Step` s, which sample it
came from, its group (the samples of one prompt, for group baselines), why it
ended and whether it succeeded. Each step keeps the exact token ids the policy
saw (``prompt_ids``) and produced (``response_ids`` with the sampler's
``response_logprobs``), the parsed tool calls, the observation the environment
returned (as text and as the tokens appended after the response), the named
reward components, the events that happened and the anchor (the state key that
groups steps for GiGPO-style baselines).

Trajectories serialise to versioned JSON Lines, one trajectory per line
(:func:`write_jsonl` / :func:`read_jsonl`).

Training rows (the token layout the trainers consume) are built in
:mod:`agentspec.runtime.episode.rows`.

Memory: the loop keeps one growing token list per episode (first prompt,
then each response and observation) and each chained step's ``prompt_ids`` is
a :class:`PromptIds` view of its first ``len(prompt)`` ids, so an episode of T
steps holds its tokens once instead of T growing copies. A view reads,
compares, adds and serialises like the list it stands for.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any

from agentspec.core.json_value import LONE_SURROGATE, json_value
from agentspec.formats.base import ToolCall  # what a format parses a call into

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "Action",
    "Event",
    "EventKind",
    "Observation",
    "PromptIds",
    "Step",
    "TerminationReason",
    "ToolCall",
    "Trajectory",
    "read_jsonl",
    "write_jsonl",
]

FORMAT_NAME = "agentspec.trajectory"
FORMAT_VERSION = 1


class TerminationReason(str, Enum):
    """Why an episode ended."""

    DONE = "done"
    """The environment said so (a final answer, a terminal tool, a goal state)."""
    MAX_STEPS = "max_steps"
    CONTEXT_OVERFLOW = "context_overflow"
    """The next prompt did not fit ``max_prompt_tokens`` (overflow mode ``end``)."""
    RESPONSE_TRUNCATED = "response_truncated"
    """A response hit ``max_new_tokens`` and the loop is set to end on that."""
    PARSE_ERROR_LIMIT = "parse_error_limit"
    TOOL_TIMEOUT = "tool_timeout"
    """A tool timed out and the loop is set to end on that."""
    TOOL_ERROR_LIMIT = "tool_error_limit"
    ENV_ERROR = "env_error"
    """The environment raised; the error is in the last step's (or the trajectory's) ``info``."""
    POLICY_ERROR = "policy_error"
    """The policy could not answer (a chat API's error after its retries, a malformed reply)."""


class EventKind:
    """Names of the events a step can carry; reward components are attached per event.

    ``tool:NAME`` events are written with :meth:`Event.tool_ok`.
    """

    STEP = "step"
    """Every step."""
    FINAL = "final"
    """The model gave a final answer (or the environment ended the episode on this step)."""
    TOOL = "tool"
    """A tool call ran successfully; its key is ``tool:NAME``."""
    TOOL_ERROR = "tool_error"
    """Unknown tool, arguments that fail the schema or guard, tool exception, timeout."""
    PARSE_ERROR = "parse_error"
    """The response could not be parsed in the tool-call format."""
    TRUNCATED = "truncated"
    """The episode was cut short on this step (max steps, overflow, limits)."""
    RESPONSE_TRUNCATED = "response_truncated"
    """The response hit ``max_new_tokens``."""


@dataclass(frozen=True)
class Event:
    """Something that happened during a step.

    Attributes:
        kind: one of :class:`EventKind`.
        tool: the tool's name for ``tool`` / ``tool_error`` events.
        message: detail (for errors: the text shown to the model).
        code: a short machine-readable reason, e.g. ``invalid_json``, ``unknown_tool``,
            ``invalid_arguments``, ``guard``, ``exception``, ``timeout``.
        call_index: 0-based position of the call in the response, if any.
    """

    kind: str
    tool: str | None = None
    message: str = ""
    code: str = ""
    call_index: int | None = None

    @property
    def key(self) -> str:
        """The name rewards attach to: ``tool:NAME`` for a tool event, else the kind."""
        return f"tool:{self.tool}" if self.kind == EventKind.TOOL else self.kind

    @classmethod
    def tool_ok(cls, name: str, call_index: int | None = None) -> Event:
        return cls(EventKind.TOOL, tool=name, call_index=call_index)


@dataclass
class Observation:
    """What the environment shows the model.

    ``reset`` returns the initial conversation in ``messages`` (system, user, ...);
    ``step`` returns the new turn's ``text``, sent with ``role``.
    """

    text: str = ""
    role: str = "user"
    messages: list[dict[str, str]] | None = None

    def as_messages(self) -> list[dict[str, str]]:
        if self.messages is not None:
            return [dict(m) for m in self.messages]
        return [{"role": self.role, "content": self.text}]


@dataclass
class Action:
    """What the policy produced for one step."""

    text: str
    """The response decoded (special tokens skipped): for parsing and reading only."""
    token_ids: list[int]
    finish_reason: str = "stop"
    """``stop`` (EOS or a stop string) or ``length`` (hit ``max_new_tokens``)."""

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class PromptIds(Sequence[int]):
    """The first ``length`` ids of an episode's token list, shared by its steps.

    Behaves as the list ``tokens[:length]`` would (indexing, iteration, ``==``,
    ``+``, copying, pickling and JSON via :meth:`Step.to_dict` all give or take
    plain lists) without copying it. The loop only ever appends to ``tokens``,
    so a view never changes.
    """

    __slots__ = ("_length", "_tokens")

    def __init__(self, tokens: list[int], length: int) -> None:
        if not 0 <= length <= len(tokens):
            raise ValueError(f"a view of {length} ids over {len(tokens)}")
        self._tokens = tokens
        self._length = length

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self.as_list()[index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("prompt index out of range")
        return self._tokens[index]

    def __iter__(self) -> Iterator[int]:
        return itertools.islice(self._tokens, self._length)

    def as_list(self) -> list[int]:
        return self._tokens[: self._length]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PromptIds):
            if other._tokens is self._tokens:
                return other._length == self._length
            other = other.as_list()
        if isinstance(other, (list, tuple)):
            return len(other) == self._length and self.as_list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable like one

    def __add__(self, other: Iterable[int]) -> list[int]:
        return [*self.as_list(), *other]

    def __radd__(self, other: Iterable[int]) -> list[int]:
        return [*other, *self.as_list()]

    def __repr__(self) -> str:
        return repr(self.as_list())

    def __copy__(self) -> list[int]:
        return self.as_list()

    def __deepcopy__(self, memo: dict[int, Any]) -> list[int]:
        return self.as_list()

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (self.as_list(),))


@dataclass
class Step:
    """One policy call and the environment's answer to it."""

    index: int
    prompt_ids: Sequence[int]
    """The prompt's ids: a list, or a :class:`PromptIds` view shared with the episode's other steps."""
    response_ids: list[int]
    response_logprobs: list[float]
    action_text: str = ""
    finish_reason: str = "stop"
    tool_calls: list[ToolCall] = field(default_factory=list)
    observation: str | None = None
    """Text of the observation produced by this step (``None`` if the episode ended)."""
    observation_ids: list[int] = field(default_factory=list)
    """Tokens appended after ``response_ids`` to continue the chat (framing included)."""
    rewards: dict[str, float] = field(default_factory=dict)
    """Each reward component's value at this step, before its weight."""
    weights: dict[str, float] = field(default_factory=dict)
    """The weights of ``rewards`` in :attr:`reward` (a component not listed weighs 1)."""
    events: list[Event] = field(default_factory=list)
    anchor: str | None = None
    done: bool = False
    """The episode ended after this step (for any reason)."""
    context_truncated: bool = False
    """The prompt of this step dropped or cut earlier context (breaks the token chain)."""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def reward(self) -> float:
        """The step's reward: the weighted sum of its reward components."""
        return float(sum(self.weights.get(n, 1.0) * v for n, v in self.rewards.items()))

    def paid(self, name: str) -> float:
        """What component ``name`` added to :attr:`reward`: its value times its weight."""
        return self.weights.get(name, 1.0) * self.rewards.get(name, 0.0)

    @property
    def anchor_key(self) -> str:
        """GiGPO's anchor of the step: the spec's ``episode.anchor`` where it evaluated, else
        the exact prompt the step acted from (steps that saw identical token ids share a
        group). A state the anchor expression cannot describe (it raised, or gave None) so
        still groups by what the model saw, and never ends a run. Both backends group by it."""
        if self.anchor is not None:
            return f"a:{self.anchor}"
        digest = hashlib.sha1(
            b"".join(int(t).to_bytes(4, "little") for t in self.prompt_ids),
            usedforsecurity=False,
        )
        return f"p:{digest.hexdigest()}"

    @property
    def response_truncated(self) -> bool:
        return self.finish_reason == "length"

    def has_event(self, key: str) -> bool:
        return any(e.key == key or e.kind == key for e in self.events)

    def to_dict(self) -> dict[str, Any]:
        # Field by field, not `asdict(self)`: asdict deep-copies every token id one by
        # one, and a model's worst output holds hundreds of thousands (seconds a step).
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("prompt_ids", "response_ids", "response_logprobs", "observation_ids"):
            d[name] = list(d[name])
        d["rewards"], d["weights"] = dict(self.rewards), dict(self.weights)
        d["info"] = copy.deepcopy(self.info)
        d["events"] = [asdict(e) for e in self.events]
        d["tool_calls"] = [asdict(c) for c in self.tool_calls]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Step:
        data = dict(d)
        data["events"] = [Event(**e) for e in data.get("events", [])]
        data["tool_calls"] = [ToolCall(**c) for c in data.get("tool_calls", [])]
        return cls(**data)


@dataclass
class Trajectory:
    """One episode."""

    steps: list[Step] = field(default_factory=list)
    sample_id: str = ""
    group_id: str = ""
    termination: TerminationReason = TerminationReason.DONE
    success: bool | None = None
    trajectory_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def total_reward(self) -> float:
        return float(sum(s.reward for s in self.steps))

    @property
    def env_error(self) -> str | None:
        """Why an `env_error` episode ended: kept on the trajectory when its first prompt
        failed, on its last step when a later one did; None for any other ending."""
        if self.termination != TerminationReason.ENV_ERROR:
            return None
        last = self.steps[-1].info if self.steps else {}
        return str(self.info.get("env_error") or last.get("env_error") or "no reason recorded")

    @property
    def failure(self) -> str | None:
        """Why an episode ended because its environment or its policy failed
        (`env_error`, `policy_error`); None for any other ending."""
        if self.termination == TerminationReason.POLICY_ERROR and self.steps:
            return str(self.steps[-1].info.get("policy_error"))
        return self.env_error

    def reward_components(self) -> dict[str, float]:
        """Each named component summed over the steps (before its weight)."""
        out: dict[str, float] = {}
        for step in self.steps:
            for name, value in step.rewards.items():
                out[name] = out.get(name, 0.0) + value
        return out

    def count(self, key: str) -> int:
        """How many events with this key (``parse_error``, ``tool:NAME``, ...) occurred."""
        return sum(1 for s in self.steps for e in s.events if e.key == key or e.kind == key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "trajectory_id": self.trajectory_id,
            "sample_id": self.sample_id,
            "group_id": self.group_id,
            "termination": self.termination.value,
            "success": self.success,
            "info": self.info,
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Trajectory:
        if d.get("format") != FORMAT_NAME:
            raise ValueError(f"not a trajectory record (format={d.get('format')!r})")
        if d.get("version") != FORMAT_VERSION:
            raise ValueError(
                f"trajectory format version {d.get('version')!r} is not supported "
                f"(this agentspec reads version {FORMAT_VERSION})"
            )
        return cls(
            steps=[Step.from_dict(s) for s in d["steps"]],
            sample_id=d["sample_id"],
            group_id=d["group_id"],
            termination=TerminationReason(d["termination"]),
            success=d["success"],
            trajectory_id=d["trajectory_id"],
            info=dict(d.get("info", {})),
        )

    def to_json(self) -> str:
        """One line of strict JSON, whatever the model wrote.

        Non-finite floats become the strings ``"NaN"`` / ``"Infinity"`` /
        ``"-Infinity"``, lone surrogates become U+FFFD, values JSON cannot hold
        become their ``str`` (see :func:`json_value`).
        """
        record = self.to_dict()
        try:
            text = _dumps(record)
            if LONE_SURROGATE.search(text) is None:
                return text
        except (ValueError, TypeError, RecursionError):
            pass
        return _dumps(json_value(record))

    @classmethod
    def from_json(cls, line: str) -> Trajectory:
        return cls.from_dict(json.loads(line))


def write_jsonl(path: str | os.PathLike[str], trajectories: Iterable[Trajectory]) -> int:
    """Write one trajectory per line; returns how many were written.

    A trajectory that cannot be written at all is replaced by an empty one
    whose ``info.trace_error`` says why, so the others are kept.
    """
    n = 0
    with Path(path).open("w", encoding="utf-8") as f:
        for traj in trajectories:
            try:
                line = traj.to_json()
            except Exception as exc:  # keep the other trajectories whatever this one holds
                line = _unwritable(traj, exc).to_json()
            f.write(line)
            f.write("\n")
            n += 1
    return n


def _dumps(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _unwritable(traj: Trajectory, exc: Exception) -> Trajectory:
    return Trajectory(
        sample_id=json_value(str(traj.sample_id)),
        group_id=json_value(str(traj.group_id)),
        termination=traj.termination,
        trajectory_id=json_value(str(traj.trajectory_id)),
        info={"trace_error": f"{type(exc).__name__}: {exc}"[:2000]},
    )


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[Trajectory]:
    """Read trajectories written by :func:`write_jsonl`; a bad line names its number."""
    with Path(path).open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield Trajectory.from_json(line)
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{lineno}: {exc}") from exc
