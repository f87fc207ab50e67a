"""The verifiers target when the agent stops before the episode ends: the steps it
played, and their rewards (a policy penalty included), still count, and the ending
is recorded as `agent_stopped`. Run by `vf-eval` in verifiers' own venv, as
tests/serve/test_verifiers_eval.py runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.serve.oracle_chat import scripted_chat
from agentspec.runtime.serve.spec import ServedSpec

from .helpers import ROOT, checkout_env, side_venvs

NOT_A_RESERVATION = (
    '<tool_call>{"name": "cancel_reservation", "arguments": {"reservation_id": "NOPE"}}</tool_call>'
)


@pytest.mark.slow
def test_an_agent_that_stops_first_keeps_the_rewards_of_the_steps_it_played(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = side_venvs()
    python = Path(side.side_python("verifiers", side.verifiers_installs()))
    spec_path = ROOT / "specs" / "airline_service.yaml"
    monkeypatch.chdir(tmp_path)
    build = tmp_path / "build" / "airline_service_vf"
    made = CliRunner().invoke(
        app, ["compile", str(spec_path), "--target", "verifiers", "-o", str(build)]
    )
    assert made.exit_code == 0, made.output
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(build)]
    installed = subprocess.run(pip, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr

    env = {
        **checkout_env(),
        "SCRIPTED_KEY": "none",
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
    }
    # One reply, a refused cancellation (the guard fails: policy_violation -0.5); then the
    # agent's one turn is spent and it stops, the episode unfinished.
    with scripted_chat(lambda task, taken: NOT_A_RESERVATION if taken == 0 else "") as (
        url,
        requests,
    ):
        command = [
            str(python.parent / "vf-eval"),
            "airline_service_vf",
            "--env.taskset.limit",
            "1",
            "--env.player.max_turns",
            "1",
            "--env.player.harness.id",
            "null",
            "--env.player.runtime.type",
            "subprocess",
            "--model",
            "oracle",
            "--client.base-url",
            url,
            "--client.api-key-var",
            "SCRIPTED_KEY",
            "--no-push",
            "-o",
            "outputs",
        ]
        ran = subprocess.run(
            command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900
        )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert len(requests) == 1
    (traces_file,) = (tmp_path / "outputs").rglob("traces.jsonl")
    ((trace,),) = [json.loads(line)["traces"] for line in traces_file.read_text().splitlines()]
    names = ServedSpec.load(spec_path).reward_names
    assert set(trace["rewards"]) == set(names)
    assert trace["rewards"]["policy_violation"]["score"] == -0.5
    assert trace["metrics"] == {"success": 0.0, "steps": 1.0}
    assert trace["info"]["agentspec_termination"] == "agent_stopped"
    (step,) = trace["info"]["agentspec_step_rewards"]
    assert set(step) == set(names) and step["policy_violation"] == -0.5
