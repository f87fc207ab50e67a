"""Packed vs per-step rows: one decision, from the context policy's `append_only`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentspec.compiler.build import compile_spec
from agentspec.core.contexts import CONTEXT_POLICIES
from agentspec.core.presets import ALGORITHMS
from agentspec.core.registry import UnknownNameError
from agentspec.core.row_layout import row_layout

ROOT = Path(__file__).resolve().parents[2]


def test_append_only_policies_pack() -> None:
    for name in CONTEXT_POLICIES:
        expected = "packed" if CONTEXT_POLICIES.get(name).append_only else "per_step"
        assert row_layout(name) == expected
    assert row_layout("full_history") == "packed"
    assert row_layout("sliding_window") == "per_step"


def test_a_per_step_loss_on_rows_gets_one_row_per_step() -> None:
    steppo, grpo = ALGORITHMS.get("steppo"), ALGORITHMS.get("grpo")
    assert row_layout("full_history", step_rows=steppo.needs_step_rows) == "per_step"
    assert row_layout("full_history", step_rows=grpo.needs_step_rows) == "packed"
    assert row_layout("token_budget", step_rows=False) == "per_step"


def test_unknown_policy_suggests_a_name() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'full_history'"):
        row_layout("full_histroy")


@pytest.mark.parametrize("spec", ["calculator.yaml", "gridworld.yaml"])
def test_generated_layout_is_row_layout_of_the_spec_policy(spec: str) -> None:
    import yaml

    path = ROOT / "specs" / spec
    policy = (yaml.safe_load(path.read_text()).get("context") or {}).get("policy", "full_history")
    compiled = compile_spec(path)
    assert f"LAYOUT = {row_layout(policy)!r}".replace("'", '"') in compiled.source


def test_row_layout_does_not_import_torch() -> None:
    code = "import sys, agentspec.core.row_layout; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "False"
