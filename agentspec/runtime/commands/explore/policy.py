"""The random-action policy: schema-valid calls and answers, the floor of every report.

At each step it reads the episode's live environment and the prompt as the
model sees it, then writes either a call — a tool whose guard passes now
(any tool when none does), arguments drawn from the tool's JSON Schema and
the vocabulary — or a final answer in the oracle's shape filled with a
vocabulary value. An environment adapter's step is one of its admissible
commands when it lists them, else a phrase of the prompt. Everything is a
function of the seed, so an episode replays exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentspec.runtime.commands.explore.space import (
    ActionSpace,
    ToolShape,
    Vocabulary,
    shown_values,
)
from agentspec.runtime.compiled.scripts import PolicyError, episode_script
from agentspec.runtime.episode.tools import ToolContext
from agentspec.runtime.episode.trajectory import Trajectory

__all__ = ["OracleFacts", "RandomActions", "oracle_turns", "random_episodes"]

MAX_ORACLE_TURNS = 1000


class OracleFacts:
    """What the oracle's turns for one sample tell the explorer: the turns, the
    values its calls pass (vocabulary), and the shapes of its final answers."""

    def __init__(self, turns: Sequence[str], space: ActionSpace | None, sample: Mapping[str, Any]):
        self.turns = list(turns)
        self.values: list[Any] = []
        self.answers: list[str] = []
        self.shapes: list[str] = []
        if space is None:
            return
        for turn in self.turns:
            for _, arguments in space.calls_of(turn):
                self.values += _leaves(arguments)
            final = space.final_of(turn)
            if final is not None and final.strip():
                self.answers.append(turn)
                self.shapes.append(_shape(turn, sample))
        self.values = list(dict.fromkeys(v for v in self.values if _hashable(v)))


def oracle_turns(module: Any, sample: Mapping[str, Any]) -> list[str]:
    """The oracle's turns for `sample` ([] when the spec has no oracle or it fails here)."""
    try:
        script = episode_script(module, "oracle")
        turns = script(sample) if script is not None else []
        return _drain(turns) if callable(turns) else list(turns)
    except PolicyError:
        return []


def _drain(next_turn: Any) -> list[str]:
    turns: list[str] = []
    while len(turns) < MAX_ORACLE_TURNS:
        turn = next_turn("")
        if not turn:
            break
        turns.append(turn)
    return turns


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [] if value is None or isinstance(value, bool) else [value]


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _shape(turn: str, sample: Mapping[str, Any]) -> str:
    """The oracle's answer with the longest sample value it contains made a `{}` slot
    (`<answer>42</answer>` → `<answer>{}</answer>`); the whole text when none is in it."""
    found = [str(v) for v in _leaves(dict(sample)) if str(v) and str(v) in turn]
    if not found:
        return "{}"
    value = max(found, key=len)
    return turn.replace("{", "{{").replace("}", "}}").replace(value, "{}", 1)


class RandomActions:
    """One episode's random actions (a chooser: env, prompt text, step index → turn)."""

    def __init__(self, rng: random.Random, oracle: Sequence[str] = (), privileged: bool = True):
        """``privileged``: draw strings from the oracle's call arguments too, not only
        from those the prompt showed (the search reaches deeper states with them;
        the random baseline must not know what only the oracle knows)."""
        self.rng = rng
        self.privileged = privileged
        self.oracle_turns = list(oracle)
        self.oracle = OracleFacts([], None, {})
        self.read = False

    def __call__(self, env: Any, prompt: str, index: int) -> str:
        space = ActionSpace.of(env)
        if not self.read:  # the oracle's calls are parsed with the live env's format
            self.oracle = OracleFacts(self.oracle_turns, space, env.sample)
            self.read = True
        values = self.oracle.values
        vocab = Vocabulary.of(prompt, values if self.privileged else shown_values(prompt, values))
        if space.adapter:
            commands = getattr(getattr(env, "adapter", None), "info", {}).get("admissible_commands")
            if commands:
                return str(self.rng.choice(list(commands)))
            return vocab.draw_string(self.rng)
        calls = self.available_calls(env, space, vocab)
        answers = getattr(env, "final_answer", "end") == "end" or not calls
        if answers and self.rng.random() < 1.0 / (len(calls) + 1):
            return self.answer(space, vocab)
        return self.rng.choice(calls) if calls else self.answer(space, vocab)

    def available_calls(self, env: Any, space: ActionSpace, vocab: Vocabulary) -> list[str]:
        """One drawn call per tool whose guard lets it run now; every tool's when none does."""
        drawn: list[tuple[ToolShape, dict[str, Any]]] = [
            (tool, space.random_arguments(tool, self.rng, vocab)) for tool in space.tools
        ]
        passing = [(t, a) for t, a in drawn if _guard_passes(env, t.name, a)]
        return [space.call(t.name, a) for t, a in (passing or drawn)]

    def answer(self, space: ActionSpace, vocab: Vocabulary) -> str:
        value = vocab.draw_string(self.rng)
        if self.oracle.shapes and self.rng.random() < 0.8:
            return self.rng.choice(self.oracle.shapes).format(value)
        return space.answer(value)


def _guard_passes(env: Any, name: str, arguments: dict[str, Any]) -> bool:
    """Whether the tool's guard accepts these arguments in the current state, asked
    without side effects (an expression error a guard records here is dropped)."""
    tool = env.tools.get(name)
    guard = getattr(tool, "guard", None)
    if guard is None:
        return True
    errors = getattr(env, "expression_errors", None)
    kept = len(errors) if isinstance(errors, list) else 0
    # as inside the step it asks about: the env has counted that step (`step.index`)
    env.step_index += 1
    try:
        return guard(arguments, ToolContext(env=env, step_index=env.step_index - 1)) is None
    except Exception:
        return False
    finally:
        env.step_index -= 1
        if isinstance(errors, list):
            with contextlib.suppress(Exception):
                del errors[kept:]


async def random_episodes(
    module: Any,
    samples: Sequence[Mapping[str, Any]],
    tokenizer: Any,
    *,
    seed: int,
    sample_ids: Sequence[str],
    on_episode: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    """`agentspec run --policy random`: one random-action episode per sample,
    concurrently; episode i draws from `Random(f"{seed}:{i}")`, so a run replays."""
    from agentspec.runtime.commands.explore.driver import Driver, Job

    driver = Driver(module, tokenizer, samples, episodes=len(samples), seconds=float("inf"))

    async def one(index: int) -> Trajectory:
        chooser = RandomActions(
            random.Random(f"{seed}:{index}"), oracle_turns(module, samples[index]), privileged=False
        )
        job = Job(index, chooser, "random", sample_id=sample_ids[index])
        trajectory = (await driver.play_one(job)).trajectory
        if on_episode is not None:
            on_episode(trajectory)
        return trajectory

    return list(await asyncio.gather(*(one(i) for i in range(len(samples)))))
