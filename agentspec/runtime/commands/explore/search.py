"""The search: which action sequences the explorer plays, in which order.

`Search` holds the strategies that need nothing but the oracle and the action
space; `GuidedSearch` adds those the spec's own expressions guide. The
explorer runs them in this order (docs/explore.md, "What it plays"):

1. the oracle on every sample (the baseline each finding compares against);
2. the spec's own `tests:` episodes (probes, never evidence);
3. answers built from what the checks read (`answers.answer_recipes`), from
   the start and after each oracle prefix, and as the argument of a call whose
   value a check reads;
4. calls on other entities inserted before the oracle's last turn;
5. mutations of the oracle's episodes: drop a step, repeat one (1, 2 and 4
   more times, to see a reward grow), swap two, answer early, answer with a
   vocabulary value or with every option at once, change one argument, a
   malformed turn, a call with no arguments;
6. the calls the guard probe saw a guard answer otherwise than every call
   played, and the state a guard or a reward reads driven by its writers;
7. rules generalised from winning episodes that copied the sample;
8. breadth-first enumeration of short sequences where the action space is
   finite (enum and boolean arguments, the oracle's argument values, an
   adapter's admissible commands), each state visited once;
9. each guarded tool called again and again;
10. random-action episodes, from the start and from each oracle prefix;
11. repetition of every turn that was paid a per-step or per-call reward.

Every choice is drawn from `random.Random` seeded by the explorer's seed and
the job's name, so the same seed plays the same episodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from agentspec.runtime.commands.explore.answers import (
    Recipe,
    clean,
    rules_of,
    sample_values,
    token_shape,
)
from agentspec.runtime.commands.explore.driver import Driver, Episode, Job, scripted
from agentspec.runtime.commands.explore.pattern_strings import _matches
from agentspec.runtime.commands.explore.policy import OracleFacts
from agentspec.runtime.commands.explore.probe import GuardProbe
from agentspec.runtime.commands.explore.reading import strings_in
from agentspec.runtime.commands.explore.space import ActionSpace, _NumberBounds
from agentspec.runtime.commands.explore.unguided import SampleFacts, Search
from agentspec.runtime.episode.trajectory import EventKind

__all__ = ["GuidedSearch", "Search"]


# ----------------------------------------------------------- guided by the spec

EXTRA_PER_SAMPLE = 8  # calls on other entities inserted into each oracle episode
RULES_PER_WITNESS = 3


class GuidedSearch(Search):
    """The strategies the spec's own expressions guide (`reading`, `answers`, `probe`):
    its tests, answers built from its checks, calls on other entities inserted into
    the oracle's episodes, calls its guards answer otherwise than every call played
    so far, and rules generalised from winning episodes."""

    def __init__(
        self,
        driver: Driver,
        space: ActionSpace,
        oracle: list[OracleFacts],
        seed: int,
        pool: Sequence[Any] = (),
    ) -> None:
        super().__init__(driver, space, oracle, seed)
        self.pool = list(pool)  # every sample loaded (a test's sample_index may be past them)

    def spec_tests(self, tests: Sequence[Any]) -> None:
        """The spec's own `tests:` episodes: what its author showed a guard refusing or
        a reward paying. They probe guards and rewards; they are never a loophole's
        evidence (the author wrote them knowing the sample)."""
        jobs = []
        for test in tests:
            if getattr(test, "constants", None) or getattr(test, "split", None):
                continue
            if test.sample is not None:
                self.driver.samples.append(dict(test.sample))
                index = len(self.driver.samples) - 1
            elif test.sample_index < len(self.driver.samples):
                index = test.sample_index
            elif test.sample_index < len(self.pool):
                self.driver.samples.append(dict(self.pool[test.sample_index]))
                index = len(self.driver.samples) - 1
            else:
                continue
            origin = f"the spec's tests: {test.name}"
            jobs.append(
                Job(index, scripted(list(test.turns)), origin, test.max_steps, strategy=TESTS)
            )
        self.driver.play(jobs)

    # -------------------------------------------------------------- answers

    def _calls(self, index: int) -> list[str]:
        """The oracle's turns before its (last) answer."""
        turns = self.facts[index].oracle.turns
        if turns and self.space.final_of(turns[-1]) is not None:
            return turns[:-1]
        return list(turns)

    def _cut(self, index: int, label: str) -> int:
        calls = len(self._calls(index))
        if label == "from the start":
            return 0
        if label == "after the oracle's calls":
            return calls
        return min(calls, int(label.split()[1]))  # "after K of the oracle's calls"

    def recipe_answers(
        self,
        recipes: Sequence[Recipe],
        keep: int = 0,
        sinks: Sequence[tuple[str, str]] = (),
        in_calls: Sequence[Recipe] = (),
    ) -> None:
        """Each recipe as the final answer, from the start and after each prefix of the
        oracle's calls — and each of `in_calls` as the argument of a sink (an answer
        given as a call's argument) in the oracle's call of that tool — on two samples;
        a recipe that wins there is played on every sample, which gives its rate."""
        samples = sorted(self.facts)
        if not samples or self.space.adapter or not (recipes or sinks):
            return
        screen = samples[:2]
        jobs: list[Job] = []
        built: dict[str, Callable[[int], Job]] = {}

        def add(index: int, make: Callable[[int], Job]) -> None:
            job = make(index)
            built[job.strategy] = make
            jobs.append(job)

        for index in screen:
            calls = len(self._calls(index))
            labels = ["from the start", "after the oracle's calls"] if calls else ["from the start"]
            if index == screen[0]:
                labels += [f"after {k} of the oracle's calls" for k in range(1, calls)]
            for recipe in recipes:
                for label in labels:
                    add(index, partial(self._recipe_job, recipe=recipe, label=label))
            for tool, arg in sinks[:2]:
                for recipe in in_calls:
                    add(index, partial(self._sink_job, recipe=recipe, tool=tool, arg=arg))
        played = self.driver.play(self.spare(jobs, keep))
        won = list(dict.fromkeys(e.strategy for e in played if self._telling(e)))
        confirm = [
            built[strategy](index)
            for strategy in won
            for index in samples
            if not any(e.strategy == strategy and e.sample_index == index for e in played)
        ]
        self.driver.play(self.spare(confirm, keep))

    def _sink_job(self, index: int, recipe: Recipe, tool: str, arg: str) -> Job:
        """The oracle's episode with the argument `arg` of its (last) call of `tool` written
        by `recipe` from the prompt that call sees (the call inserted before the answer
        where the oracle never makes it)."""
        facts = self.facts[index]
        turns = list(facts.oracle.turns)
        found = [
            (i, args)
            for i, turn in enumerate(turns)
            for name, args in self.space.calls_of(turn)
            if name == tool
        ]
        shape = self.space.tool(tool)
        if found:
            at, base = found[-1]
            before, after = turns[:at], turns[at + 1 :]
        else:
            at = len(self._calls(index))
            vocab = facts.vocab
            base = (
                self.space.random_arguments(shape, self.rng("sink", index, tool), vocab)
                if shape is not None
                else {}
            )
            before, after = turns[:at], turns[at:]
        space = self.space

        def choose(env: Any, prompt: str, i: int) -> str:
            if i < len(before):
                return before[i]
            if i == len(before):
                return space.call(tool, {**base, arg: recipe.write(clean(prompt))})
            rest = i - len(before) - 1
            return after[rest] if rest < len(after) else ""

        strategy = f"putting {recipe.name} in {tool}({arg}=…)"
        job = Job(index, choose, strategy, strategy=strategy, privileged=False)
        job.written_from = len(before)
        return job

    def _telling(self, episode: Episode) -> bool:
        """An episode worth its recipe's rate: a success (one that wrote only what the
        prompt showed), or a failure paid at least the oracle's reward."""
        if episode.blind:
            return False
        if episode.success is True:
            return True
        facts = self.facts.get(episode.sample_index)
        oracle = facts.episode.total if facts is not None else None
        return (
            episode.success is False
            and oracle is not None
            and episode.total > 0
            and episode.total >= oracle - 1e-9
        )

    def _recipe_job(self, index: int, recipe: Recipe, label: str) -> Job:
        facts = self.facts[index]
        calls = self._calls(index)[: self._cut(index, label)]
        shape = facts.oracle.shapes[-1] if facts.oracle.shapes else None
        space = self.space

        def choose(env: Any, prompt: str, i: int) -> str:
            if i < len(calls):
                return calls[i]
            if i > len(calls):
                return ""
            text = recipe.write(clean(prompt))
            if recipe.bare or shape is None:
                return space.answer(text)
            return shape.format(text)

        strategy = f"answering {recipe.name}, {label}"
        job = Job(index, choose, strategy, strategy=strategy, privileged=False)
        job.written_from = len(calls)
        return job

    # ------------------------------------------------------- extra actions

    def extra_actions(self, keep: int = 0) -> None:
        """Calls the oracle never makes — its tools on other entities (other ids of the
        sample, the state, the prompt), and the tools it never calls — inserted into
        its episode before its last turn: reward kept while success is lost shows a
        reward that does not see the damage."""
        if self.space.adapter:
            return
        jobs: list[Job] = []
        for index, facts in sorted(self.facts.items()):
            turns = facts.oracle.turns
            if not turns or facts.episode.success is not True:
                continue
            at = len(turns) - 1
            for label, call in self._other_calls(index, facts)[:EXTRA_PER_SAMPLE]:
                origin = f"oracle with {label} inserted before its last turn"
                job = self.job(index, [*turns[:at], call, *turns[at:]], origin)
                job.strategy = f"oracle with a call on another entity ({label.split('(')[0]})"
                jobs.append(job)
        self.driver.play(self.spare(jobs, keep))

    def _other_calls(self, index: int, facts: SampleFacts) -> list[tuple[str, str]]:
        rng = self.rng("extra", index)
        pool = self._entities(index, facts)
        made = [
            (name, args) for turn in facts.oracle.turns for name, args in self.space.calls_of(turn)
        ]
        out: list[tuple[str, str]] = []
        for tool in self.space.tools:
            mine = [args for name, args in made if name == tool.name]
            base = dict(mine[0]) if mine else self.space.random_arguments(tool, rng, facts.vocab)
            used = {str(v) for args in mine for v in args.values()}
            changed = False
            for key, schema in tool.properties.items():
                if not isinstance(schema, dict):
                    continue
                for value in _others(schema, base.get(key), pool, used)[:2]:
                    out.append(
                        (
                            f"{tool.name}({key}={value!r})",
                            self.space.call(tool.name, {**base, key: value}),
                        )
                    )
                    changed = True
            if not mine and not changed:
                out.append((f"{tool.name}()", self.space.call(tool.name, base)))
        # one per tool first, then the rest
        firsts = list(
            {label.split("(")[0]: (label, call) for label, call in reversed(out)}.values()
        )
        return list(dict.fromkeys([*reversed(firsts), *out]))

    def _entities(self, index: int, facts: SampleFacts) -> list[str]:
        """Names and ids an episode can show: the sample's values, the state's, and the
        id-like tokens of the prompt."""
        sample = self.driver.samples[index]
        found = [*sample_values(sample), *strings_in(facts.episode.state, 200)]
        found += _IDS.findall(clean(facts.episode.prompt))
        return [v for v in dict.fromkeys(found) if 0 < len(v) <= 60]

    # --------------------------------------------------------- guard flips

    def guard_flips(self, probe: GuardProbe | None, keep: int = 0) -> None:
        """Play the calls the guard probe found a guard answering otherwise than every
        played call: a refusal of a guard that never refused, a pass of one that never
        let a call through."""
        if probe is None:
            return
        ran, refused = self._outcomes()
        jobs = []
        for name, coverage in probe.coverage.items():
            kept = ([] if name in refused else coverage.refusals) + (
                [] if name in ran else coverage.passes
            )
            for index, prefix, call in kept:
                origin = f"{name} called where the guard probe saw its guard answer otherwise"
                jobs.append(Job(index, scripted([*prefix, call]), origin, strategy=origin))
        self.driver.play(self.spare(jobs, keep))

    def state_drives(self, reading: Any, keep: int = 0) -> None:
        """For a guarded tool that never ran or never was refused: each tool that writes
        a state variable its guard reads, called 1, 2, 4 and 8 times and as often as the
        step limit allows, then the tool — a permission earned in five moves is deeper
        than breadth-first search goes."""
        ran, refused = self._outcomes()
        limit = int(getattr(self.driver.module.ENV_CLASS, "max_steps", 8) or 8)
        jobs: list[Job] = []
        for name, guard in sorted(reading.guards.items()):
            tool = self.space.tool(name)
            if tool is None or (name in ran and name in refused):
                continue
            writers = sorted(
                {w for var in guard.state for w in reading.writers.get(var, ()) if w != name}
            )
            for index in sorted(self.facts)[:2]:
                facts = self.facts[index]
                calls = self._tool_calls(tool, facts)[:1]
                for writer in writers[:3]:
                    shape = self.space.tool(writer)
                    if shape is None or not calls:
                        continue
                    for drive in self._tool_calls(shape, facts)[:2]:
                        for times in sorted({1, 2, 4, 8, limit - 1}):
                            if times < 1 or times + 1 > limit:
                                continue
                            origin = f"{writer} called {times}x, then {name}"
                            jobs.append(
                                Job(
                                    index,
                                    scripted([drive] * times + calls),
                                    origin,
                                    strategy=origin,
                                )
                            )
        self.driver.play(self.spare(jobs, keep))

    def reward_drives(self, reading: Any, keep: int = 0) -> None:
        """For a reward component not paid so far that reads a state variable whose
        values are computed (a counter): each tool that writes it called until the step
        limit, then the oracle's answer — as far as the episode can push it."""
        paid = {
            name
            for e in self.driver.played
            for name, value in e.components().items()
            if abs(value) > 1e-9
        }
        limit = int(getattr(self.driver.module.ENV_CLASS, "max_steps", 8) or 8)
        jobs: list[Job] = []
        driven: set[tuple[str, str]] = set()
        for name, reads in sorted(reading.reward_reads.items()):
            if name in paid:
                continue
            for var in reads:
                if reading.domains.get(var) is not None:
                    continue
                for writer in sorted(reading.writers.get(var, ()))[:3]:
                    shape = self.space.tool(writer)
                    if shape is None or (var, writer) in driven:
                        continue
                    driven.add((var, writer))
                    for index in sorted(self.facts)[:2]:
                        facts = self.facts[index]
                        answer = facts.oracle.answers[-1:]
                        times = max(1, limit - len(answer))
                        for call in self._tool_calls(shape, facts)[:2]:
                            origin = f"state.{var} driven by {writer} ({times} calls)"
                            turns = [call] * times + answer
                            jobs.append(Job(index, scripted(turns), origin, strategy=origin))
        self.driver.play(self.spare(jobs, keep))

    def _outcomes(self) -> tuple[set[str], set[str]]:
        """The tools that ran, and those a guard refused, in the episodes played."""
        refused: set[str] = set()
        ran: set[str] = set()
        for episode in self.driver.played:
            ran |= episode.tools_run()
            for step in episode.trajectory.steps:
                for event in step.events:
                    if event.kind == EventKind.TOOL_ERROR and event.code == "guard" and event.tool:
                        refused.add(event.tool)
        return ran, refused

    # --------------------------------------------------------------- rules

    def generalize(self, witnesses: Sequence[Episode], fixed: set[str], keep: int = 0) -> None:
        """Each witness's rules (`answers.rules_of`) played on every sample."""
        jobs: list[Job] = []
        for witness in witnesses:
            if witness.sample_index >= len(self.driver.samples):
                continue
            sample = self.driver.samples[witness.sample_index]
            rules = rules_of(witness.turns, witness.prompts, sample, fixed)
            for rule in rules[:RULES_PER_WITNESS]:
                name = f"{rule.name}, from {witness.strategy} (sample {witness.sample_index})"
                for index in sorted(self.facts):
                    limit = len(rule.turns) if self.space.adapter else None
                    chooser = (lambda r: lambda env, prompt, i: r.write(i, prompt))(rule)
                    job = Job(index, chooser, name, limit, strategy=name, privileged=False)
                    job.written_from = 0
                    jobs.append(job)
        self.driver.play(self.spare(jobs, keep))


TESTS = "the spec's tests"
_IDS = re.compile(r"(?<![\w\-])(?=[\w\-]*\d)(?=[\w\-]*[A-Za-z])[A-Za-z0-9][\w\-]{2,}(?![\w\-])")


def _others(schema: dict[str, Any], current: Any, pool: list[str], used: set[str]) -> list[Any]:
    """Values of one argument other than the oracle's: another `enum` value, the other
    boolean, a neighbouring number, another entity of the same shape."""
    if isinstance(schema.get("enum"), list):
        return [v for v in schema["enum"] if v != current]
    kind = schema.get("type", "string")
    if kind == "boolean":
        return [not current] if isinstance(current, bool) else [True, False]
    if kind in ("integer", "number"):
        if isinstance(current, (int, float)) and not isinstance(current, bool):
            bounds = _NumberBounds.of(schema)
            return [n for n in (current + 1, current - 1) if bounds.admits(n)]
        return []
    if kind != "string":
        return []
    shape = token_shape(str(current)) if current not in (None, "") else None
    pattern = schema.get("pattern") if isinstance(schema.get("pattern"), str) else None
    out = []
    for value in pool:
        if value == current or value in used:
            continue
        if shape is not None and not re.fullmatch(shape, value):
            continue
        if pattern is not None and not _matches(pattern, value):
            continue
        out.append(value)
    return out
