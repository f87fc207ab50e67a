"""`agentspec compile --target openenv`: a package OpenEnv's validators accept, that
starts with uvicorn and plays the spec's oracle."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openenv  # noqa: F401 (the openenv extra installs it: a missing install fails)
import pytest
import yaml
from openenv.cli._cli_utils import validate_env_structure
from openenv.cli._validation import validate_multi_mode_deployment
from typer.testing import CliRunner

from agentspec.cli import app

from .helpers import checkout_env, free_port, serving

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("calculator_env")
    spec = ROOT / "specs" / "calculator.yaml"
    result = CliRunner().invoke(app, ["compile", str(spec), "--target", "openenv", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def running(package: Path) -> Iterator[str]:
    """The package's server, started as its README says: uvicorn server.app:app."""
    port = free_port()
    with serving(["uvicorn", "server.app:app", "--port", str(port)], port, cwd=package) as url:
        yield url


def test_the_package_has_openenvs_layout(package: Path) -> None:
    assert validate_env_structure(package) == []
    _, issues = validate_multi_mode_deployment(package)
    # uv.lock pins every dependency from an index; agentspec's own pin is the user's
    # to make (docs/openenv.md), so `uv lock` is the one step left to them.
    assert issues == ["Missing uv.lock - run 'uv lock' to generate it"]


def test_the_validation_block_is_derived_from_the_spec(package: Path) -> None:
    manifest = yaml.safe_load((package / "openenv.yaml").read_text())
    assert manifest["app"] == "server.app:app" and manifest["name"] == "calculator"
    validation = manifest["validation"]
    assert validation["reward"] == {
        "range": [0.0, 1.0],
        "oracle_tolerance": 0.0,
        "floor_margin": 1.0,
    }
    capabilities = validation["capabilities"]
    assert capabilities["declared_tools"] == ["calculator"]
    assert capabilities["declared_task_count"] == {"train": 100_000, "test": 100_000}
    assert capabilities["oracle"] == {"form": "script", "location": "oracle/solve.py"}
    assert (package / "oracle" / "solve.py").is_file()


def test_openenvs_runtime_validator_passes_the_running_package(running: str) -> None:
    report = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "validate", "--url", running],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stdout + report.stderr
    parsed = json.loads(report.stdout)
    assert parsed["passed"] is True
    assert all(c["passed"] for c in parsed["criteria"]), parsed["criteria"]


def solve(package: Path, running: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The package's `oracle/solve.py` against the running server."""
    return subprocess.run(
        [sys.executable, "oracle/solve.py", "--url", running, *args],
        cwd=package,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_packaged_oracle_solves_the_running_package(package: Path, running: str) -> None:
    solved = solve(package, running, "--samples", "3")
    assert solved.returncode == 0, solved.stdout + solved.stderr
    assert solved.stdout.splitlines() == [f"train-{i}: success=True ending=done" for i in range(3)]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--split", "nope"], "unknown split 'nope'"),
        (["--samples", "0"], "play at least 1 sample"),
    ],
)
def test_the_packaged_oracle_refuses_what_it_cannot_play_in_one_line(
    package: Path, running: str, args: list[str], said: str
) -> None:
    refused = solve(package, running, *args)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert said in refused.stderr and "Traceback" not in refused.stderr


def test_the_packaged_oracle_says_which_sample_a_split_lacks() -> None:
    # `solve.py --samples 8` on a split of 5 ended in an IndexError traceback; it now
    # plays at most the split's samples, and play_oracle names an index past them
    import asyncio

    from agentspec.runtime.serve.openenv_client import play_oracle
    from agentspec.runtime.serve.spec import ServedSpec, SessionError

    spec = ROOT / "specs" / "calculator.yaml"
    count = len(ServedSpec.load(spec).samples("test"))
    with pytest.raises(
        SessionError, match=f"the test split has {count} samples: no sample {count}"
    ):
        asyncio.run(play_oracle("http://127.0.0.1:9", spec, "test", count))
