"""Generated modules of the valid corpus, compared with committed snapshots.

Regenerate after an intended change with
`pytest tests/codegen/test_golden.py --update-golden` and review the diff.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentspec.compiler.build import compile_spec, write_compiled

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "codegen"
SPECS = [
    *sorted((ROOT / "specs").glob("*.yaml")),
    *sorted((ROOT / "tests/specs/valid").glob("*.yaml")),
]


def relative(path: Path) -> Path:
    return path.relative_to(ROOT)


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_generated_module_matches_snapshot(
    spec: Path, update_golden: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the spec path in the header is the one given
    compiled = compile_spec(relative(spec))
    snapshot = GOLDEN / f"{compiled.module_name}.py"
    if update_golden:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(compiled.source)
    assert compiled.source == snapshot.read_text()


def test_compiling_twice_gives_identical_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    for spec in SPECS:
        first, second = compile_spec(relative(spec)), compile_spec(relative(spec))
        assert first.source == second.source and first.manifest == second.manifest


def test_generated_modules_pass_ruff_and_mypy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    for spec in SPECS:
        write_compiled(compile_spec(relative(spec)), tmp_path / spec.stem)
    files = sorted(str(p) for p in tmp_path.glob("*/*.py"))
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", "pyproject.toml", *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr
    mypy = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental", *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr


def test_manifest_records_layout_and_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.chdir(ROOT)
    by_name = {}
    for spec in SPECS:
        compiled = compile_spec(relative(spec))
        manifest = json.loads(compiled.manifest)
        assert manifest["spec"]["sha256"] == compiled.sha256 and len(compiled.sha256) == 64
        by_name[manifest["spec"]["name"]] = manifest
    assert by_name["calculator"]["layout"] == "packed"  # full_history: append-only
    assert by_name["multihop_qa"]["layout"] == "per_step"  # sliding_window
    assert by_name["calculator"]["classes"]["env"] == "CalculatorEnv"
