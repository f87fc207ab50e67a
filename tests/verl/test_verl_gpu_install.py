"""docs/verl.md's GPU install resolves against PyPI: `agentspec-rl[gpu]`, then flash-attn.

Resolution only (``pip install --dry-run``): nothing is installed, and on a
machine without CUDA nothing could be built or run. The install commands are
read from the docs, so the page and the test cannot drift apart. Skipped, with
the reason, when PyPI cannot be reached.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from verl_helpers import ROOT

pytestmark = pytest.mark.slow

DOCS = ROOT / "docs" / "verl.md"


def _install_commands() -> list[str]:
    """The ``pip install`` commands of the docs' GPU install block, comments removed."""
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("### GPU install", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [line.split("#")[0].strip() for line in block.splitlines()]
    return [line for line in lines if line.startswith("pip install")]


def _gpu_pins() -> dict[str, str]:
    """``name -> version`` of the ``gpu`` extra's ``==`` pins (agentspec's own extras aside)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for requirement in extra["optional-dependencies"]["gpu"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^;\s]+)", requirement)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


@pytest.fixture(scope="module", autouse=True)
def _pypi() -> None:
    try:
        urllib.request.urlopen("https://pypi.org/simple/vllm/", timeout=15).close()
    except OSError as exc:
        pytest.skip(f"PyPI cannot be reached from here ({exc}): the GPU install is not resolved")


def _dry_run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """``pip install --dry-run --ignore-installed`` of ``args``: what pip would install."""
    report = tmp_path / "report.json"
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed"),
            *("--quiet", "--report", str(report), *args),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=tmp_path,
        timeout=1500,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    install = json.loads(report.read_text())["install"]
    return {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in install}


def test_the_docs_install_the_gpu_extra_then_flash_attn_on_its_own() -> None:
    commands = _install_commands()
    assert any("'.[gpu]'" in c for c in commands), commands
    (flash,) = [c for c in commands if "flash-attn" in c]
    assert "--no-build-isolation" in flash and "torch" not in flash  # torch is already there
    assert commands.index(flash) > next(i for i, c in enumerate(commands) if ".[gpu]" in c)
    assert _gpu_pins() == {
        "verl": "0.9.1",
        "torch": "2.11.0",
        "vllm": "0.24.0",
        "transformers": "5.9.0",
    }


def test_the_gpu_extra_resolves_to_its_pins(tmp_path: Path) -> None:
    resolved = _dry_run(tmp_path, f"{ROOT}[gpu]")
    for name, version in _gpu_pins().items():
        assert resolved[name] == version, name
    assert "ray" in resolved and "agentspec-rl" in resolved


def test_flash_attn_resolves_with_the_torch_already_installed(tmp_path: Path) -> None:
    """flash-attn's metadata step imports torch (hence --no-build-isolation: it uses this
    environment's torch); the CUDA build is skipped, since only its metadata is read."""
    (flash,) = [c for c in _install_commands() if "flash-attn" in c]
    requirement = re.search(r"flash-attn==\S+", flash)
    assert requirement is not None
    resolved = _dry_run(
        tmp_path,
        "--no-deps",
        "--no-build-isolation",
        requirement.group(0),
        env={"FLASH_ATTENTION_SKIP_CUDA_BUILD": "TRUE"},
    )
    assert resolved == {"flash_attn": requirement.group(0).split("==")[1]}
