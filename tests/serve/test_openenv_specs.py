"""Every shipped spec served as `agentspec serve --openenv` serves it, played through
OpenEnv's own client: the oracle gives what `agentspec run --policy oracle` gives, and
every `tests:` episode meets its `expect` as `agentspec test` judges it.

The command's app (`build_app`) runs in a thread of this process: what differs between
specs is the environment behind the wire, not the command, which test_openenv_adapter
and tests/docs_site/test_openenv_docs.py start as users do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openenv  # noqa: F401 (the openenv extra installs it: a missing install fails)
import pytest
import yaml
from openenv.core.generic_client import GenericEnvClient

from agentspec.runtime.commands.run import rollout
from agentspec.runtime.commands.tests import Played, SpecTestRunner
from agentspec.runtime.compiled.scripts import episode_script
from agentspec.runtime.episode.trajectory import (
    Event,
    Step,
    TerminationReason,
    Trajectory,
)
from agentspec.runtime.serve.openenv_server import build_app
from agentspec.runtime.serve.spec import ServedSpec

from .helpers import InProcessServer

ROOT = Path(__file__).resolve().parents[2]
ORACLE_SAMPLES = 5
SPECS = [
    p for p in sorted((ROOT / "specs").glob("*.yaml")) if "oracle" in yaml.safe_load(p.read_text())
]


@pytest.fixture
def served_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The app of `agentspec serve SPEC --openenv`, on a free port."""
    with InProcessServer(build_app(ServedSpec.load(request.param), max_sessions=4)) as server:
        yield server.url


async def play_over_the_wire(
    url: str, reset: dict[str, Any], next_turn: Any
) -> tuple[Trajectory, dict[str, Any]]:
    """One episode through OpenEnv's GenericEnvClient; the trajectory as the wire
    tells it (observations, named step rewards, events, ending) and the final state."""
    async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
        result = await env.reset(**reset)
        obs = result.observation
        traj = Trajectory(sample_id=obs["sample_id"])
        while not result.done:
            result = await env.step({"text": next_turn(len(traj.steps))})
            obs = result.observation
            traj.steps.append(
                Step(
                    index=len(traj.steps),
                    prompt_ids=[],
                    response_ids=[],
                    response_logprobs=[],
                    observation=obs["text"],
                    rewards=obs["rewards"],
                    weights=obs["weights"],
                    events=[Event(**e) for e in obs["events"]],
                )
            )
            assert result.reward == pytest.approx(traj.steps[-1].reward)
        traj.termination = TerminationReason(obs["termination"])
        traj.success = obs["success"]
        state = await env.state()
    return traj, state


def cycling(turns: Any) -> Any:
    """The turns of a `tests:` episode, cycled as the scripted policy of `agentspec test` does."""
    listed = list(turns)
    return lambda k: listed[k % len(listed)]


def oracle_turns(module: Any, sample: dict[str, Any]) -> Any:
    script = episode_script(module, "oracle")
    assert script is not None
    turns = script(sample)
    if callable(turns):
        return lambda _k: turns("")
    return lambda k: turns[k] if k < len(turns) else ""


@pytest.mark.slow
@pytest.mark.parametrize("served_url", SPECS, ids=[p.stem for p in SPECS], indirect=True)
def test_the_oracle_and_the_spec_tests_over_the_wire(served_url: str, request: Any) -> None:
    spec_path = SPECS[[p.stem for p in SPECS].index(request.node.callspec.id)]
    served = ServedSpec.load(spec_path)  # loaded apart from the server's: nothing shared
    samples = served.samples()[:ORACLE_SAMPLES]
    expected = asyncio.run(
        rollout(served.module, samples, "oracle", task_tokenizer=served.tokenizer)
    )
    for index, (sample, ran) in enumerate(zip(samples, expected, strict=True)):
        wire, _ = asyncio.run(
            play_over_the_wire(served_url, {"index": index}, oracle_turns(served.module, sample))
        )
        assert len(wire.steps) == len(ran.steps), sample.get("id", index)
        totals = {**dict.fromkeys(served.reward_names, 0.0), **ran.reward_components()}
        assert wire.reward_components() == pytest.approx(totals)
        assert [s.rewards for s in wire.steps] == [
            {**dict.fromkeys(served.reward_names, 0.0), **s.rewards} for s in ran.steps
        ]
        assert (wire.termination, wire.success) == (ran.termination, ran.success)

    runner = SpecTestRunner(spec_path, None, 0)
    for index, test in enumerate(runner.spec.tests.episodes):
        if test.sample is not None:
            reset: dict[str, Any] = {"sample": dict(test.sample)}
        else:
            reset = {"split": test.split or "train", "index": test.sample_index}
        traj, state = asyncio.run(play_over_the_wire(served_url, reset, cycling(test.turns)))
        played = Played(traj, state["spec_state"])
        if test.expect.state:  # the wire serves only the state the agent sees
            public = served.public_state(test.expect.state)
            test = test.model_copy(
                update={"expect": test.expect.model_copy(update={"state": public or None})}
            )
        if test.expect.user:  # the user lives on the server: its rules and last reply stay there
            test = test.model_copy(update={"expect": test.expect.model_copy(update={"user": None})})
        failures = runner.expectation_failures(("tests", "episodes", index), test, played)
        assert [f.message for f in failures] == [], test.name
