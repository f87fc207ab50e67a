"""The statistics of benchmarks/credit_assignment.py, on hand-made learning curves."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "credit_assignment.py"
spec = importlib.util.spec_from_file_location("credit_assignment", SCRIPT)
assert spec is not None and spec.loader is not None
credit = importlib.util.module_from_spec(spec)
sys.modules["credit_assignment"] = credit  # dataclasses look their module up
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


def test_paired_bootstrap_keeps_each_seeds_pair_together() -> None:
    # every seed is 100 env steps faster with a: paired, the difference never varies
    a = [100.0, 500.0, 900.0, 300.0, 700.0]
    b = [x + 100.0 for x in a]
    assert credit.paired_bootstrap(a, b, credit._difference_of_means) == (-100.0, -100.0)
    # unpaired, the spread between seeds makes the same data look uncertain
    lo, hi = credit.bootstrap_difference(a, b)
    assert lo < -100.0 < hi and hi - lo > 200.0


def test_seeds_needed_for_an_effect_grow_with_the_spread() -> None:
    b = [1000.0] * 6
    tight = [700.0, 710.0, 690.0, 705.0, 695.0, 700.0]
    loose = [300.0, 1100.0, 500.0, 900.0, 700.0, 700.0]
    assert int(credit.seeds_for_effect(tight, b, 0.7)) <= 3
    assert int(credit.seeds_for_effect(loose, b, 0.7)) == 7  # (2.80 · 283 / 300)² → 7


def test_results_are_data_written_once_and_read_back_by_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credit, "RESULTS", tmp_path)
    job = credit.Job("keys_and_doors", "grpo", 3, {"algorithm": "grpo", "seed": 3})
    records = [
        {"iteration": 0, "env_steps": 0, "eval/success": 0.5, "loss/policy": 1.0},
        {"iteration": 1, "env_steps": 400, "rollout/success": 0.25, "actor/kl": 0.01},
    ]
    credit.write_result(job, records)
    assert credit.read_result(job) == [
        {"iteration": 0, "env_steps": 0, "eval/success": 0.5},
        {"iteration": 1, "env_steps": 400, "rollout/success": 0.25, "actor/kl": 0.01},
    ]
    other = credit.Job("keys_and_doors", "grpo", 3, {"algorithm": "grpo", "seed": 3, "x": 1})
    assert credit.read_result(other) is None  # other settings: this result does not count
    monkeypatch.setattr(credit, "BENCHMARK_VERSION", credit.BENCHMARK_VERSION + 1)
    assert credit.read_result(job) is None  # another trainer version: neither


def test_a_run_at_a_swept_rate_is_the_sweeps_run_of_that_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credit, "RESULTS", tmp_path)
    settings = {"learning_rate": 3e-4, "algorithm": "grpo", "seed": 1, "iterations": 60}
    swept = credit.Job("keys_and_doors", "grpo-lr0.0003", 1, settings)
    credit.write_result(swept, curve((0, 0.5), (400, 1.0)))
    benchmark_run = credit.Job("keys_and_doors", "grpo", 1, dict(settings))
    assert credit.read_result(benchmark_run) == credit.read_result(swept) is not None
    assert not benchmark_run.result.exists()  # read from the sweep's file, not copied
    other_seed = credit.Job("keys_and_doors", "grpo", 2, {**settings, "seed": 2})
    other_rate = credit.Job("keys_and_doors", "grpo", 1, {**settings, "learning_rate": 1e-3})
    other_setting = credit.Job("keys_and_doors", "grpo", 1, {**settings, "kl_coef": 0.0})
    for job in (other_seed, other_rate, other_setting):
        assert credit.read_result(job) is None


def test_report_comes_from_results_alone_and_rewrites_the_readme_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credit, "RESULTS", tmp_path / "results")
    jobs = []
    for seed in range(3):
        for name, hit in (("steppo", 100 * (seed + 1)), ("grpo", 200 * (seed + 1))):
            job = credit.Job("keys_and_doors", name, seed, {"algorithm": name, "seed": seed})
            credit.write_result(job, curve((0, 0.5), (hit, 0.95), (1000, 1.0)))
            jobs.append(job)
    text = credit.report(jobs, sweep=False, figure=tmp_path / "plot.png")
    assert "(3 seeds; budget 1,000 env steps)" in text and "0.50× [0.50, 0.50]" in text
    assert (tmp_path / "plot.png").is_file()
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{credit.README_BEGIN}\nold\n{credit.README_END}\nafter\n")
    credit.write_readme(text, readme)
    assert (
        readme.read_text() == f"intro\n{credit.README_BEGIN}\n{text}\n{credit.README_END}\nafter\n"
    )


TINY_RUN = {
    "iterations": 1,
    "warm_start": 5,
    "prompts_per_iteration": 2,
    "group_size": 2,
    "eval_samples": 2,
    "torch_threads": 1,
}


def test_a_run_resumes_only_its_own_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unfinished run continues from its checkpoint; a checkpoint another job left
    under the same directory (an older benchmark version, other settings) is not
    resumed, since finishing it would file that job's curve as this one's result."""
    out = tmp_path / "run"
    older = credit.Job("switches", "grpo", 0, {**TINY_RUN, "algorithm": "grpo", "seed": 0})
    first = credit.train_one(older, out)
    assert [r["iteration"] for r in first] == [0, 1]
    kept = out / "kept_by_a_resumed_run"
    kept.touch()
    assert credit.train_one(older, out) == first  # its own, finished: resumed, nothing trained
    assert kept.exists()

    # the same settings under the next benchmark version: the old checkpoint is not it
    monkeypatch.setattr(credit, "BENCHMARK_VERSION", credit.BENCHMARK_VERSION + 1)
    again = credit.train_one(older, out)
    assert [r["iteration"] for r in again] == [0, 1] and not kept.exists()  # trained afresh

    job = credit.Job(
        "switches", "grpo", 0, {**TINY_RUN, "algorithm": "grpo", "seed": 0, "learning_rate": 0.01}
    )
    records = credit.train_one(job, out)
    assert [r["iteration"] for r in records] == [0, 1]
    assert "learning_rate: 0.01" in (out / "config.yaml").read_text()  # trained afresh


def test_a_report_with_no_results_says_so_and_leaves_the_readme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credit, "RESULTS", tmp_path / "results")
    written: list[str] = []
    monkeypatch.setattr(credit, "write_readme", written.append)
    figure = tmp_path / "plot.png"
    argv = ["--report", "--write-readme", "--tasks", "switches", "--figure", str(figure)]
    monkeypatch.setattr(sys, "argv", ["credit_assignment.py", *argv])
    with pytest.raises(SystemExit, match="no results yet for these 40 runs"):
        credit.main()
    assert written == [] and not figure.exists()


def test_each_algorithm_is_paired_on_the_seeds_it_shares_with_steppo() -> None:
    """An algorithm run on more seeds (switches' extra StepPO/GRPO seeds) is compared on
    all of them, one run on fewer on its own, instead of every row on the fewest."""
    run = curve((0, 0.2), (100, 0.95), (300, 1.0))
    slow = curve((0, 0.2), (200, 0.95), (300, 1.0))
    variants = {
        "steppo": {0: run, 1: run, 2: run},
        "grpo": {0: slow, 1: slow, 2: slow},
        "ppo": {1: slow},
    }
    rows = credit.paired_rows(variants)
    assert rows[0].startswith("| `grpo` | 3 | 0.50×") and rows[1].startswith("| `ppo` | 1 | 0.50×")


def test_report_reads_every_committed_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(credit, "RESULTS", tmp_path)
    for path in ("switches/steppo/seed12.json", "keys_and_doors/grpo/seed0.json"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    assert credit.committed_seeds() == {0, 12}


def test_what_the_metric_can_show_counts_ties_and_the_ceiling() -> None:
    """Cut at a common budget (1,000): seed 0 ties at the warm start, seed 1 ties with
    neither reaching 90 %, seeds 2 and 3 are informative; the ceiling puts StepPO at its
    first evaluation (100) wherever it reached 90 % after the warm start."""
    at_start = curve((0, 0.95), (100, 1.0), (1000, 1.0))
    never = curve((0, 0.1), (100, 0.2), (1200, 0.5))  # past the budget: cut at 1,000
    variants = {
        "steppo": {0: at_start, 1: never, 2: curve((0, 0.1), (100, 0.2), (400, 0.95)), 3: never},
        "grpo": {
            0: at_start,
            1: never,
            2: curve((0, 0.1), (800, 0.9)),
            3: curve((0, 0.1), (600, 0.9)),
        },
    }
    (row,) = credit.limit_rows(variants, 1000)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:4] == ["`grpo`", "4", "1 / 1", "2"]
    # all seeds: (0 + 1000 + 400 + 1000) / (0 + 1000 + 800 + 600); ceiling (0 + 1000 + 100 + 1000)
    assert cells[4].startswith(f"{2400 / 2400:.2f}×") and cells[5] == f"{2100 / 2400:.2f}×"
    # informative: (400 + 1000) / (800 + 600); ceiling (100 + 1000) / 1400
    assert cells[6].startswith(f"{1400 / 1400:.2f}×") and cells[7] == f"{1100 / 1400:.2f}×"
