"""docs/models.md: its `agentspec prompt` example is the command's real output, its
model-name error and pretrained-model notes are what `train` says, and its
`episode.reasoning` snippet is a valid spec section."""

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


def example(command: str) -> tuple[list[str], str]:
    """The console block whose command starts with `command`: its arguments and output."""
    (console,) = [b for b in blocks("console") if b.startswith(f"$ {command}")]
    line, _, shown = console.partition("\n")
    return shlex.split(line.removeprefix("$ ")), shown


def test_the_prompt_example_is_the_commands_output(monkeypatch) -> None:
    args, shown = example("agentspec prompt")
    monkeypatch.chdir(ROOT)  # the example's spec path is relative to the repository
    result = CliRunner().invoke(app, args[1:])
    assert result.exit_code == 0, result.output
    assert result.stdout == shown, "docs/models.md is stale: paste the command's output"
    assert os.path.exists(ROOT / args[2])


def test_the_reasoning_snippet_is_a_valid_episode_section() -> None:
    snippet = next(b for b in blocks("yaml") if "reasoning" in b)
    episode = EpisodeSpec.model_validate(yaml.safe_load(snippet)["episode"])
    assert episode.reasoning is not None and episode.reasoning.keep_in_history is None


def test_the_model_name_error_is_the_commands_output(monkeypatch, tmp_path) -> None:
    args, shown = example("agentspec train specs/calculator.yaml --set model=smolm2")
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, [*args[1:], "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and result.stderr == shown


def test_the_pretrained_model_notes_are_what_train_says(monkeypatch) -> None:
    from agentspec.compiler.build import import_spec
    from agentspec.runtime.backends.local.config import parse_overrides
    from agentspec.runtime.backends.local.model_defaults import run_settings

    args, shown = example("agentspec train specs/calculator.yaml --set model=smollm2 --set")
    monkeypatch.chdir(ROOT)
    overrides = parse_overrides(a for a in args[3:] if a != "--set")
    settings = run_settings(args[2], import_spec(args[2]).TRAINING, overrides)
    assert "\n".join(settings.notes) + "\n" == shown
