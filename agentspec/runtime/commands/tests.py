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
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from agentspec.core.diagnostics import SpecError, clip_line, visible
from agentspec.core.source import Span
from agentspec.runtime.commands.user_tests import user_failures
from agentspec.runtime.compiled.scope import state_fields
from agentspec.runtime.episode.trajectory import EventKind, TerminationReason, Trajectory
from agentspec.spec.model import SpecTest, TextMatch
from agentspec.spec.yaml_loader import Path as YamlPath
from agentspec.spec.yaml_loader import SourceMap
from agentspec.stdlib.text import REGEX_TIMEOUT, pattern_problem, regex_match

TOLERANCE = 1e-6


@dataclass
class Failure:
    message: str
    span: Span | None = None


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
        return Played(trajectory, _as_dict(state))

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
        why = _why(traj, limit=self.spec.episode.max_response_tokens)  # what may explain each
        where: YamlPath = (*base, "expect")
        failures: list[Failure] = []
        for i, wanted in enumerate(expect.observations or []):
            if wanted is None:
                continue
            got = traj.steps[i].observation if i < len(traj.steps) else None
            problem = _text_problem(wanted, got)
            if problem is not None:
                failures.append(
                    Failure(
                        f"observation {i + 1}: {problem}"
                        + _why(traj, i, self.spec.episode.max_response_tokens),
                        self.span((*where, "observations", i)),
                    )
                )
        for name, wanted_value in (expect.state or {}).items():
            got_value = played.state.get(name, "<no such state variable>")
            if not _equal(got_value, wanted_value):
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
            if wanted_any is not None and not _equal(got_any, wanted_any):
                failures.append(
                    Failure(
                        f"{key}: expected {wanted_any!r}, got {got_any!r}" + why,
                        self.span((*where, key)),
                    )
                )
        failures += user_failures(expect.user, traj, where, self.span, _text_problem, Failure)
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
        result.failures += _grouped_by_sample(played)
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
        sid = sample.get("id", traj.sample_id)
        failures: list[Failure] = []
        entries = self._oracle_entries(sample)
        for step in traj.steps:
            turn = entries[step.index] if step.index < len(entries) else None
            where = self._oracle_span(turn)
            at = f"sample {sid}, turn {step.index + 1}{_entry_label(turn)}"
            for event in step.events:
                intended = (
                    event.kind == EventKind.TOOL_ERROR and event.tool in self.gate.tool_errors
                )
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
                failures.append(Failure(f"{at}: {_cut_turn(self.spec)}", where))
        if traj.env_error is not None:
            failures.append(
                Failure(
                    f"sample {sid}: the episode ended with an environment error after"
                    f" {len(traj.steps)} steps: {traj.env_error}",
                    self._env_error_span(traj.env_error),
                )
            )
        elif traj.termination == TerminationReason.POLICY_ERROR and traj.steps:
            # the oracle's own turn failed on this sample (a template that fails on its
            # fields, a hook that raised): said at that turn's entry
            last = traj.steps[-1]
            turn = entries[last.index] if last.index < len(entries) else None
            error = str(last.info.get("policy_error"))
            failures.append(
                Failure(
                    f"sample {sid}, turn {last.index + 1}{_entry_label(turn)}: the oracle's turn"
                    f" could not be made: {error}",
                    self._failed_entry_span(error) or self._oracle_span(turn),
                )
            )
        elif traj.termination == TerminationReason.CONTEXT_OVERFLOW:
            failures.append(
                Failure(
                    f"sample {sid}: the oracle's episode ended after {len(traj.steps)} steps:"
                    f" its {'next' if traj.steps else 'first'} prompt did not fit"
                    " context.max_prompt_tokens"
                    f" ({self.spec.context.max_prompt_tokens})",
                    self._context_span(),
                )
            )
        elif traj.success is False and self.gate.min_success >= 1.0:
            failures.append(
                Failure(
                    f"sample {sid}: the oracle's episode did not succeed "
                    f"(ended {traj.termination.value} after {len(traj.steps)}"
                    f" step{'s' * (len(traj.steps) != 1)}, "
                    f"reward {traj.total_reward:.3f})",
                    self.span(("oracle",)),
                )
            )
        return failures

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


def _grouped_by_sample(played: Sequence[tuple[str, list[Failure]]]) -> list[Failure]:
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


def _entry_label(turn: Any) -> str:
    """` (oracle entry 3, item 2)`: which `oracle:` entry wrote a turn."""
    entry = getattr(turn, "entry", None)
    if entry is None:
        return ""
    item = getattr(turn, "item", None)
    return f" (oracle entry {entry + 1}" + (f", item {item + 1})" if item is not None else ")")


def _as_dict(state: Any) -> dict[str, Any]:
    """The episode's state keyed by the spec's names (a generated field renamed
    from a Python keyword, `class` → `class_`, is still `class`)."""
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return state_fields(state)
    return dict(state) if isinstance(state, Mapping) else {}


def _equal(got: Any, wanted: Any) -> bool:
    if isinstance(got, (int, float)) and isinstance(wanted, (int, float)):
        if isinstance(got, bool) or isinstance(wanted, bool):
            return got is wanted
        return abs(float(got) - float(wanted)) <= TOLERANCE
    return bool(got == wanted)


def _text_problem(wanted: str | TextMatch, got: str | None) -> str | None:
    if got is None:
        return f"expected {_shown(wanted)}, but the turn produced no observation"
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


def _shown(wanted: str | TextMatch) -> str:
    if isinstance(wanted, str):
        return repr(wanted)
    return f"pattern {wanted.pattern!r}" if wanted.pattern is not None else f"{wanted.contains!r}"


def _cut_turn(spec: Any) -> str:
    limit = spec.episode.max_response_tokens
    return (
        f"the turn is longer than episode.max_response_tokens ({limit} tokens) and was cut"
        " there; raise it, or shorten the turn"
    )


def _why(traj: Trajectory, turn: int | None = None, limit: int | None = None) -> str:
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


def _blamed(exc: Exception, otherwise: YamlPath) -> YamlPath:
    """Where a test's exception points: data that cannot be read at `data.source`."""
    from agentspec.stdlib.data import DataError

    return ("data", "source") if isinstance(exc, DataError) else otherwise


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
            where = runner.span(_blamed(exc, ("tests", "episodes", index)))
            case.failures.append(Failure(f"{type(exc).__name__}: {exc}", where))
        case.seconds = time.perf_counter() - start
        results.append(case)
    if gate:
        start = time.perf_counter()
        try:
            case = runner.oracle_gate()
        except Exception as exc:  # data that cannot be read, an oracle that raised
            case = CaseResult(str(path), f"oracle gate ({runner.oracle_samples} samples)")
            where = runner.span(_blamed(exc, ("oracle",)))
            case.failures.append(Failure(f"{type(exc).__name__}: {exc}", where))
        case.seconds = time.perf_counter() - start
        results.append(case)
    if gate and runner.spec.tests.explore is not None:
        start = time.perf_counter()
        case = explore_gate(runner)
        case.seconds = time.perf_counter() - start
        results.append(case)
    return results, None


def report_results(
    outcomes: Sequence[tuple[list[CaseResult], SpecError | None]],
    *,
    github: bool,
    echo: Any,
) -> bool:
    """Print pytest-style results (or GitHub annotations); True when nothing failed."""
    from agentspec.core.diagnostics import render_github, render_text
    from agentspec.core.source import SourceFile

    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failed: list[tuple[CaseResult, Failure]] = []
    start_total = sum(case.seconds for results, _ in outcomes for case in results)
    for results, error in outcomes:
        if error is not None:
            counts["failed"] += 1
            for d in error.diagnostics:
                echo(render_github(d) if github else render_text(d, error.sources))
            continue
        for case in results:
            counts[case.status] += 1
            if not github:
                note = f" ({case.skipped})" if case.skipped else ""
                shown = case.status.upper()
                echo(visible(f"{case.spec}::{case.name} {shown}{note} [{case.seconds:.2f}s]"))
            failed += [(case, f) for f in case.failures]
    sources: dict[str, SourceFile] = {}
    if failed and not github:
        echo("\n" + " FAILURES ".center(72, "="))
    for case, failure in failed:
        if github:
            echo(_github_line(case, failure))
            continue
        span = failure.span
        location = f"{span.file}:{span.line}:{span.column}" if span else case.spec
        echo(visible(f"{location}: {case.name}: {failure.message}"))
        if span is not None:
            source = sources.get(span.file) or SourceFile(span.file, Path(span.file).read_text())
            sources[span.file] = source
            text = source.line_text(span.line)
            if text is not None:
                gutter = f"{span.line:>4} | "
                text, column = clip_line(text, span.column)
                echo(gutter + visible(text) + "\n" + " " * (len(gutter) + column - 1) + "^")
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n or k == "passed")
    echo(f"{'=' * 8} {summary} in {start_total:.2f}s {'=' * 8}")
    return counts["failed"] == 0


def all_passed(outcomes: Sequence[tuple[list[CaseResult], SpecError | None]]) -> bool:
    """No spec invalid and no case failed (skipped cases do not fail)."""
    return all(
        error is None and all(case.status != "failed" for case in results)
        for results, error in outcomes
    )


def results_json(
    outcomes: Sequence[tuple[list[CaseResult], SpecError | None]], specs: Sequence[str]
) -> str:
    """The results as one JSON document: counts, and each case with its status, time and
    failures (located like `validate --format json`'s diagnostics); an invalid spec (its
    path from `specs`, one per outcome) is one failed `validate` case carrying its
    diagnostics."""
    from agentspec.core.diagnostics import to_json

    cases: list[dict[str, Any]] = []
    for spec, (results, error) in zip(specs, outcomes, strict=True):
        if error is not None:
            cases.append(
                {
                    "spec": spec,
                    "name": "validate",
                    "status": "failed",
                    "skipped": None,
                    "seconds": 0.0,
                    "failures": [to_json(d) for d in error.diagnostics],
                }
            )
            continue
        for case in results:
            failures = [
                {"message": f.message, **(dataclasses.asdict(f.span) if f.span else {"file": None})}
                for f in case.failures
            ]
            cases.append(
                {
                    "spec": case.spec,
                    "name": case.name,
                    "status": case.status,
                    "skipped": case.skipped,
                    "seconds": round(case.seconds, 3),
                    "failures": failures,
                }
            )
    counts = {k: sum(c["status"] == k for c in cases) for k in ("passed", "failed", "skipped")}
    return json.dumps({**counts, "cases": cases}, indent=2, ensure_ascii=False)


def _github_line(case: CaseResult, failure: Failure) -> str:
    from agentspec.core.diagnostics import github_command

    return github_command(
        "error", failure.span, "agentspec test", f"{case.name}: {failure.message}"
    )
