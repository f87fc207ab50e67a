"""A spec's file name is text from anyone: no compile target may write it as source.
A name with quotes closed the TRL and verifiers modules' docstrings and the OpenEnv
package's string literals, and the code after it ran when the package was imported."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

NAMES = [
    'c""";__import__("os").system("touch PWNED");""".yaml',
    'c" if __import__("os").system("touch PWNED") else "c.yaml',
    "c'''\\n__import__('os').system('touch PWNED')\\n'''.yaml",
]


def _python_files(out: Path) -> list[Path]:
    return [p for p in out.rglob("*.py") if "spec" not in p.relative_to(out).parts[:1]]


@pytest.mark.parametrize("target", ["trl", "verifiers", "openenv"])
@pytest.mark.parametrize("name", NAMES)
def test_a_hostile_spec_file_name_stays_text_in_every_target(
    tmp_path: Path, target: str, name: str
) -> None:
    spec = tmp_path / name
    shutil.copyfile(ROOT / "specs" / "calculator.yaml", spec)
    out = tmp_path / "out"
    result = runner.invoke(app, ["compile", str(spec), "--target", target, "-o", str(out)])
    assert result.exit_code == 0, result.output
    literals = []
    for module in _python_files(out):
        tree = ast.parse(module.read_text(encoding="utf-8"))  # the name closed no string
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert "__import__" not in names, module  # nothing of the name became code
        literals += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    assert name in literals  # the package still names its spec copy, exactly
