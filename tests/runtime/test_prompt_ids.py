"""One token list per episode: `PromptIds` views read, compare and serialise like lists."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import pickle
from pathlib import Path

import pytest

from agentspec.compiler.build import import_spec
from agentspec.runtime.commands.run import rollout
from agentspec.runtime.episode.rows import training_rows
from agentspec.runtime.episode.trajectory import PromptIds, Step, Trajectory

ROOT = Path(__file__).resolve().parents[2]


def test_a_view_behaves_like_the_list_it_stands_for() -> None:
    tokens = [1, 2, 3, 4, 5]
    view = PromptIds(tokens, 3)
    assert view == [1, 2, 3] and [1, 2, 3] == view and view != [1, 2]  # noqa: SIM300 (both sides)
    assert (len(view), view[0], view[-1], view[1:], list(view)) == (3, 1, 3, [2, 3], [1, 2, 3])
    assert view + [9] == [1, 2, 3, 9] and [0] + view == [0, 1, 2, 3]  # noqa: RUF005 (+ itself)
    assert copy.copy(view) == copy.deepcopy(view) == pickle.loads(pickle.dumps(view)) == [1, 2, 3]
    assert type(pickle.loads(pickle.dumps(view))) is list
    with pytest.raises(IndexError):
        view[3]
    tokens.append(6)  # the episode goes on: the view does not change
    assert view == [1, 2, 3]
    step = Step(0, view, [7], [0.0])
    assert json.loads(json.dumps(step.to_dict()))["prompt_ids"] == [1, 2, 3]
    assert Step.from_dict(step.to_dict()) == step
    with pytest.raises(ValueError):
        PromptIds(tokens, 99)


def test_full_history_steps_share_one_list_and_rows_are_unchanged() -> None:
    module = import_spec(ROOT / "specs" / "keys_and_doors.yaml")
    samples = module.load_samples()[:2]
    from agentspec.runtime.compiled.task_text import task_bpe_tokenizer

    tokenizer = task_bpe_tokenizer(module, samples)
    (traj, _) = asyncio.run(rollout(module, samples, "oracle", task_tokenizer=tokenizer))
    assert len(traj.steps) > 2
    prompts = [s.prompt_ids for s in traj.steps]
    assert all(isinstance(p, PromptIds) for p in prompts)
    assert all(p._tokens is prompts[0]._tokens for p in prompts)  # one list per episode
    for before, after in itertools.pairwise(traj.steps):
        assert after.prompt_ids == [
            *before.prompt_ids,
            *before.response_ids,
            *before.observation_ids,
        ]
    reread = Trajectory.from_json(traj.to_json())
    assert [r.input_ids for r in training_rows(reread)] == [
        r.input_ids for r in training_rows(traj)
    ]
    assert len(training_rows(traj)) == 1  # packed: the chain holds


def test_a_prompt_that_breaks_the_chain_starts_a_new_list() -> None:
    """A prompt that does not extend the episode's tokens (truncated, re-rendered) gets its own list."""
    from agentspec.runtime.episode.loop import _shared_prompt

    tokens, first = _shared_prompt([], [1, 2])
    tokens += [3, 4]
    same, second = _shared_prompt(tokens, [1, 2, 3, 4])
    assert same is tokens and second._tokens is first._tokens
    other, third = _shared_prompt(tokens, [1, 9])
    assert other is not tokens and third == [1, 9] and second == [1, 2, 3, 4]
