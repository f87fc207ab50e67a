"""`agentspec compile` runs nothing of the spec's own for any target (issue 52, item 1):
a spec whose every hook (module import, generator, function, oracle hook, custom context)
and MCP server writes a canary file compiles for python, verl, openenv, trl and verifiers
without one line of it running. `--run-spec-code` is the one way to let it run (the
control: the same canary then appears, so the check can fail)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agentspec.cli import app

runner = CliRunner()
MCP_TOOLS = Path(__file__).resolve().parents[1] / "mcp_tools"
TARGETS = ["python", "verl", "openenv", "trl", "verifiers"]

HOOKS = """\
from pathlib import Path

CANARY = Path({canary!r})


def ran(what):
    with CANARY.open("a") as out:
        out.write(what + "\\n")


ran("import")


def samples(*, split="train"):
    ran("generator")
    for i in range(12):
        yield {{"id": f"{{split}}-{{i}}", "word": f"w{{i}}"}}


def shout(text):
    ran("function")
    return text.upper()


def oracle(sample):
    ran("oracle hook")
    return ["<answer>" + sample["word"].upper() + "</answer>"]


def context(**settings):
    ran("custom context")
    raise RuntimeError("never built")
"""

SPEC = """\
agentspec: 1
name: canary_hooks
description: Say the word loud.
data:
  source: generator:canary_hooks:samples
  fields: {id: str, word: str}
functions:
  shout: {impl: "canary_hooks:shout", params: [str], returns: str}
prompt:
  user: "Say {{ sample.word }} loud as <answer>WORD</answer>."
episode: {max_steps: 1, max_response_tokens: 32}
rewards:
  correct:
    on: final
    value: "1.0 if extract(action.text, '<answer>(.*?)</answer>') == shout(sample.word) else 0.0"
oracle: {hook: "canary_hooks:oracle"}
training: {eval_samples: 4}
"""


@pytest.fixture(autouse=True)
def fresh_module() -> Iterator[None]:
    sys.modules.pop("canary_hooks", None)
    yield
    sys.modules.pop("canary_hooks", None)


def hooked_spec(folder: Path, canary: Path) -> Path:
    folder.mkdir()
    (folder / "canary_hooks.py").write_text(HOOKS.format(canary=str(canary)))
    spec = folder / "canary_hooks.yaml"
    spec.write_text(SPEC)
    return spec


def mcp_spec(folder: Path, canary: Path) -> Path:
    """units.yaml, whose MCP server writes the canary when it starts."""
    shutil.copytree(MCP_TOOLS, folder, ignore=shutil.ignore_patterns("*.py[co]", "__pycache__"))
    server = folder / "units_server.py"
    start = f"open({str(canary)!r}, 'a').write('mcp server\\n')\n"
    future = "from __future__ import annotations\n"  # must stay the first statement
    server.write_text(server.read_text().replace(future, future + start, 1))
    return folder / "units.yaml"


def compile_(spec: Path, target: str, out: Path, *flags: str) -> tuple[int, str]:
    result = runner.invoke(app, ["compile", str(spec), "--target", target, "-o", str(out), *flags])
    return result.exit_code, result.output


@pytest.mark.parametrize("target", TARGETS)
def test_no_hook_runs_when_compiling(tmp_path: Path, target: str) -> None:
    canary = tmp_path / "canary.log"
    spec = hooked_spec(tmp_path / "spec", canary)
    code, output = compile_(spec, target, tmp_path / "out")
    assert not canary.exists(), f"{target} ran: {canary.read_text()}"
    assert "Traceback" not in output
    if target == "verl":  # its parquet holds samples only the generator makes: refused, located
        assert code == 1, output
        assert "--run-spec-code" in output
        assert "canary_hooks.yaml:5:" in output and "(data.source)" in output
    else:
        assert code == 0, output


@pytest.mark.parametrize("target", TARGETS)
def test_no_mcp_server_starts_when_compiling(tmp_path: Path, target: str) -> None:
    canary = tmp_path / "canary.log"
    spec = mcp_spec(tmp_path / "spec", canary)
    code, output = compile_(spec, target, tmp_path / "out")
    assert code == 0, output
    assert not canary.exists(), f"{target} started the server"


def test_the_openenv_manifest_says_what_was_not_measured(tmp_path: Path) -> None:
    spec = hooked_spec(tmp_path / "spec", tmp_path / "canary.log")
    code, output = compile_(spec, "openenv", tmp_path / "out")
    assert code == 0, output
    text = (tmp_path / "out" / "openenv.yaml").read_text()
    assert "compile with --run-spec-code to measure it" in text
    validation = yaml.safe_load(text)["validation"]
    assert "reward" not in validation
    assert "declared_task_count" not in validation["capabilities"]
    assert "--run-spec-code" in output


@pytest.mark.slow
def test_run_spec_code_runs_it(tmp_path: Path) -> None:
    """The control: asked to, openenv measures by playing, and every hook runs."""
    canary = tmp_path / "canary.log"
    spec = hooked_spec(tmp_path / "spec", canary)
    code, output = compile_(spec, "openenv", tmp_path / "out", "--run-spec-code")
    assert code == 0, output
    ran = set(canary.read_text().splitlines())
    assert {"import", "generator", "function", "oracle hook"} <= ran
    assert (
        "range"
        in yaml.safe_load((tmp_path / "out" / "openenv.yaml").read_text())["validation"]["reward"]
    )


def test_run_spec_code_starts_the_mcp_server_to_measure(tmp_path: Path) -> None:
    canary = tmp_path / "canary.log"
    spec = mcp_spec(tmp_path / "spec", canary)
    code, output = compile_(spec, "openenv", tmp_path / "out", "--run-spec-code")
    assert code == 0, output
    assert "mcp server" in canary.read_text()


def test_a_spec_without_code_is_measured_without_the_flag(tmp_path: Path) -> None:
    spec = Path(__file__).resolve().parents[2] / "specs" / "calculator.yaml"
    code, output = compile_(spec, "openenv", tmp_path / "out")
    assert code == 0, output
    assert (
        "range"
        in yaml.safe_load((tmp_path / "out" / "openenv.yaml").read_text())["validation"]["reward"]
    )
