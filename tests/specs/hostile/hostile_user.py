"""User code of the hostile specs beside it (read by validate, never run by it)."""


def score(text: str, table: dict[str, float]) -> float:
    """A plain function, not a factory: `config: {table: …}` cannot build it."""
    return table.get(text, 0.0)


def oracle_mapping(sample: dict) -> dict:
    """An oracle hook that returns a mapping instead of a list of turns."""
    return {"turns": ["calculator[2+3]"], "answer": "5"}


def context_mapping(view: object) -> dict:
    """A custom context that returns one message instead of a list of them."""
    return {"role": "user", "content": "What is 2 + 3?"}


def context_no_view() -> list:
    """A custom context that takes no view."""
    return []
