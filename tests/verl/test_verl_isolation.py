"""verl stays inside `agentspec/runtime/backends/verl`: no other module imports it, at any
depth (a lazy import inside a function counts too), so a plain install never needs it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentspec"
VERL_BACKEND = PACKAGE / "runtime" / "backends" / "verl"


def _verl_imports(source: str) -> list[int]:
    """Lines of every ``import verl…`` / ``from verl… import`` in ``source``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(name == "verl" or name.startswith("verl.") for name in names):
            lines.append(node.lineno)
    return lines


def test_no_module_outside_the_verl_backend_imports_verl() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if VERL_BACKEND not in path.parents
        for line in _verl_imports(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_scan_sees_every_form_of_import() -> None:
    source = (
        "import verl\n"
        "import os, verl.protocol as p\n"
        "def f():\n"
        "    from verl.trainer.ppo import core_algos\n"
        "from verlish import x\n"
        "from . import verl\n"
    )
    assert _verl_imports(source) == [1, 2, 4]
