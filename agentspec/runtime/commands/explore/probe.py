"""The guard probe: at each state the search reaches, ask every guarded tool's guard
about argument values on both sides of what it compares with.

A guard reads arguments, state, the sample and constants. At each distinct
state an episode reaches (before each turn), the probe asks the guard — without
running the tool, as the random policy does — about the boundary values of
each argument it reads: the schema's bounds and every `enum` value, the
numbers and strings the guard is written with, the constants, sample fields
and state variables it reads (each number also ±1), and the numbers the prompt
shows. It records which comparisons were seen true and false, and keeps a few
calls whose outcome no played call had (a refusal of a guard that never
refused, a pass of one that always did) for the search to play. A guard is
said never to fail (W112) or never to pass (X111) only after this.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentspec.runtime.commands.explore.driver import signature
from agentspec.runtime.commands.explore.pattern_strings import _matches, string_for_pattern
from agentspec.runtime.commands.explore.policy import _guard_passes
from agentspec.runtime.commands.explore.reading import GuardReading, numbers_in, strings_in
from agentspec.runtime.commands.explore.space import (
    ActionSpace,
    ToolShape,
    _length_bounds,
    _multiple,
    _NumberBounds,
    _step,
)

__all__ = ["GuardCoverage", "GuardProbe", "boundary_values"]

MAX_STATES = 2_000  # distinct states each tool's guard is asked about
MAX_VALUES = 40  # values tried per argument and state
KEPT = 3  # calls kept per tool whose outcome the played calls never had
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")


@dataclass
class GuardCoverage:
    """What the probe asked one tool's guard, and what it answered."""

    tool: str
    states: int = 0  # distinct states asked about
    asked: int = 0  # argument sets asked
    passed: int = 0
    refused: int = 0
    tried: dict[str, list[Any]] = field(default_factory=dict)  # argument → values asked
    sides: list[list[int]] = field(default_factory=list)  # per atom: [true, false, error]
    # calls the played ones never made refuse (pass): one per sample, the shortest
    # prefix first, so the same ones whatever order concurrent episodes ran in
    refused_at: dict[int, tuple[int, str, list[str]]] = field(default_factory=dict)
    passed_at: dict[int, tuple[int, str, list[str]]] = field(default_factory=dict)

    @property
    def refusals(self) -> list[tuple[int, list[str], str]]:
        return _kept(self.refused_at)

    @property
    def passes(self) -> list[tuple[int, list[str], str]]:
        return _kept(self.passed_at)

    def note_value(self, name: str, value: Any) -> None:
        values = self.tried.setdefault(name, [])
        if len(values) < 1_000 and value not in values:
            values.append(value)


class GuardProbe:
    """A `Driver` probe: counterfactual calls of every guarded tool at each state."""

    def __init__(
        self,
        module: Any,
        guards: Mapping[str, GuardReading],
        space: ActionSpace,
        base_args: Mapping[int, Mapping[str, dict[str, Any]]],
    ) -> None:
        self.namespace = dict(vars(module))
        self.guards = {n: g for n, g in guards.items() if space.tool(n) is not None}
        self.space = space
        self.base_args = base_args  # sample → tool → the oracle's first arguments
        self.coverage = {
            name: GuardCoverage(name, sides=[[0, 0, 0] for _ in g.atoms])
            for name, g in self.guards.items()
        }
        self.seen: dict[str, set[tuple[int, str]]] = {name: set() for name in self.guards}
        self.enabled = True

    def __call__(
        self, env: Any, sample_index: int, turns: Sequence[str], text: str, prompt: str
    ) -> None:
        if not self.enabled or not self.guards or not hasattr(env, "tools"):
            return
        try:
            self._probe(env, sample_index, turns, text, prompt)
        except Exception:  # the probe never breaks an episode
            return

    def _probe(
        self, env: Any, sample_index: int, turns: Sequence[str], text: str, prompt: str
    ) -> None:
        for name, args in self.space.calls_of(text):
            if name in self.guards:
                self._atoms(env, name, args)
        key = None
        for name, guard in self.guards.items():
            seen = self.seen[name]
            if len(seen) >= MAX_STATES:
                continue
            if key is None:
                key = (sample_index, signature(env))
            if key in seen:
                continue
            seen.add(key)
            self._ask(env, sample_index, list(turns), name, guard, prompt)

    def _atoms(self, env: Any, name: str, args: Mapping[str, Any]) -> None:
        guard = self.guards[name]
        coverage = self.coverage[name]
        for key, value in args.items():
            coverage.note_value(key, _hashable(value))
        scope = env.scope(args=dict(args))
        bound = guard.bind(self.namespace, scope)
        for atom, sides in zip(guard.atoms, coverage.sides, strict=False):
            try:
                sides[0 if atom.evaluate(self.namespace, scope, bound) else 1] += 1
            except Exception:
                sides[2] += 1

    def _ask(
        self,
        env: Any,
        sample_index: int,
        turns: list[str],
        name: str,
        guard: GuardReading,
        prompt: str,
    ) -> None:
        tool = self.space.tool(name)
        assert tool is not None
        coverage = self.coverage[name]
        coverage.states += 1
        base = dict(self.base_args.get(sample_index, {}).get(name, {}))
        rng = random.Random(f"{name}:{sample_index}")
        for arg in tool.required or tool.properties:
            if arg not in base:
                values = boundary_values(tool, arg, guard, env, rng, prompt)
                if values:
                    base[arg] = values[0]
        asked: list[dict[str, Any]] = [base]
        for arg in guard.args:
            if arg in tool.properties:
                asked += [
                    {**base, arg: v} for v in boundary_values(tool, arg, guard, env, rng, prompt)
                ]
        for args in asked:
            passed = _guard_passes(env, name, args)
            coverage.asked += 1
            for key, value in args.items():
                coverage.note_value(key, _hashable(value))
            self._atoms(env, name, args)
            kept = coverage.passed_at if passed else coverage.refused_at
            if passed:
                coverage.passed += 1
            else:
                coverage.refused += 1
            call = self.space.call(name, args)
            mine = (len(turns), call, turns)
            if sample_index not in kept or mine[:2] < kept[sample_index][:2]:
                kept[sample_index] = mine


def _kept(found: dict[int, tuple[int, str, list[str]]]) -> list[tuple[int, list[str], str]]:
    """The first `KEPT` samples' calls: (sample, prefix, call)."""
    return [(index, found[index][2], found[index][1]) for index in sorted(found)[:KEPT]]


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def boundary_values(
    tool: ToolShape,
    arg: str,
    guard: GuardReading,
    env: Any,
    rng: random.Random,
    prompt: str = "",
) -> list[Any]:
    """The values of one argument worth asking a guard about in the env's state."""
    schema = tool.properties.get(arg, {})
    if not isinstance(schema, Mapping):
        return []
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return list(schema["enum"])[:MAX_VALUES]
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "boolean":
        return [True, False]
    read = _read_values(guard, env, prompt)
    if kind in ("integer", "number"):
        return _numbers(schema, kind == "integer", read)
    if kind == "string":
        return _strings(schema, read, rng)
    return []


def _read_values(guard: GuardReading, env: Any, prompt: str) -> list[Any]:
    """What the guard compares with, in this state: its literals, the constants,
    sample fields and state variables it reads, and numbers the prompt shows."""
    values: list[Any] = list(guard.literals)
    constants = getattr(env, "constants", {}) or {}
    for name in guard.constants:
        values.append(constants.get(name))
    sample = getattr(env, "sample", {}) or {}
    for name in guard.sample:
        values.append(sample.get(name))
    state = getattr(env, "state", None)
    for name in guard.state:
        values.append(getattr(state, name, None))
    shown = _NUMBER.findall(prompt)
    values += [float(n) if "." in n else int(n) for n in dict.fromkeys(shown[:10] + shown[-10:])]
    return values


def _numbers(schema: Mapping[str, Any], integer: bool, read: list[Any]) -> list[Any]:
    bounds = _NumberBounds.of(schema)
    step = _step(schema)
    seeds: list[float] = []
    for end, is_open in ((bounds.low, bounds.low_open), (bounds.high, bounds.high_open)):
        if end is not None:
            seeds.append(end + (1 if end == bounds.low else -1) * (1 if is_open else 0))
    for value in read:
        seeds += numbers_in(value, 20)
    seeds += [0, 10**6, -(10**6)]  # far past any bound the guard does not say
    out: list[Any] = []
    for seed in seeds:
        for delta in (0, 1, -1, 0.5) if not integer else (0, 1, -1):
            n = seed + delta
            if not math.isfinite(n) or abs(n) > 1e15:
                continue
            if integer:
                if n != int(n):
                    continue
                n = int(n)
            if bounds.admits(n) and _multiple(n, step) and n not in out:
                out.append(n)
    far = [n for n in (10**6, -(10**6)) if n in out]
    near = [n for n in out if abs(n) < 10**6 - 1]
    # the schema's ends and what the guard reads first, in that order; far values last
    return near[: MAX_VALUES - len(far)] + far


def _strings(schema: Mapping[str, Any], read: list[Any], rng: random.Random) -> list[str]:
    pattern = schema.get("pattern") if isinstance(schema.get("pattern"), str) else None
    low, high = _length_bounds(schema)
    candidates: list[str] = []
    for value in read:
        candidates += strings_in(value, 20)
    candidates += ["", "zz-unknown"]
    # a length the guard compares with, just past it (`len(args.text) <= 100`)
    for n in sorted({int(n) for v in read for n in numbers_in(v, 20) if 0 < n <= 2_000}):
        candidates += ["x" * n, "x" * (n + 1)]
    if pattern is not None:
        candidates += [
            s for s in (string_for_pattern(pattern, rng, low, high) for _ in range(3)) if s
        ]
    out = [
        s
        for s in dict.fromkeys(candidates)
        if low <= len(s)
        and (high is None or len(s) <= high)
        and (pattern is None or _matches(pattern, s))
    ]
    return out[:MAX_VALUES]
