"""What each expression site of a spec may read: its scope.

Shared by the checker's modules (`checker.py` and the `check_*` modules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentspec.compiler.types import INT, STR, Type, parse_type
from agentspec.core.source import Span
from agentspec.spec.yaml_loader import Path

# The read-only records every spec has.
ACTION_FIELDS: dict[str, Type] = {
    "text": STR,  # the model's whole response
    "tool": parse_type("str?"),  # name of the first tool called, if any
    "answer": parse_type("str?"),  # the final answer, when the turn called no tool
}
STEP_FIELDS: dict[str, Type] = {"index": INT, "max_steps": INT}

ROOTS = (
    "state",
    "args",
    "sample",
    "action",
    "step",
    "result",
    "reward",
    "env",
    "constants",
    "user",
)

# Why a scope is unavailable, for the E407 hint.
WHERE = {
    "args": "inside a tool's `when`, `returns`, `effect` and `observe`, and in rewards `on: tool:NAME`",
    "result": "after a tool's `returns` (in its `effect` and `observe`), and in rewards `on: tool:NAME`",
    "reward": "in `episode.success`",
    "action": "in rewards, `episode.done_when` and `episode.success`",
    "state": "everywhere except prompts and `data.derived`",
    "step": "everywhere except prompts and `data.derived`",
    "env": "when the spec declares an `environment` or an `openenv: true` MCP server",
    "sample": "everywhere",
    "constants": "everywhere",
    "user": "when the spec declares a `user`: in its replies, rewards, `episode.done_when`, `episode.success` and `episode.anchor`",
}

ENV_FIELDS: dict[str, Type] = {}  # open record: adapters expose their own fields


@dataclass
class Scope:
    """What one expression site may read (and, in effects, write)."""

    roots: dict[str, dict[str, Type] | Type]  # record fields, or a plain type (result)
    writable: frozenset[str] = frozenset()
    open_roots: frozenset[str] = frozenset({"env"})  # any attribute allowed


@dataclass
class Site:
    """One expression, statement or template of the spec, and what it may read."""

    path: Path
    kind: str  # "expression" | "statement" | "condition" | "number" | "template" | "let" | "list"
    scope: Scope
    tool: str | None = None
    label: str = ""
    frame: Any = None  # the `let` frame its statements bind into and read (None: its own)
    via: str | None = None  # the named guard this site belongs to, checked for `tool`


@dataclass
class Usage:
    """Which state variables the spec reads (first place) and writes."""

    reads: dict[str, Span] = field(default_factory=dict)
    writes: set[str] = field(default_factory=set)
