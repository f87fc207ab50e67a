"""WebShop's reward, factor by factor, on hand-computed cases (data README §2d)."""

from __future__ import annotations

from typing import Any

import pytest

from agentspec.stdlib import webshop
from agentspec.stdlib.webshop import (
    attribute_matches,
    normalize_color,
    option_matches,
    product_prices,
    reward,
    type_factor,
)

PRODUCT: dict[str, Any] = {
    "asin": "B0TEST0001",
    "name": "SheIn Women's Long Sleeve Bodycon Dress",
    "Title": "SheIn Women's Long Sleeve Bodycon Dress",
    "BulletPoints": ["Machine wash cold", "Pull on closure"],
    "Description": "A dress for the office.",
    "Attributes": ["polyester spandex", "daily wear"],
    "query": "women's dresses",
    "product_category": "Clothing, Shoes & Jewelry › Women › Clothing › Dresses",
}


def words(text: str) -> list[str]:
    """A stand-in noun tagger: the given words are the 'nouns'."""
    return text.split()


def test_attributes_fuzzy_then_substring() -> None:
    # daily wear: token-set ratio 100 with an attribute; long sleeve: in the title;
    # machine wash: in the bullet points; office: in the description; quick drying: nowhere.
    goal = ["daily wear", "long sleeve", "machine wash", "office", "quick drying"]
    assert attribute_matches(PRODUCT, goal) == 4
    # "polyester" alone: token-set ratio of a subset is 100 > 85.
    assert attribute_matches(PRODUCT, ["polyester"]) == 1
    # "daily" vs "daily wear" is a subset too; "nightly wear" is not (ratio 73 < 85).
    assert attribute_matches(PRODUCT, ["nightly wear"]) == 0


def test_options_colours_and_name_value_pairs() -> None:
    assert normalize_color("plain black") == "black"
    assert normalize_color("light blue") == "blue"  # 'blue' precedes 'light' in COLOR_SET
    assert normalize_color("x-large") == "x-large"
    # colour value → 'black' = normalised 'plain black'; 'size x-large' vs 'small': no match
    assert option_matches(["plain black", "small"], {"color": "black", "size": "x-large"}) == 1
    # 'large' is a token subset of 'size large' → 100
    assert option_matches(["large"], {"size": "large"}) == 1
    # human goals list their options as strings
    assert option_matches(["navy"], ["navy", "medium"]) == 1
    assert option_matches([], {"size": "large"}) == 0


def goal(**overrides: Any) -> dict[str, Any]:
    base = {
        "name": "Long Sleeve Dress",
        "query": "women's dresses",
        "product_category": "Clothing, Shoes & Jewelry › Women › Clothing › Dresses",
        "attributes": [],
        "goal_options": {},
        "price_upper": 1000000.0,
    }
    return base | overrides


@pytest.mark.parametrize(
    ("product_name", "goal_fields", "expected"),
    [
        # query matches, 2 of 3 desired nouns bought → 1.0
        ("Women's Long Dress", {}, 1.0),
        # no query or category match but title score 2/3 > 0.2 → 1.0
        ("Long Dress", {"query": "x", "product_category": "A › B"}, 1.0),
        # no query/category match and title score 1/5 = 0.2 (not > 0.2) → 0.5
        ("Long", {"name": "Long a b c d", "query": "x", "product_category": "A › B"}, 0.5),
        # query matches but title score 1/11 < 0.1 → 0.1
        ("Long", {"name": "Long a b c d e f g h i j"}, 0.1),
        # zero noun overlap → 0.0 even though query and category match
        ("Shoes", {}, 0.0),
        # category shares 2 levels: 'Women' and 'Dresses' (query differs), title 1/3 > 0.2
        ("Dress", {"query": "x", "product_category": "Women › Dresses"}, 1.0),
        # a goal name without nouns: title score 0.2; query matches → 1.0
        ("Anything", {"name": ""}, 1.0),
    ],
)
def test_type_factor_rules(product_name: str, goal_fields: dict[str, Any], expected: float) -> None:
    product = PRODUCT | {"name": product_name}
    assert type_factor(product, goal(**goal_fields), nouns=words) == expected


def test_price_and_total() -> None:
    g = goal(
        attributes=["daily wear", "long sleeve", "machine wash", "quick drying"],
        goal_options={"color": "black", "size": "x-large"},
        price_upper=30.0,
        name="Women's Long Sleeve Bodycon Dress",
    )
    chosen = {"color": "plain black", "size": "small"}
    # (A=3 + O=1 + price 1) / (4 + 2 + 1), type factor 1.0
    assert reward(PRODUCT, g, 25.0, chosen, nouns=words) == pytest.approx(5 / 7)
    # over the price ceiling: the price term is 0
    assert reward(PRODUCT, g, 35.0, chosen, nouns=words) == pytest.approx(4 / 7)
    # a product of another type: no query or category match, and 1 of the goal
    # name's 5 'nouns' (0.2, not > 0.2) → type factor 0.5
    other = PRODUCT | {"name": "Dress", "query": "x", "product_category": "A › B"}
    assert type_factor(other, g, nouns=words) == 0.5
    assert reward(other, g, 25.0, chosen, nouns=words) == pytest.approx(0.5 * 5 / 7)


def test_prices_follow_generate_product_prices() -> None:
    prices = product_prices(
        [
            {"asin": "a", "pricing": []},
            {"asin": "b", "pricing": [12.5]},
            {"asin": "c", "pricing": [10.0, 20.0]},
        ]
    )
    assert prices["a"] == 100.0 and prices["b"] == 12.5 and 10.0 <= prices["c"] <= 20.0
    assert product_prices([{"asin": "c", "pricing": [10.0, 20.0]}]) == {"c": prices["c"]}


def test_synthetic_goals_on_the_catalog() -> None:
    catalog = webshop.load_catalog()
    goals = webshop.synthetic_goals(catalog)
    assert len(goals) == 6910  # data README §2b
    assert len({g["asin"] for g in goals}) == 415
    for g in goals[:200]:
        price = catalog.prices[g["asin"]]
        assert price <= g["price_upper"]  # the ceiling is above the product's price
        assert g["instruction_text"].endswith(f"{g['price_upper']:.2f} dollars") or (
            g["price_upper"] == 1000000.0
        )
        assert set(g["goal_options"]) == set(catalog.products[g["asin"]]["options"])
    assert webshop.synthetic_goals(catalog) == goals  # deterministic
    sizes = {
        split: sum(1 for _ in webshop.webshop_goals(split=split))
        for split in ("test", "dev", "train")
    }
    assert sizes == {"test": 500, "dev": 1000, "train": 5410}
    assert len(list(webshop.webshop_goals(kind="human"))) == 13


def test_the_true_product_with_the_goal_options_scores_high() -> None:
    catalog = webshop.load_catalog()
    scores = []
    for sample in list(webshop.webshop_goals(split="test"))[:50]:
        product = catalog.products[sample["asin"]]
        options = sample["goal"]["goal_options"]
        scores.append(reward(product, sample["goal"], catalog.prices[sample["asin"]], options))
    assert sum(scores) / len(scores) >= 0.95
    # and a random other product scores much less
    other = catalog.products[next(a for a in catalog.products if a != sample["asin"])]
    assert reward(other, sample["goal"], 1.0, {}) < 0.6
