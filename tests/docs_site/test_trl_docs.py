"""docs/trl.md: its compile command runs and its example prints what the page says."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from serve.helpers import checkout_env

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "trl.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, re.S)


def test_the_compile_command_and_the_dataset_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = shlex.split(blocks("console")[0])
    assert command[:2] == ["agentspec", "compile"]
    (tmp_path / "specs").symlink_to(ROOT / "specs")
    done = subprocess.run(
        [sys.executable, "-m", "agentspec.cli", *command[1:]],
        cwd=tmp_path,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks("python")[0], "docs/trl.md", "exec"), {"__name__": "__docs__"})
    assert out.getvalue() == blocks("text")[0]
    # the trainer example uses only what the generated module defines
    trainer_example = blocks("python")[1]
    assert "environment_factory=CalculatorEnv" in trainer_example
    assert "reward_funcs=REWARD_FUNCS" in trainer_example
