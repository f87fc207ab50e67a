"""WebShop (Yao et al., 2022) on its 1,000-product catalog: search, pages, goals, reward.

Everything a WebShop spec needs, read from the catalog files of the data
folder (`products_1k.jsonl`, WebShop's processed `documents.jsonl` form, and
`items_ins_v2_1000.json`):

* `Catalog` — the products by ASIN, each product's price (WebShop's
  `generate_product_prices`: the single price, 100.0 when none, or a seeded
  uniform draw between the two prices of a range) and a BM25 index over the
  products' search text;
* goals — WebShop's synthetic goals (one per product with an instruction and
  per combination of its option values, with a price ceiling), shuffled with
  seed 233 and split as WebShop does (0–499 test, 500–1,499 dev, the rest
  train), as the data generator `webshop_goals`; `kind: human` gives the
  human-written goals whose products are in the catalog;
* `reward` — WebShop's `get_reward`: `r_type × (A + O + R_price) / (|attributes|
  + |options| + 1)` with fuzzy attribute and option matching (`thefuzz`),
  the price ceiling and the type factor (query, category, title nouns);
* pages (search, results, item, done) rendered as text, and the library
  functions a spec's tools call (`webshop_search`, `webshop_option`,
  `webshop_page`, `webshop_reward`); `oracle` is the expert as a Python hook.

The type factor compares the nouns of the two product names. WebShop uses
spaCy's `en_core_web_sm` tagger; it is used when installed. Otherwise (the
model is not on PyPI) `title_nouns` falls back to the names' content words
(stop words, numbers and units dropped) — same-product names agree either
way, so the oracle's reward is unaffected.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentspec.stdlib.data import Sample, register_generator, resolve_path
from agentspec.stdlib.library import CallSignature, register

PRODUCTS = "${AGENTSPEC_DATA}/webshop/products_1k.jsonl"
ATTRIBUTES = "${AGENTSPEC_DATA}/webshop/items_ins_v2_1000.json"
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
GOAL_SEED = 233
PRICE_SEED = 233
SPLITS = {"test": (0, 500), "dev": (500, 1500), "validation": (500, 1500), "train": (1500, None)}

# WebShop's `normalize.py` colour list, in its order (the first contained word wins).
_COLORS = (
    "alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze "
    "brown burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate "
    "christmas coffee cognac copper coral cranberry cream crystal dark denim eggplant "
    "elephant espresso fuchsia gold granite grape graphite grass gray green grey heather "
    "indigo ivory ivy khaki lavender lemon leopard light lilac lime magenta maroon mauve "
    "merlot midnight mint mocha multicolor mushroom mustard natural navy nude olive orange "
    "peach pewter pink plum purple rainbow red rose royal rust sand sapphire seashell silver "
    "skull slate steel stone stonewash sunflower tan taupe teal tiger turquoise violet "
    "walnut wheat white wine yellow"
)
COLOR_SET = _COLORS.split()

_WORD = re.compile(r"[a-z][a-z'&-]*[a-z]|[a-z]")
_STOPWORDS = (
    "a an the and or of for with without to in on at by from as is are be this that these "
    "those it its into over under up down out off per pack set count oz ounce ounces inch "
    "inches ft feet lb lbs pound pounds ml l g kg mm cm m x pcs pc piece pieces size new"
)
_STOP = frozenset(_STOPWORDS.split())


# --------------------------------------------------------------------------- catalog


@dataclass
class Catalog:
    """The products of one catalog file, their prices and their search index."""

    path: Path
    products: dict[str, dict[str, Any]]  # ASIN -> product (WebShop's processed dict)
    prices: dict[str, float]
    attributes: dict[str, dict[str, Any]]  # ASIN -> items_ins_v2 record

    def search(self, query: str, k: int = 10) -> list[str]:
        """ASINs of the `k` best products for a query (BM25 over the search text)."""
        from agentspec.stdlib.retrieval import open_index

        hits = open_index(str(self.path), ("contents",)).search(query, k)
        return [str(hit.doc["id"]) for hit in hits]

    def option_of(self, asin: str | None, value: str) -> str | None:
        """The option name whose values include `value` (case-insensitive), else None."""
        product = self.products.get(asin or "")
        if product is None:
            return None
        wanted = value.strip().lower()
        for name, values in (product.get("options") or {}).items():
            if wanted in (v.lower() for v in values):
                return str(name)
        return None


def product_prices(
    products: Sequence[Mapping[str, Any]], seed: int = PRICE_SEED
) -> dict[str, float]:
    """WebShop's `generate_product_prices`, with its own seeded generator."""
    rng = random.Random(seed)
    prices = {}
    for product in products:
        pricing = product.get("pricing") or []
        if not pricing:
            price = 100.0
        elif len(pricing) == 1:
            price = float(pricing[0])
        else:
            price = rng.uniform(float(pricing[0]), float(pricing[1]))
        prices[str(product["asin"])] = price
    return prices


@functools.cache
def _load_catalog(products: Path, attributes: Path | None, price_seed: int) -> Catalog:
    rows = []
    with products.open(encoding="utf-8") as handle:
        rows = [json.loads(line)["product"] for line in handle if line.strip()]
    records: dict[str, dict[str, Any]] = {}
    if attributes is not None and attributes.is_file():
        records = json.loads(attributes.read_text(encoding="utf-8"))
    by_asin = {str(p["asin"]): p for p in rows}
    return Catalog(products, by_asin, product_prices(rows, price_seed), records)


def load_catalog(
    products: str = PRODUCTS, attributes: str | None = ATTRIBUTES, price_seed: int = PRICE_SEED
) -> Catalog:
    """The catalog of a products file (loaded once per process)."""
    path = resolve_path(products)
    if not path.is_file():
        raise FileNotFoundError(f"WebShop products file {path} does not exist")
    return _load_catalog(path, resolve_path(attributes) if attributes else None, price_seed)


# --------------------------------------------------------------------------- goals


def _price_ceiling(price: float, rng: random.Random) -> tuple[float, str]:
    above = [p for p in PRICE_RANGE if p > price][:4]
    if len(above) >= 2:
        upper = max(rng.sample(above, 2))
        return upper, f", and price lower than {upper:.2f} dollars"
    return 1000000.0, ""


def synthetic_goals(catalog: Catalog, seed: int = GOAL_SEED) -> list[dict[str, Any]]:
    """WebShop's synthetic goals (`get_synthetic_goals`), then shuffled with `seed`."""
    rng = random.Random(seed)
    goals: list[dict[str, Any]] = []
    counts: dict[str, int] = defaultdict(int)
    for asin, product in catalog.products.items():
        record = catalog.attributes.get(asin, {})
        instruction = record.get("instruction")
        attributes = list(record.get("instruction_attributes") or [])
        if not instruction or not attributes:
            continue
        upper, price_text = _price_ceiling(catalog.prices[asin], rng)
        options = product.get("options") or {}
        names = sorted(options)
        for combination in itertools.product(*(options[n] for n in names)):
            chosen = dict(zip(names, combination, strict=True))
            option_text = ", and ".join(f"{k}: {v}" for k, v in chosen.items())
            option_text = " with " + option_text if option_text else ""
            goals.append(
                {
                    "asin": asin,
                    "category": product.get("category", ""),
                    "query": product.get("query", ""),
                    "name": product.get("Title", ""),
                    "product_category": product.get("product_category", ""),
                    "instruction_text": f"{instruction.strip('.')}{option_text}{price_text}",
                    "attributes": attributes,
                    "price_upper": upper,
                    "goal_options": chosen,
                }
            )
            for attribute in attributes:
                counts[attribute] += 1
    for goal in goals:
        goal["weight"] = sum(1.0 / counts[a] for a in goal["attributes"]) / len(goal["attributes"])
    rng = random.Random(seed)
    rng.shuffle(goals)
    return goals


def human_goals(catalog: Catalog, seed: int = GOAL_SEED) -> list[dict[str, Any]]:
    """The human-written goals whose products are in the catalog (`get_human_goals`)."""
    rng = random.Random(seed)
    goals = []
    for asin, product in catalog.products.items():
        for record in product.get("instructions") or []:
            attributes = list(record.get("instruction_attributes") or [])
            if not attributes:
                continue
            upper, price_text = _price_ceiling(catalog.prices[asin], rng)
            goals.append(
                {
                    "asin": asin,
                    "category": product.get("category", ""),
                    "query": product.get("query", ""),
                    "name": product.get("name", ""),
                    "product_category": product.get("product_category", ""),
                    "instruction_text": record["instruction"].strip(".") + price_text,
                    "attributes": attributes,
                    "price_upper": upper,
                    "goal_options": list(record.get("instruction_options") or []),
                    "weight": 1.0,
                }
            )
    rng.shuffle(goals)
    return goals


@register_generator("webshop_goals", fields=("id", "instruction", "asin", "goal"))
def webshop_goals(
    *,
    split: str = "train",
    products: str = PRODUCTS,
    attributes: str = ATTRIBUTES,
    kind: str = "synthetic",
    seed: int = GOAL_SEED,
    price_seed: int = PRICE_SEED,
) -> Iterator[Sample]:
    """WebShop goals as samples: `id`, `instruction`, `asin`, `goal` (the goal dict
    the reward reads). Synthetic goals are split by index as WebShop does; the
    13 human goals of this catalog are one split (`all`)."""
    catalog = load_catalog(products, attributes, price_seed)
    if kind == "synthetic":
        goals = synthetic_goals(catalog, seed)
        if split not in SPLITS and split != "all":
            raise ValueError(f"webshop_goals: unknown split {split!r}; use {sorted(SPLITS)}")
        start, stop = SPLITS.get(split, (0, None))
        selected = list(enumerate(goals))[start:stop]
    elif kind == "human":
        selected = list(enumerate(human_goals(catalog, seed)))
    else:
        raise ValueError(f"webshop_goals: kind must be synthetic or human, not {kind!r}")
    for index, goal in selected:
        yield {
            "id": f"{kind}-{index}",
            "instruction": goal["instruction_text"],
            "asin": goal["asin"],
            "goal": goal,
        }


# --------------------------------------------------------------------------- reward


def normalize_color(text: str) -> str:
    """WebShop's `normalize_color`: the first colour word contained in the text, else it."""
    for color in COLOR_SET:
        if color in text:
            return color
    return text


def _goal_option_text(option: Any) -> str:
    """A goal option as WebShop's matcher sees it: a synthetic goal's (name, value)
    pair is a colour when the value is exactly one, else the text "name value"."""
    if isinstance(option, (tuple, list)):
        name, value = str(option[0]), str(option[1])
        if value in COLOR_SET:
            return value
        return f"{name} {value}"
    return normalize_color(str(option))


def _fuzzy(a: str, b: str) -> float:
    from thefuzz import fuzz

    return float(fuzz.token_set_ratio(a, b))


def attribute_matches(product: Mapping[str, Any], attributes: Sequence[str]) -> int:
    """How many goal attributes the product has (fuzzy > 85, or a substring of its
    title, bullet points or description)."""
    title = str(product.get("Title", "")).lower()
    bullets = " ".join(product.get("BulletPoints") or []).lower()
    description = str(product.get("Description", "")).lower()
    matched = 0
    for wanted in attributes:
        if any(_fuzzy(str(have), wanted) > 85 for have in product.get("Attributes") or []):
            matched += 1
        elif wanted in title or wanted in bullets or wanted in description:
            matched += 1
    return matched


def option_matches(chosen: Sequence[str], goal_options: Any) -> int:
    """How many goal options some chosen value matches (colours normalised, fuzzy > 85)."""
    items = list(goal_options.items()) if isinstance(goal_options, Mapping) else goal_options
    picked = [normalize_color(str(v)) for v in chosen]
    return sum(
        1 for option in items if any(_fuzzy(p, _goal_option_text(option)) > 85 for p in picked)
    )


@functools.cache
def _spacy_tagger() -> Any:
    try:
        import spacy

        return spacy.load("en_core_web_sm")
    except Exception:  # spaCy or its English model not installed
        return None


def title_nouns(name: str) -> list[str]:
    """The lower-cased nouns of a product name (spaCy when its English model is
    installed; otherwise content words), duplicates kept, in order."""
    tagger = _spacy_tagger()
    if tagger is not None:
        return [t.text.lower() for t in tagger(name) if t.pos_ in ("PNOUN", "NOUN", "PROPN")]
    return [w for w in _WORD.findall(name.lower()) if w not in _STOP and len(w) > 1]


def type_factor(
    product: Mapping[str, Any],
    goal: Mapping[str, Any],
    nouns: Callable[[str], list[str]] = title_nouns,
) -> float:
    """WebShop's `get_type_reward`: 1.0, 0.5 when neither query, category (≥ 2
    shared breadcrumb levels) nor title nouns (> 0.2) match, 0.1 when the noun
    overlap is under 0.1, 0.0 when it is zero (later rules win)."""
    query_match = product.get("query") == goal.get("query")
    have = {x.strip() for x in str(product.get("product_category", "")).split("›")}
    want = {x.strip() for x in str(goal.get("product_category", "")).split("›")}
    category_match = len(have & want) >= 2
    bought, desired = nouns(str(product.get("name", ""))), nouns(str(goal.get("name", "")))
    title_score = 0.2 if not desired else len(set(bought) & set(desired)) / len(desired)
    factor = 1.0
    if not (query_match or category_match or title_score > 0.2):
        factor = 0.5
    if title_score < 0.1:
        factor = 0.1
    if title_score == 0.0:
        factor = 0.0
    return factor


def reward(
    product: Mapping[str, Any],
    goal: Mapping[str, Any],
    price: float,
    options: Mapping[str, str],
    nouns: Callable[[str], list[str]] = title_nouns,
) -> float:
    """WebShop's `get_reward` for buying `product` at `price` with `options` chosen."""
    attributes = list(goal.get("attributes") or [])
    goal_options = goal.get("goal_options") or {}
    matched = attribute_matches(product, attributes)
    matched_options = option_matches(list(options.values()), goal_options)
    r_price = 1.0 if price <= float(goal.get("price_upper", 1000000.0)) else 0.0
    total = (matched + matched_options + r_price) / (len(attributes) + len(goal_options) + 1)
    return total * type_factor(product, goal, nouns)


# --------------------------------------------------------------------------- pages


def _bullets(product: Mapping[str, Any], limit: int = 3, width: int = 160) -> list[str]:
    out = []
    for text in (product.get("BulletPoints") or [])[:limit]:
        text = " ".join(str(text).split())
        out.append(text if len(text) <= width else text[: width - 1] + "…")
    return out


def render_page(
    catalog: Catalog,
    page: str,
    query: str,
    results: Sequence[str],
    asin: str | None,
    chosen: Mapping[str, str],
) -> str:
    """The text of a WebShop page, from the shop's state."""
    if page == "search":
        return "[Search page] Type search[your query] to look for products."
    if page == "results":
        lines = [f"[Results] for {query!r}: {len(results)} products."]
        for item in results:
            product = catalog.products[item]
            lines.append(f"[{item}] {product.get('Title', '')} | ${catalog.prices[item]:.2f}")
        lines.append("Actions: click[ASIN] opens a product; back[search] searches again.")
        return "\n".join(lines)
    if page == "item" and asin in catalog.products:
        product = catalog.products[asin]
        lines = [
            f"[Item {asin}] {product.get('Title', '')}",
            f"Price: ${catalog.prices[asin]:.2f}   Rating: {product.get('Rating', 'N.A.')}",
        ]
        options = product.get("options") or {}
        for name in options:
            picked = chosen.get(name)
            shown = ", ".join(f"[{v}]" if v == picked else v for v in options[name])
            lines.append(f"{name}: {shown}")
        lines += [f"- {b}" for b in _bullets(product)]
        actions = "choose[VALUE] selects an option; " if options else ""
        lines.append(
            f"Actions: {actions}buy[{asin}] buys it; back[results] or back[search] goes back."
        )
        return "\n".join(lines)
    if page == "done":
        return "Thank you for shopping with us!"
    return f"[{page}]"


# --------------------------------------------------------------------------- library


@register("webshop_search", CallSignature(("str",), "list[str]"))
def _search_function(
    products: str = PRODUCTS, k: int = 10, price_seed: int = PRICE_SEED
) -> Callable[[str], list[str]]:
    """`webshop_search(query) -> list[str]`: the ASINs of the best `k` products."""
    return lambda query: load_catalog(products, None, price_seed).search(str(query), k)


@register("webshop_option", CallSignature(("str?", "str"), "str?"))
def _option_function(
    products: str = PRODUCTS, price_seed: int = PRICE_SEED
) -> Callable[[str | None, str], str | None]:
    """`webshop_option(asin, value) -> str?`: the option a value belongs to."""
    return lambda asin, value: load_catalog(products, None, price_seed).option_of(asin, value)


@register("webshop_page", CallSignature(("str", "str", "list[str]", "str?", "dict"), "str"))
def _page_function(products: str = PRODUCTS, price_seed: int = PRICE_SEED) -> Callable[..., str]:
    """`webshop_page(page, query, results, asin, chosen) -> str`: the page's text."""

    def page_text(
        page: str, query: str, results: Sequence[str], asin: str | None, chosen: Mapping[str, str]
    ) -> str:
        catalog = load_catalog(products, None, price_seed)
        return render_page(catalog, page, query, results, asin, chosen)

    return page_text


@register("webshop_reward", CallSignature(("str?", "dict", "dict"), "float"))
def _reward_function(
    products: str = PRODUCTS, price_seed: int = PRICE_SEED
) -> Callable[[str | None, Mapping[str, str], Mapping[str, Any]], float]:
    """`webshop_reward(asin, chosen, goal) -> float`: WebShop's reward for buying
    `asin` at its catalog price with the `chosen` options (0.0 for no product)."""

    def score(asin: str | None, chosen: Mapping[str, str], goal: Mapping[str, Any]) -> float:
        catalog = load_catalog(products, None, price_seed)
        product = catalog.products.get(asin or "")
        if product is None:
            return 0.0
        return reward(product, goal, catalog.prices[str(asin)], chosen)

    return score


def oracle(sample: Mapping[str, Any], products: str = PRODUCTS, k: int = 10) -> list[str]:
    """The expert's turns (bracket format) for a goal: search with a query that
    retrieves the goal's product, open it, choose the goal's options, buy it."""
    catalog = load_catalog(products)
    asin = str(sample["asin"])
    product = catalog.products[asin]
    words = re.sub(r"[\[\]]", " ", str(product.get("Title", ""))).split()
    # The shortest title prefix (of 6, 10, 16 or all words) that finds the product.
    candidates = [" ".join(words[:n]) for n in (6, 10, 16)] + [" ".join(words)]
    query = next((q for q in candidates if asin in catalog.search(q, k)), candidates[-1])
    turns = [f"search[{query}]", f"click[{asin}]"]
    options = sample["goal"].get("goal_options") or {}
    if isinstance(options, Mapping):
        turns += [f"choose[{value}]" for value in options.values()]
    return [*turns, f"buy[{asin}]"]
