"""The package installs and works without the development extras.

Each test builds a fresh virtual environment and installs agentspec into it the
way a user would (`pip install agentspec`, `pip install 'agentspec-rl[train]'`),
from this checkout, so a dependency that only a `dev` or `verl` extra brings in
cannot hide behind the project's own `.venv`. pip reaches the package index;
torch comes from the local CPU build, pinned by `constraints.txt`.
"""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "calculator.yaml"

pytestmark = pytest.mark.slow


def _venv(where: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    return where / "bin"


def _run(
    *cmd: str | Path, cwd: Path, timeout: float = 900, expect: int = 0
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["AGENTSPEC_CACHE"] = str(cwd / "cache")
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == expect, f"{cmd}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _pip_install(bin_dir: Path, cwd: Path, *requirements: str) -> None:
    # --no-compile: byte-compiling torch's thousands of modules is two thirds of
    # its install here (19 s of 28); it speeds up imports later, and is not what is tested
    _run(bin_dir / "python", "-m", "pip", "install", "-q", "--no-compile", *requirements, cwd=cwd)


def _has_module(bin_dir: Path, name: str, cwd: Path) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    return subprocess.run([bin_dir / "python", "-c", code], cwd=cwd).returncode == 0


def test_plain_install_works_then_the_train_extra_alone_trains(tmp_path: Path) -> None:
    """One environment, grown the way a user grows it: the plain install first, then
    `agentspec-rl[train]` added to it (one venv instead of two: the install is the slow part)."""
    bin_dir = _venv(tmp_path / "venv")
    _pip_install(bin_dir, tmp_path, str(ROOT))
    assert not _has_module(bin_dir, "torch", tmp_path)
    assert not _has_module(bin_dir, "transformers", tmp_path)

    agentspec = bin_dir / "agentspec"
    _run(agentspec, "validate", SPEC, cwd=tmp_path)
    _run(agentspec, "compile", SPEC, "-o", tmp_path / "build", cwd=tmp_path)
    assert (tmp_path / "build" / "calculator_spec.py").is_file()
    out = _run(agentspec, "run", SPEC, "--policy", "oracle", "-n", "8", cwd=tmp_path)
    assert "success rate" in out.stdout and "1.000" in out.stdout

    # Every command that needs an extra says which, in one line, without a traceback.
    train = "needs the train extra: pip install 'agentspec-rl[train]' (torch is not installed)"
    verl = "needs the verl extra: pip install 'agentspec-rl[verl]' (verl is not installed)"
    for args, line in [
        (["train", SPEC], f"agentspec train {train}"),
        (["train", SPEC, "--backend", "verl"], f"agentspec train --backend verl {verl}"),
        (
            ["train", SPEC, "--backend", "verl", "--dry-run"],
            f"agentspec train --backend verl {verl}",
        ),
        (["eval", SPEC, "--checkpoint", "runs/x"], f"agentspec eval --checkpoint {train}"),
        (["eval", SPEC, "--policy", "hf:runs/x"], f"agentspec eval --policy hf:runs/x {train}"),
        (["run", SPEC, "--policy", "hf:runs/x"], f"agentspec run --policy hf:runs/x {train}"),
        (["run", SPEC, "--policy", "smollm2"], f"agentspec run --policy smollm2 {train}"),
    ]:
        failed = _run(agentspec, *args, cwd=tmp_path, expect=1)
        assert failed.stderr.splitlines() == [f"error: {line}"], (args, failed.stderr)

    # The train extra, and nothing of the dev or verl extras, trains one iteration.
    _pip_install(bin_dir, tmp_path, "torch==2.13.0")
    _pip_install(bin_dir, tmp_path, "-c", str(ROOT / "constraints.txt"), f"{ROOT}[train]")
    assert not _has_module(bin_dir, "verl", tmp_path)
    assert not _has_module(bin_dir, "pytest", tmp_path)

    settings = {
        "iterations": 1,
        "warm_start": 0,
        "prompts_per_iteration": 2,
        "group_size": 2,
        "eval_samples": 2,
        "torch_threads": 1,
    }
    sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    run_dir = tmp_path / "run"
    _run(bin_dir / "agentspec", "train", SPEC, *sets, "--out", run_dir, cwd=tmp_path)
    assert (run_dir / "metrics.jsonl").read_text().strip()
