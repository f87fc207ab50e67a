"""What `agentspec test` compares and how it says a mismatch: expected against played
values (numbers within a tolerance, text by pattern), and the words of each failure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentspec.core.source import Span
from agentspec.runtime.compiled.scope import state_fields
from agentspec.runtime.episode.trajectory import EventKind, Trajectory
from agentspec.spec.model import TextMatch
from agentspec.spec.yaml_loader import Path as YamlPath
from agentspec.stdlib.text import REGEX_TIMEOUT, pattern_problem, regex_match

__all__ = [
    "TOLERANCE",
    "Failure",
    "as_dict",
    "blamed",
    "cut_turn",
    "entry_label",
    "grouped_by_sample",
    "shown_match",
    "text_problem",
    "values_equal",
    "why_failed",
]

TOLERANCE = 1e-6


@dataclass
class Failure:
    message: str
    span: Span | None = None


def grouped_by_sample(played: Sequence[tuple[str, list[Failure]]]) -> list[Failure]:
    """The oracle's failures, one per mistake: a constant mistake fails on every sample
    alike, and is said once with the samples it failed on (`samples a, b, c and 13
    more: turn 3 …`), not once per sample."""
    groups: dict[tuple[str, Span | None], list[str]] = {}
    for sid, failures in played:
        for failure in failures:
            rest = failure.message.removeprefix(f"sample {sid}").lstrip(",:").lstrip()
            groups.setdefault((rest, failure.span), []).append(sid)
    grouped = []
    for (rest, span), sids in groups.items():
        if len(sids) == 1:
            grouped.append(Failure(f"sample {sids[0]}: {rest}", span))
            continue
        shown = ", ".join(sids[:3]) + (f" and {len(sids) - 3} more" if len(sids) > 3 else "")
        grouped.append(Failure(f"samples {shown}: {rest}", span))
    return grouped


def entry_label(turn: Any) -> str:
    """` (oracle entry 3, item 2)`: which `oracle:` entry wrote a turn."""
    entry = getattr(turn, "entry", None)
    if entry is None:
        return ""
    item = getattr(turn, "item", None)
    return f" (oracle entry {entry + 1}" + (f", item {item + 1})" if item is not None else ")")


def as_dict(state: Any) -> dict[str, Any]:
    """The episode's state keyed by the spec's names (a generated field renamed
    from a Python keyword, `class` → `class_`, is still `class`)."""
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return state_fields(state)
    return dict(state) if isinstance(state, Mapping) else {}


def values_equal(got: Any, wanted: Any) -> bool:
    if isinstance(got, (int, float)) and isinstance(wanted, (int, float)):
        if isinstance(got, bool) or isinstance(wanted, bool):
            return got is wanted
        return abs(float(got) - float(wanted)) <= TOLERANCE
    return bool(got == wanted)


def text_problem(wanted: str | TextMatch, got: str | None) -> str | None:
    if got is None:
        return f"expected {shown_match(wanted)}, but the turn produced no observation"
    if isinstance(wanted, str):
        return None if got == wanted else f"expected {wanted!r}, got {got!r}"
    if wanted.pattern is not None:
        problem = pattern_problem(wanted.pattern)
        if problem is not None:
            return f"invalid pattern {wanted.pattern!r}: {problem}"
        try:
            found = regex_match(got, wanted.pattern)
        except TimeoutError:
            return (
                f"the pattern {wanted.pattern!r} took over {REGEX_TIMEOUT:g} s on the observation"
                " (nested repeats such as (a|aa)+ backtrack exponentially): write one without"
            )
        return None if found else f"expected a match of {wanted.pattern!r}, got {got!r}"
    assert wanted.contains is not None
    return (
        None
        if wanted.contains in got
        else f"expected text containing {wanted.contains!r}, got {got!r}"
    )


def shown_match(wanted: str | TextMatch) -> str:
    if isinstance(wanted, str):
        return repr(wanted)
    return f"pattern {wanted.pattern!r}" if wanted.pattern is not None else f"{wanted.contains!r}"


def cut_turn(spec: Any) -> str:
    limit = spec.episode.max_response_tokens
    return (
        f"the turn is longer than episode.max_response_tokens ({limit} tokens) and was cut"
        " there; raise it, or shorten the turn"
    )


def why_failed(traj: Trajectory, turn: int | None = None, limit: int | None = None) -> str:
    """The errors of an episode, each with its turn, to explain an unexpected outcome;
    with `turn` (0-based), that turn's errors only: an observation's mismatch is
    explained by its own turn, not by another turn's error. A turn cut at `limit`
    (`episode.max_response_tokens`) says so: its parse error is that cut."""
    errors: list[str] = []
    for i, step in enumerate(traj.steps):
        if turn is not None and i != turn:
            continue
        if step.response_truncated:
            errors.append(f"turn {i + 1} was cut at episode.max_response_tokens ({limit})")
        errors += [
            f"turn {i + 1} {e.kind}: {e.message}"
            for e in step.events
            if e.kind in (EventKind.TOOL_ERROR, EventKind.PARSE_ERROR)
        ]
        errors += [
            f"turn {i + 1} expression error: {m}" for m in step.info.get("expression_errors", [])
        ]
    if not errors:
        return ""
    more = f"; {len(errors) - 3} more" if len(errors) > 3 else ""
    return f" ({'; '.join(errors[:3])}{more})"


def blamed(exc: Exception, otherwise: YamlPath) -> YamlPath:
    """Where a test's exception points: data that cannot be read at `data.source`."""
    from agentspec.stdlib.data import DataError

    return ("data", "source") if isinstance(exc, DataError) else otherwise
