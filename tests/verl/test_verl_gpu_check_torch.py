"""scripts/gpu_check.sh: the torch-only form, its time limits, its summary line, and a
verl step that fails when the rollout does not serve the checkpoint's weights.

- ``--torch-only --small --device cpu`` (what CI runs): imports, the local backend,
  the critic's model, the OPD teacher in bfloat16 against float32, the losses;
- on an interpreter that has torch and transformers only (their own dependencies, no
  more: a fresh venv whose site-packages links just those distributions), with no
  way to bring agentspec's dependencies (an empty ``--wheels`` folder, no index), the
  steps fail one by one and the last line is still the summary;
- a step past ``--step-timeout`` fails and the next step runs;
- the verl step on a model that was never warm-started (a random model: what vLLM
  serves when the trained weights never reach it) fails on the greedy validation verl
  runs before training.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from verl_helpers import ROOT

pytestmark = pytest.mark.slow

SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def _check(*args: str, python: str = sys.executable, timeout: int = 1200) -> tuple[int, str]:
    env = {**os.environ, "PYTHON": python, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    # stdout: the step lines and the summary (stderr: what the libraries log)
    return result.returncode, result.stdout


STEP_LINE = re.compile(
    r"^\[(imports|local|dry-run|verl|default|2-gpu|critic-model|teacher|losses)\] .*$", re.M
)


def _lines(output: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in STEP_LINE.finditer(output)}


def test_torch_only_form_runs_on_the_cpu() -> None:
    code, output = _check("--torch-only", "--small", "--device", "cpu")
    assert code == 0, output[-4000:]
    lines = _lines(output)
    assert list(lines) == ["imports", "local", "critic-model", "teacher", "losses"]
    assert all(" ok " in line for line in lines.values()), lines
    assert "ForTokenClassification" in lines["critic-model"]
    assert "bfloat16 vs float32" in lines["teacher"]
    assert "steppo" in lines["losses"]
    assert output.rstrip().splitlines()[-1] == "gpu_check: all steps passed"


def _closure(*names: str) -> set[str]:
    """The installed distributions ``names`` need (their requirements, recursively)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def _torch_only_python(root: Path) -> str:
    """A fresh venv whose site-packages links torch, transformers and their dependencies
    from this environment, nothing else."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    site = next((root / "lib").glob("python*/site-packages"))
    for name in _closure("torch", "transformers"):
        dist = metadata.distribution(name)
        tops = set()
        for file in dist.files or []:
            first = file.parts[0]
            if first != ".." and not first.endswith(".pth") and first != "__pycache__":
                tops.add(first)
        for top in tops:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    return str(root / "bin" / "python")


def test_a_box_with_torch_and_transformers_only_gets_a_summary(tmp_path: Path) -> None:
    python = _torch_only_python(tmp_path / "venv")
    probe = subprocess.run(
        [python, "-c", "import torch, transformers, yaml, jinja2, pydantic\nimport lark"],
        capture_output=True,
        text=True,
        check=False,
    )
    # the box this test is about: transformers 5 brings pydantic, typer and httpx along,
    # not agentspec's parser (lark), its schemas (jsonschema) or ruff
    assert "No module named 'lark'" in probe.stderr
    (tmp_path / "wheels").mkdir()  # nothing to bring: pip fails, offline
    args = ("--torch-only", "--small", "--device", "cpu", "--wheels", str(tmp_path / "wheels"))
    code, output = _check(*args, python=python)
    assert code == 1, output[-4000:]
    lines = _lines(output)
    assert list(lines) == ["imports", "local", "critic-model", "teacher", "losses"]
    assert lines["imports"].startswith("[imports] FAILED")
    assert "missing lark, jsonschema, ruff;" in lines["imports"]
    assert "pip could not bring them from" in lines["imports"]
    assert re.match(r"\[local\] FAILED \d+ s: ModuleNotFoundError: No module", lines["local"])
    assert "Traceback" not in output
    assert output.rstrip().splitlines()[-1].startswith("gpu_check: FAILED (imports, local")


def test_a_step_past_its_time_limit_fails_and_the_next_one_runs() -> None:
    code, output = _check(
        *("--torch-only", "--small", "--device", "cpu"),
        *("--steps", "local,losses", "--step-timeout", "1"),
    )
    assert code == 1, output[-4000:]
    lines = _lines(output)
    assert lines["local"].startswith("[local] FAILED"), lines
    assert "timed out (over its 1 s limit; limit 1 s)" in lines["local"]
    assert lines["losses"].startswith("[losses] ok")
    assert output.rstrip().splitlines()[-1] == "gpu_check: FAILED (local)"


def test_the_verl_step_fails_when_the_rollout_serves_a_random_model() -> None:
    # builtin:tiny as it is built: random weights, as vLLM's dummy weights when the
    # checkpoint's never reach it; its greedy episodes do not parse
    code, output = _check(
        *("--small", "--device", "cpu", "--steps", "verl"),
        *("--set", "model=builtin:tiny"),
    )
    assert code == 1, output[-4000:]
    line = _lines(output)["verl"]
    assert line.startswith("[verl] FAILED"), line
    assert "the checkpoint's weights did not reach the rollout" in line
    assert output.rstrip().splitlines()[-1] == "gpu_check: FAILED (verl)"
