"""An MCP-style OpenEnv environment's tools in a spec (`mcp.NAME: {url, openenv: true}`):
pinned from a real OpenEnv server (OpenEnv's `MCPEnvironment`, served by OpenEnv's
`create_app` under uvicorn), validated offline, tested, and trained one iteration."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openenv  # noqa: F401 (the openenv extra installs it: a missing install fails)
import pytest
from typer.testing import CliRunner

from agentspec.cli import app

from .helpers import checkout_env, free_port, serving

HERE = Path(__file__).resolve().parent

GUESS = """\
agentspec: 1
name: guess_remote
description: A number-guessing OpenEnv environment whose tool is an MCP tool.
data:
  source: jsonl:guesses.jsonl
  fields: {secret: int}
prompt:
  system: Find the secret number with the guess tool, then answer <answer>N</answer>.
  user: Guess the secret number between 1 and 10.
mcp:
  game:
    url: "URL"
    openenv: true   # an OpenEnv environment: list_tools / call_tool steps
    reset_from_sample: {secret: secret}
episode:
  max_steps: 4
  max_response_tokens: 48
  success: env.total_reward > 0
rewards:
  found: {on: step, value: env.reward}
oracle:
  - '<tool_call>{"name": "guess", "arguments": {"number": 3}}</tool_call>'
  - '<tool_call>{"name": "guess", "arguments": {"number": {{ sample.secret }}}}</tool_call>'
training: {backend: local, algorithm: grpo, model: "builtin:tiny"}
tests:
  oracle: {samples: 4}
  episodes:
    - name: a wrong guess costs, the right one ends the episode
      sample_index: 0
      turns:
        - '<tool_call>{"name": "guess", "arguments": {"number": 2}}</tool_call>'
        - '<tool_call>{"name": "guess", "arguments": {"number": 7}}</tool_call>'
      expect:
        observations: ["<tool_response>\\nhigher\\n</tool_response>", null]
        rewards: {found: 0.9}
        success: true
        ending: done
        steps: 2
    - name: each episode's environment is reset with its sample's secret
      sample_index: 2
      turns:
        - '<tool_call>{"name": "guess", "arguments": {"number": 7}}</tool_call>'
        - '<tool_call>{"name": "guess", "arguments": {"number": 9}}</tool_call>'
      expect:
        observations: ["<tool_response>\\nhigher\\n</tool_response>", null]
        rewards: {found: 0.9}
        success: true
        steps: 2
    - name: a number the environment's tool refuses is a tool error, and no reward
      sample_index: 1
      turns:
        - '<tool_call>{"name": "guess", "arguments": {"number": 11}}</tool_call>'
        - <answer>7</answer>
      expect:
        observations: ["<tool_response>\\nError: guess failed: Error calling tool 'guess': 11 is not between 1 and 10\\n</tool_response>", null]
        rewards: {found: 0.0}
        success: false
        ending: done
        steps: 2
"""


def write_spec(folder: Path, url: str, pins: str | None = None) -> Path:
    secrets = [7, 5, 9, 4, 8, 6, 10, 7]
    rows = [{"id": f"g{i}", "secret": secret} for i, secret in enumerate(secrets)]
    (folder / "guesses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / "guess_remote.yaml"
    text = GUESS.replace("URL", url)
    if pins is not None:
        text = text.replace("    openenv: true", f"{pins}\n    openenv: true", 1)
    spec.write_text(text)
    return spec


def agentspec_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentspec.cli", *args],
        env=checkout_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def guess_url() -> Iterator[str]:
    port = free_port()
    with serving(["uvicorn", "openenv_mcp_server:app", "--port", str(port)], port, HERE) as url:
        yield url


@pytest.fixture(scope="module")
def pinned(guess_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spec, its tools pinned from the running environment by `agentspec mcp pin`."""
    spec = write_spec(tmp_path_factory.mktemp("guess"), guess_url)
    result = CliRunner().invoke(app, ["mcp", "pin", str(spec)])
    assert result.exit_code == 0, result.output
    return spec


def test_pin_reads_the_environments_tools_and_check_agrees(pinned: Path) -> None:
    text = pinned.read_text()
    assert "      guess:\n" in text
    assert '"number": {"type": "integer"}' in text
    assert "the answer is higher, lower or correct" in text
    check = CliRunner().invoke(app, ["mcp", "pin", str(pinned), "--check"])
    assert check.exit_code == 0, check.output


def test_the_pinned_spec_validates_offline(pinned: Path, tmp_path: Path) -> None:
    offline = tmp_path / "guess_remote.yaml"
    text = pinned.read_text()
    url = text.split('url: "', 1)[1].split('"', 1)[0]
    offline.write_text(text.replace(url, f"http://127.0.0.1:{free_port()}"))  # nobody there
    (tmp_path / "guesses.jsonl").write_text((pinned.parent / "guesses.jsonl").read_text())
    result = CliRunner().invoke(app, ["validate", str(offline)])
    assert result.exit_code == 0, result.output


PINS = """\
    tools:
      guess:
        description: "Guess the secret number (1-10)."
        parameters: {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]}"""


def test_the_checker_holds_the_spec_to_the_pins(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    unpinned = write_spec(tmp_path, url)
    result = CliRunner().invoke(app, ["validate", str(unpinned)])
    assert result.exit_code == 1 and "E702" in result.output, result.output
    spec = write_spec(tmp_path, url, PINS)
    text = spec.read_text().replace('"number": {{ sample.secret }}', '"number": "seven"')
    spec.write_text(text)
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1 and "E910" in result.output, result.output
    spec.write_text(text.replace('"name": "guess", "arguments": {"number": 3}', '"name": "gues"'))
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert "E909" in result.output and "guess" in result.output, result.output


def test_env_facts_need_an_environment_or_an_openenv_server(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, f"http://127.0.0.1:{free_port()}", PINS)
    text = spec.read_text().replace("    openenv: true", "    openenv: false")
    spec.write_text(text)
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1, result.output
    assert "`reset` and `reset_from_sample` are for OpenEnv servers" in result.output
    spec.write_text(text.replace("    reset_from_sample: {secret: secret}\n", ""))
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1 and "E407" in result.output, result.output
    assert "an `openenv: true` MCP server" in result.output


def test_reset_from_sample_names_sample_fields(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, f"http://127.0.0.1:{free_port()}", PINS)
    spec.write_text(spec.read_text().replace("{secret: secret}", "{secret: secrett}"))
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1 and "E404" in result.output, result.output
    assert "the samples have no field 'secrett'" in result.output
    assert "did you mean 'secret'" in result.output


def test_an_openenv_server_is_reached_by_url(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "URL", PINS)
    spec.write_text(spec.read_text().replace('url: "URL"', "command: [python, server.py]"))
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1 and "reached by `url`" in result.output, result.output


@pytest.mark.slow
def test_the_spec_passes_its_tests_and_trains_one_iteration(pinned: Path) -> None:
    tested = agentspec_cli("test", str(pinned))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "4 passed" in tested.stdout
    run = pinned.parent / "run"
    settings = ["iterations=1", "warm_start=0", "prompts_per_iteration=4", "group_size=2"]
    settings += ["eval_samples=4", "trace_samples=2", "torch_threads=1"]
    trained = agentspec_cli(
        "train", str(pinned), "--out", str(run), *[a for s in settings for a in ("--set", s)]
    )
    assert trained.returncode == 0, trained.stdout + trained.stderr
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert metrics, "no iteration was recorded"
