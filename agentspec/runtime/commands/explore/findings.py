"""What a detector reports (`Finding`), what it reads of the spec (`SpecFacts`), and the
codes and thresholds every detector shares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentspec.runtime.commands.explore.driver import Episode

__all__ = ["CODES", "Finding", "SpecFacts", "shortest"]

TOLERANCE = 1e-9
MIN_CALLS = 20  # calls of a guarded tool before "its guard never fails" is said
MIN_EPISODES = 20  # episodes before "this reward always fires" is said
TESTS = "the spec's tests"

CODES: dict[str, str] = {
    "X101": "reward without success",
    "X102": "success without a tool the oracle always calls",
    "W102": "success without a tool, no more often than a guess",
    "X103": "success with an answer that is not the sample's",
    "W103": "another answer succeeds, no more often than a guess",
    "W104": "success in fewer steps than the oracle",
    "X105": "farmable reward",
    "X106": "no ending but max_steps",
    "X107": "the first prompt does not fit its budget",
    "X111": "tool that never runs",
    "W112": "guard that never fails",
    "W113": "reward component that never fires",
    "W114": "reward component that always fires",
    "W115": "state variable never read",
}


@dataclass
class Finding:
    """One thing the search showed, where in the spec, and the episode that shows it."""

    code: str
    message: str
    path: tuple[str | int, ...]
    hint: str
    witness: Episode | None = None
    key: bool = False  # point at the key (a section's name) rather than its value
    evidence: dict[str, Any] = field(default_factory=dict)  # rates, coverage (JSON)


@dataclass
class SpecFacts:
    """What the detectors read from the spec besides the episodes."""

    rewards: dict[str, str]  # component → its `on`
    guarded: set[str]  # tools with a `when`
    tools: list[str]
    success_source: str | None
    final_answer: str
    done_when: bool
    unread_state: list[str]
    judges_answer: bool = False  # success reads the final answer (`action`), itself or via rewards
    chance: float | None = None  # 1/k where the answer space is finite (k options)
    reading: Any = None  # `reading.Reading`
    coverage: Mapping[str, Any] = field(default_factory=dict)  # tool → `probe.GuardCoverage`
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # tool → properties
    done_when_text: str = ""
    budget_path: tuple[str | int, ...] = ("context", "max_prompt_tokens")
    notes: list[tuple[tuple[str | int, ...], str]] = field(default_factory=list)  # coverage
    sinks: list[tuple[str, str]] = field(default_factory=list)  # answers given as arguments
    sink_vars: list[str] = field(default_factory=list)  # the state they are stored in
    gated: set[str] = field(default_factory=set)  # components whose `when` decides (constant value)


def shortest(episodes: Sequence[Episode]) -> Episode:
    return min(episodes, key=lambda e: (e.steps, sum(map(len, e.turns)), e.sample_index))
