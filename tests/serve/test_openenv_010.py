"""`openenv` 0.10 (OpenEnv's other distribution; it pins mcp<2, so it lives in a venv of
its own): its manifest validator accepts the generated package, and `agentspec serve`
runs on it, its own Task API routes and runtime validator included."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

from .helpers import ROOT, agentspec_serve, checkout_env, free_port, serving, side_venvs

CLIENT = """
import asyncio, json, sys
import httpx
from openenv.core.generic_client import GenericEnvClient

url = sys.argv[1]

async def episode():
    async with GenericEnvClient(base_url=url) as env:
        first = await env.reset(split="test", index=3)
        call = {"name": "calculator", "arguments": {"expression": "15 * 30"}}
        mid = await env.step({"text": "", "tool_calls": [call]})
        last = await env.step({"text": "<answer>450</answer>"})
        return first.observation["sample_id"], mid.observation["text"], last.reward, last.done

with httpx.Client(base_url=url) as http:
    tasks = {
        "splits": http.get("/calculator/splits").json(),
        "num_tasks": http.post("/calculator/num_tasks", json={"split": "test"}).json(),
        "task": http.post("/calculator/task", json={"split": "test", "index": 3}).json(),
    }
print(json.dumps({"episode": asyncio.run(episode()), **tasks}))
"""


@pytest.fixture(scope="module")
def python() -> Path:
    side = side_venvs()
    return Path(
        side.side_python("openenv-0.10", [[*side.agentspec_requirements(), "openenv==0.10.*"]])
    )


def run(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *args], env=checkout_env(), capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_openenv_010s_manifest_validator_accepts_the_package(python: Path, tmp_path: Path) -> None:
    out = tmp_path / "calculator_env"
    spec = ROOT / "specs" / "calculator.yaml"
    made = CliRunner().invoke(app, ["compile", str(spec), "--target", "openenv", "-o", str(out)])
    assert made.exit_code == 0, made.output
    checked = run(
        python,
        "-m",
        "openenv.cli",
        "validate",
        str(out),
        "--level",
        "static",
        "--skip-build",
        "--json",
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["verdict"] in ("pass", "warn"), report
    failed = [r for r in report["results"] if r["status"] in ("fail", "error")]
    assert failed == []


@pytest.mark.slow
def test_agentspec_serve_runs_on_openenv_010(python: Path) -> None:
    port = free_port()
    spec = ROOT / "specs" / "calculator.yaml"
    with serving(agentspec_serve(spec, port), port, python=python) as url:
        played = run(python, "-c", CLIENT, url)
        assert played.returncode == 0, played.stderr
        seen = json.loads(played.stdout)
        validated = run(python, "-m", "openenv.cli", "validate", "--url", url)
    assert seen["episode"] == ["test-3", "<tool_response>\n450\n</tool_response>", 1.0, True]
    assert seen["splits"] == [{"name": "train", "type": "train"}, {"name": "test", "type": "test"}]
    assert seen["num_tasks"] == {"num_tasks": 100_000}
    assert seen["task"]["task"]["id"] == "test-3"
    assert validated.returncode == 0, validated.stdout + validated.stderr
