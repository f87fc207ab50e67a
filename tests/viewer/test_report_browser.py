"""The HTML report in headless Chromium: it loads without errors, draws the curves and
the trajectories, and its filters work (asserted on the DOM). Screenshots go to
test-artifacts/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentspec.viewer import write_report

from .browser import browser_page
from .conftest import ARTIFACTS, records

pytestmark = pytest.mark.slow


def open_report(page: Any, report: Path) -> None:
    page.goto(report.resolve().as_uri())
    page.wait_for_selector('body[data-ready="1"]', timeout=10_000)


def rows(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "#traj-list tbody tr.traj-row",
        "trs => trs.map(tr => ({success: tr.dataset.success, term: tr.dataset.term,"
        " reward: tr.dataset.reward}))",
    )


def series(page: Any, chart: str) -> list[str]:
    return page.eval_on_selector_all(
        f'.chart[data-chart="{chart}"] polyline.series', "ps => ps.map(p => p.dataset.series)"
    )


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    assert (ARTIFACTS / name).stat().st_size > 10_000


def test_training_run_report(train_run: Path, tmp_path: Path) -> None:
    report = write_report(train_run, tmp_path / "report.html")
    metrics = records(train_run / "metrics.jsonl")
    with browser_page() as (page, errors):
        open_report(page, report)
        assert errors == []
        # Curves: success (rollout and eval), reward per component, KL, entropy.
        assert {"rollout/success", "eval/success"} <= set(series(page, "Success"))
        assert "rollout/reward" in series(page, "Reward per component")
        assert any(k.startswith("reward/") for k in series(page, "Reward per component"))
        assert series(page, "Entropy") == ["actor/entropy"]
        kl_keys = sorted({k for m in metrics for k in m if "kl" in k.split("/")[-1]})
        assert kl_keys and series(page, "KL") == kl_keys
        # A trajectory, step by step, with its advantage (training traces carry one).
        page.select_option("#filter-set", "train")
        page.click("#traj-list tbody tr.traj-row >> nth=0")
        steps = page.locator("#detail .step")
        assert steps.count() >= 1
        assert page.locator("#detail .step >> nth=0 >> pre.trained").inner_text().strip()
        assert "advantage " in page.locator("#detail .step .badge.adv >> nth=0").inner_text()
        assert "prompt tokens" in page.locator("#detail .step .saw h4 >> nth=0").inner_text()
        # trained (response) and masked (prompt, observation) tokens look different
        background = "el => getComputedStyle(el).backgroundColor"
        trained = page.eval_on_selector("#detail .step .produced pre.trained", background)
        masked = page.eval_on_selector(".legend-bar .seg.masked", background)
        assert trained == page.eval_on_selector(".legend-bar .seg.trained", background)
        assert trained != masked
        assert page.locator("#detail .step .saw pre.masked").count() >= 1
        assert page.locator("#detail .step >> nth=0 >> span.tok[data-trained]").count() >= 1
        # Filtering: by termination reason and by success.
        all_rows = rows(page)
        reason = all_rows[0]["term"]
        page.select_option("#filter-term", reason)
        assert rows(page) and all(r["term"] == reason for r in rows(page))
        page.select_option("#filter-term", "all")
        page.select_option("#filter-success", "fail")
        assert all(r["success"] == "fail" for r in rows(page))
        assert len(rows(page)) == sum(1 for r in all_rows if r["success"] == "fail")
        page.select_option("#filter-success", "all")
        page.select_option("#filter-set", "all")
        screenshot(page, "report-training-run.png")
        assert errors == []


def test_agentspec_run_traces_report(run_traces: Path, tmp_path: Path) -> None:
    report = write_report(run_traces, tmp_path / "report.html")
    expected = records(run_traces / "trajectories.jsonl")
    successes = sum(1 for t in expected if t["success"] is True)
    assert 0 < successes < len(expected)
    with browser_page() as (page, errors):
        open_report(page, report)  # its time is measured by benchmarks/report_size.py
        assert errors == []
        assert page.locator("#no-metrics").count() == 1  # no curves are invented
        assert len(rows(page)) == len(expected)
        assert page.locator("#detail .step").count() >= 1
        # success filter
        page.select_option("#filter-success", "ok")
        assert len(rows(page)) == successes
        assert all(r["success"] == "ok" for r in rows(page))
        page.select_option("#filter-success", "fail")
        assert len(rows(page)) == len(expected) - successes
        page.select_option("#filter-success", "all")
        # reward filter
        page.fill("#filter-rmin", "0.5")
        assert rows(page) and all(float(r["reward"]) >= 0.5 for r in rows(page))
        page.fill("#filter-rmin", "")
        page.fill("#filter-rmax", "-100")
        assert rows(page) == []
        assert "0 of" in page.inner_text("#filter-count")
        page.fill("#filter-rmax", "")
        # text filter over actions and observations, then open a failed trajectory
        page.fill("#filter-text", "<answer>")
        assert 0 < len(rows(page)) <= len(expected)
        page.fill("#filter-text", "")
        # keyboard: j selects the next listed trajectory
        first = page.get_attribute("tr.traj-row.selected", "data-n")
        page.evaluate("document.activeElement.blur()")
        page.keyboard.press("j")
        assert page.get_attribute("tr.traj-row.selected", "data-n") != first
        # the group link lists the trajectories of the selected one's group
        page.click("#traj-head a")
        group = page.input_value("#filter-text")
        assert group and 1 <= len(rows(page)) < len(expected)
        assert len(rows(page)) >= sum(1 for t in expected if t["group_id"] == group)
        page.fill("#filter-text", "")
        page.select_option("#filter-success", "fail")
        page.click("#traj-list tbody tr.traj-row >> nth=0")
        assert page.locator("#detail .step").count() >= 1
        assert "no" in page.inner_text("#traj-head")
        # no tokenizer for `agentspec run` traces: counts, and the rebuilt new part
        assert "not decoded" in page.inner_text("#detail .step >> nth=0")
        screenshot(page, "report-run-traces.png")
        assert errors == []


def test_metrics_and_config_without_eval(run_traces: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "traces").mkdir(parents=True)
    for i in (1, 2):
        (run / "traces" / f"iter_{i:06d}.jsonl").write_text(
            (run_traces / "trajectories.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
        )
    metrics = [
        {
            "iteration": i,
            "rollout/success": 0.25 * i,
            "rollout/reward": 0.1 * i,
            "reward/correct": 0.1 * i,
            "actor/kl": 0.01 * i,
            "actor/entropy": 2.0 - 0.1 * i,
            "loss/policy": 0.5,
            "perf/tokens_per_s": 1000.0,
        }
        for i in range(1, 5)
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    (run / "config.yaml").write_text("algorithm: steppo\niterations: 4\n")
    report = write_report(run, tmp_path / "r.html")
    with browser_page() as (page, errors):
        open_report(page, report)
        assert errors == []
        assert series(page, "Success") == ["rollout/success"]  # no eval series invented
        assert series(page, "KL") == ["actor/kl"]
        assert "algorithm: steppo" in page.inner_text("#config")
        page.select_option("#filter-iter", "2")
        assert rows(page) and len(rows(page)) == len(records(run_traces / "trajectories.jsonl"))
        assert errors == []
