"""One sanitiser for everything that leaves the process as JSON: the same value is
spelled the same way in a trajectory file, a served session and a trainer row."""

from __future__ import annotations

import dataclasses
import json
import math

from agentspec.core.json_value import MAX_DEPTH, json_value


@dataclasses.dataclass
class Box:
    items: set[str]
    score: float


def _strict(value: object) -> str:
    return json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8").decode()


def test_what_strict_json_cannot_hold_is_spelled_one_way() -> None:
    value = {
        1: math.nan,
        "inf": [math.inf, -math.inf],
        "text": "a\ud800b",
        "big": 1 << 20_000,
        "box": Box({"b", "a"}, 0.5),
        "tuple": (1, True, None),
    }
    out = json_value(value)
    assert out == {
        "1": "NaN",
        "inf": ["Infinity", "-Infinity"],
        "text": "a\ufffdb",
        "big": "<integer of 20001 bits>",
        "box": {"items": ["a", "b"], "score": 0.5},
        "tuple": [1, True, None],
    }
    _strict(out)  # encodable as strict JSON and UTF-8


def test_deep_nesting_is_cut_not_recursed_without_bound() -> None:
    deep: list[object] = []
    for _ in range(MAX_DEPTH * 5):
        deep = [deep]
    text = _strict(json_value(deep))
    assert "<nested too deeply>" in text


def test_a_value_whose_text_fails_is_named_by_its_type() -> None:
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert json_value(Hostile()) == "<unprintable Hostile>"


def test_served_state_and_trajectory_files_agree() -> None:
    """The served session's state and a written trajectory both go through json_value."""
    from agentspec.runtime.episode.trajectory import Trajectory
    from agentspec.runtime.serve import session

    assert session.json_value is json_value
    traj = Trajectory(sample_id="s", group_id="g", info={"x": math.nan, "y": {"b", "a"}})
    line = json.loads(traj.to_json())
    assert line["info"] == {"x": "NaN", "y": ["a", "b"]}
