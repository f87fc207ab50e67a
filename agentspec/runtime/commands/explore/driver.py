"""Playing episodes for the explorer and the random-action policy, through the spec's own loop.

Each episode runs the generated flow (`FLOW_CLASS`) exactly as `agentspec run`
and `agentspec test` do, with a `ScriptedPolicy` whose turns come from a
*chooser* — a function of the live environment, the prompt as the model sees
it, and the step's index. The chooser's texts are kept as the episode's
turns, so any episode can be replayed (and written as a `tests:` entry).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from agentspec.runtime.commands.explore.space import ActionSpace, unseen
from agentspec.runtime.episode.trajectory import EventKind, TerminationReason, Trajectory
from agentspec.runtime.policies.scripted import ScriptedPolicy

__all__ = ["Chooser", "Driver", "Episode", "Job", "scripted"]

Chooser = Callable[[Any, str, int], str]
"""(the episode's environment, the prompt text, the step index) → the turn."""

BATCH = 32  # episodes in flight at once; the time budget is checked between batches


@dataclass
class Job:
    """An episode to play: a sample, how turns are chosen, and where it comes from."""

    sample_index: int
    chooser: Chooser
    origin: str
    max_steps: int | None = None  # `episode.max_steps` for this episode only
    sample_id: str | None = None  # the trajectory's (default: the sample's index)
    at_end: Callable[[Any], Any] | None = None  # reads the environment once the episode ended
    family: str = ""  # episodes that differ only in how often one turn repeats
    repeats: int = 0  # extra copies of that turn
    repeat_at: int = 0  # the step of its first copy
    strategy: str = ""  # what it plays, the same on every sample (default: its origin)
    privileged: bool = True  # it copies what only the oracle knows (its answer, its arguments)
    # turns from this index on are written from the prompt by construction (a recipe, a
    # rule): a number it makes up (a neighbour of one shown) is no value copied from the
    # sample, so only the turns before it are checked for values the prompt never showed
    written_from: int | None = None


@dataclass
class Episode:
    """A played episode: its turns, its trajectory and the state it ended in."""

    sample_index: int
    turns: list[str]
    trajectory: Trajectory
    state: dict[str, Any]
    origin: str
    max_steps: int | None = None
    signatures: list[str] = field(default_factory=list)  # the state after each step
    prompt: str = ""  # the last prompt the chooser saw, as text
    end: Any = None  # what `Job.at_end` read
    family: str = ""
    repeats: int = 0
    repeat_at: int = 0
    blind: list[int] = field(default_factory=list)  # turns using values the prompt never showed
    prompts: list[str] = field(default_factory=list)  # the prompt each turn answered
    strategy: str = ""
    privileged: bool = True

    @property
    def total(self) -> float:
        return self.trajectory.total_reward

    @property
    def success(self) -> bool | None:
        return self.trajectory.success

    @property
    def steps(self) -> int:
        return len(self.trajectory.steps)

    @property
    def ending(self) -> str:
        return self.trajectory.termination.value

    def components(self) -> dict[str, float]:
        return self.trajectory.reward_components()

    def paid_on_repeats(self, name: str) -> float:
        """What component ``name`` paid on the repeated turn and its copies, weighted (a
        penalty under a negative weight does not pay more by repeating)."""
        repeated = self.trajectory.steps[self.repeat_at : self.repeat_at + self.repeats + 1]
        return sum(step.paid(name) for step in repeated)

    def tools_run(self) -> set[str]:
        """Tools whose calls ran (not refused, not failed)."""
        return {
            e.tool or e.message
            for s in self.trajectory.steps
            for e in s.events
            if e.kind == EventKind.TOOL and (e.tool or e.message)
        }

    def broken(self) -> bool:
        """An episode the environment could not play (its own error, not the agent's)."""
        return self.trajectory.termination in (
            TerminationReason.ENV_ERROR,
            TerminationReason.POLICY_ERROR,
        )


def scripted(turns: Sequence[str], end: str = "") -> Chooser:
    """A chooser that plays `turns`, then `end` (an empty answer ends a tool episode)."""
    listed = list(turns)
    return lambda env, prompt, index: listed[index] if index < len(listed) else end


class Driver:
    """Plays jobs on a spec's samples within a budget of episodes and seconds."""

    def __init__(
        self,
        module: ModuleType,
        tokenizer: Any,
        samples: Sequence[Mapping[str, Any]],
        *,
        episodes: int,
        seconds: float,
        probe: Callable[[Any, int, Sequence[str], str, str], None] | None = None,
    ) -> None:
        """``probe(env, sample_index, turns so far, the turn, its prompt)`` is called once each turn
        is chosen and before it is played (the explorer's guard probe), with the live
        environment in the state the turn's calls meet."""
        self.module = module
        self.probe = probe
        self.tokenizer = tokenizer
        self.samples = list(samples)
        self.left = episodes
        self.deadline = time.monotonic() + seconds
        self.played: list[Episode] = []
        self.stopped_by_time = False

    @property
    def exhausted(self) -> bool:
        if self.left <= 0:
            return True
        if time.monotonic() >= self.deadline:
            self.stopped_by_time = True
            return True
        return False

    def play(self, jobs: Sequence[Job]) -> list[Episode]:
        """As many of `jobs` as the budget allows, in order; each played episode is kept."""
        done: list[Episode] = []
        for start in range(0, len(jobs), BATCH):
            if self.exhausted:
                break
            batch = list(jobs[start : start + min(BATCH, self.left)])
            self.left -= len(batch)
            done += asyncio.run(self._play_all(batch))
        self.played += done
        return done

    async def _play_all(self, jobs: list[Job]) -> list[Episode]:
        return list(await asyncio.gather(*(self.play_one(job) for job in jobs)))

    async def play_one(self, job: Job) -> Episode:
        envs: list[Any] = []
        turns: list[str] = []
        signatures: list[str] = []

        prompts = [""]
        blind: list[int] = []  # turns that write a value their prompt never showed

        seen: list[str] = []

        def turn(prompt: str) -> str:
            env = envs[-1]
            prompts[0] = prompt
            seen.append(prompt)
            if turns:
                signatures.append(signature(env))
            text = str(job.chooser(env, prompt, len(turns)))
            if self.probe is not None:
                self.probe(env, job.sample_index, turns, text, prompt)
            turns.append(text)
            checked = job.written_from is None or len(turns) - 1 < job.written_from
            if checked and unseen(ActionSpace.of(env), prompt, text):
                blind.append(len(turns) - 1)
            return text

        flow = self.module.FLOW_CLASS(ScriptedPolicy(turn, self.tokenizer), self.tokenizer)
        make_env = flow.env_factory

        def recording_factory() -> Any:
            env = make_env()
            if job.max_steps is not None:
                env.max_steps = job.max_steps
            envs.append(env)
            return env

        if job.max_steps is not None:
            flow.config = dataclasses.replace(flow.config, max_steps=job.max_steps)
        flow.env_factory = recording_factory
        sample = self.samples[job.sample_index]
        sid = job.sample_id if job.sample_id is not None else str(job.sample_index)
        trajectory = await flow.run(dict(sample), sample_id=sid, group_id=sid)
        env = envs[0] if envs else None
        if env is not None:
            signatures.append(signature(env))
        state = state_dict(getattr(env, "state", None))
        episode = Episode(job.sample_index, turns, trajectory, state, job.origin, job.max_steps)
        episode.signatures, episode.prompt, episode.blind = signatures, prompts[0], blind
        episode.family, episode.repeats, episode.repeat_at = job.family, job.repeats, job.repeat_at
        episode.prompts = seen if trajectory.success else []  # a win's are generalised
        episode.strategy, episode.privileged = job.strategy or job.origin, job.privileged
        if job.at_end is not None and env is not None:
            episode.end = job.at_end(env)
        return episode


def state_dict(state: Any) -> dict[str, Any]:
    if state is None:
        return {}
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    return dict(state) if isinstance(state, Mapping) else {}


def signature(env: Any) -> str:
    """The environment's state as a key (breadth-first search visits each once)."""
    facts = getattr(getattr(env, "adapter", None), "info", None) or {}
    shown = {k: facts[k] for k in sorted(facts) if k != "admissible_commands"}
    return repr((sorted(state_dict(getattr(env, "state", None)).items()), sorted(shown.items())))
