"""Acceptance: each recipe's oracle reaches its expected score on the real data
through `agentspec run`, and a random policy scores far lower."""

from __future__ import annotations

from pathlib import Path

import pytest

from .recipe_helpers import run


def test_gsm8k_oracle_reference_calculator_chain(tmp_path: Path) -> None:
    result = run("gsm8k", "oracle", 300, tmp_path, "--split", "test")
    assert result.success_rate >= 0.99
    assert result.component("correct") >= 0.99
    assert result.component("format") == 0.0  # every oracle answer is well formed
    # The oracle really used the calculator: one call per reference annotation.
    first = result.trajectories[0]["steps"][0]
    assert first["tool_calls"] and all(r["ok"] for r in first["info"]["tool_results"])


@pytest.mark.slow
def test_gsm8k_oracle_on_the_whole_test_split(tmp_path: Path) -> None:
    result = run("gsm8k", "oracle", 1319, tmp_path, "--split", "test")
    assert result.success_rate >= 0.99


def test_hotpotqa_oracle_exact_match(tmp_path: Path) -> None:
    result = run("hotpotqa", "oracle", 300, tmp_path)
    assert result.success_rate == 1.0  # success is the answer's exact match
    assert result.component("f1") == 1.0
    # The supporting paragraphs were retrieved: each search returned its title.
    steps = result.trajectories[0]["steps"]
    for call in steps[0]["tool_calls"]:
        assert call["arguments"]["query"] in steps[0]["observation"]


@pytest.mark.slow
def test_hotpotqa_oracle_on_all_875_questions(tmp_path: Path) -> None:
    result = run("hotpotqa", "oracle", 875, tmp_path)
    assert result.success_rate == 1.0


def test_webshop_oracle_reward_on_100_goals(tmp_path: Path) -> None:
    result = run("webshop", "oracle", 100, tmp_path, "--split", "test")
    assert result.component("purchase") >= 0.95
    assert result.component("invalid") == 0.0 and result.component("malformed") == 0.0
    # Anchors are the rendered pages: the first step of every episode shares one.
    anchors = {t["steps"][0]["anchor"] for t in result.trajectories}
    assert len(anchors) == 1


@pytest.mark.slow
def test_textworld_walkthrough_wins_all_20_games(tmp_path: Path) -> None:
    result = run("alfworld", "oracle", 20, tmp_path)
    assert result.success_rate == 1.0
    assert result.component("win") == 1.0
    names = {t["sample_id"] for t in result.trajectories}
    assert len(names) == 20  # every game once


def test_paper_search_oracle_f1_at_all(tmp_path: Path) -> None:
    result = run("paper_search", "oracle", 50, tmp_path)
    assert result.component("f1") == 1.0
    assert result.component("recall") == pytest.approx(1.0)  # its value; weight 0.2 in the total


@pytest.mark.parametrize(
    ("spec", "component", "extra"),
    [
        ("gsm8k", "correct", ("--split", "test")),
        ("hotpotqa", "f1", ()),
        ("webshop", "purchase", ("--split", "test")),
        ("alfworld", "win", ()),
        ("paper_search", "f1", ()),
    ],
)
def test_random_policy_scores_far_lower(
    spec: str, component: str, extra: tuple[str, ...], tmp_path: Path
) -> None:
    result = run(spec, "random", 10, tmp_path, *extra)
    assert result.component(component) <= 0.1
    assert result.success_rate <= 0.1
