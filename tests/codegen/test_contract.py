"""The generated code of every shipped spec type-checks against its contract.

`agentspec/runtime/compiled/contract.py` says what a generated module provides and how
its rewards, episode rules and tool rules are exposed. Here mypy checks the
generated module of every `specs/*.yaml` both inside (each class against the
runtime base it subclasses: `RewardComponent(value=...)`, `EpisodeRules`,
`ToolRules`, overridden attributes) and as a whole (the module assigned to the
`GeneratedModule` protocol, and to the oracle protocol its spec's oracle
implies). A rename on either side fails here, not only in the golden files.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mypy  # noqa: F401 (the dev extra: a missing install fails)
import pytest

from agentspec.compiler.build import compile_spec, write_compiled
from agentspec.compiler.names import IMPORTS
from agentspec.runtime.compiled.contract import EpisodeRules, RewardComponent, ToolRules

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.yaml"))


def _oracle_protocol(source: str) -> str:
    if "\ndef oracle_actions(" in source:
        return "TurnOracleModule"
    if "\nORACLE_HOOK = " in source:
        return "HookOracleModule"
    if "\nORACLE_WALKTHROUGH = " in source:
        return "WalkthroughOracleModule"
    return "GeneratedModule"


def test_shipped_specs_generate_code_that_meets_the_contract(tmp_path: Path) -> None:
    lines = ["from agentspec.runtime.compiled import contract"]
    for spec in SPECS:
        compiled = compile_spec(spec)
        write_compiled(compiled, tmp_path / "generated")
        (tmp_path / "generated" / "manifest.json").unlink()
        protocol = _oracle_protocol(compiled.source)
        lines += [
            f"import {compiled.module_name}",
            f"_{compiled.module_name}: contract.{protocol} = {compiled.module_name}",
        ]
    check = tmp_path / "generated" / "check_contract.py"
    check.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file=",  # not the project's: its plugins and package list are for agentspec/
            "--strict",
            # Expressions read `Scope` fields typed `Any` (state, sample, args): their
            # spec types are the checker's business, so an `Any` result is expected.
            "--no-warn-return-any",
            "--follow-imports=silent",  # agentspec's own errors are the project's mypy run's
            "--ignore-missing-imports",
            "--cache-dir",
            str(tmp_path / "mypy_cache"),
            str(tmp_path / "generated"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(SPECS) + 1} source files" in done.stdout


def test_mypy_catches_a_broken_contract(tmp_path: Path) -> None:
    """The check above can fail: a reward held by name, as before the contract, is refused."""
    module = tmp_path / "broken_spec.py"
    module.write_text(
        "from agentspec.runtime.compiled.contract import RewardComponent\n"
        'RewardComponent("correct", on="final", weight=1.0, value="reward_0")\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--config-file=", "--strict"),
            *("--follow-imports=silent", "--cache-dir", str(tmp_path / "mypy_cache"), str(module)),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 1
    assert 'Argument "value" to "RewardComponent"' in done.stdout


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_generated_classes_expose_their_expressions_as_data(spec: Path) -> None:
    from agentspec.compiler.build import import_spec

    module = import_spec(spec)
    env = module.ENV_CLASS
    assert isinstance(env.rules, EpisodeRules)
    for component in env.reward_components:
        assert isinstance(component, RewardComponent)
        assert callable(component.value)
    for tool in getattr(env, "tool_classes", ()):
        assert isinstance(getattr(tool, "rules", ToolRules()), ToolRules)


@pytest.mark.parametrize("name", sorted(IMPORTS))
def test_each_import_a_generated_module_may_need_provides_its_name(name: str) -> None:
    """The table emit.py draws the generated imports from stays true to the runtime."""
    import ast
    import importlib

    (line,) = ast.parse(IMPORTS[name]).body
    if isinstance(line, ast.Import):
        assert line.names[0].name == name
        importlib.import_module(name)
        return
    assert isinstance(line, ast.ImportFrom) and line.module is not None
    (alias,) = line.names
    assert (alias.asname or alias.name) == name
    assert hasattr(importlib.import_module(line.module), alias.name)


def test_a_generated_module_imports_exactly_what_it_uses() -> None:
    import ast

    for spec in SPECS:
        tree = ast.parse(compile_spec(spec).source)
        imported = {
            alias.asname or alias.name
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        } - {"annotations"}
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        assert imported <= used, f"{spec.name}: unused {imported - used}"
        assert (used & IMPORTS.keys()) <= imported, f"{spec.name}: missing {used - imported}"
