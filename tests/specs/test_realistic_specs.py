"""The realistic spec suite (issue 26): specs shaped like the tasks users
bring — a policy-guarded service desk, a crafting game over a dict
inventory, budgeted multi-hop retrieval, a grid puzzle with an oracle hook
(and any other `*.yaml` in tests/specs/realistic/) — each passes
`agentspec validate --strict` and `agentspec test` (its scripted episodes and
its oracle gate), through the real command line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

REALISTIC = Path(__file__).resolve().parent / "realistic"
SPECS = sorted(REALISTIC.glob("*.yaml"))
runner = CliRunner()


@pytest.fixture(autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    if "AGENTSPEC_CACHE" not in os.environ:
        monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def test_the_suite_has_the_shapes_users_bring() -> None:
    names = {path.stem for path in SPECS}
    assert {"service_desk", "crafting", "retrieval", "grid_push"} <= names


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_a_realistic_spec_validates_strictly_and_passes_its_tests(spec: Path) -> None:
    checked = runner.invoke(app, ["validate", "--strict", str(spec)])
    assert checked.exit_code == 0, checked.output
    tested = runner.invoke(app, ["test", str(spec)])
    assert tested.exit_code == 0, tested.output
    assert "episodes[0]" in tested.output, "every realistic spec has scripted episodes"
    assert "oracle gate" in tested.output and "PASSED" in tested.output
    assert " failed" not in tested.output and "SKIPPED" not in tested.output
