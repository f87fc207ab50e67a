"""Generated code reads as handwritten: named after the spec, clean by ruff's defaults
with no `noqa`, and formatted by one `ruff format` per compile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentspec.compiler import emit
from agentspec.compiler.build import compile_spec, import_spec
from agentspec.compiler.names import IMPORTS
from agentspec.runtime.compiled.env import SpecAdapterEnv, SpecToolEnv

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "codegen"

REWARDS = {
    # names chosen to look like each other's methods and like the base class's attributes
    "step": {"on": "step", "value": 0.5},
    "x": {"on": "final", "value": 1.0, "when": "action.text != ''"},
    "x_when": {"on": "final", "value": 2.0},
    "components": {"on": "final", "value": "1.0 if action.text == '' else 0.0"},
}


def _spec(tmp_path: Path, success: str = "reward.x == 1.0") -> Path:
    """The calculator recipe with the rewards above."""
    spec = yaml.safe_load((ROOT / "specs" / "calculator.yaml").read_text(encoding="utf-8"))
    spec["rewards"] = REWARDS
    spec["episode"]["success"] = success
    spec.pop("tests", None)
    path = tmp_path / "named_rewards.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_reward_methods_are_named_after_their_components(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    compiled = compile_spec(spec)
    assert "reward_0" not in compiled.source
    env_class = import_spec(spec).ENV_CLASS
    by_name = {c.name: c for c in env_class.reward_components}
    # Names that look like each other's methods stay apart: `x`'s guard is not `x_when`'s value.
    assert by_name["x"].value.__func__ is env_class.x_reward
    assert by_name["x"].when.__func__ is env_class.x_reward_when
    assert by_name["x_when"].value.__func__ is env_class.x_when_reward
    assert by_name["components"].value.__func__ is env_class.components_reward
    assert isinstance(env_class.reward_components, tuple)  # not shadowed by `components`


def test_no_reward_method_name_can_shadow_the_base_classes() -> None:
    """`NAME_reward` and `NAME_reward_when` are the generated methods' names: no attribute
    of the classes a generated environment extends may take either form."""
    for base in (SpecToolEnv, SpecAdapterEnv):
        taken = [n for n in dir(base) if n.endswith(("_reward", "_reward_when"))]
        assert taken == [], f"{base.__name__} has {taken}: a spec reward would override it"


def test_the_import_block_is_already_in_isorts_order() -> None:
    """Every name the generator can import, in one block: ruff's isort finds nothing to move,
    so any subset (a real module's) is in order too, and `ruff check --fix` need not run."""
    body = "\n".join(f"{name}" for name in IMPORTS)
    block = "from __future__ import annotations\n\n" + emit._imports(body) + "\n\n" + body + "\n"
    block = emit.format_source(block)  # long lines wrapped, as a compile does
    done = subprocess.run(
        [
            *(sys.executable, "-m", "ruff", "check", "--isolated", "--line-length", "100"),
            *("--select", "I", "--diff", "-"),
        ],
        input=block,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_one_compile_runs_ruff_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real_run = subprocess.run

    def counting_run(command: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(command)
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(emit.subprocess, "run", counting_run)
    compile_spec(ROOT / "specs" / "airline_service.yaml")
    assert [c[2:4] for c in calls] == [["ruff", "format"]]


def test_golden_modules_are_clean_by_ruffs_defaults_without_noqa() -> None:
    files = sorted(GOLDEN.glob("*.py"))
    assert files
    for path in files:
        assert "noqa" not in path.read_text(encoding="utf-8"), path.name
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_comparison_with_true_keeps_its_meaning(tmp_path: Path) -> None:
    """`x == true` is not `x` (1 == true): written `eq(x, True)`, not `x == True` (E712)."""
    spec = _spec(tmp_path, success="(reward.step == 0.5) == true")
    source = compile_spec(spec).source
    assert 'eq(s.reward["step"] == 0.5, True)' in source and "== True" not in source
