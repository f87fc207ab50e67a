"""One training iteration against the retail desk's rule-based user, on each
backend's CPU path: the user's replies are in the trained episodes (their steps'
`info.user`, their observations), and the run ends cleanly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "retail_desk.yaml"


def test_one_local_iteration_against_the_user(tmp_path: Path) -> None:
    run = tmp_path / "run"
    settings = ["iterations=1", "warm_start=10", "prompts_per_iteration=4", "group_size=2"]
    settings += ["eval_samples=4", "eval_every=1"]
    command = [sys.executable, "-m", "agentspec.cli", "train", str(SPEC), "--out", str(run)]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    episodes = [
        json.loads(x) for x in (run / "traces" / "iter_000001.jsonl").read_text().splitlines()
    ]
    heard = [s["info"]["user"] for e in episodes for s in e["steps"] if "user" in s["info"]]
    assert heard, "no episode of the iteration reached the user"
    # a reply the agent saw is its step's observation, never its response
    step = next(
        s
        for e in episodes
        for s in e["steps"]
        if "user" in s["info"] and not s["info"]["user"]["ended"]
    )
    assert step["observation"] == step["info"]["user"]["reply"]


def test_one_verl_iteration_against_the_user(tmp_path: Path) -> None:
    pytest.importorskip("verl")
    sys.path.insert(0, str(ROOT / "tests" / "verl"))
    from verl_helpers import SMALL, warm_started_tiny

    from agentspec.runtime.backends.verl.launcher import train_verl
    from agentspec.runtime.backends.verl.run_folder import build_verl_target

    run = tmp_path / "run"
    settings = {**SMALL, "iterations": "1", "algorithm": "grpo"}
    target, _ = build_verl_target(SPEC, run / "target", training=settings)
    warm_started_tiny(target.module, target.model_dir, steps=60)
    train_verl(SPEC, run, {**settings, "data.val_max_samples": "4"}, None)
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert any(m.get("iteration") == 1 for m in metrics)
    validation = "".join(p.read_text() for p in (run / "validation").glob("*.jsonl"))
    # the warm-started agent asks, and the user's replies come back as observations
    assert "It's " in validation or "Sorry, I don't follow" in validation
