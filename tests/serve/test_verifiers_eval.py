"""`agentspec compile --target verifiers`: an installable verifiers v1 environment that
`vf-eval` runs offline against a scripted OpenAI-compatible chat server, in verifiers'
own venv (verifiers 0.4 pins mcp==2.0.0, which agentspec's [mcp] cannot share).
The commands are docs/verifiers.md's, run as the page writes them."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.serve.oracle_chat import scripted_chat
from agentspec.runtime.serve.spec import ServedSpec

from .helpers import ROOT, checkout_env, side_venvs

SAMPLES = 3
PAGE = (ROOT / "docs" / "verifiers.md").read_text(encoding="utf-8")


def documented_commands() -> list[list[str]]:
    """The page's "Write, install, run" commands, split as a shell would."""
    section = PAGE.split("## Write, install, run\n", 1)[1]
    (block,) = re.findall(r"```console\n(.*?)```", section, re.S)[:1]
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_vf_eval_runs_the_generated_environment_with_every_reward_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = side_venvs()
    python = Path(side.side_python("verifiers", side.verifiers_installs()))
    compile_command, install, evaluate = documented_commands()
    assert compile_command[:2] == ["agentspec", "compile"] and install[:2] == ["pip", "install"]
    (tmp_path / "specs").symlink_to(ROOT / "specs")
    monkeypatch.chdir(tmp_path)
    made = CliRunner().invoke(app, compile_command[1:])
    assert made.exit_code == 0, made.output
    spec_path = ROOT / "specs" / "calculator.yaml"
    pip = [str(python), "-m", "pip", "install", "-q", "--force-reinstall", *install[2:]]
    installed = subprocess.run(pip, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr

    spec = ServedSpec.load(spec_path)
    oracle = {s["question"]: list(spec.module.oracle_actions(s)) for s in spec.samples()[:SAMPLES]}

    def turns(task: str, taken: int) -> str:
        script = oracle.get(task, [])
        return script[taken] if taken < len(script) else ""

    env = {
        **checkout_env(),
        "SCRIPTED_KEY": "none",
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
    }
    with scripted_chat(turns) as (url, requests):
        assert evaluate[0] == "vf-eval"
        command = [str(python.parent / "vf-eval"), *evaluate[1:]]
        command = [url if part == "http://127.0.0.1:8000/v1" else part for part in command]
        ran = subprocess.run(
            command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900
        )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert len(requests) == 2 * SAMPLES  # the oracle's two turns per episode
    (traces_file,) = (tmp_path / "outputs").rglob("traces.jsonl")
    records = [json.loads(line) for line in traces_file.read_text().splitlines()]
    assert len(records) == SAMPLES
    for record in records:
        (trace,) = record["traces"]
        assert set(trace["rewards"]) == set(spec.reward_names)  # named, not one number
        assert trace["rewards"]["correct"]["score"] == 1.0
        assert trace["metrics"] == {"success": 1.0, "steps": 2.0}
        assert trace["info"]["agentspec_termination"] == "done"
        assert trace["info"]["agentspec_step_rewards"] == [
            {"correct": 0.0, "malformed": 0.0},
            {"correct": 1.0, "malformed": 0.0},
        ]
    # an unknown split is a config error (it was a 28-line traceback from the first load)
    refused = subprocess.run(
        [*command, "--env.taskset.split", "bogus"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "unknown split 'bogus'" in said, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
