from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agentspec.runtime import (
    FORMAT_VERSION,
    AgentEnvLoop,
    Event,
    ScriptedPolicy,
    Step,
    TerminationReason,
    ToolCall,
    Trajectory,
    read_jsonl,
    run_episodes,
    training_rows,
    write_jsonl,
)

from .helpers import CalculatorEnv, calculator_oracle, calculator_samples


def _hand_made() -> Trajectory:
    s0 = Step(
        0,
        [1, 2],
        [3, 4],
        [-0.1, -0.2],
        observation="obs",
        observation_ids=[5],
        tool_calls=[ToolCall("calc", {"x": "ü"}, "raw")],
        events=[Event("step"), Event.tool_ok("calc", 0)],
        rewards={"a": 0.5},
        anchor="s0",
    )
    s1 = Step(
        1, [1, 2, 3, 4, 5], [6], [-0.3], rewards={"b": 1.0}, done=True, events=[Event("final")]
    )
    return Trajectory(
        [s0, s1], sample_id="7", group_id="g", termination=TerminationReason.DONE, success=True
    )


def test_packed_row_by_hand() -> None:
    (row,) = training_rows(_hand_made())
    assert row.input_ids == [1, 2, 3, 4, 5, 6]
    assert row.response_mask == [0, 0, 1, 1, 0, 1]
    assert row.logprobs == [0.0, 0.0, -0.1, -0.2, 0.0, -0.3]
    assert row.token_steps == [-1, -1, 0, 0, -1, 1]
    assert row.step_indices == [0, 1] and row.prompt_length == 2 and row.group_id == "g"
    assert row.step_rewards == [0.5, 1.0]


def test_unpacked_rows_by_hand() -> None:
    rows = training_rows(_hand_made(), pack=False)
    assert [r.input_ids for r in rows] == [[1, 2, 3, 4], [1, 2, 3, 4, 5, 6]]
    assert [r.response_mask for r in rows] == [[0, 0, 1, 1], [0, 0, 0, 0, 0, 1]]


def test_broken_chain_is_not_packed() -> None:
    traj = _hand_made()
    traj.steps[1].prompt_ids = [1, 2, 3, 4, 9]
    assert [r.step_indices for r in training_rows(traj)] == [[0], [1]]


def test_logprob_length_mismatch_is_an_error() -> None:
    traj = _hand_made()
    traj.steps[0].response_logprobs = [0.0]
    with pytest.raises(ValueError, match="step 0: 2 response ids but 1 log-probs"):
        training_rows(traj)


def test_reward_helpers() -> None:
    traj = _hand_made()
    assert traj.total_reward == 1.5 and traj.reward_components() == {"a": 0.5, "b": 1.0}
    assert traj.count("tool:calc") == 1 and traj.count("tool") == 1 and traj.count("final") == 1


def test_jsonl_round_trip(tmp_path: Path, tok: Any) -> None:
    loop = AgentEnvLoop(CalculatorEnv, ScriptedPolicy(calculator_oracle, tok), tok)
    trajs = [*asyncio.run(run_episodes(loop, calculator_samples(3), group_size=2)), _hand_made()]
    path = tmp_path / "t.jsonl"
    assert write_jsonl(path, trajs) == 7
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 7
    first = json.loads(lines[0])
    assert first["format"] == "agentspec.trajectory" and first["version"] == FORMAT_VERSION
    back = list(read_jsonl(path))
    assert back == trajs
    assert isinstance(back[0].termination, TerminationReason)
    assert isinstance(back[0].steps[0].events[0], Event)


def test_unknown_version_is_rejected(tmp_path: Path) -> None:
    record = _hand_made().to_dict()
    record["version"] = FORMAT_VERSION + 1
    path = tmp_path / "t.jsonl"
    path.write_text(_hand_made().to_json() + "\n" + json.dumps(record) + "\n")
    with pytest.raises(
        ValueError, match=r"t.jsonl:2: trajectory format version 2 is not supported"
    ):
        list(read_jsonl(path))
