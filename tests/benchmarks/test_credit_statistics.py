"""The statistics of benchmarks/credit_assignment.py, on hand-made learning curves."""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "credit_assignment.py"
spec = importlib.util.spec_from_file_location("credit_assignment", SCRIPT)
assert spec is not None and spec.loader is not None
credit = importlib.util.module_from_spec(spec)
spec.loader.exec_module(credit)


def curve(*points: tuple[int, float]) -> list[dict[str, float]]:
    return [{"iteration": i, "env_steps": s, "eval/success": v} for i, (s, v) in enumerate(points)]


def test_steps_to_threshold_and_censoring() -> None:
    assert credit.steps_to(curve((0, 0.1), (100, 0.5), (200, 0.95), (300, 1.0))) == (200, True)
    # never reached: the run's whole budget, flagged as a lower bound
    assert credit.steps_to(curve((0, 0.1), (100, 0.5), (250, 0.8))) == (250, False)


def test_success_auc_is_the_area_under_the_step_curve() -> None:
    records = curve((0, 0.0), (100, 0.5), (200, 1.0))
    # 0 on [0,100), 0.5 on [100,200), 1.0 on [200,400] → (0 + 50 + 200) / 400
    assert credit.success_auc(records, 400) == pytest.approx(250 / 400)
    assert credit.success_auc(records, 200) == pytest.approx(50 / 200)
    assert credit.success_auc(curve((0, 1.0)), 10) == 1.0


def test_bootstrap_interval_contains_the_mean_and_shrinks_with_agreement() -> None:
    spread = [100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0]
    lo, hi = credit.bootstrap_ci(spread)
    assert lo < statistics.fmean(spread) < hi
    assert credit.bootstrap_ci([5.0] * 8) == (5.0, 5.0)
    lo2, hi2 = credit.bootstrap_ci([440.0, 450.0, 460.0, 450.0, 455.0, 445.0, 450.0, 450.0])
    assert hi2 - lo2 < hi - lo


def test_difference_is_significant_only_when_the_interval_excludes_zero() -> None:
    fast, slow = [100.0, 120.0, 110.0, 105.0], [400.0, 420.0, 380.0, 410.0]
    lo, hi = credit.bootstrap_difference(fast, slow)
    assert hi < 0
    lo, hi = credit.bootstrap_difference(fast, [90.0, 130.0, 100.0, 115.0])
    assert lo < 0 < hi


def test_summary_and_tables_over_two_algorithms() -> None:
    runs = {
        "steppo": [
            curve((0, 0.2), (100, 0.9), (300, 1.0)),
            curve((0, 0.2), (150, 0.95), (300, 1.0)),
        ],
        "grpo": [curve((0, 0.2), (200, 0.5), (300, 0.6)), curve((0, 0.2), (250, 0.92), (300, 0.9))],
    }
    summary = credit.summarize(runs)
    assert summary["steppo"]["steps"] == [100.0, 150.0] and summary["steppo"]["reached"] == 2
    assert summary["grpo"]["steps"] == [300.0, 250.0] and summary["grpo"]["reached"] == 1
    text = credit.table(summary)
    assert "≥ 275" in text and "(1/2)" in text
    assert summary["grpo"]["final"] == pytest.approx(0.75)  # last evaluations 0.6 and 0.9
    assert "0.45×" in credit.comparisons(summary)
