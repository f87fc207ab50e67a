"""A task on a real third-party MCP server: tests/specs/realistic/mcp_time.yaml plays
`mcp-server-time` from PyPI (in the `dev` extra; it shares our `mcp` SDK version)."""

from __future__ import annotations

from pathlib import Path

import mcp_server_time  # noqa: F401 (the dev extra installs it: a missing install fails)
import pytest
from typer.testing import CliRunner

from agentspec.cli import app

SPEC = Path(__file__).resolve().parents[1] / "specs" / "realistic" / "mcp_time.yaml"
runner = CliRunner()


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


def test_the_spec_is_valid_and_its_pins_are_current() -> None:
    result = runner.invoke(app, ["validate", "--strict", str(SPEC)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["mcp", "pin", "--check", str(SPEC)])
    assert result.exit_code == 0, result.output
    assert "up to date" in result.output


def test_agentspec_test_plays_its_episodes_and_oracle_on_the_server() -> None:
    result = runner.invoke(app, ["test", str(SPEC)])
    assert result.exit_code == 0, result.output
    assert "5 passed" in result.output
    # the scripted episodes include the server's own error results
    assert "an unknown timezone is the server's error" in result.output
