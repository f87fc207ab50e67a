"""The WebShop spec as a state machine: guards, pages rendered from state,
anchors, the purchase reward and the invalid-action penalties."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentspec.stdlib import webshop

from .recipe_helpers import load, play, totals


@pytest.fixture(scope="module")
def goal_sample(recipe_environment: Path) -> dict[str, Any]:
    # a test goal whose product has two options
    for sample in webshop.webshop_goals(split="test"):
        if len(sample["goal"]["goal_options"]) == 2:
            return sample
    raise AssertionError("no test goal with two options")


def test_oracle_episode_walks_the_pages(goal_sample: dict[str, Any]) -> None:
    module = load("webshop")
    turns = webshop.oracle(goal_sample)
    assert turns[0].startswith("search[") and turns[1] == f"click[{goal_sample['asin']}]"
    assert len(turns) == 2 + 2 + 1  # search, click, two options, buy
    traj = play(module, goal_sample, turns)
    observations = [(s.observation or "").removeprefix("Observation: ") for s in traj.steps]
    assert observations[0].startswith("[Results]") and goal_sample["asin"] in observations[0]
    assert observations[1].startswith(f"[Item {goal_sample['asin']}]")
    value = next(iter(goal_sample["goal"]["goal_options"].values()))
    assert f"[{value}]" in observations[2]  # the chosen value is marked on the page
    assert traj.steps[-1].done and totals(traj)["purchase"] >= 0.8
    # anchors are the pages the steps started from: all different here
    anchors = [s.anchor for s in traj.steps]
    assert anchors[0] == "[Search page] Type search[your query] to look for products."
    assert len(set(anchors)) == len(anchors)


def test_guards_and_invalid_actions_cost(goal_sample: dict[str, Any]) -> None:
    module = load("webshop")
    asin = goal_sample["asin"]
    query = webshop.oracle(goal_sample)[0]
    traj = play(
        module,
        goal_sample,
        [
            f"click[{asin}]",  # not on the results page yet: guard
            query,
            "click[B000000000]",  # not among the results: fail()
            f"click[{asin}]",
            "choose[no such value]",  # not an option of this product
            "buy[B000000000]",  # not the product being viewed
            "back[search]",
            query,
            "back[results]",
            f"click[{asin}]",
            f"buy[{asin}]",  # no options chosen: fewer options matched
        ],
    )
    codes = [r["code"] for s in traj.steps for r in s.info.get("tool_results", []) if not r["ok"]]
    assert codes == ["guard", "failed", "failed", "failed"], codes
    rewards = totals(traj)
    assert rewards["invalid"] == pytest.approx(-0.05 * 4)
    assert traj.steps[-1].done
    # bought the right product without choosing its two options: 2 of D matches fewer
    goal = goal_sample["goal"]
    catalog = webshop.load_catalog()
    expected = webshop.reward(catalog.products[asin], goal, catalog.prices[asin], {})
    assert rewards["purchase"] == pytest.approx(expected)
    assert expected < 0.8


def test_buying_another_product_scores_less(goal_sample: dict[str, Any]) -> None:
    module = load("webshop")
    catalog = webshop.load_catalog()
    results = catalog.search("towel", 10)
    other = next(a for a in results if a != goal_sample["asin"])
    traj = play(module, goal_sample, ["search[towel]", f"click[{other}]", f"buy[{other}]"])
    assert totals(traj)["purchase"] < 0.5
