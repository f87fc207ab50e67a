"""Processes compiling the same spec into one folder at once (pytest workers sharing
the compile cache, two runs of one spec) each leave a whole module behind."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from agentspec.compiler.build import compile_spec, write_compiled

ROOT = Path(__file__).resolve().parents[2]


def _write_many(out: str) -> bool:
    compiled = compile_spec(ROOT / "specs" / "calculator.yaml")
    for _ in range(100):
        write_compiled(compiled, out)
    return True


def test_concurrent_writers_of_one_module_do_not_collide(tmp_path: Path) -> None:
    # each writer used `calculator_spec.py.tmp`: one renamed it away while another wrote
    # it, and the other's rename failed (FileNotFoundError) — seen in `make test`
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        assert all(pool.map(_write_many, [str(tmp_path)] * 3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calculator_spec.py", "manifest.json"]
    expected = compile_spec(ROOT / "specs" / "calculator.yaml").source
    assert (tmp_path / "calculator_spec.py").read_text(encoding="utf-8") == expected
