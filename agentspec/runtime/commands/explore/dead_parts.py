"""Dead parts: tools that never run, guards that never fail, reward components that never
(or always) fire, and each component's observed range, counted over every episode the
search played, with the coverage that makes each count mean something."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentspec.runtime.commands.explore.driver import Episode
from agentspec.runtime.commands.explore.findings import (
    MIN_CALLS,
    MIN_EPISODES,
    TOLERANCE,
    Finding,
    SpecFacts,
    shortest,
)
from agentspec.runtime.episode.trajectory import EventKind

__all__ = ["dead_rewards", "dead_tools", "reward_ranges", "state_values", "values_taken"]


def _coverage_said(spec: SpecFacts, tool: str) -> str:
    """What the guard probe asked `tool`'s guard: states, arguments, comparison sides."""
    coverage = spec.coverage.get(tool)
    if coverage is None or not coverage.states:
        return ""
    reading = spec.reading.guards.get(tool) if spec.reading is not None else None
    parts = [
        f"at {coverage.states} states reached the guard probe asked it about "
        f"{coverage.asked} argument sets ({coverage.passed} passed, {coverage.refused} refused)"
    ]
    if reading is not None:
        tried = []
        for arg in reading.args:
            values = coverage.tried.get(arg, [])
            if values:
                tried.append(_values_said(arg, values, spec.schemas.get(tool, {}).get(arg, {})))
        if tried:
            parts.append("tried " + "; ".join(tried))
        sides = []
        for atom, (true, false, error) in zip(reading.atoms, coverage.sides, strict=False):
            sides.append(
                f"`{atom.text}` true {true}, false {false}" + (f", failed {error}" if error else "")
            )
        if sides:
            parts.append("; ".join(sides))
    return "; ".join(parts)


def _values_said(arg: str, values: list[Any], schema: Mapping[str, Any]) -> str:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    bounds = [
        f"{k} {schema[k]}"
        for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
        if k in schema
    ]
    if numbers and len(numbers) == len(values):
        said = f"args.{arg} from {min(numbers):g} to {max(numbers):g} ({len(numbers)} values"
        return said + (f"; the schema's {', '.join(bounds)})" if bounds else ")")
    if isinstance(schema.get("enum"), list):
        return f"args.{arg}: all {len(schema['enum'])} enum values"
    ordered = sorted(values, key=lambda v: (type(v).__name__, repr(v)))
    shown = ", ".join(repr(v) for v in ordered[:6]) + (", …" if len(values) > 6 else "")
    return f"args.{arg}: {len(values)} values ({shown})"


@dataclass
class _ToolCalls:
    """What the episodes played did with each tool."""

    runs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # calls a guard could have refused: random actions call only tools whose guard
    # passes (`RandomActions.available_calls`), so they never test it
    probes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    refusals: dict[str, list[tuple[Episode, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    failures: dict[str, list[Episode]] = field(default_factory=lambda: defaultdict(list))


def _tool_calls(played: Sequence[Episode], spec: SpecFacts) -> _ToolCalls:
    calls = _ToolCalls()
    for e in played:
        probing = not e.origin.startswith("random actions")
        for step in e.trajectory.steps:
            for event in step.events:
                if event.kind == EventKind.TOOL and event.tool:
                    calls.runs[event.tool] += 1
                    calls.probes[event.tool] += probing
                elif event.kind == EventKind.TOOL_ERROR and event.tool in spec.tools:
                    if event.code == "guard":
                        calls.refusals[event.tool].append((e, event.message))
                    elif event.code != "invalid_arguments":
                        calls.failures[event.tool].append(e)
    return calls


def dead_tools(played: Sequence[Episode], spec: SpecFacts) -> list[Finding]:
    calls = _tool_calls(played, spec)
    tested = spec.reading.tested_tools if spec.reading is not None else set()
    findings: list[Finding] = []
    for tool in spec.tools:
        refused, failed = calls.refusals[tool], calls.failures[tool]
        if calls.runs[tool] == 0 and (refused or failed):
            found = _never_ran(spec, tool, refused, failed, tool in tested)
        elif tool in spec.guarded and not refused:
            found = _never_refused(spec, tool, calls.probes[tool], tool in tested)
        else:
            continue
        if found is not None:
            findings.append(found)
    return findings


def _never_ran(
    spec: SpecFacts,
    tool: str,
    refused: list[tuple[Episode, str]],
    failed: list[Episode],
    tested: bool,
) -> Finding | None:
    """X111 for a tool whose every call was refused or failed (a note where the guard
    probe saw its guard pass some call)."""
    coverage = spec.coverage.get(tool)
    said = _coverage_said(spec, tool)
    if refused and coverage is not None and coverage.passed:
        spec.notes.append(
            (
                ("tools", tool, "when"),
                f"`{tool}` never ran in the episodes played, but its guard passes "
                f"some calls the guard probe asked about ({said})",
            )
        )
        return None
    where = ("tools", tool, "when") if refused else ("tools", tool, "effect")
    return Finding(
        "X111",
        f"tool `{tool}` never ran: of its {len(refused) + len(failed)} calls, "
        f"{len(refused)} were refused by its guard and {len(failed)} failed"
        + (f"; {said}" if said else ""),
        where,
        "a guard or effect that can never pass makes the tool dead weight in the "
        "prompt: fix the condition"
        + (" (the spec's tests call it)" if tested else ", or remove the tool"),
        shortest([e for e, _ in refused] or failed),
        evidence=_coverage_evidence(coverage),
    )


def _never_refused(spec: SpecFacts, tool: str, probes: int, tested: bool) -> Finding | None:
    """W112 for a guard that refused none of the calls that could test it (a note where
    they were too few, or the guard probe saw it refuse some)."""
    coverage = spec.coverage.get(tool)
    said = _coverage_said(spec, tool)
    if probes < MIN_CALLS:
        if probes:
            spec.notes.append(
                (
                    ("tools", tool, "when"),
                    f"the guard of `{tool}` refused none of {probes} calls: too few "
                    f"to say it never fails (at least {MIN_CALLS})" + (f"; {said}" if said else ""),
                )
            )
        return None
    if coverage is not None and (coverage.refused or not coverage.states):
        spec.notes.append(
            (
                ("tools", tool, "when"),
                f"the guard of `{tool}` refused none of the {probes} calls played, "
                + (
                    f"but refuses some the guard probe asked about ({said})"
                    if coverage.states
                    else "and the guard probe reached no state to ask it about"
                ),
            )
        )
        return None
    return Finding(
        "W112",
        f"the guard of `{tool}` never refused a call ({probes} calls ran"
        + (f"; {said}" if said else "")
        + ")",
        ("tools", tool, "when"),
        "a guard that always passes guards nothing: tighten it"
        + (
            " (the spec's tests call this tool: keep it, and make the guard "
            "compare with what it is meant to limit)"
            if tested
            else " so it refuses what it was meant to, or remove it"
        ),
        evidence=_coverage_evidence(coverage),
    )


def _coverage_evidence(coverage: Any) -> dict[str, Any]:
    if coverage is None:
        return {}
    return {
        "states": coverage.states,
        "asked": coverage.asked,
        "passed": coverage.passed,
        "refused": coverage.refused,
        "sides": [list(s) for s in coverage.sides],
    }


def _event_keys(episode: Episode) -> set[str]:
    from agentspec.runtime.compiled.env import event_keys

    keys: set[str] = set()
    for step in episode.trajectory.steps:
        keys |= event_keys(step.events)
    return keys


def dead_rewards(
    played: Sequence[Episode], spec: SpecFacts, dead_tools: Collection[Any] = ()
) -> list[Finding]:
    findings: list[Finding] = []
    reading = spec.reading
    tested = reading.tested_rewards if reading is not None else set()
    for name, on in spec.rewards.items():
        sums = [e.components().get(name, 0.0) for e in played]
        if played and all(abs(s) <= TOLERANCE for s in sums):
            found = _never_paid(played, spec, name, on, dead_tools)
            if found is not None:
                findings.append(found)
        elif on == "final" and (value := _constant(played, name)) is not None:
            findings.append(
                Finding(
                    "W114",
                    f"reward.{name} (on: final) was {value:.3f} at the end of every one of the "
                    "episodes that gave an answer, failed ones too: it cannot tell one answer "
                    "from another",
                    ("rewards", name, "value"),
                    "make it depend on what the agent did"
                    + ("" if name in tested else ", or remove it"),
                )
            )
    return findings


def _never_paid(
    played: Sequence[Episode], spec: SpecFacts, name: str, on: str, dead_tools: Collection[Any]
) -> Finding | None:
    """W113 for a reward component that was 0 in every episode (a note where its event
    never happened, or the search cannot say it saw every value the reward reads)."""
    reading = spec.reading
    reached = [e for e in played if on in _event_keys(e)]
    seen = state_values(played, reading.reward_reads.get(name, []) if reading else [])
    values = "; ".join(values_taken(var, vals) for var, vals in seen.items())
    if not reached:
        if not (on.startswith("tool:") and on[5:] in dead_tools):
            spec.notes.append(
                (
                    ("rewards", name, "value"),
                    f"reward.{name} never fired, but its event `{on}` never happened in "
                    f"the {len(played)} episodes played: not said to be dead",
                )
            )
        return None
    unknown = [
        var
        for var in (reading.reward_reads.get(name, []) if reading else [])
        if not _domain_seen(reading.domains.get(var), seen.get(var, []))
        and not _driven(played, var, on)
    ]
    if unknown:
        spec.notes.append(
            (
                ("rewards", name, "value"),
                f"reward.{name} was 0 in all {len(played)} episodes ({len(reached)} "
                f"reached its event `{on}`), but the search cannot say it saw every "
                f"value of state.{', state.'.join(unknown)} ({values})",
            )
        )
        return None
    return Finding(
        "W113",
        f"reward.{name} (on: {on}) was 0 in all {len(played)} episodes played; "
        f"{len(reached)} reached its event" + (f", in which {values}" if values else ""),
        ("rewards", name, "when" if name in spec.gated else "value"),
        "its event never pays or its value is always 0: check `on`, `when` and "
        "the expression against the states tools can reach",
        evidence={"episodes": len(played), "reached": len(reached)},
    )


def values_taken(var: str, values: list[Any]) -> str:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(values) > 6 and len(numbers) == len(values):
        return f"state.{var} took {len(values)} values from {min(numbers):g} to {max(numbers):g}"
    ordered = sorted(values, key=lambda v: (type(v).__name__, repr(v)))
    return f"state.{var} took {', '.join(map(repr, ordered[:6]))}" + (
        ", …" if len(values) > 6 else ""
    )


def _driven(played: Sequence[Episode], var: str, on: str) -> bool:
    """Whether the search pushed a computed state variable as far as an episode can
    (each tool that writes it called until the step limit) and the event still came."""
    return any(
        e.origin.startswith(f"state.{var} driven by") and on in _event_keys(e) for e in played
    )


def state_values(played: Sequence[Episode], names: Sequence[str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for var in names:
        values: list[Any] = []
        for e in played:
            value = e.state.get(var)
            if not isinstance(value, (str, int, float, bool)):
                shown = repr(value)
                value = _Shown(shown if len(shown) <= 40 else shown[:39] + "…")
            if value not in values:
                values.append(value)
                if len(values) >= 50:
                    break
        out[var] = values
    return out


class _Shown(str):
    """A container value as its (cut) text: shown as it is, not quoted again."""

    def __repr__(self) -> str:
        return str(self)


def _domain_seen(domain: list[Any] | None, seen: list[Any]) -> bool:
    """Whether every value the effects can write was seen (an unknown domain: no)."""
    if domain is None:
        return False
    return all(v in seen for v in domain if isinstance(v, (str, int, float, bool)))


def _constant(played: Sequence[Episode], name: str) -> float | None:
    """The one nonzero value a component took at every final answer (a turn without
    a call), if at least `MIN_EPISODES` answers were given, failed episodes' among
    them (where every answer seen won, one value is what a success reward should
    take). An ending a tool makes (`done()` at a goal) is left out: there a constant
    reward is the goal's."""
    answers = [
        (round(s.rewards[name], 9), e.success is True)
        for e in played
        for s in e.trajectory.steps
        if name in s.rewards and not s.tool_calls
    ]
    values = {value for value, _ in answers}
    if len(answers) < MIN_EPISODES or len(values) != 1 or all(won for _, won in answers):
        return None
    (value,) = values
    return None if abs(value) <= TOLERANCE else value


def reward_ranges(
    played: Sequence[Episode], names: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """The smallest and largest per-episode sum of each component over the search."""
    out: dict[str, tuple[float, float]] = {}
    for name in names:
        sums = [e.components().get(name, 0.0) for e in played if not e.broken()]
        if sums:
            out[name] = (min(sums), max(sums))
    return out
