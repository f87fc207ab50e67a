"""`agentspec test`: a spec's scripted episodes and its oracle gate.

A spec's `tests:` section lists scripted episodes: the model's turns written
as text, and what they must produce (observations, final state, rewards,
success, ending). Each is played through the generated environment exactly
as a model's responses would be, with the tokenizer `agentspec run` uses
for model-free policies (so the spec's token limits apply as in training).

The oracle gate plays the spec's oracle on the first N samples of its data:
every episode must succeed, with no tool, parse or expression error; and a
random policy must score below the oracle on the same samples (else the
rewards cannot tell a good policy from noise).

Every failure points at the spec's own lines (the expectation, or the
oracle turn) so CI can annotate them. No torch is imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from agentspec.core.diagnostics import SpecError
from agentspec.core.source import Span
from agentspec.runtime.commands.tests_match import (
    TOLERANCE,
    Failure,
    as_dict,
    blamed,
    cut_turn,
    entry_label,
    grouped_by_sample,
    text_problem,
    values_equal,
    why_failed,
)
from agentspec.runtime.commands.user_tests import user_failures
from agentspec.runtime.episode.trajectory import EventKind, TerminationReason, Trajectory
from agentspec.spec.model import SpecTest
from agentspec.spec.yaml_loader import Path as YamlPath
from agentspec.spec.yaml_loader import SourceMap


@dataclass
class CaseResult:
    """One test of one spec: a scripted episode, the oracle gate, or validation."""

    spec: str
    name: str
    failures: list[Failure] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def status(self) -> str:
        """`passed`, `failed`, or `skipped` (a skipped case has nothing to fail)."""
        if self.skipped is not None:
            return "skipped"
        return "failed" if self.failures else "passed"


@dataclass
class Played:
    """A scripted episode and the spec state it ended in."""

    trajectory: Trajectory
    state: dict[str, Any]


class SpecTestRunner:
    """Runs one spec's tests. Use `run_spec_tests`."""

    def __init__(self, path: Path, oracle_samples: int | None, seed: int):
        from agentspec.compiler.build import import_spec
        from agentspec.compiler.frontend import check_file, require_ok

        self.path = path
        checked = require_ok(check_file(path))  # raises SpecError, reported by the caller
        self.spec = checked.spec
        self.map: SourceMap = checked.loaded.source_map
        self.module: ModuleType = import_spec(path)
        self.gate = self.spec.tests.oracle
        self.oracle_samples = oracle_samples or self.gate.samples
        self.seed = seed
        self._samples: dict[str, tuple[int | None, list[dict[str, Any]]]] = {}
        self._tokenizer: Any = None

    # -------------------------------------------------------------- helpers

    def span(self, path: YamlPath) -> Span:
        return self.map.value_span(path)

    def samples(self, split: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """The split's first `limit` samples (all without one), loaded once and again only
        for more: a generator's split can hold 100,000 and a test needs a few."""
        key = split or ""
        loaded = self._samples.get(key)
        if loaded is None or (loaded[0] is not None and (limit is None or limit > loaded[0])):
            loaded = (limit, self.module.load_samples(split=split, limit=limit))
            self._samples[key] = loaded
        return loaded[1][:limit]

    def tokenizer(self) -> Any:
        """The task tokenizer `agentspec run` uses for model-free policies (cached)."""
        if self._tokenizer is None:
            from agentspec.runtime.compiled.task_text import CORPUS_SAMPLES, cached_task_tokenizer

            samples = self.samples(limit=CORPUS_SAMPLES) if self.spec.data is not None else []
            self._tokenizer, _ = cached_task_tokenizer(self.path, self.module, samples)
        return self._tokenizer

    def play(
        self,
        turns: Sequence[str],
        sample: Mapping[str, Any],
        max_steps: int | None = None,
        constants: Mapping[str, Any] | None = None,
    ) -> Played:
        """One scripted episode; `max_steps` and `constants` override the spec's
        for this episode only."""
        from agentspec.runtime.policies.scripted import ScriptedPolicy

        tokenizer = self.tokenizer()
        # past its last turn the script answers with nothing (which ends a tool
        # episode), never its turns again: a replayed turn would change the state
        # that `expect` checks
        script = iter(list(turns))
        policy = ScriptedPolicy(lambda prompt: next(script, ""), tokenizer)
        flow = self.module.FLOW_CLASS(policy, tokenizer)
        if max_steps is not None:
            flow.config = dataclasses.replace(flow.config, max_steps=max_steps)
        envs: list[Any] = []
        make_env = flow.env_factory

        def recording_factory() -> Any:
            env = make_env()
            if max_steps is not None:
                env.max_steps = max_steps
            if constants:
                env.constants = {**env.constants, **constants}
            envs.append(env)
            return env

        flow.env_factory = recording_factory
        trajectory = asyncio.run(flow.run(dict(sample), sample_id="test"))
        state = getattr(envs[0], "state", None) if envs else None
        return Played(trajectory, as_dict(state))

    # ------------------------------------------------------- scripted tests

    def scripted(self, index: int, test: SpecTest) -> CaseResult:
        result = CaseResult(str(self.path), f"episodes[{index}] {test.name}")
        base: YamlPath = ("tests", "episodes", index)
        if test.sample is not None:
            sample = dict(test.sample)
        else:
            pool = self.samples(test.split, limit=test.sample_index + 1)
            if test.sample_index >= len(pool):
                result.failures.append(
                    Failure(
                        f"sample_index {test.sample_index} is past the data's {len(pool)} samples",
                        self.span((*base, "sample_index")),
                    )
                )
                return result
            sample = dict(pool[test.sample_index])
        played = self.play(test.turns, sample, test.max_steps, test.constants)
        used = len(played.trajectory.steps)
        if used > len(test.turns):
            result.failures.append(
                Failure(
                    f"the episode went on after the {len(test.turns)} scripted turns "
                    f"(ended {played.trajectory.termination.value} after {used} steps, each"
                    " turn past them answered with nothing): write every turn the episode takes",
                    self.span((*base, "turns")),
                )
            )
        crashed = played.trajectory.env_error
        if crashed is not None:  # a test cannot expect a crash: `expect.ending` has no env_error
            result.failures.append(
                Failure(
                    f"the episode ended with an environment error after"
                    f" {len(played.trajectory.steps)} steps: {crashed}",
                    self.span((*base, "turns")),
                )
            )
        result.failures += self.expectation_failures(base, test, played)
        return result

    def expectation_failures(self, base: YamlPath, test: SpecTest, played: Played) -> list[Failure]:
        """What a played episode does not meet of its test's `expect` (located at `base`)."""
        expect, traj = test.expect, played.trajectory
        why = why_failed(traj, limit=self.spec.episode.max_response_tokens)  # what may explain each
        where: YamlPath = (*base, "expect")
        failures: list[Failure] = []
        for i, wanted in enumerate(expect.observations or []):
            if wanted is None:
                continue
            got = traj.steps[i].observation if i < len(traj.steps) else None
            problem = text_problem(wanted, got)
            if problem is not None:
                failures.append(
                    Failure(
                        f"observation {i + 1}: {problem}"
                        + why_failed(traj, i, self.spec.episode.max_response_tokens),
                        self.span((*where, "observations", i)),
                    )
                )
        for name, wanted_value in (expect.state or {}).items():
            got_value = played.state.get(name, "<no such state variable>")
            if not values_equal(got_value, wanted_value):
                failures.append(
                    Failure(
                        f"state.{name}: expected {wanted_value!r}, got {got_value!r}" + why,
                        self.span((*where, "state", name)),
                    )
                )
        components = traj.reward_components()
        for name, wanted_reward in (expect.rewards or {}).items():
            got_reward = components.get(name, 0.0)
            if abs(got_reward - wanted_reward) > TOLERANCE:
                failures.append(
                    Failure(
                        f"reward.{name}: expected {wanted_reward}, got {got_reward}" + why,
                        self.span((*where, "rewards", name)),
                    )
                )
        checks: list[tuple[str, Any, Any]] = [
            ("reward", expect.reward, traj.total_reward),
            ("success", expect.success, traj.success),
            ("ending", expect.ending, traj.termination.value),
            ("steps", expect.steps, len(traj.steps)),
            ("tool_errors", expect.tool_errors, traj.count(EventKind.TOOL_ERROR)),
            ("parse_errors", expect.parse_errors, traj.count(EventKind.PARSE_ERROR)),
        ]
        for key, wanted_any, got_any in checks:
            if wanted_any is not None and not values_equal(got_any, wanted_any):
                failures.append(
                    Failure(
                        f"{key}: expected {wanted_any!r}, got {got_any!r}" + why,
                        self.span((*where, key)),
                    )
                )
        failures += user_failures(expect.user, traj, where, self.span, text_problem, Failure)
        return failures

    # ---------------------------------------------------------- oracle gate

    def oracle_gate(self) -> CaseResult:
        from agentspec.runtime.commands.run import rollout

        result = CaseResult(str(self.path), f"oracle gate ({self.oracle_samples} samples)")
        if self.spec.oracle is None:
            result.skipped = "the spec has no oracle"
            return result
        if self.spec.data is None:
            result.skipped = "the spec has no data to play the oracle on"
            return result
        samples = self.samples(limit=self.oracle_samples)
        result.name = f"oracle gate ({len(samples)} sample{'s' * (len(samples) != 1)})"
        if not samples:
            result.failures.append(
                Failure(
                    "the data has no samples to play the oracle on", self.span(("data", "source"))
                )
            )
            return result
        tokenizer = self.tokenizer()
        oracle = asyncio.run(rollout(self.module, samples, "oracle", task_tokenizer=tokenizer))
        played = [
            (str(sample.get("id", traj.sample_id)), self._oracle_episode(traj, sample))
            for traj, sample in zip(oracle, samples, strict=True)
        ]
        result.failures += grouped_by_sample(played)
        random = (
            asyncio.run(
                rollout(self.module, samples, "random", seed=self.seed, task_tokenizer=tokenizer)
            )
            if self.gate.random_below
            else []
        )
        # an episode its context cut short counts as not succeeding, judged or not
        overflow = TerminationReason.CONTEXT_OVERFLOW
        judged = [
            bool(t.success) and t.termination != overflow
            for t in oracle
            if t.success is not None or t.termination == overflow
        ]
        if judged and sum(judged) / len(judged) < self.gate.min_success:
            result.failures.append(
                Failure(
                    f"oracle success {sum(judged) / len(judged):.3f} is below {self.gate.min_success}",
                    self.span(("oracle",)),
                )
            )
        if not self.gate.random_below:
            return result
        oracle_mean = sum(t.total_reward for t in oracle) / len(oracle)
        random_mean = sum(t.total_reward for t in random) / len(random)
        if random_mean >= oracle_mean:
            result.failures.append(
                Failure(
                    f"a random policy scores {random_mean:.3f}, the oracle {oracle_mean:.3f}: "
                    "the rewards do not tell a good policy from noise",
                    self.span(("rewards",)),
                )
            )
        return result

    def _oracle_episode(self, traj: Trajectory, sample: Mapping[str, Any]) -> list[Failure]:
        """What went wrong in one of the oracle's episodes: each step's errors at the
        oracle turn that made it, then how the episode ended, if not as it should."""
        sid = sample.get("id", traj.sample_id)
        entries = self._oracle_entries(sample)
        failures: list[Failure] = []
        for step in traj.steps:
            failures += self._oracle_step(step, sid, entries)
        ending = self._oracle_ending(traj, sid, entries)
        return failures + ([ending] if ending is not None else [])

    def _oracle_step(self, step: Any, sid: Any, entries: list[Any]) -> list[Failure]:
        """A step's tool and parse errors (those the gate expects aside), expression
        errors and a cut turn, at the oracle entry that made it."""
        turn = entries[step.index] if step.index < len(entries) else None
        where = self._oracle_span(turn)
        at = f"sample {sid}, turn {step.index + 1}{entry_label(turn)}"
        failures: list[Failure] = []
        for event in step.events:
            intended = event.kind == EventKind.TOOL_ERROR and event.tool in self.gate.tool_errors
            if event.kind in (EventKind.TOOL_ERROR, EventKind.PARSE_ERROR) and not intended:
                failures.append(
                    Failure(
                        f"{at}: {event.kind.replace('_', ' ')}"
                        f"{' in ' + event.tool if event.tool else ''}: {event.message}",
                        where,
                    )
                )
        for message in step.info.get("expression_errors", []):
            failures.append(Failure(f"{at}: expression error: {message}", where))
        if step.response_truncated:  # the cause of the parse error above, if any
            failures.append(Failure(f"{at}: {cut_turn(self.spec)}", where))
        return failures

    def _oracle_ending(self, traj: Trajectory, sid: Any, entries: list[Any]) -> Failure | None:
        """How the oracle's episode ended, when that is a failure."""
        if traj.env_error is not None:
            return Failure(
                f"sample {sid}: the episode ended with an environment error after"
                f" {len(traj.steps)} steps: {traj.env_error}",
                self._env_error_span(traj.env_error),
            )
        if traj.termination == TerminationReason.POLICY_ERROR and traj.steps:
            # the oracle's own turn failed on this sample (a template that fails on its
            # fields, a hook that raised): said at that turn's entry
            last = traj.steps[-1]
            turn = entries[last.index] if last.index < len(entries) else None
            error = str(last.info.get("policy_error"))
            return Failure(
                f"sample {sid}, turn {last.index + 1}{entry_label(turn)}: the oracle's turn"
                f" could not be made: {error}",
                self._failed_entry_span(error) or self._oracle_span(turn),
            )
        if traj.termination == TerminationReason.CONTEXT_OVERFLOW:
            return Failure(
                f"sample {sid}: the oracle's episode ended after {len(traj.steps)} steps:"
                f" its {'next' if traj.steps else 'first'} prompt did not fit"
                f" context.max_prompt_tokens ({self.spec.context.max_prompt_tokens})",
                self._context_span(),
            )
        if traj.success is False and self.gate.min_success >= 1.0:
            return Failure(
                f"sample {sid}: the oracle's episode did not succeed "
                f"(ended {traj.termination.value} after {len(traj.steps)}"
                f" step{'s' * (len(traj.steps) != 1)}, "
                f"reward {traj.total_reward:.3f})",
                self.span(("oracle",)),
            )
        return None

    def _context_span(self) -> Span:
        """`context.max_prompt_tokens` where the spec sets it, else the oracle."""
        if "max_prompt_tokens" in self.spec.context.model_fields_set:
            return self.span(("context", "max_prompt_tokens"))
        return self.span(("oracle",))

    def _env_error_span(self, error: str) -> Span:
        """Where an episode's environment error points: the prompt template that failed
        to render (`PromptError: prompt.user: …`), else the oracle."""
        found = re.search(r"PromptError: prompt\.(system|user):", error)
        return self.span(("prompt", found.group(1))) if found else self.span(("oracle",))

    def _oracle_entries(self, sample: Mapping[str, Any]) -> list[Any]:
        """The rendered turns of a list oracle for `sample`, each knowing its
        `oracle:` entry (an `each` entry writes several turns); [] for a hook."""
        if not hasattr(self.module, "oracle_actions"):
            return []
        turns: list[Any] = []
        # A turn that fails to render ends the list: the gate reports it where it ran.
        with contextlib.suppress(Exception):
            for turn in self.module.oracle_actions(dict(sample)):
                turns.append(turn)
        return turns

    def _failed_entry_span(self, error: str) -> Span | None:
        """The `oracle:` entry at the line an oracle error names (`spec.yaml:82: …`): a
        turn that failed to render was never made, so no rendered turn knows its entry."""
        found = re.search(rf"{re.escape(self.path.name)}:(\d+):", error)
        oracle = self.spec.oracle
        if found is None or not isinstance(oracle, list):
            return None
        spans = (self.span(("oracle", i)) for i in range(len(oracle)))
        return next((span for span in spans if span.line == int(found.group(1))), None)

    def _oracle_span(self, turn: Any) -> Span:
        entry = getattr(turn, "entry", None)
        if entry is None:
            return self.span(("oracle",))
        if getattr(turn, "item", None) is not None:
            return self.span(("oracle", entry, "action"))
        return self.span(("oracle", entry))


def explore_gate(runner: SpecTestRunner) -> CaseResult:
    """`tests: {explore: ...}`: `agentspec explore` on the spec; each loophole (each
    warning too, with `strict`) fails at its spec line."""
    from agentspec.runtime.commands.explore.explorer import ExploreError, ExploreSettings, explore
    from agentspec.runtime.commands.explore.report import gate_failures
    from agentspec.stdlib.data import DataError

    gate = runner.spec.tests.explore
    assert gate is not None
    settings = ExploreSettings(gate.samples, gate.budget, gate.seconds, gate.depth, gate.seed)
    try:
        report = explore(runner.path, settings)
    except (ExploreError, DataError) as exc:  # nothing explored is no pass
        result = CaseResult(str(runner.path), "explore")
        result.failures = [Failure(str(exc), runner.span(("tests", "explore")))]
        return result
    result = CaseResult(str(runner.path), f"explore ({report.episodes} episodes)")
    result.failures = [Failure(m, span) for m, span in gate_failures(report, gate.strict)]
    return result


def run_spec_tests(
    path: Path, *, oracle_samples: int | None = None, seed: int = 0, gate: bool = True
) -> tuple[list[CaseResult], SpecError | None]:
    """Every test of one spec: its scripted episodes, then the oracle gate.

    An invalid spec returns no results and its `SpecError`.
    """
    try:
        runner = SpecTestRunner(path, oracle_samples, seed)
    except SpecError as exc:
        return [], exc
    except Exception as exc:  # e.g. data that cannot be loaded: one failed case, not a crash
        return [CaseResult(str(path), "load", [Failure(f"{type(exc).__name__}: {exc}")])], None
    results: list[CaseResult] = []
    for index, test in enumerate(runner.spec.tests.episodes):
        start = time.perf_counter()
        try:
            case = runner.scripted(index, test)
        except Exception as exc:  # the spec's code raised: a failed test, located, not a crash
            case = CaseResult(str(path), f"episodes[{index}] {test.name}")
            where = runner.span(blamed(exc, ("tests", "episodes", index)))
            case.failures.append(Failure(f"{type(exc).__name__}: {exc}", where))
        case.seconds = time.perf_counter() - start
        results.append(case)
    if gate:
        start = time.perf_counter()
        try:
            case = runner.oracle_gate()
        except Exception as exc:  # data that cannot be read, an oracle that raised
            case = CaseResult(str(path), f"oracle gate ({runner.oracle_samples} samples)")
            where = runner.span(blamed(exc, ("oracle",)))
            case.failures.append(Failure(f"{type(exc).__name__}: {exc}", where))
        case.seconds = time.perf_counter() - start
        results.append(case)
    if gate and runner.spec.tests.explore is not None:
        start = time.perf_counter()
        case = explore_gate(runner)
        case.seconds = time.perf_counter() - start
        results.append(case)
    return results, None
