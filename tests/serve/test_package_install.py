"""A generated OpenEnv package installs into a fresh virtual environment with
`pip install DIR` alone and serves its spec (issue 52, item 10): it depended on
`agentspec[openenv]`, and PyPI's `agentspec` is an unrelated project, which pip then
installed. The package names this project's distribution, `agentspec-rl`, at the
place this agentspec was installed from."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
import venv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

from .helpers import free_port

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _clean_env(cwd: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["AGENTSPEC_CACHE"] = str(cwd / "cache")
    return env


def test_the_openenv_package_installs_alone_and_serves(tmp_path: Path) -> None:
    package = tmp_path / "calculator_env"
    made = CliRunner().invoke(
        app,
        [
            "compile",
            str(ROOT / "specs" / "calculator.yaml"),
            "--target",
            "openenv",
            "-o",
            str(package),
        ],
    )
    assert made.exit_code == 0, made.output
    assert "agentspec-rl[openenv] @ file://" in (package / "pyproject.toml").read_text()

    venv.EnvBuilder(with_pip=True, clear=True).create(tmp_path / "venv")
    bin_dir = tmp_path / "venv" / "bin"
    env = _clean_env(tmp_path)
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-compile", str(package)]
    installed = subprocess.run(
        pip, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    shown = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "list", "--format", "freeze"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    assert "agentspec-rl==" in shown and "\nagentspec==" not in "\n" + shown

    port = free_port()
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [str(bin_dir / "server"), "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=log,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2):
                    break
            except OSError:
                assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
                time.sleep(0.5)
        solve = [
            str(bin_dir / "python"),
            str(package / "oracle" / "solve.py"),
            "--url",
            url,
            "--samples",
            "2",
        ]
        solved = subprocess.run(
            solve, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert solved.returncode == 0, solved.stdout + solved.stderr
        assert solved.stdout.count("success=True") == 2
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
