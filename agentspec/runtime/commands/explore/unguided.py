"""The strategies that need nothing but the oracle and the action space: the
oracle's episodes, their mutations, breadth-first enumeration, guarded tools
called again and again, random-action episodes and farming paid turns
(`search.GuidedSearch` adds those the spec's own expressions guide)."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentspec.runtime.commands.explore.driver import Driver, Episode, Job, scripted
from agentspec.runtime.commands.explore.policy import OracleFacts, RandomActions
from agentspec.runtime.commands.explore.space import (
    ActionSpace,
    Vocabulary,
    draw_value,
    finite_values,
)

__all__ = ["SampleFacts", "Search"]

REPEATS = (1, 2, 4)  # extra copies of a repeated turn: a farmable reward grows with them
PER_TOOL = 8  # argument combinations breadth-first search tries per tool and state
WORDS = 4  # prompt words breadth-first search adds to the oracle's argument values
REPEATED_CALLS = 3  # argument values each guarded tool is called with until the episode ends
BASELINE_SECONDS = 5.0  # the most the random baseline may play past the time budget


@dataclass
class SampleFacts:
    """What the oracle's episode on one sample tells the search."""

    oracle: OracleFacts
    vocab: Vocabulary
    space: ActionSpace
    episode: Episode


class Search:
    """Runs the strategies in order until the driver's budget is spent."""

    def __init__(self, driver: Driver, space: ActionSpace, oracle: list[OracleFacts], seed: int):
        self.driver = driver
        self.space = space
        self.oracle = oracle
        self.seed = seed
        self.facts: dict[int, SampleFacts] = {}

    def rng(self, *name: Any) -> random.Random:
        return random.Random(":".join(map(str, (self.seed, *name))))

    def job(self, sample: int, turns: Sequence[str], origin: str) -> Job:
        """A scripted episode; an adapter's ends after its turns (it has no answer to end it)."""
        limit = len(turns) if self.space.adapter and turns else None
        return Job(sample, scripted(turns), origin, limit, strategy=_strategy(origin))

    def repeating_job(
        self, sample: int, turns: Sequence[str], origin: str, family: str, at: int, repeats: int
    ) -> Job:
        """A scripted episode whose turn ``at`` is followed by ``repeats`` copies of it."""
        job = self.job(sample, turns, origin)
        job.family, job.repeat_at, job.repeats = family, at, repeats
        return job

    # ------------------------------------------------------------- strategies

    def oracle_episodes(self) -> list[Episode]:
        jobs = [self.job(i, o.turns, "oracle") for i, o in enumerate(self.oracle) if o.turns]
        played = self.driver.play(jobs)
        for episode in played:
            facts = self.oracle[episode.sample_index]
            vocab = Vocabulary.of(episode.prompt, facts.values)
            self.facts[episode.sample_index] = SampleFacts(facts, vocab, self.space, episode)
        return played

    def mutations(self, keep: int = 0) -> None:
        jobs: list[Job] = []
        for index, facts in sorted(self.facts.items()):
            jobs += self._mutations_of(index, facts)
        self.driver.play(self.spare(jobs, keep))

    def _mutations_of(self, index: int, facts: SampleFacts) -> list[Job]:
        turns, rng = facts.oracle.turns, self.rng("mutate", index)
        variants: list[tuple[str, list[str]]] = []
        jobs: list[Job] = []
        for i in range(len(turns)):
            variants.append((f"oracle without turn {i + 1}", turns[:i] + turns[i + 1 :]))
            family = f"sample {index} oracle turn {i + 1}"
            for extra in REPEATS:
                repeated = turns[: i + 1] + [turns[i]] * extra + turns[i + 1 :]
                origin = f"oracle with turn {i + 1} repeated {extra}x"
                jobs.append(self.repeating_job(index, repeated, origin, family, i, extra))
            if i + 1 < len(turns):
                swapped = [*turns[:i], turns[i + 1], turns[i], *turns[i + 2 :]]
                variants.append((f"oracle with turns {i + 1} and {i + 2} swapped", swapped))
        if not self.space.adapter:
            variants += self._answer_variants(facts, rng)
            variants += self._argument_variants(facts, rng)
            variants += self._broken_turns(turns)
        return jobs + [self.job(index, t, origin) for origin, t in variants if t]

    def _answer_variants(
        self, facts: SampleFacts, rng: random.Random
    ) -> list[tuple[str, list[str]]]:
        turns = facts.oracle.turns
        calls = [t for t in turns if self.space.final_of(t) is None]
        answers = facts.oracle.answers or [self.space.answer("")]
        shapes = facts.oracle.shapes or ["{}"]
        out = [
            (f"answer after {i} oracle calls", [*calls[:i], answers[-1]]) for i in range(len(calls))
        ]
        values = facts.vocab.strings()
        for value in rng.sample(values, min(6, len(values))):
            out.append(
                (f"oracle calls, then the answer {value!r}", [*calls, shapes[-1].format(value)])
            )
        listing = ", ".join(dict.fromkeys([*facts.vocab.phrases, *map(str, facts.oracle.values)]))
        if listing:
            out.append(("answer listing every option", [*calls, shapes[-1].format(listing)]))
            out.append(("answer listing every option, no call", [shapes[-1].format(listing)]))
        return out

    def _argument_variants(
        self, facts: SampleFacts, rng: random.Random
    ) -> list[tuple[str, list[str]]]:
        out: list[tuple[str, list[str]]] = []
        turns = facts.oracle.turns
        for i, turn in enumerate(turns):
            for name, arguments in self.space.calls_of(turn)[:1]:
                tool = self.space.tool(name)
                if tool is None:
                    continue
                for key in arguments:
                    for _ in range(2):
                        changed = dict(arguments)
                        schema = tool.properties.get(key, {})
                        changed[key] = draw_value(schema, rng, facts.vocab)
                        new = self.space.call(name, changed)
                        out.append(
                            (
                                f"oracle with argument {key!r} of turn {i + 1} changed",
                                [*turns[:i], new, *turns[i + 1 :]],
                            )
                        )
        return out

    def _broken_turns(self, turns: list[str]) -> list[tuple[str, list[str]]]:
        tool = self.space.tools[0] if self.space.tools else None
        out = [("a malformed first turn", [self.space.malformed(tool), *turns])]
        if tool is not None:
            no_args = self.space.call(tool.name, {})
            out.append((f"{tool.name} called without arguments", [no_args, *turns]))
        return out

    def spare(self, jobs: list[Job], keep: int) -> list[Job]:
        """The jobs that fit in the budget while `keep` episodes stay for later strategies."""
        return jobs[: max(0, self.driver.left - keep)]

    def breadth_first(self, depth: int, keep: int = 0, samples: int = 1) -> None:
        """Every short sequence over a finite action set, visiting each state once."""
        for index in sorted(self.facts)[:samples]:
            facts = self.facts[index]
            seen: set[str] = set()
            frontier: list[tuple[list[str], list[str]]] = [([], self._finite_actions(facts, None))]
            for _ in range(depth):
                paths = [[*prefix, a] for prefix, actions in frontier for a in actions]
                nodes = self.spare([self._node(index, path) for path in paths], keep)
                played = self.driver.play(nodes)
                frontier = []
                for path, episode in zip(paths, played, strict=False):
                    ended = episode.steps <= len(path) and episode.ending != "max_steps"
                    if ended or episode.broken() or len(episode.signatures) < len(path):
                        continue  # a leaf: the episode ended on the new action
                    key = episode.signatures[len(path) - 1]
                    if key not in seen:
                        seen.add(key)
                        frontier.append((path, self._finite_actions(facts, episode.end)))
                if not frontier or len(nodes) < len(paths) or self.driver.exhausted:
                    break

    def _node(self, index: int, path: list[str]) -> Job:
        """A search node: its path, then an empty answer (an adapter's ends after the path)."""
        limit = len(path) if self.space.adapter else None
        return Job(index, scripted(path), "breadth-first search", limit, at_end=lambda env: env)

    def _finite_actions(self, facts: SampleFacts, env: Any) -> list[str]:
        """The actions breadth-first search tries in a state."""
        if self.space.adapter:
            info = getattr(getattr(env, "adapter", None), "info", {}) if env is not None else {}
            commands = list(info.get("admissible_commands") or [])
            return commands or list(dict.fromkeys(facts.oracle.turns))
        actions: list[str] = []
        for tool in self.space.tools:
            actions += self._tool_calls(tool, facts)
        actions += list(dict.fromkeys(facts.oracle.answers))[:2]
        actions.append(self.space.answer(""))
        return list(dict.fromkeys(actions))

    def _tool_calls(self, tool: Any, facts: SampleFacts) -> list[str]:
        words = [str(v) for v in facts.oracle.values] + facts.vocab.words[:WORDS]
        combos: list[dict[str, Any]] = [{}]
        for name in tool.required or list(tool.properties):
            values = finite_values(tool.properties.get(name, {}), list(dict.fromkeys(words)))
            combos = [{**c, name: v} for c in combos for v in values][: PER_TOOL * 4]
        return [self.space.call(tool.name, c) for c in combos[:PER_TOOL]]

    def repeated_calls(self, guarded: set[str], keep: int = 0) -> None:
        """Each guarded tool called again and again, with each of a few argument
        values, until the episode ends: a guard that counts uses (`len(state.tries)
        < 7`) refuses only past its limit, deeper than the other strategies reach."""
        jobs: list[Job] = []
        for index, facts in sorted(self.facts.items()):
            for tool in self.space.tools:
                if tool.name in guarded:
                    for call in self._tool_calls(tool, facts)[:REPEATED_CALLS]:
                        again = (lambda text: lambda env, prompt, i: text)(call)
                        jobs.append(Job(index, again, f"{tool.name} called again and again"))
        self.driver.play(self.spare(jobs, keep))

    def random_episodes(self, keep: int = 0) -> None:
        """Random actions from the start and from every prefix of each oracle episode,
        round after round, until only `keep` episodes of the budget are left."""
        indices = sorted(self.facts) or list(range(len(self.oracle)))
        for round_ in range(10**6):
            jobs = []
            for index in indices:
                turns = self.oracle[index].turns
                for cut in range(max(1, len(turns))):
                    rng = self.rng("random", round_, index, cut)
                    # from the start: the random baseline, which knows only its prompt
                    chooser = _after(turns[:cut], RandomActions(rng, turns, privileged=cut > 0))
                    origin = f"random actions after {cut} oracle turns" if cut else "random actions"
                    jobs.append(Job(index, chooser, origin, privileged=cut > 0))
            if not self.driver.play(self.spare(jobs, keep)) or self.driver.left <= keep:
                return

    def random_baseline(self) -> None:
        """One episode of random actions from the start for each sample (the first of
        `random_episodes`' rounds), past the episode and time budgets if they are spent:
        what a policy that knows only its prompt reaches, which the report gives."""
        jobs = []
        for index, oracle in enumerate(self.oracle):
            chooser = RandomActions(self.rng("random", 0, index, 0), oracle.turns, privileged=False)
            jobs.append(Job(index, _after([], chooser), "random actions", privileged=False))
        self.driver.left = max(self.driver.left, len(jobs))
        # past the time budget too (by at most BASELINE_SECONDS): the figure the report gives
        self.driver.deadline = max(self.driver.deadline, time.monotonic() + BASELINE_SECONDS)
        self.driver.play(jobs)

    def farm(self, episodes: Sequence[Episode], paid: Callable[[Episode], list[int]]) -> None:
        """Repeat each turn that was paid a per-step or per-call reward (`paid` gives
        the paid steps of an episode), 1, 2 and 4 more times, and until the step limit
        (what a policy farming it does: never answering)."""
        jobs: list[Job] = []
        done: set[tuple[int, str]] = set()
        limit = int(getattr(self.driver.module.ENV_CLASS, "max_steps", 0) or 0)
        for episode in episodes:
            for step in paid(episode):
                if (
                    step >= len(episode.turns)
                    or (episode.sample_index, episode.turns[step]) in done
                ):
                    continue
                done.add((episode.sample_index, episode.turns[step]))
                family = f"sample {episode.sample_index} farm {len(done)}"
                head = episode.turns[: step + 1]
                most = (episode.max_steps or limit) - step - 1
                for extra in (*REPEATS, *([most] if most > max(REPEATS) else [])):
                    turns = head + [episode.turns[step]] * extra
                    origin = f"turn {step + 1} of {episode.origin} repeated {extra}x"
                    jobs.append(
                        self.repeating_job(episode.sample_index, turns, origin, family, step, extra)
                    )
        self.driver.play(jobs)


def _strategy(origin: str) -> str:
    """An origin without the values it names: the same strategy on every sample."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", "a value", origin)


def _after(prefix: list[str], then: RandomActions) -> Callable[[Any, str, int], str]:
    def choose(env: Any, prompt: str, index: int) -> str:
        return prefix[index] if index < len(prefix) else then(env, prompt, index)

    return choose
