"""Run a shipped spec through the real `agentspec run` entry point and read back
its trajectories."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.episode.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
RECIPES = ("gsm8k", "hotpotqa", "webshop", "alfworld", "paper_search")


@dataclass
class RunResult:
    trajectories: list[dict[str, Any]]
    output: str

    @property
    def success_rate(self) -> float:
        return sum(bool(t["success"]) for t in self.trajectories) / len(self.trajectories)

    def component(self, name: str) -> float:
        """Mean over episodes of one reward component's episode total."""
        totals = [sum(s["rewards"].get(name, 0.0) for s in t["steps"]) for t in self.trajectories]
        return sum(totals) / len(totals)


def run(spec: str | Path, policy: str, episodes: int, out: Path, *extra: str) -> RunResult:
    """`agentspec run specs/SPEC.yaml --policy POLICY -n EPISODES --out OUT ...`
    (or the spec file `spec` names, when it is a path)."""
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(spec if isinstance(spec, Path) else SPECS / f"{spec}.yaml"),
            "--policy",
            policy,
            "-n",
            str(episodes),
            "--out",
            str(out),
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    lines = (out / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    trajectories = [json.loads(line) for line in lines]
    assert len(trajectories) == episodes
    return RunResult(trajectories, result.output)


def load(spec: str) -> ModuleType:
    """The generated module of a shipped spec (compiled into the test cache)."""
    from agentspec.compiler.build import import_spec

    return import_spec(SPECS / f"{spec}.yaml")


@functools.cache
def tokenizer_of(module: ModuleType) -> Any:
    """The task tokenizer `agentspec run` gives oracle and scripted policies (built once
    per spec module: its corpus is 2,000 generated samples)."""
    from agentspec.compiler.build import cache_dir
    from agentspec.runtime.compiled.task_text import task_tokenizer

    directory = cache_dir() / "recipe-tokenizers" / module.SPEC_NAME
    return task_tokenizer(module, module.load_samples(limit=2000), directory)


def play(module: ModuleType, sample: Mapping[str, Any], actions: Sequence[str]) -> Trajectory:
    """One episode of scripted turns, as `agentspec run --policy scripted:…` plays
    it (with the task tokenizer), without a response length limit."""
    from agentspec.runtime import ScriptedPolicy

    tokenizer = tokenizer_of(module)
    flow = module.FLOW_CLASS(ScriptedPolicy(list(actions), tokenizer), tokenizer)
    flow.config = replace(flow.config, sampling=replace(flow.config.sampling, max_new_tokens=4000))
    trajectory: Trajectory = asyncio.run(flow.run(dict(sample), sample_id="s", group_id="s"))
    return trajectory


def totals(trajectory: Trajectory) -> dict[str, float]:
    out: dict[str, float] = {}
    for step in trajectory.steps:
        for name, value in step.rewards.items():
            out[name] = out.get(name, 0.0) + value
    return out
