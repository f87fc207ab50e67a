"""`agentspec explore`: a bounded search for loopholes in a spec, before any GPU time.

`explore(path)` checks and compiles the spec, plays the search of
`explore.search` on its first samples through the spec's own loop, and
returns the findings of `explore.detect`, each located at a spec line with
its shortest witness episode. The budget is in episodes and in seconds; the
same seed plays the same episodes (the seconds are a safety stop, and the
report says when they, not the episodes, ended the search).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentspec.runtime.episode.trajectory import TerminationReason
from agentspec.runtime.spec.explore.detect import (
    Finding,
    SpecFacts,
    detect,
    repeatable,
    reward_ranges,
)
from agentspec.runtime.spec.explore.driver import Driver, Episode
from agentspec.runtime.spec.explore.policy import OracleFacts, oracle_turns
from agentspec.runtime.spec.explore.search import Search
from agentspec.runtime.spec.explore.space import ActionSpace
from agentspec.runtime.text.task_text import CORPUS_SAMPLES

__all__ = ["ExploreError", "ExploreSettings", "Report", "explore"]


class ExploreError(ValueError):
    """A spec the explorer cannot search (no data, no samples), with why."""


@dataclass(frozen=True)
class ExploreSettings:
    samples: int = 8  # the first N samples of the data
    episodes: int = 600  # the budget in episodes
    seconds: float = 40.0  # and in seconds
    depth: int = 4  # breadth-first search's longest sequence
    seed: int = 0


@dataclass
class Report:
    """What one exploration found, and what it played to find it."""

    spec: Path
    findings: list[Finding]
    episodes: int
    seconds: float
    stopped_by_time: bool
    ranges: dict[str, tuple[float, float]]
    oracle_ranges: dict[str, tuple[float, float]]
    random_success: float | None
    oracle_success: float | None
    sources: dict[str, Any] = field(default_factory=dict)
    source_map: Any = None


def explore(path: Path, settings: ExploreSettings = ExploreSettings()) -> Report:
    """Search one spec; raises `SpecError` for an invalid spec, `ExploreError` when
    it has nothing to play or played nothing that explores it."""
    from agentspec.compiler.build import import_spec
    from agentspec.compiler.frontend import check_file, require_ok

    start = time.monotonic()
    result = check_file(path)
    checked = require_ok(result)
    module = import_spec(path)
    if checked.spec.data is None:
        raise ExploreError("the spec has no `data`: explore plays its samples")
    every = module.load_samples(limit=max(settings.samples, CORPUS_SAMPLES))
    samples = every[: settings.samples]
    if not samples:
        raise ExploreError("the spec's data source yielded no samples")
    tokenizer = _task_tokenizer(path, module, every)
    space = ActionSpace.of(module.ENV_CLASS())
    oracle = [OracleFacts(oracle_turns(module, s), space, s) for s in samples]
    left = settings.seconds - (time.monotonic() - start)
    driver = Driver(module, tokenizer, samples, episodes=settings.episodes, seconds=left)
    facts = spec_facts(checked)
    _search(Search(driver, space, oracle, settings.seed), settings, facts)
    played = driver.played
    if not played:
        # an empty search finds nothing: that is no pass
        raise ExploreError(
            f"no episode was played within the time budget ({settings.seconds:g} s): loading"
            f" {len(samples):,} samples and preparing them took"
            f" {time.monotonic() - start:.1f} s; raise --seconds or lower --samples"
        )
    if all(e.trajectory.termination == TerminationReason.ENV_ERROR for e in played):
        # nothing was explored: a search would report "no loopholes" about a broken env
        raise ExploreError(
            f"every episode ended in env_error, e.g. {played[0].trajectory.env_error}; "
            "`agentspec test` shows it at the oracle"
        )
    names = list(facts.rewards)
    return Report(
        spec=path,
        findings=detect(played, facts),
        episodes=len(played),
        seconds=time.monotonic() - start,
        stopped_by_time=driver.stopped_by_time,
        ranges=reward_ranges(played, names),
        oracle_ranges=reward_ranges([e for e in played if e.origin == "oracle"], names),
        random_success=_success_rate([e for e in played if e.origin == "random actions"]),
        oracle_success=_success_rate([e for e in played if e.origin == "oracle"]),
        sources=result.sources,
        source_map=checked.loaded.source_map,
    )


def _search(search: Search, settings: ExploreSettings, facts: SpecFacts) -> None:
    """The strategies in order; breadth-first search and random actions each leave
    part of the budget to the ones after them."""
    driver = search.driver
    search.oracle_episodes()
    search.mutations()
    search.breadth_first(settings.depth, keep=driver.left // 2)
    search.repeated_calls(facts.guarded, keep=driver.left // 2)
    search.random_episodes(keep=driver.left // 5)
    paid = repeatable(facts)

    def paid_steps(episode: Episode) -> list[int]:
        return [
            i for i, s in enumerate(episode.trajectory.steps) if any(s.paid(n) > 0 for n in paid)
        ]

    if paid:
        search.farm(sorted(driver.played, key=lambda e: e.steps)[:200], paid_steps)
    if driver.played and not any(e.origin == "random actions" for e in driver.played):
        search.random_baseline()  # the search spent the budget before random actions


def _success_rate(episodes: list[Episode]) -> float | None:
    judged = [e.success for e in episodes if e.success is not None]
    return sum(judged) / len(judged) if judged else None


def _task_tokenizer(path: Path, module: Any, samples: list[Any]) -> Any:
    """The tokenizer `run` and `test` give model-free policies: token limits apply as in training."""
    from agentspec.runtime.text.task_text import cached_task_tokenizer

    return cached_task_tokenizer(path, module, samples)[0]


def _read_elsewhere(name: str, text: str) -> bool:
    """Whether the spec reads `state.NAME` other than to update it (`state.n = state.n + 1`
    and `state.seen[k] = …` read it only for itself)."""
    updates = re.compile(rf"state\.{name}(?:\[[^\]\n]*\])*\s*[-+*/]?=(?!=)[^\n,\]]*")
    return re.search(rf"state\.{name}\b", updates.sub(" ", text)) is not None


def spec_facts(checked: Any) -> SpecFacts:
    """What the detectors need from the checked spec."""
    from agentspec.compiler.checker import Checker

    spec = checked.spec
    checker = Checker(checked.loaded)
    checker.run()
    text = checked.loaded.source.text
    unread = [n for n in spec.state if n in checker.usage.writes and not _read_elsewhere(n, text)]
    success = spec.episode.success
    source = None if success is None or isinstance(success, bool) else str(success)
    read = [str(r.value) for n, r in spec.rewards.items() if f"reward.{n}" in (source or "")]
    return SpecFacts(
        rewards={name: reward.on for name, reward in spec.rewards.items()},
        guarded={name for name, tool in spec.tools.items() if tool.when is not None},
        tools=list(spec.tools),
        success_source=source,
        final_answer=spec.episode.final_answer,
        done_when=spec.episode.done_when is not None,
        unread_state=unread,
        judges_answer=any("action." in text for text in [source or "", *read]),
    )
