"""benchmarks/credit_panel.py: the common budget, the paired log-steps statistics, ties by
construction and the report, on hand-made curves (nothing is trained)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
spec = importlib.util.spec_from_file_location("credit_panel", BENCHMARKS / "credit_panel.py")
assert spec is not None and spec.loader is not None
panel = importlib.util.module_from_spec(spec)
sys.modules["credit_panel"] = panel  # dataclasses look their module up
spec.loader.exec_module(panel)


def curve(*points: tuple[int, float], last: int | None = None) -> list[dict[str, float]]:
    """Evaluations at the given env steps, one iteration each (plus iterations up to
    ``last`` without an evaluation, so a run can be longer than its evaluations)."""
    rows = [{"iteration": i, "env_steps": s, "eval/success": v} for i, (s, v) in enumerate(points)]
    for i in range(len(points), (last or 0) + 1):
        rows.append({"iteration": i, "env_steps": points[-1][0] + 10 * i})
    return rows


def test_outcome_cuts_every_run_at_the_common_budget() -> None:
    run = curve((0, 0.0), (1000, 0.5), (2000, 0.95), (3000, 1.0))
    whole = panel.outcome(run, 5000)
    assert (whole.steps, whole.reached, whole.first_eval) == (2000, True, 1000)
    assert whole.auc == pytest.approx((0.5 * 1000 + 0.95 * 1000 + 1.0 * 2000) / 5000)
    # past the budget it does not count: censored at the budget, flagged
    cut = panel.outcome(run, 1500)
    assert (cut.steps, cut.reached, cut.first_eval) == (1500, False, 1000)
    assert cut.auc == pytest.approx(0.5 * 500 / 1500)


def test_ties_by_construction_are_both_at_the_warm_start_or_neither_within_the_budget() -> None:
    at_start = panel.Outcome(0, True, 1.0, 1000)
    never = panel.Outcome(5000, False, 0.0, 1000)
    learnt = panel.Outcome(2000, True, 0.6, 1000)
    assert panel.ties_by_construction(at_start, at_start)
    assert panel.ties_by_construction(never, never)
    assert not panel.ties_by_construction(learnt, never)
    assert not panel.ties_by_construction(learnt, learnt)  # equal, but by learning


def test_ratio_is_geometric_and_paired_and_counts_informative_seeds() -> None:
    never = panel.Outcome(8000, False, 0.0, 1000)
    a = {0: panel.Outcome(1000, True, 0.9, 1000), 1: panel.Outcome(2000, True, 0.8, 1000), 2: never}
    b = {0: panel.Outcome(2000, True, 0.8, 1000), 1: panel.Outcome(4000, True, 0.5, 1000), 2: never}
    row = panel.compare(a, b)
    assert row["seeds"] == 3 and row["informative"] == 2
    # every seed pair: half, half, equal (a tie) → exp(mean(log ½, log ½, 0)) = ½^(2/3)
    assert row["ratio"] == pytest.approx(0.5 ** (2 / 3))
    assert row["ratio_informative"] == pytest.approx(0.5)
    assert row["ratio_informative_ci"] == pytest.approx((0.5, 0.5))  # the same ½ on every seed
    # the ceiling: `a` at its first evaluation (1,000) where it reached 90 % → 1000/2000, 1000/4000
    assert row["ceiling"] == pytest.approx(math.sqrt(0.5 * 0.25))
    assert row["auc_diff"] == pytest.approx((0.9 + 0.8 - 0.8 - 0.5) / 3)


def test_seeds_needed_grow_with_the_spread_of_log_differences() -> None:
    b = [math.log(1000)] * 6
    tight = [math.log(x) for x in (700, 690, 710, 705, 695, 700)]
    loose = [math.log(x) for x in (300, 1500, 500, 1100, 700, 400)]
    assert panel.seeds_needed(tight, b, 0.7) == 2
    assert panel.seeds_needed(loose, b, 0.7) > 10


def write(job, records) -> None:  # type: ignore[no-untyped-def]
    panel.write_result(job, records)


def test_budget_and_report_come_from_committed_results_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(panel, "RESULTS", tmp_path)
    assert panel.common_budget() is None and panel.write_report() is None
    pilot = panel.PILOT_ITERATIONS
    # one pilot run in: a provisional report, at the env steps it covers
    first = panel.Job("per_step", "grpo", 0, pilot)
    write(first, curve((0, 0.0), (2000, 0.95), (20_000, 1.0), last=pilot))
    assert panel.common_budget() is None
    provisional = panel.write_report(figure=False)
    assert provisional is not None and provisional.startswith("**Provisional")
    # GRPO's pilot reaches 90 % at 2,000, 4,000 and 6,000 env steps: median 4,000 → budget 12,000
    for seed, hit in enumerate((2000, 4000, 6000)):
        for arm in panel.ARMS:
            for setting in panel.SETTINGS:
                at = hit if setting == "grpo" else hit // 2
                job = panel.Job(arm, setting, seed, pilot)
                write(job, curve((0, 0.0), (at, 0.95), (20_000, 1.0), last=pilot))
    assert panel.common_budget() == 12_000
    assert panel.budget_iterations(12_000) == 32  # ⌈12,000 / 384⌉ = 32, a multiple of 4
    text = panel.write_report()
    assert text is not None and "Common budget: 12,000 env steps" in text
    assert "| `steppo_lam0` | 3 | 3 | 0.50× [0.50, 0.50]" in text
    assert (tmp_path / "report.md").read_text() == text + "\n"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["arms"]["per_step"]["vs_reference"]["ppo"]["ratio"] == pytest.approx(0.5)
    assert (tmp_path / "curves.png").is_file()

    # a main run to the budget reads the pilot's longer run of the same seed
    main = panel.main_jobs(3, 12_000)
    assert all(panel.read_result(job) is not None for job in main)
    # another spec, setting or version: the result does not count
    monkeypatch.setattr(panel, "BENCHMARK_VERSION", panel.BENCHMARK_VERSION + 1)
    assert panel.read_result(main[0]) is None


def test_a_result_shorter_than_the_job_does_not_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(panel, "RESULTS", tmp_path)
    short = panel.Job("per_step", "grpo", 0, 10)
    write(short, curve((0, 0.0), (1000, 0.5), last=10))
    assert panel.read_result(short) is not None
    assert panel.read_result(panel.Job("per_step", "grpo", 0, 12)) is None


def test_the_report_command_trains_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(panel, "RESULTS", tmp_path)
    monkeypatch.setattr(panel, "train_job", lambda *a: pytest.fail("trained"))
    with pytest.raises(SystemExit, match="no results yet"):
        panel.main(["--report"])
