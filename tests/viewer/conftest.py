"""Fixtures for the report tests: real `agentspec run` traces and a real short training run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "specs" / "calculator.yaml"
ARTIFACTS = ROOT / "test-artifacts"

TRAIN_OVERRIDES = {
    "iterations": "2",
    "warm_start": "20",
    "eval_every": "1",
    "eval_samples": "4",
    "prompts_per_iteration": "4",
    "group_size": "2",
    "epochs": "1",
}


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One private compile/tokenizer cache for the session's runs."""
    cache = tmp_path_factory.mktemp("agentspec-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENTSPEC_CACHE", str(cache))
        yield cache


@pytest.fixture(scope="session")
def run_traces(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    """`agentspec run` output (oracle and random episodes in one trajectories.jsonl)."""
    base = tmp_path_factory.mktemp("run-traces")
    lines: list[str] = []
    for policy in ("oracle", "random"):
        out = base / policy
        result = CliRunner().invoke(
            app, ["run", str(CALCULATOR), "--policy", policy, "-n", "6", "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        text = (out / "trajectories.jsonl").read_text(encoding="utf-8")
        lines += [line for line in text.split("\n") if line]
    merged = base / "mixed"
    merged.mkdir()
    (merged / "trajectories.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return merged


@pytest.fixture(scope="session")
def train_run(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    """A real two-iteration training run of the calculator spec (local backend, CPU)."""
    try:
        from agentspec.runtime.backends.local import train
    except ImportError as exc:  # pragma: no cover - depends on the trainer being present
        pytest.fail(
            "the report test needs a real training run, but the local trainer "
            f"(agentspec.runtime.backends.local.train) cannot be imported: {exc}",
            pytrace=False,
        )
    out = tmp_path_factory.mktemp("train-run") / "calculator-steppo"
    return Path(train(CALCULATOR, out, dict(TRAIN_OVERRIDES)))


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]
