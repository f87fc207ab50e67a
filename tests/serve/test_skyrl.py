"""docs/skyrl.md: a spec as a SkyRL-Gym `BaseTextEnv`, through SkyRL's own registry."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from skyrl_gym import make
from skyrl_gym.envs import register
from skyrl_gym.envs.registration import registry

from agentspec.runtime.serve.skyrl_env import SpecTextEnv, skyrl_rows
from agentspec.runtime.serve.trl_env import served

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "skyrl.md").read_text(encoding="utf-8")
CALCULATOR = str(ROOT / "specs" / "calculator.yaml")


def test_the_pages_example_prints_what_it_says(monkeypatch: pytest.MonkeyPatch) -> None:
    code, printed = re.findall(r"```(?:python|text)\n(.*?)```", PAGE, re.S)[:2]
    monkeypatch.chdir(ROOT)
    registry.pop("calculator", None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/skyrl.md", "exec"), {})
    assert out.getvalue() == printed


def test_the_oracle_plays_to_success_with_per_turn_rewards() -> None:
    if "calculator_oracle" not in registry:
        register(
            id="calculator_oracle",
            entry_point="agentspec.runtime.serve.skyrl_env:SpecTextEnv",
            kwargs={"env_config": {"spec": CALCULATOR}},
        )
    rows = skyrl_rows(CALCULATOR, env_class="calculator_oracle", split="test", limit=3)
    samples = served(CALCULATOR).samples("test")[:3]
    for row, sample in zip(rows, samples, strict=True):
        env = make("calculator_oracle", extras=row)
        assert isinstance(env, SpecTextEnv)
        messages, _ = env.init(row["prompt"])
        assert messages == row["prompt"]
        total, out = 0.0, None
        for turn in served(CALCULATOR).module.oracle_actions(sample):
            out = env.step(turn)
            total += out["reward"]
        assert out is not None and out["done"]
        assert out["metadata"]["success"] is True
        assert out["metadata"]["termination"] == "done"
        assert total == 1.0
        env.close()


def test_a_missing_spec_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs the spec's path"):
        SpecTextEnv(env_config={}, extras={})
