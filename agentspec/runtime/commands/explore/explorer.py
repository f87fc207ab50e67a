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

from agentspec.runtime.commands.explore.answers import (
    DEGENERATE,
    Listing,
    answer_recipes,
    fixed_values,
)
from agentspec.runtime.commands.explore.detect import (
    Finding,
    SpecFacts,
    detect,
    repeatable,
    reward_ranges,
    rule_witnesses,
)
from agentspec.runtime.commands.explore.driver import Driver, Episode
from agentspec.runtime.commands.explore.policy import OracleFacts, oracle_turns
from agentspec.runtime.commands.explore.probe import GuardProbe
from agentspec.runtime.commands.explore.reading import Reading, read_spec
from agentspec.runtime.commands.explore.search import GuidedSearch
from agentspec.runtime.commands.explore.space import ActionSpace
from agentspec.runtime.commands.explore.user_strategies import user_strategies
from agentspec.runtime.compiled.task_text import CORPUS_SAMPLES
from agentspec.runtime.episode.trajectory import TerminationReason

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
    coverage: list[tuple[tuple[str | int, ...], str]] = field(default_factory=list)


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
    reading = read_spec(checked)
    probe = GuardProbe(module, reading.guards, space, _first_arguments(oracle, space))
    left = settings.seconds - (time.monotonic() - start)
    driver = Driver(
        module, tokenizer, samples, episodes=settings.episodes, seconds=left, probe=probe
    )
    facts = spec_facts(checked, reading)
    facts.coverage = probe.coverage
    facts.sinks = list(reading.checks.sinks)
    facts.sink_vars = list(reading.checks.sink_vars)
    facts.chance = answer_chance(every, reading)
    search = GuidedSearch(driver, space, oracle, settings.seed, every)
    _search(search, settings, facts, checked, every)
    played = driver.played
    _check_played(played, settings, len(samples), time.monotonic() - start)
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
        coverage=facts.notes,
    )


def _check_played(
    played: list[Episode], settings: ExploreSettings, samples: int, seconds: float
) -> None:
    """Refuse a search that explored nothing, which would report "no loopholes"."""
    if not played:
        raise ExploreError(
            f"no episode was played within the time budget ({settings.seconds:g} s): loading"
            f" {samples:,} samples and preparing them took"
            f" {seconds:.1f} s; raise --seconds or lower --samples"
        )
    if all(e.trajectory.termination == TerminationReason.ENV_ERROR for e in played):
        # a broken environment, not a sound spec
        raise ExploreError(
            f"every episode ended in env_error, e.g. {played[0].trajectory.env_error}; "
            "`agentspec test` shows it at the oracle"
        )


RULE_EPISODES = 120  # the most episodes the rules of winning episodes may take
DEGENERATE_NAMES = {repr(text) for text in DEGENERATE}


def _search(
    search: GuidedSearch,
    settings: ExploreSettings,
    facts: SpecFacts,
    checked: Any,
    every: list[Any],
) -> None:
    """The strategies in order; each leaves part of the budget to the ones after it,
    and rules generalised from winning episodes keep a reserve of their own."""
    driver = search.driver
    reading = facts.reading
    reserve = min(RULE_EPISODES, driver.left // 5)
    search.oracle_episodes()
    tests = getattr(getattr(checked.spec, "tests", None), "episodes", None) or []
    search.spec_tests(tests)
    user_strategies(search, checked, keep=driver.left // 2)  # a spec with a user
    listing = Listing(_common_words(search, reading, every), _fits(search, checked))
    every_recipe = answer_recipes(reading, every, listing)
    recipes = every_recipe
    if not reading.checks.reads_action:  # no check reads the answer: only when it comes counts
        recipes = [r for r in recipes if r.name == "''"]
    sinks = [s for s in reading.checks.sinks if search.space.tool(s[0]) is not None]
    in_calls = [r for r in every_recipe if not r.bare and r.name not in DEGENERATE_NAMES]
    search.recipe_answers(
        recipes, keep=reserve + (driver.left * 3) // 5, sinks=sinks, in_calls=in_calls
    )
    search.extra_actions(keep=reserve + driver.left // 2)
    search.mutations(keep=reserve)
    search.guard_flips(search_probe(driver), keep=reserve)
    search.state_drives(reading, keep=reserve)
    search.reward_drives(reading, keep=reserve)
    fixed = fixed_values(every[:200])
    done: list[Episode] = []
    witnesses = rule_witnesses(driver.played, facts)
    search.generalize(witnesses, fixed, keep=max(0, driver.left - reserve))
    done += witnesses
    search.breadth_first(settings.depth, keep=driver.left // 2)
    search.repeated_calls(facts.guarded, keep=driver.left // 2)
    search.random_episodes(keep=driver.left // 5)
    search.guard_flips(search_probe(driver))
    paid = repeatable(facts)

    def paid_steps(episode: Episode) -> list[int]:
        return [
            i for i, s in enumerate(episode.trajectory.steps) if any(s.paid(n) > 0 for n in paid)
        ]

    if paid:
        search.farm(sorted(driver.played, key=lambda e: e.steps)[:200], paid_steps)
    later = [w for w in rule_witnesses(driver.played, facts) if w not in done]
    search.generalize(later, fixed)
    if driver.played and not any(e.origin == "random actions" for e in driver.played):
        search.random_baseline()  # the search spent the budget before random actions


def _common_words(search: GuidedSearch, reading: Reading, every: list[Any]) -> set[str]:
    """Words every oracle episode's first prompt shows (the instructions, not the task),
    less the values the checks compare the answer with (options `A`-`D` are in every
    prompt too)."""
    from agentspec.runtime.commands.explore.answers import _TOKEN, clean, sample_values

    firsts = [
        set(t.lower() for t in _TOKEN.findall(clean(f.episode.prompts[0])))
        for f in search.facts.values()
        if f.episode.prompts
    ]
    if len(firsts) < 2:
        return set()
    common = set.intersection(*firsts)
    fields = set(reading.checks.answer_fields or reading.checks.fields)
    for sample in every[:500]:
        for name in fields:
            common -= {v.lower() for v in sample_values({name: sample.get(name)})}
    return common


def _fits(search: GuidedSearch, checked: Any) -> Any:
    """Whether a listing fits in a response (`max_response_tokens`, less the answer's
    shape and a margin), in the task tokenizer's tokens."""
    tokenizer = search.driver.tokenizer
    limit = int(getattr(checked.spec.episode, "max_response_tokens", 0) or 256)
    shapes = [f.oracle.shapes[-1] for f in search.facts.values() if f.oracle.shapes]
    room = limit - 4 - (len(tokenizer.encode(shapes[0].format(""))) if shapes else 0)

    def fits(text: str) -> bool:
        try:
            return len(tokenizer.encode(text)) <= room
        except Exception:
            return len(text) <= room * 2

    return fits


def search_probe(driver: Driver) -> GuardProbe | None:
    probe = driver.probe
    return probe if isinstance(probe, GuardProbe) else None


def _first_arguments(
    oracle: list[OracleFacts], space: ActionSpace
) -> dict[int, dict[str, dict[str, Any]]]:
    """Each sample's first oracle call of each tool (what the guard probe varies)."""
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for index, facts in enumerate(oracle):
        calls: dict[str, dict[str, Any]] = {}
        for turn in facts.turns:
            for name, arguments in space.calls_of(turn):
                calls.setdefault(name, dict(arguments))
        out[index] = calls
    return out


def answer_chance(split: list[Any], reading: Reading) -> float | None:
    """1/k where the answer the checks compare with is one of k options: a list field
    of the sample that holds it (a multiple-choice question), or a field with few
    distinct values over the data (yes/no, A-D); None where the space is open."""
    fields = reading.checks.answer_fields or reading.checks.fields
    rows = [s for s in split[:CORPUS_SAMPLES] if isinstance(s, dict)]
    for name in fields:
        values = [s[name] for s in rows if isinstance(s.get(name), (str, int, float))]
        if not values:
            continue
        for other in rows[0]:
            if other == name:
                continue
            sizes = [
                len(s[other])
                for s in rows
                if isinstance(s.get(other), (list, dict)) and s.get(name) in s[other]
            ]
            if sizes and len(sizes) * 2 >= len(rows):
                k = sorted(sizes)[len(sizes) // 2]
                return 1.0 / k if k > 1 else None
        distinct = {str(v) for v in values}
        if 1 < len(distinct) <= 12 and len(values) >= 2 * len(distinct):
            return 1.0 / len(distinct)
    return None


def _success_rate(episodes: list[Episode]) -> float | None:
    judged = [e.success for e in episodes if e.success is not None]
    return sum(judged) / len(judged) if judged else None


def _task_tokenizer(path: Path, module: Any, samples: list[Any]) -> Any:
    """The tokenizer `run` and `test` give model-free policies: token limits apply as in training."""
    from agentspec.runtime.compiled.task_text import cached_task_tokenizer

    return cached_task_tokenizer(path, module, samples)[0]


def _read_elsewhere(name: str, text: str) -> bool:
    """Whether the spec reads `state.NAME` other than to update it (`state.n = state.n + 1`
    and `state.seen[k] = …` read it only for itself)."""
    updates = re.compile(rf"state\.{name}(?:\[[^\]\n]*\])*\s*[-+*/]?=(?!=)[^\n,\]]*")
    return re.search(rf"state\.{name}\b", updates.sub(" ", text)) is not None


def spec_facts(checked: Any, reading: Reading | None = None) -> SpecFacts:
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
    source_map = checked.loaded.source_map
    if source_map.has(("context", "max_prompt_tokens")):
        budget: tuple[str | int, ...] = ("context", "max_prompt_tokens")
    else:
        budget = ("prompt", "system") if source_map.has(("prompt", "system")) else ("prompt",)
    gated = {
        name
        for name, reward in spec.rewards.items()
        if reward.when is not None and not isinstance(reward.value, str) and reward.value
    }
    return SpecFacts(
        gated=gated,
        reading=reading if reading is not None else read_spec(checked),
        schemas={name: dict(tool.parameters) for name, tool in spec.tools.items()},
        done_when_text=" ".join(str(spec.episode.done_when).split()),
        budget_path=budget,
        rewards={name: reward.on for name, reward in spec.rewards.items()},
        guarded={name for name, tool in spec.tools.items() if tool.when is not None},
        tools=list(spec.tools),
        success_source=source,
        final_answer=spec.episode.final_answer,
        done_when=spec.episode.done_when is not None,
        unread_state=unread,
        judges_answer=any("action." in text for text in [source or "", *read]),
    )
