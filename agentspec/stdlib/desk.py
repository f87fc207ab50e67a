"""A retail help desk with a customer who talks back (specs/retail_desk.yaml).

τ-bench's structure, generated here from a seed: each sample is a small
store database (customers by email, their orders and items) and a customer
whose goal (return one item of a delivered order, or cancel a pending order),
identity (name, email) and order are private to the user: the opening message
says only what kind of help they want. `expected_db` is the database once the
request is handled by the store's policy; the oracle reads the rest.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

from agentspec.stdlib.data import Sample, register_generator, split_seed

FIRST = ["ana", "ben", "chen", "dara", "eli", "fay", "gus", "hana", "ivo", "jun", "kai", "lea"]
LAST = ["smith", "garcia", "kim", "novak", "okafor", "rossi", "silva", "tanaka"]
DOMAINS = ["mail.com", "post.net", "inbox.org"]
ITEMS = {
    "lamp": (25, 60),
    "kettle": (20, 45),
    "backpack": (35, 90),
    "headphones": (40, 150),
    "mug": (8, 20),
    "jacket": (50, 180),
    "blender": (30, 110),
    "notebook": (5, 15),
    "umbrella": (12, 35),
    "speaker": (30, 120),
}


def _order(rng: random.Random, email: str, status: str) -> dict[str, Any]:
    names = rng.sample(sorted(ITEMS), rng.randint(2, 3))
    items = {n: rng.randint(*ITEMS[n]) for n in names}
    return {"customer": email, "status": status, "items": items, "returned": []}


def _customers(rng: random.Random) -> list[tuple[str, str]]:
    people = []
    for first, last in zip(rng.sample(FIRST, 3), rng.sample(LAST, 3), strict=True):
        people.append((f"{first.title()} {last.title()}", f"{first}.{last}@{rng.choice(DOMAINS)}"))
    return people


def _database(rng: random.Random) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    people = _customers(rng)
    numbers = iter(rng.sample(range(100_000, 1_000_000), 6))
    customers: dict[str, Any] = {}
    orders: dict[str, Any] = {}
    for name, email in people:
        own = []
        for status in ("delivered", "pending"):
            order_id = f"W{next(numbers)}"
            orders[order_id] = _order(rng, email, status)
            own.append(order_id)
        customers[email] = {"name": name, "orders": own}
    return {"customers": customers, "orders": orders}, people


@register_generator(
    "retail_desk",
    fields=("id", "name", "email", "order", "item", "kind", "refund", "db", "expected_db"),
)
def retail_desk(*, split: str = "train", seed: int = 0, count: int = 10_000) -> Iterator[Sample]:
    """Customer requests for specs/retail_desk.yaml: `kind` (`return` one `item`
    of a delivered `order`, or `cancel` a pending one), the customer's `name` and
    `email`, the `refund` they are owed, the store's `db` and `expected_db`."""
    rng = random.Random(split_seed(split, seed))
    for index in range(count):
        db, people = _database(rng)
        name, email = rng.choice(people)
        kind = rng.choice(["return", "return", "cancel"])
        status = "delivered" if kind == "return" else "pending"
        order = next(
            o for o in db["customers"][email]["orders"] if db["orders"][o]["status"] == status
        )
        expected = copy.deepcopy(db)
        items = db["orders"][order]["items"]
        if kind == "return":
            item = rng.choice(sorted(items))
            expected["orders"][order]["returned"].append(item)
            refund = items[item]
        else:
            item = ""
            expected["orders"][order]["status"] = "cancelled"
            refund = sum(items.values())
        yield {
            "id": f"{split}-{index}",
            "name": name,
            "email": email,
            "order": order,
            "item": item,
            "kind": kind,
            "refund": refund,
            "db": db,
            "expected_db": expected,
        }
