"""Generated code keeps the expression size limit: `text * n` with a huge `n`
from the model is a tool error, not gigabytes."""

from __future__ import annotations

from pathlib import Path

from .helpers import build, call, play


def test_a_tool_returning_a_huge_repetition_is_a_tool_error(tmp_path: Path) -> None:
    module = build(
        """
tools:
  echo:
    description: Repeat a text.
    parameters:
      text: {type: string}
      times: {type: integer}
    returns: "args.text * args.times"
rewards:
  done: {on: final, value: "1.0"}
""",
        tmp_path,
    )
    traj, _ = play(
        module, [call("echo", text="ab", times=2), call("echo", text="a", times=10**10), "x"]
    )
    assert "abab" in traj.steps[0].observation
    assert "the limit is 1,000,000" in traj.steps[1].observation
    assert any(e.kind == "tool_error" for e in traj.steps[1].events)
