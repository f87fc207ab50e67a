"""Every shipped spec served by `agentspec serve --openenv`, played through OpenEnv's own
client: the oracle gives what `agentspec run --policy oracle` gives, and every `tests:`
episode meets its `expect` as `agentspec test` judges it."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

pytest.importorskip("openenv", reason="needs the openenv extra")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402

from agentspec.runtime.episode.trajectory import (  # noqa: E402
    Event,
    Step,
    TerminationReason,
    Trajectory,
)
from agentspec.runtime.serve.spec import ServedSpec  # noqa: E402
from agentspec.runtime.spec.run import episode_script, rollout  # noqa: E402
from agentspec.runtime.spec.tests import Played, SpecTestRunner  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ORACLE_SAMPLES = 5
SPECS = [p for p in sorted((ROOT / "specs").glob("*.yaml")) if "oracle" in yaml.safe_load(p.read_text())]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """`agentspec serve SPEC --openenv` on a free port, as a user starts it."""
    spec: Path = request.param
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [sys.executable, "-m", "agentspec.cli", "serve", str(spec), "--openenv"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--max-sessions", "4"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"agentspec serve exited: {process.stderr.read()}")  # type: ignore[union-attr]
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            raise RuntimeError("agentspec serve did not start in 180 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


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
                    events=[Event(**e) for e in obs["events"]],
                )
            )
            assert result.reward == pytest.approx(sum(obs["rewards"].values()))
        traj.termination = TerminationReason(obs["termination"])
        traj.success = obs["success"]
        state = await env.state()
    return traj, state


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
    served = ServedSpec.load(spec_path)  # the same compile cache and task tokenizer as the server
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
        turns = list(test.turns)
        traj, state = asyncio.run(
            play_over_the_wire(served_url, reset, lambda k: turns[k % len(turns)])
        )
        played = Played(traj, state["spec_state"])
        failures = runner.expectation_failures(("tests", "episodes", index), test, played)
        assert [f.message for f in failures] == [], test.name
