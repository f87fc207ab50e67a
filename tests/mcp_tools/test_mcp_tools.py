"""Tools from a real MCP server: tests/mcp_tools/units_server.py (the official SDK, over stdio).

Every test that talks to the server starts it through the spec's `command`, as
users' specs do; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentspec.cli import app

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SPEC = HERE / "units.yaml"
runner = CliRunner()


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


def _copy(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    """The units spec, its server and data in a fresh folder, with text ``edits`` (old, new)."""
    folder = tmp_path / "task"
    folder.mkdir(parents=True)
    shutil.copy(HERE / "units_server.py", folder)
    shutil.copytree(HERE / "data", folder / "data")
    text = SPEC.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    spec = folder / "units.yaml"
    spec.write_text(text)
    return spec


PINS = SPEC.read_text()[
    SPEC.read_text().index("    tools:\n") : SPEC.read_text().index("\nepisode:")
]
COMMAND = "command: [python, units_server.py]"
ORACLE_CALL = (
    '{"name": "convert", "arguments": {"value": {{ sample.value }}, "source":'
    ' {{ sample.source | tojson }}, "target": {{ sample.target | tojson }}}}'
)


def test_validate_reads_only_the_pins() -> None:
    code = (
        "import sys\n"
        "from agentspec.compiler.frontend import check_file\n"
        f"result = check_file({str(SPEC)!r})\n"
        "assert result.ok, result.diagnostics\n"
        "print('mcp' in sys.modules, 'torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.split() == ["False", "False"]  # no SDK, no server, no torch


def test_pin_writes_the_servers_tools_and_check_finds_drift(tmp_path: Path) -> None:
    committed = yaml.safe_load(SPEC.read_text())["mcp"]["units"]["tools"]
    spec = _copy(tmp_path, (PINS, ""))
    assert runner.invoke(app, ["validate", str(spec)]).exit_code == 1  # E702: not pinned

    result = runner.invoke(app, ["mcp", "pin", str(spec)])
    assert result.exit_code == 0, result.output
    assert "new tool 'convert'" in result.output
    assert yaml.safe_load(spec.read_text())["mcp"]["units"]["tools"] == committed
    assert runner.invoke(app, ["validate", str(spec)]).exit_code == 0
    result = runner.invoke(app, ["mcp", "pin", str(spec), "--check"])
    assert result.exit_code == 0 and "up to date" in result.output

    spec.write_text(spec.read_text().replace("Add two numbers.", "Add numbers."))
    result = runner.invoke(app, ["mcp", "pin", str(spec), "--check"])
    assert result.exit_code == 1
    assert "tool 'add' changed" in result.output and "out of date" in result.output


def test_pin_keeps_comments_and_handles_a_flow_style_server(tmp_path: Path) -> None:
    spec = _copy(tmp_path)
    text = SPEC.read_text()
    start = text.index("mcp:\n")
    end = text.index("\nepisode:")
    spec.write_text(
        text[:start]
        + "mcp:\n  units: {command: python units_server.py, timeout: 20}\n"
        + text[end:]
    )
    result = runner.invoke(app, ["mcp", "pin", str(spec)])
    assert result.exit_code == 0, result.output
    pinned = spec.read_text()
    assert pinned.startswith("# Unit conversion with tools taken from an MCP server")
    assert set(yaml.safe_load(pinned)["mcp"]["units"]["tools"]) == {"convert", "add", "wait"}
    assert runner.invoke(app, ["validate", str(spec)]).exit_code == 0


def test_pin_keeps_a_comment_that_ends_the_server(tmp_path: Path) -> None:
    include = "include: [convert, add]"
    spec = _copy(tmp_path, (PINS, ""), (include, include + "   # the two we use"))
    result = runner.invoke(app, ["mcp", "pin", str(spec)])
    assert result.exit_code == 0, result.output
    lines = spec.read_text().splitlines()
    at = lines.index("    include: [convert, add]   # the two we use")
    assert lines[at + 1] == "    tools:"
    assert runner.invoke(app, ["mcp", "pin", "--check", str(spec)]).exit_code == 0


def test_tool_rewards_read_an_mcp_result_as_text(tmp_path: Path) -> None:
    reward = 'value: "0.1 if result == sample.answer else 0.0"'
    assert runner.invoke(app, ["validate", str(_copy(tmp_path / "a"))]).exit_code == 0
    spec = _copy(tmp_path / "b", (reward, 'value: "result + 1"'))
    result = runner.invoke(app, ["validate", str(spec)])
    assert "E501" in result.output and "between str and int" in result.output


def test_pin_reports_a_server_that_does_not_start(tmp_path: Path) -> None:
    spec = _copy(tmp_path, (COMMAND, "command: python missing.py"))
    result = runner.invoke(app, ["mcp", "pin", str(spec)])
    assert result.exit_code == 1
    assert "error: mcp.units:" in result.output and "Traceback" not in result.output


def test_the_oracle_succeeds_through_the_server(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["run", str(SPEC), "--policy", "oracle", "-n", "8", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "success rate     │ 1.000" in result.output
    assert "tool error rate  │ 0.000" in result.output
    from agentspec.runtime.episode.trajectory import read_jsonl

    for traj in read_jsonl(out / "trajectories.jsonl"):
        assert traj.success and traj.steps[0].has_event("tool:convert")
        assert traj.reward_components()["converted"] == pytest.approx(0.1)


def _episode(spec: Path, turns: list[str]) -> Any:
    """One scripted episode, tokenised by the task tokenizer (as `agentspec run` does)."""
    from agentspec.compiler.build import import_spec
    from agentspec.runtime import ScriptedPolicy, run_episodes
    from agentspec.runtime.compiled.task_text import task_bpe_tokenizer

    module = import_spec(spec)
    samples = module.load_samples()
    tok = task_bpe_tokenizer(module, samples, spec.parent / "tokenizer")
    flow = module.FLOW_CLASS(ScriptedPolicy(turns, tok), tok)
    (traj,) = asyncio.run(run_episodes(flow, samples[:1]))
    return traj


def _call(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def _tool_errors(traj: Any) -> list[tuple[str, str]]:
    return [(e.code, e.message) for s in traj.steps for e in s.events if e.kind == "tool_error"]


def test_server_errors_and_bad_arguments_are_tool_errors(tmp_path: Path) -> None:
    turns = [
        _call("convert", value=1, source="parsec", target="m"),  # the server's error result
        _call("convert", value="one", source="m", target="cm"),  # fails the pinned schema
        _call("add", a=2, b=3),
    ]
    traj = _episode(_copy(tmp_path), turns)
    errors = _tool_errors(traj)
    assert errors[0][0] == "failed" and "unknown unit 'parsec'" in errors[0][1]
    assert errors[1][0] == "invalid_arguments"
    assert traj.steps[2].observation == "<tool_response>\n5\n</tool_response>"
    assert len(traj.steps) == 3 and traj.termination.value == "max_steps"  # the run went on


def test_half_a_character_in_the_arguments_never_reaches_the_server(tmp_path: Path) -> None:
    # the model's `"\\ud800"` closed the shared server's connection: other episodes'
    # calls failed with it, and fresh ones during the restart back-off
    turns = [
        '<tool_call>{"name": "convert", "arguments": {"value": 1, "source": "\\ud800",'
        ' "target": "m"}}</tool_call>',
        _call("add", a=2, b=3),
    ]
    traj = _episode(_copy(tmp_path), turns)
    code, message = _tool_errors(traj)[0]  # the server's own answer to a unit it lacks
    assert code == "failed" and "unknown unit '\ufffd'" in message
    assert traj.steps[1].observation == "<tool_response>\n5\n</tool_response>"


def test_arguments_no_wire_can_carry_are_named_before_the_call() -> None:
    from agentspec.runtime.mcp.tools import unsendable_reason

    assert unsendable_reason({"a": "x", "n": [1, 2.5]}) is None
    assert "surrogates not allowed" in (unsendable_reason({"a": "\ud800"}) or "")
    assert "Out of range float" in (unsendable_reason({"n": float("nan")}) or "")


def test_a_slow_call_times_out_with_the_specs_timeout(tmp_path: Path) -> None:
    wait = (
        "    tools:\n"
        "      wait:\n"
        '        description: "Wait."\n'
        '        parameters: {"type": "object", "properties": {"seconds": {"type": "number"}}}\n'
    )
    spec = _copy(
        tmp_path,
        ("timeout: 20", "timeout: 2"),
        ("include: [convert, add]", "include: [wait]"),
        (PINS, wait),
        ('  converted: {on: "tool:convert"', '  # converted: {on: "tool:convert"'),
        (ORACLE_CALL, '{"name": "wait", "arguments": {"seconds": 0}}'),
    )
    traj = _episode(spec, [_call("wait", seconds=30), _call("wait", seconds=0)])
    assert _tool_errors(traj)[0][0] == "timeout"
    assert traj.steps[1].observation == "<tool_response>\nwaited\n</tool_response>"


def test_a_server_that_does_not_start_fails_its_calls_not_the_run(tmp_path: Path) -> None:
    spec = _copy(tmp_path, (COMMAND, "command: [python, missing.py]"))
    traj = _episode(spec, [_call("add", a=1, b=2), "<answer>3</answer>"])
    code, message = _tool_errors(traj)[0]
    assert code == "unavailable"
    assert message.startswith("add failed: MCP server 'units' (python missing.py) exited")
    assert "can't open file" in message and "missing.py" in message  # python's own words
    assert traj.termination.value == "done"


@pytest.mark.slow
def test_training_two_iterations_on_mcp_tools(tmp_path: Path) -> None:
    out = tmp_path / "train"
    result = runner.invoke(app, ["train", str(SPEC), "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    iterations = {r["iteration"] for r in records if "iteration" in r}
    assert {1, 2} <= iterations


@pytest.fixture
def http_server() -> Any:
    """The same server over Streamable HTTP, in its own process."""
    import time

    import httpx
    from serve.helpers import free_port  # below the ephemeral range: no client takes it

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "units_server.py", "--http", str(port)],
        cwd=HERE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(600):  # the server imports the SDK first: wait until it listens
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_server_reached_by_url(tmp_path: Path, http_server: str) -> None:
    spec = _copy(tmp_path, (COMMAND, f"url: {http_server}"), (PINS, ""))
    result = runner.invoke(app, ["mcp", "pin", str(spec)])
    assert result.exit_code == 0, result.output
    assert "mcp.units: 2 tools (convert, add)" in result.output
    traj = _episode(
        spec, [_call("convert", value=2, source="km", target="m"), "<answer>0</answer>"]
    )
    assert traj.steps[0].observation == "<tool_response>\n2000\n</tool_response>"
    assert traj.steps[0].has_event("tool:convert") and traj.termination.value == "done"
