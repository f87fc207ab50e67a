"""`agentspec init`: each template validates and its oracle succeeds out of the box."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.init_templates import TEMPLATES, render_starter
from agentspec.spec.schema import language_schema

runner = CliRunner()


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("template", TEMPLATES)
def test_starter_validates_with_no_warnings(template: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["init", "my-task", "--template", template, "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    spec = tmp_path / "my-task.yaml"
    first = spec.read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=./agentspec-1.schema.json"
    schema = json.loads((tmp_path / "agentspec-1.schema.json").read_text())
    assert schema == language_schema()
    result = runner.invoke(app, ["validate", "--strict", str(spec)])
    assert result.exit_code == 0, result.output
    assert "1 valid, 0 invalid (0 errors, 0 warnings)" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("template", TEMPLATES)
def test_starter_oracle_succeeds(template: str, tmp_path: Path) -> None:
    runner.invoke(app, ["init", "starter", "--template", template, "--dir", str(tmp_path)])
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["run", str(tmp_path / "starter.yaml"), "--policy", "oracle", "-n", "5", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    trajectories = [json.loads(line) for line in (out / "trajectories.jsonl").open()]
    assert len(trajectories) == 5
    assert all(t["success"] is True for t in trajectories)
    assert re.search(r"success rate\s*│\s*1\.000 ", result.output), result.output


@pytest.mark.parametrize("template", TEMPLATES)
def test_starter_explores_as_its_header_says(template: str, tmp_path: Path) -> None:
    # the header names what `agentspec explore` finds or warns about (a guessable
    # answer), or nothing; only an X finding fails the search
    runner.invoke(app, ["init", "starter", "--template", template, "--dir", str(tmp_path)])
    spec = tmp_path / "starter.yaml"
    said = re.findall(r"`explore` (?:finds one|warns) here \(([XW]\d+)\)", spec.read_text())
    result = runner.invoke(app, ["explore", str(spec), "--format", "json"])
    found = sorted({f["code"] for f in json.loads(result.stdout)["findings"]} - {"W104"})
    assert found == said, result.output
    assert result.exit_code == (1 if any(code.startswith("X") for code in said) else 0)


def test_init_refuses_to_overwrite_and_bad_names(tmp_path: Path) -> None:
    args = ["init", "task", "--dir", str(tmp_path)]
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "already exists" in result.output
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    result = runner.invoke(app, ["init", "9lives", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "not a valid task name" in result.output
    result = runner.invoke(app, ["init", "x", "--template", "nope", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "tools, state-machine, environment" in result.output


def test_schema_url_instead_of_a_local_copy() -> None:
    text = render_starter("t", "tools", schema="https://example.org/s.json")
    assert text.startswith("# yaml-language-server: $schema=https://example.org/s.json\n")
    assert "name: t\n" in text


@pytest.mark.parametrize("template", TEMPLATES)
def test_starter_passes_agentspec_test(template: str, tmp_path: Path) -> None:
    runner.invoke(app, ["init", "starter", "--template", template, "--dir", str(tmp_path)])
    result = runner.invoke(app, ["test", "--oracle-samples", "4", str(tmp_path / "starter.yaml")])
    assert result.exit_code == 0, result.output
    assert "oracle gate" in result.output
