"""docs/models.md: its `agentspec prompt` example is the command's real output, and
its `episode.reasoning` snippet is a valid spec section."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import yaml
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.spec.model import EpisodeSpec

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "models.md"


def blocks(kind: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return re.findall(rf"```{kind}\n(.*?)```", text, flags=re.DOTALL)


def test_the_prompt_example_is_the_commands_output(monkeypatch) -> None:
    (console,) = blocks("console")
    command, _, shown = console.partition("\n")
    args = shlex.split(command.removeprefix("$ "))
    assert args[:2] == ["agentspec", "prompt"]
    monkeypatch.chdir(ROOT)  # the example's spec path is relative to the repository
    result = CliRunner().invoke(app, args[1:])
    assert result.exit_code == 0, result.output
    assert result.stdout == shown, "docs/models.md is stale: paste the command's output"
    assert os.path.exists(ROOT / args[2])


def test_the_reasoning_snippet_is_a_valid_episode_section() -> None:
    snippet = next(b for b in blocks("yaml") if "reasoning" in b)
    episode = EpisodeSpec.model_validate(yaml.safe_load(snippet)["episode"])
    assert episode.reasoning is not None and episode.reasoning.keep_in_history is None
