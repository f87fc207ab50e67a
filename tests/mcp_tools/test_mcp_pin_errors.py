"""`agentspec mcp pin` reports the spec's own errors first, as every command does."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

runner = CliRunner()


def pin(path: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["mcp", "pin", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # an empty file is E104, not a missing `mcp:` section
        ("", "{spec}:1:1: error[E104]: the file is empty"),
        (
            "agentspec: 1\nname: x\nprompt: {user: hi}\nrewards:\n  r: {on: final, value: 1.0}\n",
            "{spec} has no `mcp:` servers to pin",
        ),
    ],
    ids=["empty", "no servers"],
)
def test_a_spec_with_nothing_to_pin_says_why(tmp_path: Path, text: str, expected: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    code, output = pin(spec)
    assert code == 1
    assert expected.format(spec=spec) in " ".join(output.split())


def test_yaml_and_schema_errors_are_located(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text("agentspec: 1\nname: x\nprompt: {user: hi\n")
    code, output = pin(spec)
    assert code == 1 and "error[E101]" in output
    spec.write_text(
        "agentspec: 1\nname: x\nprompt: {user: hi}\nmcp:\n  calc: {command: [python, s.py], timout: 3}\n"
    )
    code, output = pin(spec)
    assert code == 1 and "error[E201]: unknown key 'timout'" in output


def test_unpinned_tools_do_not_stop_pinning(tmp_path: Path) -> None:
    """E702 (tools not pinned) is what pinning fixes: the command goes on to the server."""
    spec = tmp_path / "unpinned.yaml"
    spec.write_text(
        "agentspec: 1\nname: x\nprompt: {user: hi}\nmcp:\n  calc: {command: [nonexistent-mcp-server-xyz]}\n"
    )
    code, output = pin(spec)
    assert code == 1
    assert "error[E" not in output and "mcp.calc:" in output


def test_a_server_that_never_answers_is_said_to_time_out(tmp_path: Path) -> None:
    # it was "exited before it answered" while the process still ran
    spec = tmp_path / "hung.yaml"
    spec.write_text(
        "agentspec: 1\nname: x\nprompt: {user: hi}\n"
        "mcp:\n  hung: {command: [sleep, '1000'], timeout: 1}\n"
    )
    code, output = pin(spec)
    assert code == 1
    assert "MCP server 'hung' (sleep 1000) did not answer within its timeout (1 s)" in output
