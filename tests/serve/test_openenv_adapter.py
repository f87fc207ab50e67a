"""`environment: {adapter: openenv}`: a running OpenEnv server as a spec's environment —
an agentspec spec served by `agentspec serve --openenv`, and OpenEnv's own example
environment (the echo environment `openenv init` writes)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openenv  # noqa: F401 (the openenv extra installs it: a missing install fails)
import pytest
from typer.testing import CliRunner

from agentspec.cli import app

from .helpers import ROOT, agentspec_serve, checkout_env, free_port, serving

REMOTE_CALCULATOR = """\
agentspec: 1
name: remote_calculator
description: The calculator spec, played through its OpenEnv server.
data:
  source: generator:arithmetic
  params: {min_ops: 1, max_ops: 1, max_value: 50}
  fields: {question: str, expression: str, answer: int}
prompt:
  system: Use the calculator tool, then answer as <answer>N</answer>.
  user: Your task.
environment:
  adapter: openenv
  config: {url: "URL", reset_from_sample: {sample_id: id}}
episode:
  max_steps: 4
  max_response_tokens: 48
  done_when: env.done
  success: env.total_reward >= 1.0
rewards:
  task: {on: step, value: env.reward}
oracle:
  - '<tool_call>{"name": "calculator", "arguments": {"expression": {{ sample.expression | tojson }}}}</tool_call>'
  - "<answer>{{ sample.answer }}</answer>"
training: {backend: local, algorithm: grpo, model: "builtin:tiny"}
tests:
  oracle: {samples: 4}
  episodes:
    - name: the served spec's tool answers, a wrong answer scores nothing
      sample_index: 0
      turns:
        - '<tool_call>{"name": "calculator", "arguments": {"expression": "30 * 14"}}</tool_call>'
        - <answer>421</answer>
      expect:
        observations: ["<tool_response>\\n420\\n</tool_response>", null]
        rewards: {task: 0.0}
        success: false
        ending: done
        steps: 2
    - name: a malformed call costs what the served spec says
      sample_index: 1
      turns: ["<tool_call>{</tool_call>", "<answer>77</answer>"]
      expect: {rewards: {task: -0.2}, parse_errors: 0, steps: 2}
"""

ECHO = """\
agentspec: 1
name: echo_remote
description: OpenEnv's echo environment; its reward is 0.1 per character echoed.
prompt:
  user: Say something.
environment:
  adapter: openenv
  config: {url: "URL", action_field: message}
episode: {max_steps: 2}
rewards:
  echo: {on: step, value: env.reward}
tests:
  episodes:
    - name: the environment echoes and rewards each message
      sample: {}
      turns: [hello, hi]
      expect:
        observations: [hello, hi]
        rewards: {echo: 0.7}
        ending: max_steps
        steps: 2
"""


def agentspec_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentspec.cli", *args],
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def calculator_url() -> Iterator[str]:
    port = free_port()
    with serving(agentspec_serve(ROOT / "specs" / "calculator.yaml", port, 16), port) as url:
        yield url


def test_a_spec_on_an_openenv_server_validates_offline(tmp_path: Path) -> None:
    spec = tmp_path / "remote_calculator.yaml"
    spec.write_text(REMOTE_CALCULATOR.replace("URL", f"http://127.0.0.1:{free_port()}"))
    result = CliRunner().invoke(app, ["validate", str(spec)])  # nothing listens there
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_a_spec_on_a_served_spec_passes_its_tests_and_trains(
    calculator_url: str, tmp_path: Path
) -> None:
    spec = tmp_path / "remote_calculator.yaml"
    spec.write_text(REMOTE_CALCULATOR.replace("URL", calculator_url))
    tested = agentspec_cli("test", str(spec))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "3 passed" in tested.stdout
    run = tmp_path / "run"
    settings = ["iterations=1", "warm_start=0", "prompts_per_iteration=4", "group_size=2"]
    settings += ["eval_samples=4", "trace_samples=2", "torch_threads=1"]
    trained = agentspec_cli(
        "train", str(spec), "--out", str(run), *[a for s in settings for a in ("--set", s)]
    )
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert (run / "metrics.jsonl").is_file()


@pytest.fixture(scope="module")
def echo_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """OpenEnv's own example environment, as `openenv init` writes it, under uvicorn."""
    where = tmp_path_factory.mktemp("openenv-init")
    made = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "init", "echo_env", "--output-dir", str(where)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    port = free_port()
    with serving(
        ["uvicorn", "server.app:app", "--port", str(port)], port, where / "echo_env"
    ) as url:
        yield url


def test_a_spec_on_openenvs_echo_environment_passes_its_tests(
    echo_url: str, tmp_path: Path
) -> None:
    spec = tmp_path / "echo_remote.yaml"
    spec.write_text(ECHO.replace("URL", echo_url))
    tested = agentspec_cli("test", str(spec))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "1 passed" in tested.stdout


def test_the_pages_remote_echo_spec_plays_on_openenvs_echo_environment(
    echo_url: str, tmp_path: Path
) -> None:
    # docs/openenv.md's example as written (its URL aside): it had no `data:`, so
    # `run` and `train` refused it
    import re

    page = (ROOT / "docs" / "openenv.md").read_text(encoding="utf-8")
    example = next(b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if "remote_echo" in b)
    spec = tmp_path / "remote_echo.yaml"
    spec.write_text(example.replace("http://127.0.0.1:8001", echo_url))
    (tmp_path / "topics.jsonl").write_text('{"id": "t1", "topic": "tea"}\n')
    out = tmp_path / "out"
    played = agentspec_cli("run", str(spec), "--policy", "random", "-n", "2", "--out", str(out))
    assert played.returncode == 0, played.stdout + played.stderr
    assert (out / "trajectories.jsonl").read_text().count("\n") == 2


def test_concurrent_episodes_wait_for_the_servers_one_session(
    echo_url: str, tmp_path: Path
) -> None:
    """The echo environment holds one session: 3 of 4 concurrent episodes failed (some
    with `ConnectionClosedOK`). `capacity` (default 1) makes them take turns."""
    import re

    page = (ROOT / "docs" / "openenv.md").read_text(encoding="utf-8")
    example = next(b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if "remote_echo" in b)
    spec = tmp_path / "remote_echo.yaml"
    spec.write_text(example.replace("http://127.0.0.1:8001", echo_url))
    topics = "".join(f'{{"id": "t{i}", "topic": "tea {i}"}}\n' for i in range(4))
    (tmp_path / "topics.jsonl").write_text(topics)
    out = tmp_path / "out"
    played = agentspec_cli("run", str(spec), "--policy", "random", "-n", "4", "--out", str(out))
    assert played.returncode == 0, played.stdout + played.stderr
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 4
    assert not [line for line in lines if "env_error" in line], lines


def test_a_capacity_that_is_not_a_count_is_refused() -> None:
    from agentspec.stdlib.openenv_env import OpenEnvAdapter

    with pytest.raises(ValueError, match="capacity must be an integer >= 1"):
        OpenEnvAdapter(url="http://127.0.0.1:1", capacity=0)
